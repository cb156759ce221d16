"""wordsum in Python (the `task-graph` world): runs after any number of wordcount tasks,
reads their outputs with `qhost:task/graph`'s `inputs()`, and returns their sums, byte for
byte what the Rust example returns:
`{"lines":3,"words":12,"bytes":70,"summed":2,"failed":0}`.
"""

import re

import wit_world
from componentize_py_types import Err
from wit_world.imports import graph
from wit_world.imports.types import TaskInfo

FIELDS = ("lines", "words", "bytes")


class WitWorld(wit_world.WitWorld):
    def run(self, input: bytes, info: TaskInfo) -> bytes:
        sums = dict.fromkeys(FIELDS, 0)
        summed = failed = 0
        # An `err` from inputs() (outputs past 16 MiB) is raised as Err: guest-error.
        for dep in graph.inputs():
            if dep.ended != graph.Ended.SUCCEEDED:
                failed += 1
                continue
            try:
                text = dep.output.decode()
            except UnicodeDecodeError:
                raise Err(f"the output of {dep.name} is not UTF-8")
            for field in FIELDS:
                found = re.search(rf'"{field}":\s*(\d+)', text)
                if not found:
                    raise Err(f"the output of {dep.name} has no `{field}`: {text}")
                sums[field] += int(found.group(1))
            summed += 1
        return (
            f'{{"lines":{sums["lines"]},"words":{sums["words"]},"bytes":{sums["bytes"]},'
            f'"summed":{summed},"failed":{failed}}}'
        ).encode()
