#!/usr/bin/env bash
# The main job: builds qhost and the guest examples, then runs example tasks with `qhost run`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --bin qhost
(cd guest-examples && cargo build --release --locked)
qhost=target/release/qhost
guests=guest-examples/target/wasm32-wasip2/release

echo '$ qhost run echo.wasm --input "hello, qhost"'
"$qhost" run "$guests/echo.wasm" --input "hello, qhost"
echo
echo '$ qhost run wordcount.wasm --input-file README.md'
"$qhost" run "$guests/wordcount.wasm" --input-file README.md
echo
echo '$ qhost run sha256.wasm --input "100000 qhost"'
"$qhost" run "$guests/sha256.wasm" --input "100000 qhost"
echo
echo '$ qhost run sleep.wasm --input 200'
"$qhost" run "$guests/sleep.wasm" --input 200
echo
echo '$ qhost run sleep.wasm --input 5000 --timeout 500ms   # exits 1: outcome timeout'
"$qhost" run "$guests/sleep.wasm" --input 5000 --timeout 500ms || echo "(exit code $?)"
