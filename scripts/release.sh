#!/usr/bin/env bash
# Builds qhost's release artifacts and tests them, as a user would run them:
#
# - the static binary (x86_64-unknown-linux-musl, the release profile: no debug info, no
#   symbols), which runs on any x86_64 Linux, checked static with `file` and `ldd`;
#   it serves, runs a task and stops cleanly on SIGTERM (exit 0);
# - the container image (deploy/Containerfile: FROM scratch, the static binary alone),
#   run with its data on a volume: it becomes healthy by its own health check, runs a task
#   submitted from the host, and stops with exit 0.
#
# Usage: scripts/release.sh [--no-image]
#   --no-image  build and test the static binary only (where no container engine runs)
#
# Installs what is missing (the musl target with rustup; musl-gcc, for SQLite's and ring's
# C code, with apt-get) and fails loudly when it cannot. The artifacts end in
# $CARGO_TARGET_DIR/release-artifacts (by default target/release-artifacts): `qhost`, and
# `qhost-VERSION-x86_64-linux-musl.tar.gz`; the image is tagged qhost:VERSION.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

image=yes
for arg in "$@"; do
    case "$arg" in
    --no-image) image=no ;;
    *)
        echo "usage: scripts/release.sh [--no-image]" >&2
        exit 2
        ;;
    esac
done

fail() {
    echo "release: $*" >&2
    exit 1
}
step() { echo "== $*"; }

target=x86_64-unknown-linux-musl
target_dir=${CARGO_TARGET_DIR:-target}
out=$target_dir/release-artifacts
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || fail "no version found in Cargo.toml"

step "tools"
if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target" || fail "could not add the Rust target $target"
fi
if ! command -v musl-gcc >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        apt-get update -q && apt-get install -y -q musl-tools ||
            fail "could not install musl-tools (musl-gcc) with apt-get"
    else
        fail "musl-gcc is needed to build SQLite's and ring's C code for $target: install \
your system's musl tools (Debian and Ubuntu: apt-get install musl-tools)"
    fi
fi
if [ "$image" = yes ] && ! docker info >/dev/null 2>&1; then
    fail "no container engine answers \`docker info\`: start one (dockerd), or run \
scripts/release.sh --no-image to build and test the static binary alone"
fi

step "the static binary: cargo build --release --target $target"
started=$(date +%s)
cargo build --locked --release --target "$target" -p qhost
echo "built in $(($(date +%s) - started)) s"
bin=$target_dir/$target/release/qhost
mkdir -p "$out"
cp "$bin" "$out/qhost"
bin=$out/qhost

step "static?"
described=$(file -b "$bin")
echo "file: $described"
case "$described" in
*"statically linked"* | *"static-pie linked"*) ;;
*) fail "$bin is not statically linked: $described" ;;
esac
linked=$(ldd "$bin" 2>&1 || true)
echo "ldd: $linked"
case "$linked" in
*"not a dynamic executable"* | *"statically linked"*) ;;
*) fail "ldd finds dynamic dependencies in $bin: $linked" ;;
esac
echo "size: $(stat -c %s "$bin") bytes"

step "the systemd unit: deploy/qhost.service"
if command -v systemd-analyze >/dev/null; then
    # Checked as installed, with this binary in its place.
    sed "s#/usr/local/bin/qhost#$(realpath "$bin")#" deploy/qhost.service >"$out/qhost.service"
    systemd-analyze verify "$out/qhost.service" || fail "systemd-analyze verify found faults"
    rm "$out/qhost.service"
    echo "systemd-analyze verify: no faults"
else
    echo "systemd-analyze is not installed: the unit is not checked"
fi

step "a task to run: guest-examples/echo"
(cd guest-examples && env -u CARGO_TARGET_DIR cargo build --release --locked -p echo)
echo_wasm=guest-examples/target/wasm32-wasip2/release/echo.wasm
[ -f "$echo_wasm" ] || fail "the echo example was not built at $echo_wasm"

work=$(mktemp -d)
server=
container=
volume=
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    if [ -n "$container" ]; then docker rm -f "$container" >/dev/null 2>&1 || true; fi
    if [ -n "$volume" ]; then docker volume rm "$volume" >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# Runs a task through the server at $1 with token $2, with the static binary as client;
# it must print the input back.
run_task() {
    local url=$1 token=$2
    QHOST_SERVER=$url QHOST_TOKEN=$token "$bin" module add "$echo_wasm" --name echo >/dev/null ||
        fail "module add failed against $url"
    local output
    output=$(QHOST_SERVER=$url QHOST_TOKEN=$token "$bin" submit --module echo \
        --input "static hello" --wait) || fail "the task failed against $url"
    [ "$output" = "static hello" ] || fail "the task printed '$output', not 'static hello'"
    echo "a task ran: $output"
}

step "the static binary serves, runs a task and stops on SIGTERM"
"$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --workers 1 \
    >"$work/serve.out" 2>"$work/serve.log" &
server=$!
for _ in $(seq 600); do
    grep -q "^qhost listening on" "$work/serve.out" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || fail "qhost serve exited: $(cat "$work/serve.log")"
    sleep 0.1
done
url=$(sed -n 's/^qhost listening on //p' "$work/serve.out")
[ -n "$url" ] || fail "qhost serve did not say where it listens within a minute"
"$bin" health --ready --server "$url" || fail "the server is not ready"
run_task "$url" "$(cat "$work/data/admin-token")"
kill -TERM "$server"
code=0
wait "$server" || code=$?
server=
[ "$code" = 0 ] || fail "qhost serve exited $code on SIGTERM: $(tail -5 "$work/serve.log")"
echo "stopped on SIGTERM with exit 0"

if [ "$image" = yes ]; then
    step "the container image: deploy/Containerfile"
    context=$work/image
    mkdir -p "$context/data"
    chmod 700 "$context/data"
    cp "$bin" "$context/qhost"
    docker build -f deploy/Containerfile -t "qhost:$version" "$context"
    echo "image size: $(docker image inspect -f '{{.Size}}' "qhost:$version") bytes"

    step "the image serves from a volume, becomes healthy, runs a task, stops with exit 0"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    token=release-test-$(date +%s%N)
    volume=qhost-release-test-$$
    docker volume create "$volume" >/dev/null
    # The host's network: the test reaches it on 127.0.0.1 alone. The health check is
    # the image's own, asked every second rather than every 10 s.
    container=$(docker run -d --network host --volume "$volume:/data" \
        --env QHOST_LISTEN="127.0.0.1:$port" --env QHOST_SERVER="http://127.0.0.1:$port" \
        --env QHOST_ADMIN_TOKEN="$token" --health-interval 1s "qhost:$version")
    health=
    for _ in $(seq 120); do
        health=$(docker inspect -f '{{.State.Health.Status}}' "$container")
        [ "$health" = healthy ] && break
        [ "$(docker inspect -f '{{.State.Running}}' "$container")" = true ] ||
            fail "the container stopped: $(docker logs "$container" 2>&1 | tail -5)"
        sleep 0.5
    done
    [ "$health" = healthy ] || fail "the container is $health after a minute"
    echo "health: $health"
    run_task "http://127.0.0.1:$port" "$token"
    docker stop --time 30 "$container" >/dev/null
    code=$(docker inspect -f '{{.State.ExitCode}}' "$container")
    [ "$code" = 0 ] || fail "the container exited $code: $(docker logs "$container" 2>&1 | tail -5)"
    echo "stopped with exit 0"
fi

step "artifacts"
tar -czf "$out/qhost-$version-x86_64-linux-musl.tar.gz" -C "$out" qhost
ls -l "$out"
