#!/usr/bin/env bash
# Builds {{name}}.wasm, the task's component, from src/ with componentize-qjs (QuickJS),
# installing it first (npm install) if node_modules does not have it.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules/componentize-qjs ]; then
    npm install --no-audit --no-fund --loglevel=error
fi
# --sync: qhost calls `run` with the plain component ABI, not the async one.
npm run --silent build
