#!/usr/bin/env bash
# Builds {{name}}.wasm, the task's component, from src/ with componentize-py (the
# version below): the one on PATH if it is that version, else one installed into .venv.
set -euo pipefail
cd "$(dirname "$0")"
version=0.25.1
componentize=componentize-py
if ! "$componentize" --version 2>/dev/null | grep -qw "$version"; then
    componentize=.venv/bin/componentize-py
    if ! "$componentize" --version 2>/dev/null | grep -qw "$version"; then
        echo "installing componentize-py $version into .venv" >&2
        python3 -m venv .venv
        .venv/bin/python -m pip install --quiet --disable-pip-version-check "componentize-py==$version"
    fi
fi
"$componentize" -d wit -w qhost:task/task componentize -p src app -o {{name}}.wasm.tmp
mv {{name}}.wasm.tmp {{name}}.wasm
echo "built {{name}}.wasm" >&2
