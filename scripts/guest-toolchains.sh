#!/usr/bin/env bash
# Installs the pinned toolchains that build the Python, JavaScript and C guest examples
# (guest-examples/build-languages.sh). Safe to rerun: what is already installed at the
# right version is left alone, so a run with everything present takes well under a second.
# Fails with a non-zero exit and a message when anything cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

COMPONENTIZE_PY_VERSION=0.25.1
WIT_BINDGEN_VERSION=0.63.0
WASM_TOOLS_VERSION=1.263.0
# The WASI preview-1 adapter that turns the C module into a component; its version follows
# wasmtime's (host/Cargo.toml), whose WASI 0.2 interfaces it imports.
ADAPTER_VERSION=48.0.8
# Debian's clang and lld (wasm32 target), wasi-libc and the wasm32 compiler builtins.
APT_PACKAGES=(clang lld wasi-libc libclang-rt-dev-wasm32)
# componentize-js and componentize-qjs are pinned by guest-examples/javascript/package-lock.json.

PY_VENV=guest-examples/python/.venv
JS_DIR=guest-examples/javascript
TOOLS_DIR=guest-examples/target/tools
ADAPTER="$TOOLS_DIR/wasi_snapshot_preview1.reactor-$ADAPTER_VERSION.wasm"

fail() {
    echo "error: scripts/guest-toolchains.sh: $*" >&2
    exit 1
}
say() { echo "guest-toolchains: $*" >&2; }
# has_version VERSION COMMAND...: COMMAND runs and prints VERSION as a word.
has_version() {
    local version=$1 out
    shift
    out=$("$@" 2>/dev/null) || return 1
    [[ " $out " =~ [[:space:]]v?${version//./\\.}[[:space:]] ]]
}

# --- Debian packages: the C toolchain, and Python or Node when the machine has none ---
missing=()
for package in "${APT_PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$package")
    fi
done
command -v python3 >/dev/null || missing+=(python3)
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then missing+=(python3-venv); fi
# The JavaScript tools were tested with Node 20 (some of their packages ask for 20 or
# later); where Node is missing, Debian 12's nodejs (18) is what can be installed.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
    say "installing Debian packages: ${missing[*]}"
    command -v apt-get >/dev/null || fail "apt-get is needed to install ${missing[*]}"
    sudo=()
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || fail "root (or sudo) is needed to install ${missing[*]}"
        sudo=(sudo)
    fi
    # The package lists are fetched only when something is missing.
    "${sudo[@]}" apt-get update -qq || fail "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null ||
        fail "apt-get install ${missing[*]} failed"
fi
echo 'int main(void) { return 0; }' | clang --target=wasm32-wasi -x c -o /dev/null - 2>/dev/null ||
    fail "clang cannot build for wasm32-wasi (packages ${APT_PACKAGES[*]})"

# --- Rust command-line tools from crates.io, pinned ---
cargo_tool() { # cargo_tool BINARY CRATE VERSION [cargo install options...]
    local binary=$1 crate=$2 version=$3
    shift 3
    has_version "$version" "$binary" --version && return
    say "installing $crate $version (cargo install, a few minutes)"
    cargo install --quiet --locked "$crate" --version "$version" "$@" ||
        fail "cargo install $crate $version failed"
    has_version "$version" "$binary" --version ||
        fail "$binary $version was installed but \`$binary --version\` does not say so; is ~/.cargo/bin first on PATH?"
}
command -v cargo >/dev/null || fail "cargo is needed: install Rust from https://rustup.rs"
# Only what the builds use (the C generator; component new, validate, print): far less to
# compile than the default features.
cargo_tool wit-bindgen wit-bindgen-cli "$WIT_BINDGEN_VERSION" --no-default-features --features c
cargo_tool wasm-tools wasm-tools "$WASM_TOOLS_VERSION" \
    --no-default-features --features component,validate,print,parse,metadata

# --- The WASI preview-1 reactor adapter, from the crate that bundles it ---
if [ ! -s "$ADAPTER" ]; then
    say "fetching the WASI adapter of wasi-preview1-component-adapter-provider $ADAPTER_VERSION"
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    cat >"$scratch/Cargo.toml" <<EOF
[package]
name = "adapter-fetch"
version = "0.0.0"
edition = "2021"
[lib]
path = "lib.rs"
[dependencies]
wasi-preview1-component-adapter-provider = "=$ADAPTER_VERSION"
EOF
    touch "$scratch/lib.rs"
    # `cargo metadata` downloads (and checks) the crate and says where its source is.
    manifest=$(cargo metadata --quiet --format-version 1 --manifest-path "$scratch/Cargo.toml" |
        python3 -c 'import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "wasi-preview1-component-adapter-provider":
        print(p["manifest_path"])') || fail "could not fetch wasi-preview1-component-adapter-provider $ADAPTER_VERSION"
    source="$(dirname "$manifest")/artefacts/wasi_snapshot_preview1.reactor.wasm"
    [ -s "$source" ] || fail "the adapter crate has no $source"
    mkdir -p "$TOOLS_DIR"
    cp "$source" "$ADAPTER.tmp" && mv "$ADAPTER.tmp" "$ADAPTER"
fi

# --- componentize-py in a virtualenv of its own ---
if ! has_version "$COMPONENTIZE_PY_VERSION" "$PY_VENV/bin/componentize-py" --version; then
    say "installing componentize-py $COMPONENTIZE_PY_VERSION into $PY_VENV"
    python3 -m venv "$PY_VENV" || fail "python3 -m venv $PY_VENV failed"
    "$PY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "componentize-py==$COMPONENTIZE_PY_VERSION" ||
        fail "pip install componentize-py==$COMPONENTIZE_PY_VERSION failed"
    has_version "$COMPONENTIZE_PY_VERSION" "$PY_VENV/bin/componentize-py" --version ||
        fail "componentize-py $COMPONENTIZE_PY_VERSION does not run"
fi

# --- componentize-js and componentize-qjs, as locked in package-lock.json ---
stamp="$JS_DIR/node_modules/.qhost-package-lock.json"
if ! cmp -s "$JS_DIR/package-lock.json" "$stamp"; then
    say "installing the JavaScript componentizers (npm install in $JS_DIR)"
    # Not `npm ci`: it refuses a lock file that leaves out platform packages the registry
    # does not have (some optional native bindings), while `npm install` takes the locked
    # versions as they are.
    (cd "$JS_DIR" && npm install --no-save --no-audit --no-fund --loglevel=error) ||
        fail "npm install in $JS_DIR failed"
    # componentize-qjs is a native module shipped per platform: check that it loads here.
    (cd "$JS_DIR" && node -e 'Promise.all([import("componentize-qjs"), import("@bytecodealliance/componentize-js")]).catch(e => { console.error(e.message); process.exit(1) })') ||
        fail "the JavaScript componentizers installed but do not load on this platform"
    cp "$JS_DIR/package-lock.json" "$stamp"
fi
