#!/usr/bin/env bash
# Installs the pinned tools that test the API's contract (tests/tests/contract.rs) into a
# virtualenv in the target directory: schemathesis, which fuzzes a running server against
# its OpenAPI document, and openapi-python-client, which generates a client from it.
# Safe to rerun: a virtualenv that has both at the right versions is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
OPENAPI_PYTHON_CLIENT_VERSION=0.29.1

VENV="${CARGO_TARGET_DIR:-target}/contract-tools/venv"

fail() {
    echo "error: scripts/contract-tools.sh: $*" >&2
    exit 1
}

installed() { # installed PACKAGE VERSION: the virtualenv has PACKAGE at VERSION
    [ "$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null)" = "$2" ]
}

if installed schemathesis "$SCHEMATHESIS_VERSION" &&
    installed openapi-python-client "$OPENAPI_PYTHON_CLIENT_VERSION"; then
    exit 0
fi
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
