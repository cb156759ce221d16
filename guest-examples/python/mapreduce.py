"""mapreduce in Python (the `task-spawn` world): word frequencies over children, byte for
byte what the Rust example returns.

Submitted with a text, a task is the reducer: on its first run it submits one child per
non-empty line (this same module, on input `map:<line>`, key `part-<n>`), saves how many
it submitted and suspends, giving its slot back. Once every mapper has ended it runs
again, reads their outputs with `qhost:task/graph`'s `inputs()`, and returns `word count`
lines, most frequent first (ties by word), ending with `parts N` (and `failed N` when a
mapper failed). A reducer that crashed mid-fan-out submits the same keys again and gets
the children it submitted before.
"""

import re

import wit_world
from componentize_py_types import Err
from wit_world.imports import graph, spawn
from wit_world.imports.types import TaskInfo

MAP = "map:"


def count(line: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in re.split(r"[\W_]+", line):
        if word:
            counts[word.lower()] = counts.get(word.lower(), 0) + 1
    return counts


def render(counts: dict[str, int]) -> str:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(f"{word} {n}\n" for word, n in ranked)


class WitWorld(wit_world.WitWorld):
    def run(self, input: bytes, info: TaskInfo) -> bytes:
        try:
            text = input.decode()
        except UnicodeDecodeError:
            raise Err("the input is not UTF-8")
        if text.startswith(MAP):
            return render(count(text[len(MAP):])).encode()
        # A refusal (an `err`) is raised as Err: the task's guest-error.
        state = spawn.saved()
        if state is None:
            parts = 0
            for line in text.splitlines():
                if not line.strip():
                    continue
                spawn.submit(
                    spawn.Child(
                        key=f"part-{parts}",
                        module=None,
                        input=f"{MAP}{line}".encode(),
                        after=[],
                        group=None,
                        priority=None,
                        memory=None,
                        timeout_ms=None,
                        mounts=[],
                        max_attempts=None,
                    )
                )
                parts += 1
            spawn.suspend(parts.to_bytes(4, "little"))
            return b""
        parts = int.from_bytes(state, "little")
        total: dict[str, int] = {}
        failed = 0
        for part in graph.inputs():
            if part.ended != graph.Ended.SUCCEEDED:
                failed += 1
                continue
            for line in part.output.decode().splitlines():
                word, n = line.rsplit(" ", 1)
                total[word] = total.get(word, 0) + int(n)
        out = render(total) + f"parts {parts}\n"
        if failed:
            out += f"failed {failed}\n"
        return out.encode()
