#!/usr/bin/env bash
# Runs qhost's whole test suite: unit tests, and integration tests with real wasm guests
# (built by the test crate's build script).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo test --workspace "$@"
