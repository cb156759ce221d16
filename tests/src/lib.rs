//! Helpers shared by qhost's integration tests and benchmarks: where the wasm guests and
//! the `qhost` binary are; a running `qhost serve` ([`server`]), and one named node of
//! several driven over HTTP ([`serve_node`]); a store that fails on demand ([`faulty`]); a
//! webhook receiver ([`hook_receiver`]);
//! randomized workloads and the rules checked over their logs ([`workload`]); an OTLP
//! receiver for the trace tests ([`otlp_receiver`]); inputs and
//! component variants for the runtime's tests and benchmarks.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

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

/// The wordcount example in each other language: (name, component file stem).
pub const LANGUAGE_GUESTS: [(&str, &str); 4] = [
    ("python", "wordcount-python"),
    ("javascript (QuickJS)", "wordcount-js"),
    ("javascript (SpiderMonkey)", "wordcount-js-spidermonkey"),
    ("c", "wordcount-c"),
];

/// The folder of the Python, JavaScript and C wordcount components, built once per process
/// by `guest-examples/build-languages.sh` (which keeps components that are up to date).
pub fn language_guests() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = PathBuf::from(env!("QHOST_GUESTS_DIR")).join("../../languages");
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-examples/build-languages.sh");
        let result = Command::new("bash")
            .arg(&script)
            .arg(&out)
            .output()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", script.display()));
        assert!(
            result.status.success(),
            "building the Python, JavaScript and C guests failed; install their toolchains \
             with scripts/guest-toolchains.sh\n{}",
            String::from_utf8_lossy(&result.stderr)
        );
        out
    })
}

/// The component of one of [`LANGUAGE_GUESTS`], built on first use.
pub fn language_guest(stem: &str) -> PathBuf {
    let path = language_guests().join(format!("{stem}.wasm"));
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// A copy of `component` grown past the size up to which qhost copies a component's data
/// into each instance (1 MiB), by a custom section that changes nothing else: loaded, it
/// runs on the engine that maps memory images copy-on-write instead.
pub fn padded_to_map_images(component: &[u8]) -> Vec<u8> {
    const PAD: usize = (1 << 20) + 1024;
    const NAME: &[u8] = b"qhost-test-padding";
    let mut section = leb128(NAME.len());
    section.extend_from_slice(NAME);
    section.resize(section.len() + PAD, 0);
    let mut out = component.to_vec();
    out.push(0); // a custom section
    out.extend(leb128(section.len()));
    out.extend(section);
    out
}

fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// A Markdown document of about `bytes` bytes with the usual mix (headings, paragraphs
/// with emphasis, links and code, lists, a table, a code block), the same for every call.
pub fn markdown_document(bytes: usize) -> String {
    let mut doc = String::new();
    let mut section = 0;
    while doc.len() < bytes {
        section += 1;
        doc.push_str(&format!(
            "## Section {section}: *durable* tasks\n\n\
             A task is a **sandboxed** component; it runs on a [slot](https://example.com/{section}) \
             and its `output` is kept. Retries follow the ~~old~~ batch's policy[^{section}].\n\n\
             - first item with `code` and _emphasis_\n\
             - second item, [a link](https://example.com/a?b={section})\n  \
             - nested item\n\
             - [x] a finished step\n\n\
             | name | state | attempts |\n|---|---|--:|\n| task {section} | done | 1 |\n| task {} | ready | 0 |\n\n\
             ```rust\nfn main() {{ println!(\"{section}\"); }}\n```\n\n\
             > A quote with <b>inline html</b> & entities &copy;.\n\n\
             [^{section}]: A footnote.\n\n",
            section + 1
        ));
    }
    doc
}

/// A small deterministic generator: randomized workloads differ per round and are
/// reproducible from their seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `tasks` as a server with the default bounds admits them (none: an empty batch's). The
/// store takes only admitted tasks; its own tests pass the same checks.
pub fn admitted(tasks: Vec<qhost::store::TaskSpec>) -> qhost::store::Admitted {
    if tasks.is_empty() {
        return qhost::store::Admitted::none();
    }
    let config = qhost::runtime::RuntimeConfig::with_workers(1);
    qhost::scheduler::admit::admit(&config, tasks).expect("the tasks pass the checks")
}

pub mod conformance;
pub mod faulty;
pub mod harness;
pub mod hook_receiver;
pub mod origin_server;
pub mod otlp_receiver;
pub mod pg;
pub mod serve_node;
pub mod server;
pub mod workload;
