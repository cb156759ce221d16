# Sourced by the other scripts: checks for the Rust toolchain and adds the wasm target.
if ! command -v cargo >/dev/null || ! command -v rustup >/dev/null; then
    echo "error: cargo and rustup are needed; install Rust from https://rustup.rs" >&2
    exit 1
fi
if ! rustup target list --installed | grep -qx wasm32-wasip2; then
    rustup target add wasm32-wasip2
fi
