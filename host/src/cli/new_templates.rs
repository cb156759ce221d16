//! The files `qhost new` writes, compiled into the binary: each language's project
//! template (`templates/`), the guest SDKs (`sdk/` at the repository's root) and the
//! `qhost:task` WIT (`wit/`), so that a project made anywhere builds without this
//! repository. The SDKs and the WIT are included from their one place in the tree; a
//! test checks that every file there is listed.

/// A file of a new project: its path inside the project and its contents.
pub struct File {
    pub path: &'static str,
    pub contents: Contents,
    pub executable: bool,
}

pub enum Contents {
    /// A template: `{{name}}` (the project's name) and `{{crate}}` (the name with `_`
    /// for `-`, as Rust names its library) are replaced.
    Template(&'static str),
    /// Text copied as it is (the SDKs, the WIT).
    Text(&'static str),
    Binary(&'static [u8]),
}

macro_rules! text {
    ($path:expr, $source:expr) => {
        File {
            path: $path,
            contents: Contents::Text(include_str!($source)),
            executable: false,
        }
    };
}

macro_rules! template {
    ($path:expr, $source:expr) => {
        File {
            path: $path,
            contents: Contents::Template(include_str!($source)),
            executable: false,
        }
    };
}

macro_rules! script {
    ($path:expr, $source:expr) => {
        File {
            path: $path,
            contents: Contents::Template(include_str!($source)),
            executable: true,
        }
    };
}

/// The `qhost:task` WIT package and its dependencies, under `dir`.
macro_rules! wit {
    ($dir:literal) => {
        [
            text!(concat!($dir, "/task.wit"), "../../../wit/task.wit"),
            text!(concat!($dir, "/deps/cli.wit"), "../../../wit/deps/cli.wit"),
            text!(
                concat!($dir, "/deps/clocks.wit"),
                "../../../wit/deps/clocks.wit"
            ),
            text!(
                concat!($dir, "/deps/filesystem.wit"),
                "../../../wit/deps/filesystem.wit"
            ),
            text!(
                concat!($dir, "/deps/http.wit"),
                "../../../wit/deps/http.wit"
            ),
            text!(concat!($dir, "/deps/io.wit"), "../../../wit/deps/io.wit"),
            text!(
                concat!($dir, "/deps/random.wit"),
                "../../../wit/deps/random.wit"
            ),
            text!(
                concat!($dir, "/deps/sockets.wit"),
                "../../../wit/deps/sockets.wit"
            ),
            text!(
                concat!($dir, "/deps/config/store.wit"),
                "../../../wit/deps/config/store.wit"
            ),
            text!(
                concat!($dir, "/deps/config/world.wit"),
                "../../../wit/deps/config/world.wit"
            ),
        ]
    };
}

/// The number of files in [`wit!`], checked against `wit/` by a test.
#[cfg(test)]
const WIT_FILES: usize = 10;

pub fn rust() -> Vec<File> {
    let mut files = vec![
        template!("Cargo.toml", "templates/rust/Cargo.toml"),
        template!(".cargo/config.toml", "templates/rust/cargo-config.toml"),
        template!(".gitignore", "templates/rust/gitignore"),
        template!("README.md", "templates/rust/README.md"),
        template!("src/lib.rs", "templates/rust/lib.rs"),
    ];
    files.extend(rust_sdk());
    files.extend(wit!("qhost-sdk/qhost-guest/wit"));
    files
}

/// The Rust SDK's crates, as they are in `sdk/rust/` (their WIT aside).
fn rust_sdk() -> [File; 12] {
    [
        text!(
            "qhost-sdk/qhost-guest/Cargo.toml",
            "../../../sdk/rust/qhost-guest/Cargo.toml"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/lib.rs",
            "../../../sdk/rust/qhost-guest/src/lib.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/log.rs",
            "../../../sdk/rust/qhost-guest/src/log.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/output.rs",
            "../../../sdk/rust/qhost-guest/src/output.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/json.rs",
            "../../../sdk/rust/qhost-guest/src/json.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/defer.rs",
            "../../../sdk/rust/qhost-guest/src/defer.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/config.rs",
            "../../../sdk/rust/qhost-guest/src/config.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/graph.rs",
            "../../../sdk/rust/qhost-guest/src/graph.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/http.rs",
            "../../../sdk/rust/qhost-guest/src/http.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest/src/spawn.rs",
            "../../../sdk/rust/qhost-guest/src/spawn.rs"
        ),
        text!(
            "qhost-sdk/qhost-guest-macros/Cargo.toml",
            "../../../sdk/rust/qhost-guest-macros/Cargo.toml"
        ),
        text!(
            "qhost-sdk/qhost-guest-macros/src/lib.rs",
            "../../../sdk/rust/qhost-guest-macros/src/lib.rs"
        ),
    ]
}

pub fn python() -> Vec<File> {
    let mut files = vec![
        template!("src/app.py", "templates/python/app.py"),
        text!("src/qhost.py", "../../../sdk/python/qhost.py"),
        script!("build.sh", "templates/python/build.sh"),
        template!(".gitignore", "templates/python/gitignore"),
        template!("README.md", "templates/python/README.md"),
    ];
    files.extend(wit!("wit"));
    files
}

pub fn javascript() -> Vec<File> {
    let mut files = vec![
        template!("src/task.js", "templates/javascript/task.js"),
        text!("src/qhost.js", "../../../sdk/javascript/qhost.js"),
        text!("src/main.js", "../../../sdk/javascript/main.js"),
        template!("package.json", "templates/javascript/package.json"),
        script!("build.sh", "templates/javascript/build.sh"),
        template!(".gitignore", "templates/javascript/gitignore"),
        template!("README.md", "templates/javascript/README.md"),
    ];
    files.extend(wit!("wit"));
    files
}

pub fn c() -> Vec<File> {
    let mut files = vec![
        template!("task.c", "templates/c/task.c"),
        script!("build.sh", "templates/c/build.sh"),
        template!(".gitignore", "templates/c/gitignore"),
        template!("README.md", "templates/c/README.md"),
        File {
            path: "wasi_snapshot_preview1.reactor.wasm",
            contents: Contents::Binary(
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
            ),
            executable: false,
        },
    ];
    files.extend(wit!("wit"));
    files
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    /// Every file under `dir` (relative to the repository's root), but READMEs, which
    /// document the folder rather than belong to what is copied.
    fn files_under(dir: &str) -> Vec<PathBuf> {
        fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.file_name().unwrap() != "README.md" {
                    found.push(path);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut found = Vec::new();
        walk(&root.join(dir), &mut found);
        found
    }

    /// A file added to the WIT or to an SDK is written into new projects too: the lists
    /// above name every one.
    #[test]
    fn every_wit_and_sdk_file_is_embedded() {
        assert_eq!(
            files_under("wit").len(),
            WIT_FILES,
            "a file in wit/ is not in wit!"
        );
        let sdk: Vec<String> = rust_sdk()
            .iter()
            .map(|f| f.path.replacen("qhost-sdk/", "sdk/rust/", 1))
            .chain(["sdk/python/qhost.py".into()])
            .chain([
                "sdk/javascript/qhost.js".into(),
                "sdk/javascript/main.js".into(),
            ])
            .collect();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for dir in [
            "sdk/rust/qhost-guest/src",
            "sdk/rust/qhost-guest-macros/src",
            "sdk/python",
            "sdk/javascript",
        ] {
            for path in files_under(dir) {
                let relative = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                assert!(
                    sdk.contains(&relative),
                    "{relative} is not written by `qhost new`"
                );
            }
        }
    }

    /// The SDKs are versioned with the WIT package they carry: the Rust crates' version
    /// is the `qhost:task` package's.
    #[test]
    fn the_rust_sdk_has_the_wit_packages_version() {
        let wit = include_str!("../../../wit/task.wit");
        let package = wit
            .lines()
            .find_map(|line| line.strip_prefix("package qhost:task@"))
            .and_then(|rest| rest.strip_suffix(';'))
            .expect("wit/task.wit names its package");
        for file in rust_sdk().iter().filter(|f| f.path.ends_with("Cargo.toml")) {
            let Contents::Text(manifest) = file.contents else {
                unreachable!()
            };
            assert!(
                manifest.contains(&format!("\nversion = \"{package}\"")),
                "{} is not at version {package}",
                file.path
            );
        }
    }

    /// A new project builds with the toolchain versions the examples are built and tested
    /// with (scripts/guest-toolchains.sh, guest-examples/javascript/package.json).
    #[test]
    fn the_projects_pin_the_examples_toolchains() {
        let toolchains = include_str!("../../../scripts/guest-toolchains.sh");
        let componentize_py = toolchains
            .lines()
            .find_map(|line| line.strip_prefix("COMPONENTIZE_PY_VERSION="))
            .expect("guest-toolchains.sh pins componentize-py");
        assert!(
            include_str!("templates/python/build.sh")
                .contains(&format!("\nversion={componentize_py}\n")),
            "templates/python/build.sh does not pin componentize-py {componentize_py}"
        );
        let examples = include_str!("../../../guest-examples/javascript/package.json");
        let qjs = examples
            .lines()
            .find(|line| line.contains("\"componentize-qjs\":"))
            .expect("the examples' package.json names componentize-qjs")
            .trim()
            .trim_end_matches(',');
        assert!(
            include_str!("templates/javascript/package.json").contains(qjs),
            "templates/javascript/package.json does not pin {qjs}"
        );
    }
}
