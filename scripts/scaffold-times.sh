#!/usr/bin/env bash
# Times what a new author does in each language, on a warm machine (the toolchains of
# scripts/guest-toolchains.sh installed, the package caches filled): `qhost new`, the
# build command it prints, then against a running `qhost serve`: `module add` and
# `submit --wait`, whose output is checked. Prints one line per language:
#
#   scripts/scaffold-times.sh [QHOST] [LANG...]    (default target/release/qhost; rust python js c)
#   rust: qhost new to a served task in 41.3 s (build 40.2 s)
#
# Each project is new, in a folder of its own, with nothing built before it: the Rust
# build compiles the SDK's dependencies (wit-bindgen) as a first build does.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
qhost="${1:-$root/target/release/qhost}"
shift || true
languages=("$@")
[ ${#languages[@]} -gt 0 ] || languages=(rust python js c)
[ -x "$qhost" ] || { echo "error: no qhost binary at $qhost (cargo build --release)" >&2; exit 1; }
qhost="$(cd "$(dirname "$qhost")" && pwd)/$(basename "$qhost")"

work="$(mktemp -d)"
server=""
cleanup() {
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# A server of its own, on a free port, with a data directory of its own.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$qhost" serve --listen "127.0.0.1:$port" --data-dir "$work/data" --workers 2 \
    >"$work/serve.log" 2>&1 &
server=$!
export QHOST_SERVER="http://127.0.0.1:$port"
for _ in $(seq 300); do
    if [ -s "$work/data/admin-token" ] && curl -sf "$QHOST_SERVER/healthz" >/dev/null; then break; fi
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
done
QHOST_TOKEN="$(cat "$work/data/admin-token")"
export QHOST_TOKEN
# componentize-py as scripts/guest-toolchains.sh installs it.
export PATH="$root/guest-examples/python/.venv/bin:$PATH"

now() { date +%s.%N; }
for lang in "${languages[@]}"; do
    name="hello-$lang"
    start=$(now)
    (cd "$work" && "$qhost" new "$name" --lang "$lang") >"$work/$name.txt"
    # The printed commands: `cd DIR`, the build, `qhost run COMPONENT ...`.
    build=$(sed -n 's/^    //p' "$work/$name.txt" | sed -n 2p)
    component=$(sed -n 's/^    //p' "$work/$name.txt" | sed -n 3p | awk '{print $3}')
    built_at=$(now)
    (cd "$work/$name" && sh -c "$build") >"$work/$name.build.log" 2>&1 ||
        { cat "$work/$name.build.log" >&2; echo "error: $lang: \`$build\` failed" >&2; exit 1; }
    build_end=$(now)
    "$qhost" module add "$work/$name/$component" --name "$name" >/dev/null
    output=$("$qhost" submit --module "$name" --input world --wait)
    end=$(now)
    if [ "$output" != "Hello, world!" ]; then
        echo "error: $lang: the task's output was \`$output\`, not \`Hello, world!\`" >&2
        exit 1
    fi
    awk -v lang="$lang" -v s="$start" -v b="$built_at" -v be="$build_end" -v e="$end" \
        'BEGIN { printf "%s: qhost new to a served task in %.1f s (build %.1f s)\n", lang, e - s, be - b }'
done
