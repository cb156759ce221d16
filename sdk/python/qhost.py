"""qhost's Python guest SDK: write a task as a plain function.

    import qhost

    @qhost.task
    def run(input: bytes, info: qhost.TaskInfo) -> str:
        qhost.log.info(f"task {info.id}: {len(input)} bytes")
        return input.decode().upper()

Build the module that holds `run` with componentize-py against the `qhost:task/task`
world (`qhost new --lang python` writes a build.sh that does). What it handles once:

- The return value becomes the output: bytes as they are, a str as UTF-8, None as no
  output, anything else as JSON (`json.dumps`).
- `raise qhost.Error("message")` ends the attempt with outcome `guest-error` and that
  message. Any other exception does too, as "TypeName: message", with its traceback
  written to stderr (kept with the attempt): without this it would trap, with only
  "Python function threw an unexpected exception" as the error.
- `qhost.retry_after(seconds)`: an upstream pushed back (429 with `Retry-After`, say);
  the attempt ends `deferred` once `run` returns, and the task runs again after that
  many seconds without using an attempt, its group waiting meanwhile.
- `qhost.log.info(...)` and the other levels write to the attempt's log;
  `qhost.json(input)` reads the input as JSON, with an error that says where it is wrong.

Module-level code runs once, when the component is built; each task starts from that
snapshot in a fresh instance, so nothing carries over between tasks.
"""

import json as _json
import sys
import traceback

import wit_world
from componentize_py_types import Err
from wit_world.imports import host as _host
from wit_world.imports.types import Level, TaskInfo

__all__ = ["task", "Error", "TaskInfo", "Level", "log", "json", "retry_after"]


class Error(Exception):
    """Ends the attempt with outcome `guest-error` and this message, as it is."""


class _Log:
    """The attempt's log, one function per level: `qhost.log.warn("slow")`."""

    @staticmethod
    def trace(message: str) -> None:
        _host.log(Level.TRACE, str(message))

    @staticmethod
    def debug(message: str) -> None:
        _host.log(Level.DEBUG, str(message))

    @staticmethod
    def info(message: str) -> None:
        _host.log(Level.INFO, str(message))

    @staticmethod
    def warn(message: str) -> None:
        _host.log(Level.WARN, str(message))

    @staticmethod
    def error(message: str) -> None:
        _host.log(Level.ERROR, str(message))


log = _Log()


def retry_after(seconds: float) -> None:
    """Ends this attempt as `deferred` once `run` returns, whatever it returns, and runs
    the task again after `seconds` (rounded up) without using one of its attempts; its
    group starts no task meanwhile. The operator caps the wait and how often a task may
    be deferred."""
    whole = -(-int(seconds * 1000) // 1000)
    _host.retry_after(max(0, min(whole, 2**32 - 1)))


def json(input: bytes):
    """The input read as JSON; a qhost.Error saying where it is wrong if it is not."""
    try:
        return _json.loads(input)
    except ValueError as e:
        raise Error(f"the input is not the JSON this task takes: {e}") from None


def _output(value) -> bytes:
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    try:
        return _json.dumps(value).encode()
    except (TypeError, ValueError) as e:
        raise Error(f"the output is not bytes, text or JSON: {e}") from None


def task(function):
    """Makes `function(input: bytes, info: TaskInfo)` the component's `run`.

    componentize-py looks for a class `WitWorld` in the module it builds: this defines it
    in the module that `function` was written in. One per component.
    """

    class WitWorld(wit_world.WitWorld):
        def run(self, input: bytes, info: TaskInfo) -> bytes:
            try:
                return _output(function(input, info))
            except Err:
                raise
            except Error as e:
                raise Err(str(e)) from None
            except Exception as e:
                traceback.print_exc()
                raise Err(f"{type(e).__name__}: {e}") from None

    setattr(sys.modules[function.__module__], "WitWorld", WitWorld)
    return function
