//! Helpers shared by qhost's integration tests and benchmarks: where the wasm guests and
//! the `qhost` binary are.

use std::path::PathBuf;

/// The component built from the guest crate `name` (`echo`, `misbehave`, ...).
pub fn guest(name: &str) -> PathBuf {
    let path =
        PathBuf::from(env!("QHOST_GUESTS_DIR")).join(format!("{}.wasm", name.replace('-', "_")));
    assert!(
        path.exists(),
        "guest {name} was not built: {} is missing",
        path.display()
    );
    path
}

/// The `qhost` binary of this build (`cargo test --workspace` builds it).
pub fn qhost_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test> -> target/<profile>/qhost
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a target directory");
    let path = profile_dir.join(format!("qhost{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`, which builds it",
        path.display()
    );
    path
}
