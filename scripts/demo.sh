#!/usr/bin/env bash
# The main job: builds qhost and the guest examples, starts `qhost serve` on the embedded
# SQLite store, and runs a demo plan (guest-examples/demo-plan.toml) through it with the
# `qhost` command line: an ordered batch of the guest examples with a group limit and a
# priority change, then shows the execution log and the outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --bin qhost
(cd guest-examples && cargo build --release --locked)
qhost=target/release/qhost
guests=guest-examples/target/wasm32-wasip2/release
data=$(mktemp -d)
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$data"' EXIT

"$qhost" serve --listen 127.0.0.1:0 --data-dir "$data" --workers 2 >"$data/serve.out" 2>"$data/serve.log" &
server=$!
until grep -q "listening on" "$data/serve.out" 2>/dev/null; do sleep 0.1; done
# The command line finds the server and the admin token through these.
export QHOST_SERVER=$(sed -n 's/^qhost listening on //p' "$data/serve.out")
export QHOST_TOKEN=$(cat "$data/admin-token")
echo "qhost serve is listening on $QHOST_SERVER (data in $data)"
echo

run() { echo "\$ qhost $*"; "$qhost" "$@"; }

for guest in echo sleep sha256 wordcount; do
    run module add "$guests/$guest.wasm" --name "$guest"
done
run group limit hashing 1
echo
echo "the plan: 2 sleeps (order 1), 2 hashes sharing the group (order 2), wordcount (3), echo (4)"
run batch submit guest-examples/demo-plan.toml | tee "$data/submitted"
handle=$(sed -n 's/^handle //p' "$data/submitted")
echo
echo "the handle is the capability to use the batch: it alone raises the batch's priority"
run batch priority "$handle" 10
run batch wait "$handle"
echo
run log --batch "$handle"
echo
for task in $("$qhost" log --batch "$handle" --json | sed -n 's/^{"task":\([0-9]*\).*/\1/p'); do
    printf 'output of task %s: ' "$task"
    "$qhost" task output "$task" --token "$handle"
    echo
done
