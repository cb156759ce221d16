//! The API's contract, as clients see it: every failure is JSON `{"error", "detail"}`
//! with a status the document gives that operation; schemathesis, fuzzing a real
//! `qhost serve` against the document it serves, finds no contract failure, as the admin
//! or as a batch handle; and a Python client generated from the document runs a task from
//! upload to output.
//!
//! schemathesis and openapi-python-client come from `scripts/contract-tools.sh` (which
//! `scripts/test.sh` runs), in `<target>/contract-tools/venv`; without them these tests
//! fail, saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qhost_tests::server::{Server, agent, call};
use serde_json::{Value, json};

/// Test cases schemathesis generates per operation and phase: with the coverage phase's
/// own cases, each run takes well under a minute on two cores.
const MAX_EXAMPLES: &str = "30";
/// A fixed seed: the same cases each run, so a failure reproduces.
const SEED: &str = "7700";

/// The virtualenv with the pinned contract tools.
fn contract_tools() -> PathBuf {
    let target = qhost_tests::qhost_binary()
        .parent()
        .and_then(Path::parent)
        .expect("the target directory")
        .to_owned();
    let venv = target.join("contract-tools/venv");
    for tool in ["schemathesis", "openapi-python-client"] {
        assert!(
            venv.join("bin").join(tool).exists(),
            "{tool} is missing from {}: run scripts/contract-tools.sh (scripts/test.sh does)",
            venv.display()
        );
    }
    venv
}

/// A server with the echo module and, for each credential, a batch whose tasks have all
/// ended: what the fuzzer finds to read, change and delete.
struct Fixture {
    server: Server,
    /// The echo module's digest.
    echo: String,
    admin_batch: (i64, i64),
    handle_batch: (i64, i64),
    handle: String,
}

impl Fixture {
    fn start(data: &Path) -> Fixture {
        let server = Server::start(data, 2);
        let echo = std::fs::read(qhost_tests::guest("echo")).unwrap();
        let mut response = agent()
            .post(format!("{}/v1/modules?name=echo", server.url))
            .header("Authorization", format!("Bearer {}", server.token))
            .send(&echo[..])
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
        let module: Value =
            serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
        let (admin_batch, _) = ended_batch(&server);
        let (handle_batch, handle) = ended_batch(&server);
        Fixture {
            server,
            echo: module["digest"].as_str().unwrap().to_owned(),
            admin_batch,
            handle_batch,
            handle,
        }
    }
}

/// Opens a batch, runs two echo tasks in it to their end: (batch, a task), and the handle.
fn ended_batch(server: &Server) -> ((i64, i64), String) {
    let url = &server.url;
    let (status, opened) = call(
        "POST",
        &format!("{url}/v1/batches"),
        Some(&server.token),
        Some(json!({"name": "fixture"})),
    );
    assert_eq!(status, 201, "{opened}");
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let handle = opened["handle"].as_str().unwrap().to_owned();
    let (status, submitted) = call(
        "POST",
        &format!("{url}/v1/batches/{batch}/tasks"),
        Some(&handle),
        Some(
            json!({"tasks": [{"module": "echo", "input": "a"}, {"module": "echo", "input": "b"}]}),
        ),
    );
    assert_eq!(status, 201, "{submitted}");
    let (status, done) = call(
        "GET",
        &format!("{url}/v1/batches/{batch}/wait?timeout=60s"),
        Some(&handle),
        None,
    );
    assert_eq!((status, &done["progress"]["succeeded"]), (200, &json!(2)));
    ((batch, submitted["tasks"][0].as_i64().unwrap()), handle)
}

/// An answer: status, `Allow` and `Content-Type` headers, body.
struct Answer {
    status: u16,
    allow: Option<String>,
    content_type: Option<String>,
    body: String,
}

fn send(
    method: &str,
    url: &str,
    token: Option<&str>,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Answer {
    let mut request = ureq::http::Request::builder().method(method).uri(url);
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    if let Some(content_type) = content_type {
        request = request.header("Content-Type", content_type);
    }
    let response = if body.is_empty() {
        agent().run(request.body(()).unwrap())
    } else {
        agent().run(request.body(body).unwrap())
    };
    let mut response = response.expect("an answer");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    };
    Answer {
        status: response.status().as_u16(),
        allow: header("allow"),
        content_type: header("content-type"),
        body: response.body_mut().read_to_string().unwrap_or_default(),
    }
}

/// A request that must fail: what it gets wrong, and the answer it must get.
struct Case<'a> {
    what: &'a str,
    method: &'a str,
    path: String,
    /// The operation the document gives the path, if it has one.
    operation: Option<&'a str>,
    token: Option<&'a str>,
    content_type: Option<&'a str>,
    body: Vec<u8>,
    status: u16,
    error: &'a str,
}

#[test]
fn every_failure_is_json_with_a_documented_status() {
    let data = tempfile::tempdir().unwrap();
    let fixture = Fixture::start(data.path());
    let url = &fixture.server.url;
    let admin = Some(fixture.server.token.as_str());
    let handle = Some(fixture.handle.as_str());
    let (batch, task) = fixture.handle_batch;
    let json_type = Some("application/json");
    let document: Value = serde_json::from_str(
        &send("GET", &format!("{url}/v1/openapi.json"), None, None, vec![]).body,
    )
    .unwrap();
    let cases = [
        Case {
            what: "a query parameter not of its type",
            method: "GET",
            path: "/v1/attempts?limit=many".into(),
            operation: Some("/v1/attempts"),
            token: admin,
            content_type: None,
            body: vec![],
            status: 400,
            error: "bad-request",
        },
        Case {
            what: "an unknown query parameter",
            method: "GET",
            path: "/v1/attempts?colour=red".into(),
            operation: Some("/v1/attempts"),
            token: admin,
            content_type: None,
            body: vec![],
            status: 400,
            error: "bad-request",
        },
        Case {
            what: "a batch id that is not a number",
            method: "GET",
            path: "/v1/batches/seven".into(),
            operation: Some("/v1/batches/{id}"),
            token: handle,
            content_type: None,
            body: vec![],
            status: 400,
            error: "bad-request",
        },
        Case {
            what: "a task id that is not a number",
            method: "GET",
            path: "/v1/tasks/seven/output".into(),
            operation: Some("/v1/tasks/{id}/output"),
            token: admin,
            content_type: None,
            body: vec![],
            status: 400,
            error: "bad-request",
        },
        Case {
            what: "a digest that is not one",
            method: "DELETE",
            path: "/v1/modules/xyz".into(),
            operation: Some("/v1/modules/{digest}"),
            token: admin,
            content_type: None,
            body: vec![],
            status: 400,
            error: "bad-request",
        },
        Case {
            what: "an unknown route",
            method: "GET",
            path: "/v1/nowhere".into(),
            operation: None,
            token: admin,
            content_type: None,
            body: vec![],
            status: 404,
            error: "not-found",
        },
        Case {
            what: "a method the path does not answer",
            method: "DELETE",
            path: "/v1/running".into(),
            operation: None,
            token: admin,
            content_type: None,
            body: vec![],
            status: 405,
            error: "method-not-allowed",
        },
        Case {
            what: "a body that is not JSON",
            method: "PUT",
            path: format!("/v1/batches/{batch}/priority"),
            operation: Some("/v1/batches/{id}/priority"),
            token: handle,
            content_type: json_type,
            body: b"{priority: 3".to_vec(),
            status: 400,
            error: "bad-request",
        },
        Case {
            what: "JSON of another shape",
            method: "PUT",
            path: format!("/v1/tasks/{task}/priority"),
            operation: Some("/v1/tasks/{id}/priority"),
            token: handle,
            content_type: json_type,
            body: br#"{"priority": "high"}"#.to_vec(),
            status: 422,
            error: "invalid",
        },
        Case {
            what: "a JSON body sent as text",
            method: "POST",
            path: "/v1/batches".into(),
            operation: Some("/v1/batches"),
            token: admin,
            content_type: Some("text/plain"),
            body: b"{}".to_vec(),
            status: 415,
            error: "unsupported-media-type",
        },
        Case {
            what: "a JSON body without a content type",
            method: "POST",
            path: "/v1/tasks".into(),
            operation: Some("/v1/tasks"),
            token: admin,
            content_type: None,
            body: br#"{"module": "echo"}"#.to_vec(),
            status: 415,
            error: "unsupported-media-type",
        },
        Case {
            what: "a body over the limit",
            method: "POST",
            path: "/v1/schedules".into(),
            operation: Some("/v1/schedules"),
            token: admin,
            content_type: json_type,
            body: format!(r#"{{"name": "{}"}}"#, "x".repeat(100 * 1024)).into_bytes(),
            status: 413,
            error: "too-large",
        },
        Case {
            what: "no credentials",
            method: "GET",
            path: "/v1/running".into(),
            operation: Some("/v1/running"),
            token: None,
            content_type: None,
            body: vec![],
            status: 401,
            error: "unauthorized",
        },
        Case {
            what: "a handle for an admin operation",
            method: "GET",
            path: "/v1/modules".into(),
            operation: Some("/v1/modules"),
            token: handle,
            content_type: None,
            body: vec![],
            status: 403,
            error: "forbidden",
        },
    ];
    for Case {
        what,
        method,
        path,
        operation,
        token,
        content_type,
        body,
        status,
        error,
    } in cases
    {
        let answer = send(method, &format!("{url}{path}"), token, content_type, body);
        assert_eq!(
            (answer.status, answer.content_type.as_deref()),
            (status, Some("application/json")),
            "{what}: {method} {path}: {}",
            answer.body
        );
        let failure: Value = serde_json::from_str(&answer.body)
            .unwrap_or_else(|e| panic!("{what}: {e}: {}", answer.body));
        assert_eq!(failure["error"], error, "{what}: {failure}");
        assert!(
            failure["detail"].as_str().is_some_and(|d| !d.is_empty())
                && failure.as_object().unwrap().len() == 2,
            "{what}: {failure}"
        );
        match operation {
            Some(operation) => {
                let responses = &document["paths"][operation][method.to_lowercase()]["responses"];
                assert!(
                    responses[status.to_string()].is_object(),
                    "{what}: {method} {operation} does not document {status}: {responses}"
                );
            }
            // A route the document does not have, or a method it does not give the path.
            None => assert!(
                document["paths"][&path][method.to_lowercase()].is_null(),
                "{what}: {method} {path} is documented"
            ),
        }
    }
    // A wrong method is told which the path answers.
    let answer = send(
        "PATCH",
        &format!("{url}/v1/batches/{batch}"),
        handle,
        None,
        vec![],
    );
    assert_eq!(answer.status, 405);
    let allow = answer.allow.expect("405 has an Allow header");
    for method in ["GET", "DELETE"] {
        assert!(allow.contains(method), "{allow}");
        assert!(answer.body.contains(method), "{}", answer.body);
    }
}

/// Runs schemathesis against `fixture`'s server with `token`, which opens `batch` (and its
/// `task`), with every check; panics with its report if it finds anything.
fn fuzz(fixture: &Fixture, token: &str, (batch, task): (i64, i64)) {
    let venv = contract_tools();
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("schemathesis.toml");
    std::fs::write(&config, fuzz_config(&fixture.echo, batch, task)).unwrap();
    let output = Command::new(venv.join("bin/schemathesis"))
        .current_dir(work.path())
        .args(["--no-color", "--config-file"])
        .arg(&config)
        .arg("run")
        .arg(format!("{}/v1/openapi.json", fixture.server.url))
        .args(["--checks", "all"])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args(["--max-examples", MAX_EXAMPLES, "--seed", SEED])
        .args(["--generation-database", "none", "--request-timeout", "30"])
        .args(["--output-truncate", "false"])
        .output()
        .expect("running schemathesis");
    assert!(
        output.status.success(),
        "schemathesis found contract failures:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// What schemathesis is told besides its command line.
fn fuzz_config(module: &str, batch: i64, task: i64) -> String {
    format!(
        r#"
# The module, and the batch and task the credential opens, stand half the time for the
# digests and ids schemathesis generates: so it reads, changes, cancels and deletes what
# exists, not only what answers 404 or 403.
[dictionaries.module]
values = ["{module}"]
[dictionaries.batch]
values = [{batch}]
[dictionaries.task]
values = [{task}]

[[operations]]
include-path-regex = "^/v1/modules/\\{{digest\\}}"
parameters = {{ "path.digest" = {{ dictionary = "module", probability = 0.5 }} }}

[[operations]]
include-path-regex = "^/v1/batches/\\{{id\\}}"
parameters = {{ "path.id" = {{ dictionary = "batch", probability = 0.5 }} }}

[[operations]]
include-path-regex = "^/v1/tasks/\\{{id\\}}"
parameters = {{ "path.id" = {{ dictionary = "task", probability = 0.5 }} }}

# A well-formed request these operations may refuse with 400 for what no schema can state:
# a component must compile and implement the qhost:task world; a task must name a module
# that exists, and mounts, a timeout and a memory limit within what the server was
# started with; a schedule's cron expression and time zone must be ones it can read, and
# its plan must compile; a log's `since` must come before its `until`. A task runs again
# only once it has failed or was cancelled (409). Every other operation accepts whatever
# its schema allows.
[[operations]]
include-operation-id-regex = "^(add_module|submit_tasks|submit_task|open_batch|create_schedule|retry_task|list_attempts)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409"]
"#
    )
}

#[test]
fn schemathesis_as_the_admin_finds_nothing() {
    let data = tempfile::tempdir().unwrap();
    let fixture = Fixture::start(data.path());
    fuzz(&fixture, &fixture.server.token, fixture.admin_batch);
}

#[test]
fn schemathesis_as_a_batch_handle_finds_nothing() {
    let data = tempfile::tempdir().unwrap();
    let fixture = Fixture::start(data.path());
    fuzz(&fixture, &fixture.handle, fixture.handle_batch);
}

fn expect_success(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_generated_python_client_runs_a_task_from_upload_to_output() {
    let venv = contract_tools();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let work = tempfile::tempdir().unwrap();
    let document = work.path().join("openapi.json");
    let answer = send(
        "GET",
        &format!("{}/v1/openapi.json", server.url),
        None,
        None,
        vec![],
    );
    assert_eq!(answer.status, 200);
    std::fs::write(&document, answer.body).unwrap();
    // Every warning fails the generation: each part of the document must be usable.
    // Its formatter (ruff) is found on PATH, in the virtualenv.
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let output = Command::new(venv.join("bin/openapi-python-client"))
        .current_dir(work.path())
        .env("PATH", path)
        .args(["generate", "--meta", "none", "--fail-on-warning", "--path"])
        .arg(&document)
        .args(["--output-path", "qhost_client"])
        .output()
        .expect("running openapi-python-client");
    expect_success("generating the client", &output);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("contract/client_smoke.py");
    let output = Command::new(venv.join("bin/python"))
        .env("PYTHONPATH", work.path())
        .arg(script)
        .arg(&server.url)
        .arg(&server.token)
        .arg(qhost_tests::guest("echo"))
        .output()
        .expect("running the client");
    expect_success("the generated client", &output);
    assert!(server.stop().success());
}
