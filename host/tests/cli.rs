//! The `qhost` binary's own commands that need no guest toolchain: `qhost bench` with its
//! embedded echo component, and the refusal of bad arguments. (The tests that run real
//! guests through `qhost run` are in the `qhost-tests` crate.)

use std::process::Command;

fn qhost(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_qhost"))
        .args(args)
        .output()
        .expect("running qhost")
}

#[test]
fn bench_drains_its_tasks_and_reports_throughput() {
    let out = qhost(&[
        "bench",
        "--tasks",
        "300",
        "--workers",
        "2",
        "--groups",
        "3",
        "--batches",
        "2",
        "--orders",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let drained = stdout
        .lines()
        .find(|l| l.starts_with("drained 300 tasks"))
        .expect(&stdout);
    let rate: f64 = drained
        .rsplit(": ")
        .next()
        .unwrap()
        .trim_end_matches(" tasks/s")
        .parse()
        .unwrap();
    assert!(rate > 0.0, "{drained}");
}

#[test]
fn bad_arguments_are_refused_with_the_setting_named() {
    let out = qhost(&["bench", "--tasks", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tasks must be at least 1"));
    let out = qhost(&["run", "missing.wasm", "--input", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading missing.wasm"));
}
