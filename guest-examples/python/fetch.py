"""fetch in Python (the `task-http` world): fetches the URL given as input with GET and
returns the sha256 of the response body in hex, byte for byte what the Rust example
returns. When its batch was granted a setting `AUTHORIZATION`, it is sent as the
`Authorization` header of every request.

A redirect is followed by a new request (wasi:http never follows one itself), which qhost
checks against the batch's grant again: a `Location` outside it fails with
`HTTP-request-denied`.
"""

import hashlib

import wit_world
from componentize_py_types import Err
from wit_world.imports import host, outgoing_handler, store, streams
from wit_world.imports.qhost_task_types import Level, TaskInfo
from wit_world.imports.wasi_http_types import (
    Fields,
    IncomingBody,
    IncomingResponse,
    Method_Get,
    OutgoingRequest,
    Scheme_Http,
    Scheme_Https,
)

MAX_REDIRECTS = 5


class WitWorld(wit_world.WitWorld):
    def run(self, input: bytes, info: TaskInfo) -> bytes:
        url = input.decode().strip()
        for _ in range(MAX_REDIRECTS + 1):
            with _get(url) as response:
                status = response.status()
                location = response.headers().get("location")
                if 300 <= status < 400 and location:
                    target = location[0].decode()
                    host.log(Level.INFO, f"{url}: {status}, redirected to {target}")
                    url = _follow(url, target)
                    continue
                body = _read_body(response)
            if not 200 <= status < 300:
                raise Err(f"{url}: HTTP status {status}")
            host.log(Level.INFO, f"{url}: {status}, {len(body)} bytes")
            return hashlib.sha256(body).hexdigest().encode()
        raise Err(f"more than {MAX_REDIRECTS} redirects")


def _get(url: str) -> IncomingResponse:
    """Sends a GET to `url` and waits for the response's head."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise Err(f"`{url}` is not an absolute http or https URL")
    authority, slash, path = rest.partition("/")
    headers = Fields()
    try:
        authorization = store.get("AUTHORIZATION")
    except Err:
        authorization = None
    if authorization is not None:
        headers.append("authorization", authorization.encode())
    request = OutgoingRequest(headers)
    request.set_method(Method_Get())
    request.set_scheme(Scheme_Http() if scheme == "http" else Scheme_Https())
    request.set_authority(authority)
    request.set_path_with_query(slash + path if slash else "/")
    try:
        pending = outgoing_handler.handle(request, None)
    except Err as e:
        raise Err(f"{url}: {e.value}")
    with pending.subscribe() as ready:
        ready.block()
    answer = pending.get()
    if answer is None or isinstance(answer, Err):
        raise Err(f"{url}: no response")
    if isinstance(answer.value, Err):
        raise Err(f"{url}: {answer.value.value}")
    return answer.value.value


def _follow(url: str, location: str) -> str:
    """Where a `Location` leads from `url`: itself when absolute, else on `url`'s origin."""
    if "://" in location:
        return location
    scheme, _, rest = url.partition("://")
    origin = f"{scheme}://{rest.partition('/')[0]}"
    return origin + (location if location.startswith("/") else "/" + location)


def _read_body(response: IncomingResponse) -> bytes:
    body = response.consume()
    chunks = []
    with body.stream() as stream:
        while True:
            try:
                chunks.append(stream.blocking_read(64 * 1024))
            except Err as e:
                if isinstance(e.value, streams.StreamError_Closed):
                    break
                raise Err(f"reading the body: {e.value}")
    IncomingBody.finish(body)
    return b"".join(chunks)
