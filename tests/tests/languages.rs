//! Tasks written in Python, JavaScript (QuickJS and SpiderMonkey) and C, run by qhost's
//! runtime: each wordcount returns exactly the bytes the Rust wordcount returns, under the
//! default limits, and its log line reaches the attempt's log.
//!
//! The components are built by guest-examples/build-languages.sh; its toolchains come from
//! scripts/guest-toolchains.sh.

use qhost::runtime::{LogLevel, Outcome, Producers, RunReport, RunRequest, Runtime, RuntimeConfig};
use qhost_tests::{LANGUAGE_GUESTS, guest, language_guest, language_guests};

/// A runtime whose compiled components persist in the target folder, so that only the
/// first test run pays for compiling the large language runtimes.
fn runtime() -> Runtime {
    let mut config = RuntimeConfig::with_workers(1);
    config.cache_dir = Some(language_guests().join("compiled"));
    Runtime::new(config).expect("runtime")
}

/// Inputs that tell the counting rules apart: runs of mixed whitespace, \r\n, form feed
/// (whitespace) against vertical tab and U+00A0 (not whitespace), UTF-8, and raw bytes.
fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut binary: Vec<u8> = (0..=255).collect();
    binary.extend((0..=255u8).rev().map(|b| b.wrapping_mul(7)));
    let long: Vec<u8> = "lorem ipsum\tdolor  sit\namet,\r\nconsectetur \x0c adipiscing\x0belit "
        .repeat(2000)
        .into_bytes();
    vec![
        ("empty", Vec::new()),
        ("one word", b"word".to_vec()),
        (
            "ascii",
            b"  one two\tthree\n\nfour   five \r\n six\x0cseven\x0beight\n\t".to_vec(),
        ),
        (
            "utf-8",
            "na\u{ef}ve caf\u{e9} \u{2014} \u{65e5}\u{672c}\u{8a9e}\u{a0}nbsp\u{3000}ideographic\nend"
                .as_bytes()
                .to_vec(),
        ),
        ("binary", binary),
        ("long", long),
    ]
}

async fn run(rt: &Runtime, module: &qhost::runtime::TaskModule, input: &[u8]) -> RunReport {
    let report = rt
        .run(
            module,
            RunRequest {
                input: input.to_vec(),
                ..RunRequest::default()
            },
        )
        .await
        .expect("run");
    assert_eq!(
        report.outcome,
        Outcome::Succeeded,
        "error: {:?}, stderr: {}",
        report.error,
        String::from_utf8_lossy(&report.stderr.bytes)
    );
    report
}

/// Runs the language's wordcount and the Rust one on every input and compares the outputs
/// byte for byte; checks the log line the language's example writes through the host.
async fn counts_like_rust(stem: &str, log_prefix: &str) {
    let rt = runtime();
    let rust = rt.load_file(&guest("wordcount")).unwrap();
    let other = rt.load_file(&language_guest(stem)).unwrap();
    for (name, input) in inputs() {
        let expected = run(&rt, &rust, &input).await.output.unwrap();
        let report = run(&rt, &other, &input).await;
        assert_eq!(
            String::from_utf8_lossy(report.output.as_deref().unwrap()),
            String::from_utf8_lossy(&expected),
            "{stem} on the {name} input"
        );
        let message = format!("{log_prefix} wordcount: {} bytes", input.len());
        assert!(
            report
                .logs
                .iter()
                .any(|line| line.level == LogLevel::Debug && line.message == message),
            "{stem}: no debug line `{message}` in {:?}",
            report.logs
        );
    }
}

#[test]
fn every_language_guest_is_built() {
    for (_, stem) in LANGUAGE_GUESTS {
        let bytes = std::fs::read(language_guest(stem)).unwrap();
        // A component, not a core module: the version field after `\0asm` is not 1.
        assert!(bytes.starts_with(b"\0asm"), "{stem}");
        assert_ne!(&bytes[4..8], &[1, 0, 0, 0], "{stem} is a core module");
    }
}

/// The Rust guest itself, on a known input: the reference the others are held to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_counts_as_documented() {
    let rt = runtime();
    let rust = rt.load_file(&guest("wordcount")).unwrap();
    let report = run(&rt, &rust, b"one two\nthree\x0bfour\x0c\n").await;
    assert_eq!(
        report.output.as_deref(),
        Some(&br#"{"lines":2,"words":3,"bytes":20}"#[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_counts_like_rust_and_logs() {
    counts_like_rust("wordcount-python", "python").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_quickjs_counts_like_rust_and_logs() {
    counts_like_rust("wordcount-js", "javascript").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_spidermonkey_counts_like_rust_and_logs() {
    counts_like_rust("wordcount-js-spidermonkey", "javascript").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_counts_like_rust_and_logs() {
    counts_like_rust("wordcount-c", "c").await;
}

/// A slot is reused task after task: the interpreters start clean every time, so repeated
/// runs give the same answer (no state leaks between tasks through the warm slot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_starts_fresh_for_every_task() {
    let rt = runtime();
    let python = rt.load_file(&language_guest("wordcount-python")).unwrap();
    for _ in 0..20 {
        let report = run(&rt, &python, b"a b c").await;
        assert_eq!(
            report.output.as_deref(),
            Some(&br#"{"lines":0,"words":3,"bytes":5}"#[..])
        );
        assert_eq!(report.logs.len(), 1, "{:?}", report.logs);
    }
}

/// The languages `GET /v1/modules` shows for each guest: what its `producers` sections
/// name, read at upload. They are those of every part: the C guest names Rust too (the
/// WASI adapter's); the Python and QuickJS components name only their Rust glue, as their
/// interpreter's module names no language.
#[test]
fn every_language_guest_names_what_made_it() {
    let expected = [
        ("wordcount-python", "Rust"),
        ("wordcount-js", "Rust"),
        ("wordcount-js-spidermonkey", "JavaScript"),
        ("wordcount-c", "C99"),
    ];
    for (_, stem) in LANGUAGE_GUESTS {
        let producers = Producers::of(&std::fs::read(language_guest(stem)).unwrap());
        let (_, language) = expected.iter().find(|(s, _)| *s == stem).unwrap();
        assert!(
            producers.languages.iter().any(|l| l == language),
            "{stem}: {producers:?}"
        );
        assert!(
            producers
                .processed_by
                .iter()
                .any(|t| t.starts_with("wit-component ")),
            "{stem}: {producers:?}"
        );
    }
    let spidermonkey =
        Producers::of(&std::fs::read(language_guest("wordcount-js-spidermonkey")).unwrap());
    assert!(
        spidermonkey.languages.contains(&"C++14".to_owned()),
        "{spidermonkey:?}"
    );
}
