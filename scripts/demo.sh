#!/usr/bin/env bash
# The main job: builds qhost and the guest examples, starts `qhost serve` on the embedded
# SQLite store, and runs a demo plan through its HTTP API: an ordered batch of the guest
# examples with a group limit and a priority change, then shows the results.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
command -v curl >/dev/null || { echo "error: the demo needs curl" >&2; exit 1; }
cargo build --release --bin qhost
(cd guest-examples && cargo build --release --locked)
qhost=target/release/qhost
guests=guest-examples/target/wasm32-wasip2/release
data=$(mktemp -d)
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$data"' EXIT

"$qhost" serve --listen 127.0.0.1:0 --data-dir "$data" --workers 2 >"$data/serve.out" 2>"$data/serve.log" &
server=$!
until grep -q "listening on" "$data/serve.out" 2>/dev/null; do sleep 0.1; done
url=$(sed -n 's/^qhost listening on //p' "$data/serve.out")
admin=$(cat "$data/admin-token")
echo "qhost serve is listening on $url (data in $data)"

api() { # api METHOD PATH TOKEN [JSON]
    curl -sS -X "$1" "$url$2" -H "Authorization: Bearer $3" -H 'content-type: application/json' ${4:+-d "$4"}
}
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }

for guest in echo sleep sha256 wordcount; do
    curl -sS -X POST "$url/v1/modules?name=$guest" -H "Authorization: Bearer $admin" \
        --data-binary "@$guests/$guest.wasm" >/dev/null
    echo "added module $guest"
done
api PUT /v1/groups/hashing "$admin" '{"limit": 1}' >/dev/null
echo "group hashing: at most 1 task at a time"

opened=$(api POST /v1/batches "$admin" '{"name": "demo"}')
batch=$(echo "$opened" | sed -n 's/.*"batch":{"id":\([0-9]*\).*/\1/p')
handle=$(echo "$opened" | field handle)
echo "opened batch $batch; its handle is the capability to use it"

plan='{"tasks": [
  {"module": "sleep", "input": "300", "order": 1},
  {"module": "sleep", "input": "300", "order": 1},
  {"module": "sha256", "input": "200000 qhost", "order": 2, "group": "hashing"},
  {"module": "sha256", "input": "200000 wasm", "order": 2, "group": "hashing"},
  {"module": "wordcount", "input": "one two three\nfour five\n", "order": 3},
  {"module": "echo", "input": "done", "order": 4}
]}'
echo "submitting an ordered plan: 2 sleeps (order 1), 2 hashes sharing a group (order 2), wordcount (3), echo (4)"
api POST "/v1/batches/$batch/tasks" "$handle" "$plan"
echo
api PUT "/v1/batches/$batch/priority" "$handle" '{"priority": 10}' >/dev/null
echo "raised the batch's priority to 10 with its handle"
echo "waiting for the batch..."
api GET "/v1/batches/$batch/wait?timeout=60s" "$handle"
echo
echo
echo "execution log (task, order, group, start, end, outcome):"
api GET "/v1/attempts?batch=$batch" "$handle" | tr '{' '\n' | grep '"task"' |
    sed -n 's/.*"task":\([0-9]*\).*"group":\([^,]*\),"order":\([0-9-]*\),"started_at":\([0-9]*\),"ended_at":\([0-9]*\),"outcome":"\([a-z-]*\)".*/  task \1  order \3  group \2  \4 .. \5  \6/p'
echo
for task in 3 5 6; do
    printf 'output of task %s: ' "$task"
    curl -sS "$url/v1/tasks/$task/output" -H "Authorization: Bearer $handle"
    echo
done
