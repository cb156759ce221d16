//! The API's contract, as clients see it: every failure is JSON `{"error", "detail"}`
//! with a status the document gives that operation; schemathesis, fuzzing a real
//! `qhost serve` against the document it serves, finds no contract failure, as the admin
//! or as a batch handle, and what its schemas allow is refused only by a check the
//! operation names; and a Python client and a TypeScript client, each generated from the
//! document, run a task from upload to output.
//!
//! schemathesis and openapi-python-client come from `scripts/contract-tools.sh` (which
//! `scripts/test.sh` runs), in `<target>/contract-tools/venv`, and the TypeScript tools
//! (openapi-typescript, openapi-fetch, TypeScript) in `<target>/contract-tools/node`;
//! without them, or without `node`, these tests fail, saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qhost_tests::server::{Server, agent, call};
use serde_json::{Value, json};

/// Test cases schemathesis generates per operation and phase: with the coverage phase's
/// own cases, each run takes well under a minute on two cores.
const MAX_EXAMPLES: &str = "30";
/// A fixed seed: the same cases each run, so a failure reproduces.
const SEED: &str = "7700";

/// Where `scripts/contract-tools.sh` installs the contract tools.
fn tools_dir() -> PathBuf {
    qhost_tests::qhost_binary()
        .parent()
        .and_then(Path::parent)
        .expect("the target directory")
        .join("contract-tools")
}

/// The virtualenv with the pinned contract tools.
fn contract_tools() -> PathBuf {
    let venv = tools_dir().join("venv");
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

/// What no schema can say: the operations whose well-formed requests the server may
/// refuse with `400`, each with the checks that do, as that operation's documented `400`
/// names them (`the_checks_no_schema_states_are_named_by_their_operations`). schemathesis
/// expects `400` from these alone.
const SERVER_CHECKS: [(&str, &[&str]); 7] = [
    (
        "add_module",
        &["not a webassembly component", "does not compile"],
    ),
    (
        "open_batch",
        &[
            "no module has",
            "beyond the server's maximum",
            "`allow_http`",
            "webhook",
        ],
    ),
    (
        "submit_tasks",
        &[
            "no module has",
            "more than one input",
            "beyond the server's maximum",
            "mount",
        ],
    ),
    (
        "submit_task",
        &[
            "no module has",
            "more than one input",
            "beyond the server's maximum",
            "mount",
        ],
    ),
    (
        "create_schedule",
        &[
            "cron expression",
            "time zone",
            "no module has",
            "beyond the server's maximum",
        ],
    ),
    ("list_attempts", &["`since`", "`until`"]),
    ("set_tenant", &["`allow_http`"]),
];

/// What schemathesis is told besides its command line.
fn fuzz_config(module: &str, batch: i64, task: i64) -> String {
    let checked = SERVER_CHECKS.map(|(id, _)| id).join("|");
    let hooks = Path::new(env!("CARGO_MANIFEST_DIR")).join("contract/schemathesis_hooks.py");
    format!(
        r#"
# How an upload's `application/wasm` is sent.
hooks = {hooks:?}

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

# A well-formed request the operations of SERVER_CHECKS may refuse with 400, by a check
# the operation's documented 400 names; every other operation accepts whatever its schema
# allows.
[[operations]]
include-operation-id-regex = "^({checked})$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409"]
"#
    )
}

#[test]
fn the_checks_no_schema_states_are_named_by_their_operations() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let url = &server.url;
    let document: Value = serde_json::from_str(
        &send("GET", &format!("{url}/v1/openapi.json"), None, None, vec![]).body,
    )
    .unwrap();
    let mut found = Vec::new();
    for item in document["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let id = operation["operationId"].as_str().unwrap();
            let Some((_, checks)) = SERVER_CHECKS.iter().find(|(known, _)| *known == id) else {
                continue;
            };
            found.push(id);
            let said = operation["responses"]["400"]["description"]
                .as_str()
                .unwrap_or_else(|| panic!("{id} documents no 400"))
                .to_lowercase();
            for check in *checks {
                assert!(
                    said.contains(check),
                    "{id}'s 400 does not name {check:?}: {said}"
                );
            }
        }
    }
    found.sort();
    let mut known = SERVER_CHECKS.map(|(id, _)| id);
    known.sort();
    assert_eq!(found, known, "every operation told of exists");
    assert!(server.stop().success());
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

/// The document `server` serves, written to `dir/openapi.json`.
fn save_document(server: &Server, dir: &Path) -> PathBuf {
    let answer = send(
        "GET",
        &format!("{}/v1/openapi.json", server.url),
        None,
        None,
        vec![],
    );
    assert_eq!(answer.status, 200);
    let document = dir.join("openapi.json");
    std::fs::write(&document, answer.body).unwrap();
    document
}

/// openapi-python-client's settings: an upload's `application/wasm` and a backup's
/// `application/vnd.sqlite3` are bytes as they are, which it knows as
/// `application/octet-stream` (the requests and answers still say their own type).
const PYTHON_CLIENT_CONFIG: &str = r#"{"content_type_overrides": {
    "application/wasm": "application/octet-stream",
    "application/vnd.sqlite3": "application/octet-stream"}}"#;

#[test]
fn a_generated_python_client_runs_a_task_from_upload_to_output() {
    let venv = contract_tools();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let work = tempfile::tempdir().unwrap();
    let document = save_document(&server, work.path());
    let config = work.path().join("config.json");
    std::fs::write(&config, PYTHON_CLIENT_CONFIG).unwrap();
    // Every warning fails the generation: each part of the document must be usable.
    // Its formatter (ruff) is found on PATH, in the virtualenv.
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let output = Command::new(venv.join("bin/openapi-python-client"))
        .current_dir(work.path())
        .env("PATH", path)
        .args([
            "generate",
            "--meta",
            "none",
            "--fail-on-warning",
            "--config",
        ])
        .arg(&config)
        .arg("--path")
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
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("ok: "),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(server.stop().success());
}

/// The folder with the pinned TypeScript tools, and `node` to run them: both must be
/// there, or the test fails saying how to get them.
fn typescript_tools() -> PathBuf {
    let dir = tools_dir().join("node");
    for package in ["openapi-typescript", "openapi-fetch", "typescript"] {
        assert!(
            dir.join("node_modules").join(package).is_dir(),
            "{package} is missing from {}: run scripts/contract-tools.sh (scripts/test.sh does)",
            dir.display()
        );
    }
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|o| o.status.success()),
        "`node` does not run ({node:?}): install Node.js (scripts/guest-toolchains.sh does)"
    );
    dir
}

/// Runs `node` with `args` in `dir`; panics with what it said unless it succeeds.
fn node(what: &str, dir: &Path, args: &[&std::ffi::OsStr]) -> Output {
    let output = Command::new("node")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{what}: running node: {e}"));
    expect_success(what, &output);
    output
}

#[test]
fn a_generated_typescript_client_runs_a_task_from_upload_to_output() {
    let tools = typescript_tools();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    // Inside the tools' folder, so that node and tsc find its node_modules.
    let work = tempfile::Builder::new()
        .prefix("smoke-")
        .tempdir_in(&tools)
        .unwrap();
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("contract/typescript");
    for file in ["generate.mjs", "smoke.ts", "tsconfig.json"] {
        std::fs::copy(sources.join(file), work.path().join(file)).unwrap();
    }
    let document = save_document(&server, work.path());
    node(
        "generating the types (openapi-typescript)",
        work.path(),
        &[
            "generate.mjs".as_ref(),
            document.as_os_str(),
            "qhost-api.d.ts".as_ref(),
        ],
    );
    // Type-checked against the generated types before it runs.
    let tsc = tools.join("node_modules/typescript/bin/tsc");
    node(
        "compiling the client (tsc)",
        work.path(),
        &[tsc.as_os_str(), "-p".as_ref(), "tsconfig.json".as_ref()],
    );
    let echo = qhost_tests::guest("echo");
    let output = node(
        "the generated client",
        work.path(),
        &[
            "out/smoke.js".as_ref(),
            server.url.as_ref(),
            server.token.as_ref(),
            echo.as_os_str(),
        ],
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("ok: "),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(server.stop().success());
}
