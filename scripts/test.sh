#!/usr/bin/env bash
# Runs qhost's whole test suite: unit tests, and integration tests with real wasm guests
# (built by the test crate's build script).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
scripts/guest-toolchains.sh # Python, JavaScript and C toolchains for tests/tests/languages.rs, scaffolds.rs
scripts/contract-tools.sh   # schemathesis, openapi-python-client and the TypeScript client tools for tests/tests/contract.rs
scripts/browser.sh          # Debian's Chromium and ChromeDriver for tests/tests/dashboard*.rs
cargo test --workspace "$@"
