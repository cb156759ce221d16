//! `qhost run` as an author uses it: output on stdout, diagnostics on stderr, and an exit
//! code that says how the task ended.

use std::process::{Command, Output};

use qhost_tests::{guest, qhost_binary};

fn qhost(args: &[&str]) -> Output {
    let cache = tempfile::tempdir().unwrap();
    Command::new(qhost_binary())
        .args(args)
        .env("QHOST_CACHE_DIR", cache.path())
        .output()
        .expect("running qhost")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn prints_the_output_of_a_successful_task() {
    let wordcount = guest("wordcount");
    let out = qhost(&[
        "run",
        wordcount.to_str().unwrap(),
        "--input",
        "one two\nthree\n",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"lines":2,"words":3,"bytes":14}"#);
}

#[test]
fn reads_the_input_from_a_file_or_stdin() {
    let echo = guest("echo");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.bin");
    std::fs::write(&input, [0u8, 1, 2, 255]).unwrap();
    let out = qhost(&[
        "run",
        echo.to_str().unwrap(),
        "--input-file",
        input.to_str().unwrap(),
    ]);
    assert_eq!(out.stdout, [0u8, 1, 2, 255]);

    let mut child = Command::new(qhost_binary())
        .args(["run", echo.to_str().unwrap(), "--no-cache"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.stdout, b"from stdin");
}

#[test]
fn a_failed_task_exits_1_with_its_outcome() {
    let misbehave = guest("misbehave");
    let out = qhost(&["run", misbehave.to_str().unwrap(), "--input", "error"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("outcome `guest-error`: asked to fail"),
        "{}",
        stderr(&out)
    );

    let out = qhost(&[
        "run",
        misbehave.to_str().unwrap(),
        "--input",
        "spin",
        "--timeout",
        "200ms",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("outcome `timeout`"),
        "{}",
        stderr(&out)
    );

    let out = qhost(&[
        "run",
        misbehave.to_str().unwrap(),
        "--input",
        "alloc",
        "--memory",
        "16MiB",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("outcome `memory-limit`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn logs_and_captured_output_go_to_stderr() {
    let sleep = guest("sleep");
    let out = qhost(&["run", sleep.to_str().unwrap(), "--input", "1"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, b"slept 1 ms");
    assert!(stderr(&out).contains("[info"), "{}", stderr(&out));
    assert!(stderr(&out).contains("sleeping 1 ms"), "{}", stderr(&out));
}

#[test]
fn mounts_a_directory_for_the_task() {
    let misbehave = guest("misbehave");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "mounted").unwrap();
    let mount = format!("data={}", dir.path().display());
    let out = qhost(&[
        "run",
        misbehave.to_str().unwrap(),
        "--mount",
        &mount,
        "--input",
        "read:/data/in.txt",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, b"mounted");
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let not_wasm = dir.path().join("task.wasm");
    std::fs::write(&not_wasm, "hello").unwrap();
    let out = qhost(&["run", not_wasm.to_str().unwrap(), "--input", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not a WebAssembly file"),
        "{}",
        stderr(&out)
    );

    let echo = guest("echo");
    let out = qhost(&["run", echo.to_str().unwrap(), "--timeout", "soon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`soon` is not a duration"),
        "{}",
        stderr(&out)
    );

    let out = qhost(&[
        "run",
        echo.to_str().unwrap(),
        "--memory",
        "64GiB",
        "--input",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("limit `memory`"), "{}", stderr(&out));

    let out = qhost(&["run", echo.to_str().unwrap(), "--mount", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("NAME=DIR"), "{}", stderr(&out));
}
