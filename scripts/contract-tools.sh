#!/usr/bin/env bash
# Installs the pinned tools that test the API's contract (tests/tests/contract.rs) into the
# target directory: in a virtualenv, schemathesis, which fuzzes a running server against
# its OpenAPI document, and openapi-python-client, which generates a Python client from
# it; with npm, openapi-typescript, openapi-fetch and TypeScript, which generate and
# compile a TypeScript client (as locked in tests/contract/typescript/package-lock.json).
# Safe to rerun: what is installed at the right versions is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
OPENAPI_PYTHON_CLIENT_VERSION=0.29.1

TOOLS="${CARGO_TARGET_DIR:-target}/contract-tools"
VENV="$TOOLS/venv"
NODE_DIR="$TOOLS/node"
TS_DIR=tests/contract/typescript

fail() {
    echo "error: scripts/contract-tools.sh: $*" >&2
    exit 1
}

installed() { # installed PACKAGE VERSION: the virtualenv has PACKAGE at VERSION
    [ "$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null)" = "$2" ]
}

# --- schemathesis and openapi-python-client, in a virtualenv ---
if ! installed schemathesis "$SCHEMATHESIS_VERSION" ||
    ! installed openapi-python-client "$OPENAPI_PYTHON_CLIENT_VERSION"; then
    command -v python3 >/dev/null || fail "python3 is needed (3.10 or later)"
    echo "contract-tools: installing schemathesis $SCHEMATHESIS_VERSION and openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION into $VENV" >&2
    python3 -m venv "$VENV" || fail "python3 -m venv $VENV failed (on Debian: apt-get install python3-venv)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "schemathesis==$SCHEMATHESIS_VERSION" \
        "openapi-python-client==$OPENAPI_PYTHON_CLIENT_VERSION" ||
        fail "pip install into $VENV failed"
    installed schemathesis "$SCHEMATHESIS_VERSION" || fail "schemathesis $SCHEMATHESIS_VERSION does not import"
    installed openapi-python-client "$OPENAPI_PYTHON_CLIENT_VERSION" ||
        fail "openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION does not import"
fi

# --- the TypeScript generator, client and compiler, with npm, as locked ---
stamp="$NODE_DIR/node_modules/.qhost-package-lock.json"
if ! cmp -s "$TS_DIR/package-lock.json" "$stamp"; then
    for tool in node npm; do
        command -v "$tool" >/dev/null ||
            fail "$tool is needed for the TypeScript client (scripts/guest-toolchains.sh installs Node)"
    done
    echo "contract-tools: installing openapi-typescript, openapi-fetch and TypeScript into $NODE_DIR (npm ci)" >&2
    mkdir -p "$NODE_DIR"
    cp "$TS_DIR/package.json" "$TS_DIR/package-lock.json" "$NODE_DIR/"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in $NODE_DIR failed"
    (cd "$NODE_DIR" && node -e 'Promise.all([import("openapi-typescript"), import("openapi-fetch"), import("typescript")]).catch(e => { console.error(e.message); process.exit(1) })') ||
        fail "the TypeScript tools installed in $NODE_DIR but do not load"
    cp "$TS_DIR/package-lock.json" "$stamp"
fi
