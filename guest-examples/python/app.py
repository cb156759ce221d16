"""wordcount in Python: counts the lines, words and bytes of the input, like `wc`, and
returns {"lines":L,"words":W,"bytes":B}, byte for byte what the Rust example returns.

Words are maximal runs of bytes that are not ASCII whitespace (space, \\t, \\n, \\f, \\r,
as Rust's `is_ascii_whitespace`); lines are counted by their \\n bytes.
"""

import wit_world
from wit_world.imports import host
from wit_world.imports.types import Level, TaskInfo

# Python's bytes.split() also splits on vertical tab (\x0b), which Rust does not count as
# whitespace: turn it into an ordinary byte and every other separator into a space first.
_SEPARATORS = bytes.maketrans(b"\t\n\x0c\r\x0b", b"    v")


class WitWorld(wit_world.WitWorld):
    def run(self, input: bytes, info: TaskInfo) -> bytes:
        lines = input.count(b"\n")
        words = len(input.translate(_SEPARATORS).split())
        host.log(Level.DEBUG, f"python wordcount: {len(input)} bytes")
        return f'{{"lines":{lines},"words":{words},"bytes":{len(input)}}}'.encode()
