"""Drives a task from upload to output with the Python client that openapi-python-client
generated from qhost's OpenAPI document, as a user of that client would.

Run by tests/tests/contract.rs: python client_smoke.py SERVER_URL ADMIN_TOKEN COMPONENT,
with the generated package (`qhost_client`) on PYTHONPATH. Exits 1, saying which step
failed, if any answer is not the one documented.
"""

import io
import sys
import uuid
from http import HTTPStatus

from qhost_client import AuthenticatedClient
from qhost_client.api.batches import open_batch, release_batch, submit_tasks, wait_batch
from qhost_client.api.modules import add_module
from qhost_client.api.tasks import show_task, task_output
from qhost_client.models import Error, ErrorCode, OpenBatch, Submit, TaskRequest, TaskState
from qhost_client.types import File


def expect(step, response, status):
    if response.status_code != status:
        sys.exit(f"{step}: expected {status}, got {response.status_code}: {response.content!r}")
    return response.parsed


def main():
    url, token, component = sys.argv[1:4]
    admin = AuthenticatedClient(base_url=url, token=token, raise_on_unexpected_status=True)
    with open(component, "rb") as f:
        module = expect(
            "add_module",
            add_module.sync_detailed(client=admin, body=File(payload=f, file_name="echo.wasm"), name="smoke-echo"),
            HTTPStatus.CREATED,
        )
    # An opening sent twice with one key is done once: the repeat gets the first answer.
    key = str(uuid.uuid4())
    first = open_batch.sync_detailed(client=admin, body=OpenBatch(name="smoke"), idempotency_key=key)
    opened = expect("open_batch", first, HTTPStatus.CREATED)
    again = open_batch.sync_detailed(client=admin, body=OpenBatch(name="smoke"), idempotency_key=key)
    repeated = expect("open_batch again", again, HTTPStatus.CREATED)
    if "Idempotent-Replayed" in first.headers:
        sys.exit("open_batch: a first answer says it was replayed")
    if again.headers.get("Idempotent-Replayed") != "true" or repeated.batch.id != opened.batch.id:
        sys.exit(f"open_batch again: expected the first answer replayed, got batch {repeated.batch.id}")
    # From here on the batch's handle, not the admin token, as a tenant would.
    handle = AuthenticatedClient(base_url=url, token=opened.handle, raise_on_unexpected_status=True)
    batch = opened.batch.id
    submitted = expect(
        "submit_tasks",
        submit_tasks.sync_detailed(
            batch, client=handle, body=Submit(tasks=[TaskRequest(module=module.digest, input_="hello, qhost")])
        ),
        HTTPStatus.CREATED,
    )
    [task] = submitted.tasks
    done = expect("wait_batch", wait_batch.sync_detailed(batch, client=handle, timeout="60s"), HTTPStatus.OK)
    if done.progress.succeeded != 1:
        sys.exit(f"wait_batch: expected one task succeeded, got {done.progress}")
    view = expect("show_task", show_task.sync_detailed(task, client=handle), HTTPStatus.OK)
    if view.state != TaskState.SUCCEEDED or view.outcome.value != "succeeded" or len(view.log) != 1:
        sys.exit(f"show_task: expected a task that succeeded in one attempt, got {view}")
    output = expect("task_output", task_output.sync_detailed(task, client=handle), HTTPStatus.OK)
    if output.payload.read() != b"hello, qhost":
        sys.exit(f"task_output: expected the input back, got {output.payload}")
    # A failure parses as the documented error: the handle does not open the modules.
    refused = add_module.sync_detailed(client=handle, body=File(payload=io.BytesIO(b""), file_name="x.wasm"))
    if refused.status_code != HTTPStatus.FORBIDDEN or not isinstance(refused.parsed, Error):
        sys.exit(f"add_module with a handle: expected a 403 Error, got {refused.status_code} {refused.parsed!r}")
    if refused.parsed.error != ErrorCode.FORBIDDEN:
        sys.exit(f"add_module with a handle: expected error `forbidden`, got {refused.parsed.error!r}")
    expect("release_batch", release_batch.sync_detailed(batch, client=handle), HTTPStatus.NO_CONTENT)
    print(f"ok: task {task} of batch {batch} ran module {module.digest} and returned its input")


if __name__ == "__main__":
    main()
