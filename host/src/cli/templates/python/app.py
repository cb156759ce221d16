"""{{name}}: a qhost task. Its input is a name; its output greets it."""

import qhost


@qhost.task
def run(input: bytes, info: qhost.TaskInfo) -> str:
    """Runs once per attempt, on the task's input.

    The return value is the output (bytes, a str, or a value sent as JSON). An exception
    ends the attempt with outcome `guest-error` (retried while attempts are left):
    `qhost.Error` with its message alone, any other with its type's name too.
    JSON input: `request = qhost.json(input)`.
    """
    name = input.decode().strip()
    if not name:
        raise qhost.Error("the input is empty: give a name, such as --input world")
    qhost.log.info(f"task {info.id} attempt {info.attempt}: {len(input)} bytes")
    return f"Hello, {name}!"
