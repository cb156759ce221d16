#!/usr/bin/env bash
# The benchmark suite: every figure of benches/targets.toml beside its target, in one table.
# Arguments as scripts/bench_suite.py takes them (`--help`).
set -euo pipefail
unset RUST_BACKTRACE RUST_LIB_BACKTRACE
exec python3 "$(dirname "$0")/bench_suite.py" "$@"
