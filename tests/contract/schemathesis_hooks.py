"""schemathesis's hooks for qhost's contract test (tests/tests/contract.rs): an upload,
`application/wasm`, is sent as the bytes it is, as an `application/octet-stream` body is.
"""

import schemathesis

schemathesis.serializer.alias("application/wasm", "application/octet-stream")
