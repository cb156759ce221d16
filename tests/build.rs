//! Builds the wasm guests the tests and benchmarks run (`guest-examples/` and
//! `tests/guests/`) for wasm32-wasip2, into `target/guests`, and tells the test code where
//! they are through `QHOST_GUESTS_DIR`.

use std::path::{Path, PathBuf};
use std::process::Command;

const GUEST_WORKSPACES: [&str; 2] = ["../guest-examples", "guests"];
const WASM_TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    // OUT_DIR is target/<profile>/build/<package>-<hash>/out: share one guest build
    // between all profiles.
    let target_dir = out_dir
        .ancestors()
        .nth(4)
        .expect("OUT_DIR lies inside the target directory");
    let guest_target = target_dir.join("guests");

    println!("cargo:rerun-if-changed=../wit");
    for workspace in GUEST_WORKSPACES {
        let workspace = manifest_dir.join(workspace);
        watch(&workspace);
        build(&workspace, &guest_target);
    }
    let guests = guest_target.join(WASM_TARGET).join("release");
    println!("cargo:rustc-env=QHOST_GUESTS_DIR={}", guests.display());
}

/// Reruns this script when a guest's manifest or source changes (not its build output).
fn watch(workspace: &Path) {
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.toml").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.lock").display()
    );
    for entry in std::fs::read_dir(workspace).expect("reading a guest workspace") {
        let crate_dir = entry.expect("reading a guest workspace").path();
        if crate_dir.join("Cargo.toml").exists() {
            println!(
                "cargo:rerun-if-changed={}",
                crate_dir.join("Cargo.toml").display()
            );
            println!("cargo:rerun-if-changed={}", crate_dir.join("src").display());
        }
    }
}

fn build(workspace: &Path, target_dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .arg("build")
        .arg("--release")
        .arg("--locked")
        .arg("--target")
        .arg(WASM_TARGET)
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    // What the outer build set for host code must not leak into the guest build.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        command.env_remove(var);
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build the wasm guests: {e}"));
    if !status.success() {
        panic!(
            "building the wasm guests in {} failed (see the output above); the \
             {WASM_TARGET} target is needed: rustup target add {WASM_TARGET}",
            workspace.display()
        );
    }
}
