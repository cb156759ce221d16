//! `qhost new` in each language, as a new author uses it: the project it writes builds
//! with the command it prints, and the component passes `qhost run` as printed: it greets
//! its input, writes its log line through the SDK, and fails an empty input with the
//! outcome `guest-error` and the message the template gives. Then the task is rewritten
//! to use the SDK's JSON input and output, and an error the author did not expect (a
//! Python `KeyError`, a JavaScript `TypeError`) must end the attempt as `guest-error`
//! with its message, not trap. The JavaScript SDK is held to the same under SpiderMonkey
//! (componentize-js), whose ids are BigInts and which traps on a thrown `Error` by itself.
//! The Rust SDK's children, inputs, settings and HTTP run through a server.
//!
//! The toolchains are those of scripts/guest-toolchains.sh: componentize-py from the
//! examples' virtualenv, npm (the project installs componentize-qjs itself), clang,
//! wit-bindgen and wasm-tools on PATH, and the C adapter written by `qhost new`. The Rust
//! project builds into the guests' target folder, so that wit-bindgen is compiled once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qhost_tests::qhost_binary;

/// What `qhost new` printed, read as an author reads it.
struct Printed {
    /// The line after `cd`: the command that builds the component.
    build: String,
    /// The component `qhost run` is shown with, relative to the project.
    component: String,
    /// The `qhost run` line's arguments after the component.
    run_args: Vec<String>,
}

fn read_printed(stdout: &str) -> Printed {
    let commands: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("    "))
        .collect();
    assert!(commands[0].starts_with("cd "), "{stdout}");
    let run: Vec<String> = commands[2].split_whitespace().map(str::to_string).collect();
    assert_eq!(&run[..2], ["qhost", "run"], "{stdout}");
    Printed {
        build: commands[1].to_string(),
        component: run[2].clone(),
        run_args: run[3..].to_vec(),
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The guests' target folder (`target/guests`), shared with the Rust scaffold's build.
fn guests_target() -> PathBuf {
    PathBuf::from(env!("QHOST_GUESTS_DIR")).join("../..")
}

fn check(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A project `qhost new` wrote and built, in a folder of its own.
struct Built {
    work: tempfile::TempDir,
    project: PathBuf,
    component: PathBuf,
    printed: Printed,
}

impl Built {
    fn run(&self, args: &[&str]) -> Output {
        qhost_run(self.work.path(), &self.component, args)
    }
}

/// `qhost run COMPONENT ARGS...`, with the compiled components cached in `work`.
fn qhost_run(work: &Path, component: &Path, args: &[&str]) -> Output {
    Command::new(qhost_binary())
        .arg("run")
        .arg(component)
        .args(args)
        .arg("--cache-dir")
        .arg(work.join("cache"))
        .output()
        .unwrap()
}

/// `qhost new NAME --lang LANG` in a fresh folder: the folder, the project in it, and
/// what it printed.
fn new_project(name: &str, lang: &str) -> (tempfile::TempDir, PathBuf, Printed) {
    let work = tempfile::tempdir().unwrap();
    let output = Command::new(qhost_binary())
        .args(["new", name, "--lang", lang])
        .current_dir(work.path())
        .output()
        .unwrap();
    check(&output, "qhost new");
    let printed = read_printed(&String::from_utf8(output.stdout).unwrap());
    let project = work.path().join(name);
    (work, project, printed)
}

/// A new project, built with the command `qhost new` printed. Each test has its own
/// NAME: the Rust projects share a target folder.
fn new_and_build(name: &str, lang: &str) -> Built {
    let (work, project, printed) = new_project(name, lang);

    let mut component = project.join(&printed.component);
    if lang == "rust" {
        let in_target = Path::new(&printed.component)
            .strip_prefix("target")
            .expect("the Rust component is under target/");
        component = guests_target().join(in_target);
    }
    let output = build(&project, lang, &printed).output().unwrap();
    check(
        &output,
        &format!(
            "`{}` (install the toolchains with scripts/guest-toolchains.sh)",
            printed.build
        ),
    );
    assert!(component.exists(), "{} was not built", component.display());
    Built {
        work,
        project,
        component,
        printed,
    }
}

/// The printed build command, run in the project with the toolchains found: the Rust
/// build in the guests' target folder, componentize-py from the examples' virtualenv.
fn build(project: &Path, lang: &str, printed: &Printed) -> Command {
    let mut build = Command::new("sh");
    build.arg("-c").arg(&printed.build).current_dir(project);
    // What the test's own build set must not leak into the project's.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        build.env_remove(var);
    }
    if lang == "rust" {
        build.env("CARGO_TARGET_DIR", guests_target());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![repo().join("guest-examples/python/.venv/bin")];
    paths.extend(std::env::split_paths(&path));
    build.env("PATH", std::env::join_paths(paths).unwrap());
    build
}

/// A task that reads `{"text": ...}` with the SDK's JSON helper and answers
/// `{"attempt": A, "words": W}` as JSON; the file it replaces in the project.
fn json_task(lang: &str) -> (&'static str, &'static str) {
    match lang {
        "rust" => (
            "src/lib.rs",
            r#"
use std::collections::BTreeMap;
use qhost_guest::{Json, TaskInfo};

#[qhost_guest::task]
fn run(input: &[u8], info: &TaskInfo) -> Result<Json<BTreeMap<String, u64>>, String> {
    let request: BTreeMap<String, String> = qhost_guest::json(input)?;
    let text = request.get("text").ok_or("no text in the request")?;
    let mut reply = BTreeMap::new();
    reply.insert("attempt".to_string(), u64::from(info.attempt));
    reply.insert("words".to_string(), text.split_whitespace().count() as u64);
    Ok(Json(reply))
}
"#,
        ),
        "python" => (
            "src/app.py",
            r#"
import qhost

@qhost.task
def run(input, info):
    request = qhost.json(input)
    return {"attempt": info.attempt, "words": len(request["text"].split())}
"#,
        ),
        "js" => (
            "src/task.js",
            r#"
import { json } from "./qhost.js";

export function run(input, info) {
  const request = json(input);
  return { attempt: info.attempt, words: request.text.trim().split(/\s+/).length };
}
"#,
        ),
        _ => unreachable!("no SDK for {lang}"),
    }
}

/// The SDK's JSON in and out, and its errors: a bad input named as such, and the error of
/// a request without `text` (`missing`), all with outcome `guest-error`.
fn sdk_json_and_errors(lang: &str, missing: &str) {
    let built = new_and_build(&format!("json-{lang}"), lang);
    let (file, source) = json_task(lang);
    std::fs::write(built.project.join(file), source).unwrap();
    check(
        &build(&built.project, lang, &built.printed)
            .output()
            .unwrap(),
        "the build of the rewritten task",
    );

    let output = built.run(&["--input", r#"{"text": "two words"}"#]);
    check(&output, "qhost run");
    let reply: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(reply, serde_json::json!({"attempt": 1, "words": 2}));

    for (input, error) in [
        ("not json", "the input is not the JSON this task takes: "),
        ("{}", missing),
    ] {
        let output = built.run(&["--input", input]);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("task ended with outcome `guest-error`: {error}")),
            "{lang} on {input}: {stderr}"
        );
    }
}

fn scaffold_runs(lang: &str) {
    let built = new_and_build(&format!("hello-{lang}"), lang);
    assert_eq!(built.printed.run_args, ["--input", "world"]);
    let args: Vec<&str> = built.printed.run_args.iter().map(String::as_str).collect();
    let output = built.run(&args);
    check(&output, "qhost run");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Hello, world!");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.lines().any(|line| line.starts_with("[info ")
            && line.ends_with("] task 0 attempt 1: 5 bytes")),
        "no log line from the task in:\n{stderr}"
    );

    let output = built.run(&["--input", ""]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "task ended with outcome `guest-error`: the input is empty: give a name, such as \
             --input world"
        ),
        "{stderr}"
    );
}

#[test]
fn rust_scaffold_builds_and_runs() {
    scaffold_runs("rust");
}

#[test]
fn python_scaffold_builds_and_runs() {
    scaffold_runs("python");
}

#[test]
fn javascript_scaffold_builds_and_runs() {
    scaffold_runs("js");
}

#[test]
fn c_scaffold_builds_and_runs() {
    scaffold_runs("c");
}

#[test]
fn rust_sdk_reads_and_writes_json() {
    sdk_json_and_errors("rust", "no text in the request");
}

#[test]
fn python_sdk_reads_and_writes_json_and_reports_exceptions() {
    sdk_json_and_errors("python", "KeyError: 'text'");
}

#[test]
fn javascript_sdk_reads_and_writes_json_and_reports_exceptions() {
    sdk_json_and_errors("js", "TypeError: ");
}

/// The JavaScript SDK under SpiderMonkey, built with componentize-js as the examples are:
/// `info`'s BigInt ids reach the task as Numbers (so the JSON of `info` can be written),
/// and a `TypeError` ends the attempt as `guest-error` with its message.
#[test]
fn javascript_sdk_under_spidermonkey() {
    let (work, project, _) = new_project("spidermonkey-js", "js");
    std::fs::write(
        project.join("src/task.js"),
        r#"
import { json } from "./qhost.js";

export function run(input, info) {
  return { info, words: json(input).text.trim().split(/\s+/).length };
}
"#,
    )
    .unwrap();
    let component = project.join("spidermonkey.wasm");
    let build = Command::new("node")
        .args([
            "--input-type=module",
            "-e",
            r#"import { componentize } from "@bytecodealliance/componentize-js";
               import { writeFile } from "node:fs/promises";
               const [source, wit, out] = process.argv.slice(1);
               const { component } = await componentize({
                 sourcePath: source, witPath: wit, worldName: "qhost:task/task",
                 disableFeatures: ["random", "clocks", "http", "fetch-event"],
               });
               await writeFile(out, component);"#,
        ])
        .arg(project.join("src/main.js"))
        .arg(project.join("wit"))
        .arg(&component)
        // Where scripts/guest-toolchains.sh installed componentize-js.
        .current_dir(repo().join("guest-examples/javascript"))
        .output()
        .unwrap();
    check(&build, "componentize-js");

    let output = qhost_run(
        work.path(),
        &component,
        &["--input", r#"{"text": "two words"}"#],
    );
    check(&output, "qhost run");
    let reply: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        reply,
        serde_json::json!({
            "info": {"id": 0, "batch": 0, "attempt": 1, "order": 0, "group": null},
            "words": 2
        })
    );
    let output = qhost_run(work.path(), &component, &["--input", "{}"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("task ended with outcome `guest-error`: TypeError: "),
        "{stderr}"
    );
}

/// The Rust SDK's imports beyond the plain task, through a server: a task submits a child
/// per word with `spawn`, suspends, and merges the children's outputs from
/// `graph::inputs`; another reads its batch's setting with `config::setting` and sends it
/// with `http::get` to an origin its batch was granted, which echoes it back; a request to
/// an origin not granted fails the task with the SDK's error.
#[test]
fn rust_sdk_spawns_reads_inputs_settings_and_sends_http() {
    let built = new_and_build("imports-rust", "rust");
    std::fs::write(
        built.project.join("src/lib.rs"),
        r#"
use qhost_guest::{TaskInfo, config, graph, http, spawn};

#[qhost_guest::task]
fn run(input: &[u8], _info: &TaskInfo) -> Result<String, String> {
    let input = std::str::from_utf8(input).map_err(|_| "the input is not UTF-8")?;
    if let Some(word) = input.strip_prefix("shout:") {
        return Ok(word.to_uppercase());
    }
    if let Some(url) = input.strip_prefix("fetch:") {
        let token = config::setting("TOKEN")?.ok_or("no TOKEN setting")?;
        let response = http::get(url).header("authorization", token).send()?;
        return Ok(format!("{} {}", response.status, response.text()?));
    }
    match spawn::saved()? {
        None => {
            let words: Vec<&str> = input.split_whitespace().collect();
            for (n, word) in words.iter().enumerate() {
                spawn::child(format!("word-{n}"), format!("shout:{word}")).submit()?;
            }
            spawn::suspend(words.len().to_string().as_bytes())?;
            Ok(String::new())
        }
        Some(count) => {
            let mut shouted = Vec::new();
            for dependency in graph::inputs()? {
                shouted.push(String::from_utf8_lossy(dependency.output()?).into_owned());
            }
            let count = String::from_utf8_lossy(&count).into_owned();
            Ok(format!("{} of {count}: {}", shouted.len(), shouted.join(" ")))
        }
    }
}
"#,
    )
    .unwrap();
    check(
        &build(&built.project, "rust", &built.printed)
            .output()
            .unwrap(),
        "the build of the rewritten task",
    );

    let origin = qhost_tests::origin_server::OriginServer::start();
    let data = tempfile::tempdir().unwrap();
    let server = origin.allowed_by_server(data.path());
    let component = built.component.to_str().unwrap();
    check(
        &server.run(&["module", "add", component, "--name", "sdk"]),
        "qhost module add",
    );
    let task = |input: String| serde_json::json!({ "module": "sdk", "input": input });
    let opened = server.open_batch(serde_json::json!({
        "allow_http": [origin.origin()],
        "settings": { "TOKEN": "Bearer sdk-token" },
        "tasks": [
            task("three short words".into()),
            task(format!("fetch:{}", origin.url("/authorization"))),
            // Not granted: refused before it leaves the host.
            serde_json::json!({ "module": "sdk", "input": "fetch:http://127.0.0.1:9/",
                                "max_attempts": 1 }),
        ],
    }));
    let (status, waited) = qhost_tests::server::call(
        "GET",
        &format!("{}/v1/batches/{}/wait?timeout=60s", server.url, opened.id),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{waited}");
    let (granted, refused) = opened.tasks.split_at(2);
    let outputs: Vec<String> = granted
        .iter()
        .map(|id| {
            let (status, output) = qhost_tests::server::call(
                "GET",
                &format!("{}/v1/tasks/{id}/output", server.url),
                Some(&server.token),
                None,
            );
            assert_eq!(status, 200, "task {id}: {output} ({waited})");
            output.as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        outputs,
        ["3 of 3: THREE SHORT WORDS", "200 Bearer sdk-token"]
    );
    let (_, view) = qhost_tests::server::call(
        "GET",
        &format!("{}/v1/tasks/{}", server.url, refused[0]),
        Some(&server.token),
        None,
    );
    assert_eq!(view["outcome"], "guest-error", "{view}");
    assert_eq!(
        view["error"], "http://127.0.0.1:9/: HttpRequestDenied",
        "{view}"
    );
    assert!(server.stop().success());
}
