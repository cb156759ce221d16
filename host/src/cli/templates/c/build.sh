#!/usr/bin/env bash
# Builds {{name}}.wasm, the task's component: `wit-bindgen c` generates the bindings of
# wit/ into gen/, clang (with wasi-libc) builds a WASI preview-1 module, and `wasm-tools
# component new` makes it a component with the preview-1 reactor adapter that `qhost
# new` wrote beside this script (the one of qhost's wasmtime).
#
# Needs: clang and lld with the wasm32 target, wasi-libc and the wasm32 builtins (Debian:
# apt-get install clang lld wasi-libc libclang-rt-dev-wasm32); wit-bindgen (cargo install
# wit-bindgen-cli --no-default-features --features c) and wasm-tools (cargo install
# wasm-tools).
set -euo pipefail
cd "$(dirname "$0")"
for tool in clang wit-bindgen wasm-tools; do
    command -v "$tool" >/dev/null || { echo "error: $tool is missing (see build.sh)" >&2; exit 1; }
done
rm -rf gen && mkdir gen
wit-bindgen c --world qhost:task/task --out-dir gen wit >/dev/null
# A reactor: no main; the component's `run` export is the entry point.
clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -I gen \
    -o gen/{{name}}.core.wasm task.c gen/task.c gen/task_component_type.o
wasm-tools component new gen/{{name}}.core.wasm \
    --adapt wasi_snapshot_preview1=wasi_snapshot_preview1.reactor.wasm -o {{name}}.wasm
echo "built {{name}}.wasm" >&2
