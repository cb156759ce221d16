#!/usr/bin/env bash
# Builds the wordcount example in Python, JavaScript and C, and the fetch example in
# Python, into qhost components:
#
#   guest-examples/build-languages.sh [OUT_DIR]    (default guest-examples/target/languages)
#
# writes wordcount-python.wasm, wordcount-js.wasm (QuickJS), wordcount-js-spidermonkey.wasm,
# wordcount-c.wasm, fetch-python.wasm, wordsum-python.wasm and mapreduce-python.wasm. The toolchains come from
# scripts/guest-toolchains.sh. A component newer than all of its sources is kept; the
# languages build in parallel.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
out="${1:-$here/target/languages}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
wit="$root/wit"
# The adapter version is pinned in one place, the script that fetches it.
adapter_version=$(sed -n 's/^ADAPTER_VERSION=//p' "$root/scripts/guest-toolchains.sh")
adapter="$here/target/tools/wasi_snapshot_preview1.reactor-$adapter_version.wasm"
world=qhost:task/task

missing() {
    echo "error: $1 is missing: run scripts/guest-toolchains.sh" >&2
    exit 1
}

# fresh OUTPUT INPUT...: OUTPUT exists and no INPUT (file or folder) has changed since.
fresh() {
    local output=$1
    shift
    [ -s "$output" ] && [ -z "$(find "$@" "$0" -newer "$output" -print -quit)" ]
}

build_python() {
    [ -x "$here/python/.venv/bin/componentize-py" ] || missing componentize-py
    componentize_python app wordcount-python "$world"
    componentize_python fetch fetch-python qhost:task/task-http
    componentize_python wordsum wordsum-python qhost:task/task-graph
    componentize_python mapreduce mapreduce-python qhost:task/task-spawn
}

# componentize_python MODULE NAME WORLD: python/MODULE.py for WORLD into NAME.wasm, unless
# that is newer than its sources.
componentize_python() {
    local module=$1 name=$2 for_world=$3
    local target="$out/$name.wasm"
    fresh "$target" "$here/python/$module.py" "$wit" && return
    "$here/python/.venv/bin/componentize-py" -d "$wit" -w "$for_world" componentize \
        -p "$here/python" "$module" -o "$target.tmp"
    mv "$target.tmp" "$target"
}

build_javascript() {
    [ -d "$here/javascript/node_modules/componentize-qjs" ] || missing "the JavaScript componentizers (node_modules)"
    fresh "$out/wordcount-js.wasm" "$here/javascript/wordcount.js" "$here/javascript/build.mjs" \
        "$here/javascript/package-lock.json" "$wit" &&
        fresh "$out/wordcount-js-spidermonkey.wasm" "$here/javascript/wordcount.js" "$wit" &&
        return
    node "$here/javascript/build.mjs" "$out"
}

build_c() {
    command -v wit-bindgen >/dev/null || missing wit-bindgen
    command -v wasm-tools >/dev/null || missing wasm-tools
    command -v clang >/dev/null || missing clang
    [ -s "$adapter" ] || missing "the WASI reactor adapter ($adapter)"
    local target="$out/wordcount-c.wasm"
    fresh "$target" "$here/c/wordcount.c" "$wit" && return
    local work
    work="$(mktemp -d)"
    # The generated bindings live next to the build, never in the source folder.
    wit-bindgen c --world "$world" --out-dir "$work" "$wit" >/dev/null
    # A reactor: no main, the component's `run` export is the entry point.
    clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -Werror \
        -I "$work" -o "$work/wordcount.core.wasm" \
        "$here/c/wordcount.c" "$work/task.c" "$work/task_component_type.o"
    wasm-tools component new "$work/wordcount.core.wasm" \
        --adapt "wasi_snapshot_preview1=$adapter" -o "$target.tmp"
    mv "$target.tmp" "$target"
    rm -rf "$work"
}

# Each language logs to its own file, shown only when its build fails.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
languages=(python javascript c)
pids=()
for language in "${languages[@]}"; do
    "build_$language" >"$logs/$language" 2>&1 &
    pids+=("$!")
done
failed=0
for i in "${!languages[@]}"; do
    language=${languages[$i]}
    if ! wait "${pids[$i]}"; then
        echo "error: building the $language example failed:" >&2
        cat "$logs/$language" >&2
        failed=1
    fi
done
[ "$failed" = 0 ] || exit 1
ls "$out"/wordcount-{python,js,js-spidermonkey,c}.wasm "$out"/fetch-python.wasm >/dev/null
