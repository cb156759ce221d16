//! The `qhost` command line as a client of a real `qhost serve`: modules, plans, handles,
//! waiting, the views, errors; and the API's extras it stands on: the OpenAPI document,
//! a batch's event stream and the metrics.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Output;

use qhost_tests::server::{Server, bare_cli};
use serde_json::Value;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the exit code, showing what the command said otherwise.
fn expect_code(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
}

/// Adds a guest as a module of that name.
fn add_module(server: &Server, guest: &str) {
    let path = qhost_tests::guest(guest);
    let output = server.run(&["module", "add", path.to_str().unwrap(), "--name", guest]);
    expect_code(&output, 0);
    assert!(
        stdout(&output).contains(&format!("named {guest}")),
        "{}",
        stdout(&output)
    );
}

fn write_plan(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The value of the line `key value` in a command's output.
fn field(output: &Output, key: &str) -> String {
    stdout(output)
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{key} ")))
        .unwrap_or_else(|| panic!("no `{key}` in {}", stdout(output)))
        .to_owned()
}

fn get(url: &str, token: &str) -> (u16, String) {
    let mut response = qhost_tests::server::agent()
        .get(url)
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .unwrap();
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().unwrap())
}

#[test]
fn a_plan_runs_to_its_end_and_a_failing_one_exits_non_zero() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    add_module(&server, "echo");
    add_module(&server, "misbehave");
    let modules: Value =
        serde_json::from_str(&stdout(&server.run(&["module", "ls", "--json"]))).unwrap();
    let names: Vec<&str> = modules
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{modules}");
    assert!(names.contains(&"echo") && names.contains(&"misbehave"));
    std::fs::write(data.path().join("input.txt"), "from a file").unwrap();

    let plan = write_plan(
        data.path(),
        "plan.toml",
        r#"
        name = "tour"
        [[task]]
        module = "echo"
        input = "first"
        order = 1
        group = "g"
        [[task]]
        module = "echo"
        input_file = "input.txt"
        order = 2
        [[task]]
        module = "echo"
        input_json = { words = ["a", "b"] }
        order = 2
        "#,
    );
    let output = server.run(&["batch", "submit", &plan, "--wait"]);
    expect_code(&output, 0);
    let handle = field(&output, "handle");
    assert!(handle.starts_with("qhb_"), "{handle}");
    assert!(
        stdout(&output).contains("3 succeeded, 0 failed, 0 cancelled"),
        "{}",
        stdout(&output)
    );

    // The log, as JSON lines, with the batch's handle alone as credential.
    let output = bare_cli()
        .env("QHOST_SERVER", &server.url)
        .args(["log", "--batch", &handle, "--json"])
        .output()
        .unwrap();
    expect_code(&output, 0);
    let attempts: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(attempts.len(), 3);
    assert!(attempts.iter().all(|a| a["outcome"] == "succeeded"));
    let orders: Vec<i64> = attempts
        .iter()
        .map(|a| a["order"].as_i64().unwrap())
        .collect();
    assert_eq!(
        orders,
        [2, 2, 1],
        "order 1 ran first: the log reads newest first"
    );
    let table = stdout(&server.run(&["log", "--batch", &handle]));
    assert!(table.starts_with("STARTED"), "{table}");
    assert_eq!(table.lines().filter(|l| l.contains("succeeded")).count(), 3);

    let outputs: Vec<String> = attempts
        .iter()
        .map(|a| {
            let task = a["task"].to_string();
            stdout(&server.run(&["task", "output", &task]))
        })
        .collect();
    assert!(outputs.contains(&"from a file".to_owned()), "{outputs:?}");
    assert!(
        outputs.contains(&r#"{"words":["a","b"]}"#.to_owned()),
        "{outputs:?}"
    );

    let failing = write_plan(
        data.path(),
        "failing.toml",
        r#"
        [[task]]
        module = "echo"
        input = "fine"
        [[task]]
        module = "misbehave"
        input = "error"
        "#,
    );
    let output = server.run(&["batch", "submit", &failing, "--wait", "--json"]);
    expect_code(&output, 1);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["progress"]["failed"], 1, "{report}");
    assert_eq!(report["progress"]["succeeded"], 1, "{report}");
    let failed_task = report["tasks"][1].to_string();
    let shown: Value = serde_json::from_str(&stdout(&server.run(&[
        "task",
        "show",
        &failed_task,
        "--json",
    ])))
    .unwrap();
    assert_eq!(shown["state"], "failed");
    assert_eq!(shown["log"][0]["error"], "asked to fail", "{shown}");
    assert!(server.stop().success());
}

#[test]
fn a_handle_changes_its_own_batch_and_no_other() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "sleep");
    let open = |name: &str| -> Value {
        let output = server.run(&["batch", "open", "--name", name, "--json"]);
        expect_code(&output, 0);
        serde_json::from_str(&stdout(&output)).unwrap()
    };
    let mine = open("mine");
    let other = open("other");
    let (mine_id, mine_handle) = (
        mine["batch"]["id"].to_string(),
        mine["handle"].as_str().unwrap(),
    );
    let other_handle = other["handle"].as_str().unwrap();
    let plan = write_plan(
        data.path(),
        "sleeps.toml",
        r#"
        [[task]]
        module = "sleep"
        input = "60000"
        timeout = "120s"
        [[task]]
        module = "sleep"
        input = "60000"
        timeout = "120s"
        order = 1
        "#,
    );
    expect_code(
        &server.run(&["batch", "submit", &plan, "--batch", mine_handle]),
        0,
    );

    let output = server.run(&["batch", "priority", mine_handle, "7"]);
    expect_code(&output, 0);
    // Another batch's handle, given as the token for this batch's id, is refused.
    let output = server.run(&["batch", "priority", &mine_id, "9", "--token", other_handle]);
    expect_code(&output, 4);
    assert!(
        stderr(&output).contains("403 forbidden"),
        "{}",
        stderr(&output)
    );
    let shown: Value = serde_json::from_str(&stdout(&server.run(&[
        "batch",
        "show",
        mine_handle,
        "--json",
    ])))
    .unwrap();
    assert_eq!(shown["priority"], 7, "{shown}");
    assert_eq!(shown["name"], "mine");

    let output = server.run(&["batch", "cancel", mine_handle]);
    expect_code(&output, 0);
    let output = server.run(&["batch", "wait", mine_handle, "--json"]);
    expect_code(&output, 0);
    let waited: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(waited["progress"]["cancelled"], 2, "{waited}");
    expect_code(&server.run(&["batch", "release", mine_handle]), 0);
    let output = server.run(&["batch", "show", &mine_id]);
    expect_code(&output, 3);
    assert!(
        stderr(&output).contains("404 not-found"),
        "{}",
        stderr(&output)
    );
    assert!(server.stop().success());
}

#[test]
fn status_shows_a_running_task_until_it_is_cancelled() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "sleep");
    let output = server.run(&[
        "submit",
        "--module",
        "sleep",
        "--input",
        "60000",
        "--timeout",
        "120s",
        "--group",
        "slow",
        "--json",
    ]);
    expect_code(&output, 0);
    let submitted: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let task = submitted["task"].to_string();
    // Synchronize on the running view itself: the task shows there once claimed.
    let running = loop {
        let output = server.run(&["status", "--json"]);
        expect_code(&output, 0);
        let status: Value = serde_json::from_str(&stdout(&output)).unwrap();
        if !status["running"].as_array().unwrap().is_empty() {
            break status["running"].clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(running[0]["task"].to_string(), task);
    let table = stdout(&server.run(&["status"]));
    let mut lines = table.lines().skip_while(|l| !l.starts_with("TASK"));
    assert!(lines.next().is_some(), "{table}");
    let row = lines.next().unwrap();
    assert!(row.starts_with(&task) && row.contains("slow"), "{table}");
    let group: Value =
        serde_json::from_str(&stdout(&server.run(&["group", "limit", "slow", "--json"]))).unwrap();
    assert_eq!(
        (group["limit"].as_u64(), group["running"].as_u64()),
        (Some(1), Some(1))
    );
    let output = server.run(&["group", "limit", "slow", "3"]);
    expect_code(&output, 0);
    assert!(stdout(&output).contains("limit 3"), "{}", stdout(&output));

    let output = server.run(&["task", "cancel", &task]);
    expect_code(&output, 0);
    assert!(stdout(&output).contains("stopping"), "{}", stdout(&output));
    let handle = submitted["handle"].as_str().unwrap();
    let output = server.run(&["batch", "wait", handle]);
    expect_code(&output, 0);
    let table = stdout(&server.run(&["status"]));
    assert!(table.contains("\nnothing runs on"), "{table}");
    let shown = stdout(&server.run(&["task", "show", &task]));
    assert!(shown.contains("state     cancelled"), "{shown}");
    assert!(server.stop().success());
}

#[test]
fn submit_and_wait_prints_the_output_or_the_failure() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    add_module(&server, "echo");
    add_module(&server, "misbehave");
    let output = server.run(&["submit", "--module", "echo", "--input", "hello", "--wait"]);
    expect_code(&output, 0);
    assert_eq!(stdout(&output), "hello\n");
    let output = server.run(&[
        "submit",
        "--module",
        "misbehave",
        "--input",
        "error",
        "--wait",
    ]);
    expect_code(&output, 1);
    assert!(
        stderr(&output).contains("guest-error): asked to fail"),
        "{}",
        stderr(&output)
    );

    // Into a shared batch: waiting follows the batch's events to this one task.
    let opened = server.run(&["batch", "open"]);
    let handle = field(&opened, "handle");
    let output = server.run(&[
        "submit",
        "--module",
        "echo",
        "--input-json",
        r#"{"n": 1}"#,
        "--batch",
        &handle,
        "--wait",
    ]);
    expect_code(&output, 0);
    assert_eq!(stdout(&output), "{\"n\":1}\n");
    assert!(server.stop().success());
}

#[test]
fn mistakes_read_clearly_and_exit_with_their_codes() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let unreachable = bare_cli()
        .args(["status", "--server", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    expect_code(&unreachable, 6);
    let message = stderr(&unreachable);
    assert!(
        message.contains("could not reach the qhost server at http://127.0.0.1:1")
            && message.contains("QHOST_SERVER"),
        "{message}"
    );

    let no_token = bare_cli()
        .env("QHOST_SERVER", &server.url)
        .args(["module", "ls"])
        .output()
        .unwrap();
    expect_code(&no_token, 4);
    assert!(
        stderr(&no_token).contains("401 unauthorized"),
        "{}",
        stderr(&no_token)
    );

    let plan = write_plan(
        data.path(),
        "typo.toml",
        "[[task]]\nmodule = \"echo\"\nordre = 2\n",
    );
    let output = server.run(&["batch", "submit", &plan]);
    expect_code(&output, 2);
    assert!(
        stderr(&output).contains("unknown field `ordre`"),
        "{}",
        stderr(&output)
    );

    let plan = write_plan(
        data.path(),
        "nomodule.toml",
        "[[task]]\nmodule = \"nope\"\n",
    );
    let output = server.run(&["batch", "submit", &plan]);
    expect_code(&output, 2);
    assert!(
        stderr(&output).contains(
            "400 bad-request: task 0: field `module`: no module has the digest or name `nope`"
        ),
        "{}",
        stderr(&output)
    );
    let output = server.run(&["batch", "limit", "1", "many"]);
    expect_code(&output, 2);
    assert!(
        stderr(&output).contains("give a number of tasks (0 holds them all), or `none`"),
        "{}",
        stderr(&output)
    );

    let completions = server.run(&["completions", "bash"]);
    expect_code(&completions, 0);
    assert!(
        stdout(&completions).contains("qhost__subcmd__batch"),
        "a bash script with the subcommands"
    );
    assert!(server.stop().success());
}

#[test]
fn the_cli_finds_its_server_by_config_file_or_local_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("qhost-data");
    let server = Server::start(&data, 1);
    let config = dir.path().join("client.toml");
    std::fs::write(
        &config,
        format!(
            "server = \"{}\"\ntoken = \"{}\"\n",
            server.url, server.token
        ),
    )
    .unwrap();
    let output = bare_cli()
        .args(["module", "ls", "--json", "--client-config"])
        .arg(&config)
        .output()
        .unwrap();
    expect_code(&output, 0);
    assert_eq!(stdout(&output).trim(), "[]");

    // Next to the default data directory, the admin token is found there.
    let output = bare_cli()
        .current_dir(dir.path())
        .env("QHOST_SERVER", &server.url)
        .args(["status", "--json"])
        .output()
        .unwrap();
    expect_code(&output, 0);
    let status: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(status["running"], serde_json::json!([]), "{status}");
    assert!(server.stop().success());
}

#[test]
fn openapi_describes_every_route() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let (status, text) = get(&format!("{}/v1/openapi.json", server.url), "");
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let routes = [
        ("/v1/modules", "post"),
        ("/v1/modules", "get"),
        ("/v1/modules/{digest}", "delete"),
        ("/v1/modules/names/{name}", "delete"),
        ("/v1/batches", "post"),
        ("/v1/batches", "get"),
        ("/v1/batches/{id}", "get"),
        ("/v1/batches/{id}", "delete"),
        ("/v1/batches/{id}/tasks", "post"),
        ("/v1/batches/{id}/priority", "put"),
        ("/v1/batches/{id}/seal", "post"),
        ("/v1/batches/{id}/cancel", "post"),
        ("/v1/batches/{id}/wait", "get"),
        ("/v1/batches/{id}/events", "get"),
        ("/v1/tasks", "post"),
        ("/v1/tasks", "get"),
        ("/v1/tasks/{id}", "get"),
        ("/v1/tasks/{id}/output", "get"),
        ("/v1/tasks/{id}/attempts/{attempt}", "get"),
        ("/v1/tasks/{id}/cancel", "post"),
        ("/v1/tasks/{id}/priority", "put"),
        ("/v1/batches/{id}/retry", "post"),
        ("/v1/batches/{id}/pause", "post"),
        ("/v1/batches/{id}/resume", "post"),
        ("/v1/batches/{id}/max_parallel", "put"),
        ("/v1/batches/{id}/quotas", "patch"),
        ("/v1/batches/{id}/graph", "get"),
        ("/v1/tasks/{id}/input", "get"),
        ("/v1/tasks/{id}/retry", "post"),
        ("/v1/tasks/retry", "post"),
        ("/v1/tasks/cancel", "post"),
        ("/v1/tasks/priority", "put"),
        ("/v1/groups", "get"),
        ("/v1/groups/{key}", "get"),
        ("/v1/groups/{key}", "put"),
        ("/v1/groups/{key}/pause", "post"),
        ("/v1/groups/{key}/resume", "post"),
        ("/v1/attempts", "get"),
        ("/v1/running", "get"),
        ("/v1/nodes", "get"),
        ("/v1/status", "get"),
        ("/v1/status/history", "get"),
        ("/v1/backup", "get"),
        ("/v1/schedules", "post"),
        ("/v1/schedules", "get"),
        ("/v1/schedules/{name}", "get"),
        ("/v1/schedules/{name}", "delete"),
        ("/v1/schedules/{name}/pause", "post"),
        ("/v1/schedules/{name}/resume", "post"),
        ("/v1/schedules/{name}/run", "post"),
        ("/v1/tenants", "post"),
        ("/v1/tenants", "get"),
        ("/v1/tenants/{name}", "patch"),
        ("/v1/tenants/{name}/tokens", "post"),
        ("/v1/tenants/{name}/tokens", "get"),
        ("/v1/tenants/{name}/tokens/{id}", "delete"),
        ("/v1/usage", "get"),
        ("/v1/batches/{id}/usage", "get"),
        ("/v1/openapi.json", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    ];
    for (path, method) in routes {
        assert!(
            doc["paths"][path][method]["responses"].is_object(),
            "{method} {path} is not described"
        );
    }
    let described: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|ops| ops.as_object().unwrap().len())
        .sum();
    assert_eq!(described, routes.len(), "every described route exists");
    // Every schema referred to is defined.
    for reference in text.split("\"$ref\": \"#/components/schemas/").skip(1) {
        let name = &reference[..reference.find('"').unwrap()];
        assert!(doc["components"]["schemas"][name].is_object(), "{name}");
    }
    assert!(server.stop().success());
}

#[test]
fn a_batch_streams_one_event_per_task_then_ends_and_metrics_count_them() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    add_module(&server, "echo");
    let plan = write_plan(
        data.path(),
        "five.toml",
        &(0..5)
            .map(|i| format!("[[task]]\nmodule = \"echo\"\ninput = \"{i}\"\norder = {i}\n"))
            .collect::<String>(),
    );
    let output = server.run(&["batch", "submit", &plan, "--json"]);
    expect_code(&output, 0);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let (batch, handle) = (
        report["batch"].as_i64().unwrap(),
        report["handle"].as_str().unwrap(),
    );
    let mut submitted: Vec<i64> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();

    // Opened while the batch may still run: the stream ends by itself once it has ended.
    let mut response = ureq::get(format!("{}/v1/batches/{batch}/events", server.url))
        .header("Authorization", format!("Bearer {handle}"))
        .call()
        .unwrap();
    let lines: Vec<String> = BufReader::new(response.body_mut().as_reader())
        .lines()
        .map(Result::unwrap)
        .collect();
    let events: Vec<(&str, Value)> = lines
        .iter()
        .zip(lines.iter().skip(1))
        .filter_map(|(name, data)| {
            Some((
                name.strip_prefix("event: ")?,
                serde_json::from_str(data.strip_prefix("data: ")?).unwrap(),
            ))
        })
        .collect();
    let mut streamed: Vec<i64> = events
        .iter()
        .filter(|(name, _)| *name == "task")
        .map(|(_, task)| {
            assert_eq!(task["state"], "succeeded", "{task}");
            task["id"].as_i64().unwrap()
        })
        .collect();
    let ends: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| *n == "end")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(ends.len(), 1, "{lines:?}");
    assert_eq!(ends[0]["progress"]["succeeded"], 5);
    assert_eq!(events.last().unwrap().0, "end");
    submitted.sort();
    streamed.sort();
    assert_eq!(streamed, submitted, "one event per task");

    let other = field(&server.run(&["batch", "open"]), "handle");
    let (status, _) = get(&format!("{}/v1/batches/{batch}/events", server.url), &other);
    assert_eq!(status, 403, "another batch's handle gets no events");

    // A second module, whose one attempt fails: its own series.
    add_module(&server, "misbehave");
    let output = server.run(&[
        "submit",
        "--module",
        "misbehave",
        "--input",
        "trap",
        "--max-attempts",
        "1",
        "--wait",
    ]);
    expect_code(&output, 1);

    let (status, _) = get(&format!("{}/metrics", server.url), "");
    assert_eq!(status, 401, "metrics need a token");
    let (status, metrics) = get(&format!("{}/metrics", server.url), &server.token);
    assert_eq!(status, 200);
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
    };
    // The attempt, run-time and latency series by module, named as `module ls` names it.
    assert_eq!(
        value("qhost_claim_latency_seconds_count{module=\"echo\"}"),
        5.0
    );
    assert_eq!(
        value("qhost_claim_latency_seconds_bucket{module=\"echo\",le=\"+Inf\"}"),
        5.0
    );
    assert_eq!(
        value("qhost_run_latency_seconds_count{module=\"echo\"}"),
        5.0
    );
    assert!(value("qhost_run_latency_seconds_sum{module=\"echo\"}") > 0.0);
    assert_eq!(
        value("qhost_attempts_total{module=\"echo\",outcome=\"succeeded\"}"),
        5.0
    );
    assert_eq!(
        value("qhost_attempts_total{module=\"echo\",outcome=\"trap\"}"),
        0.0
    );
    assert_eq!(
        value("qhost_attempts_total{module=\"misbehave\",outcome=\"trap\"}"),
        1.0
    );
    assert_eq!(
        value("qhost_run_latency_seconds_count{module=\"misbehave\"}"),
        1.0
    );
    // The process: memory, files and threads, under the names client libraries use.
    assert!(value("process_resident_memory_bytes") > 1e6);
    assert!(value("process_open_fds") >= 3.0);
    assert!(
        value("process_threads") >= 2.0,
        "the async runtime's workers"
    );
    assert_eq!(value("qhost_pool_occupancy"), 0.0, "nothing runs now");
    assert_eq!(value("qhost_tasks{state=\"succeeded\"}"), 5.0);
    assert_eq!(value("qhost_tasks_ended_total{state=\"succeeded\"}"), 5.0);
    assert_eq!(value("qhost_tasks_ended_total{state=\"failed\"}"), 1.0);
    assert_eq!(
        value("qhost_oldest_ready_age_seconds"),
        0.0,
        "nothing is ready"
    );
    let build = format!(
        "qhost_build_info{{version=\"{}\"}}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(value(&build), 1.0);
    assert!(metrics.contains("# TYPE qhost_tasks_ended_total counter"));
    assert!(metrics.contains("# TYPE qhost_claim_latency_seconds histogram"));
    assert!(server.stop().success());
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    // As `qhost completions bash | head -1` does: read one line, then close the pipe.
    let mut child = bare_cli()
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Byte by byte, so that no more than the line leaves the pipe: the script is larger
    // than a pipe holds, so the writer is still writing when the pipe closes.
    let mut out = child.stdout.take().unwrap();
    let mut byte = [0u8];
    while out.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {}
    drop(out);
    let status = child.wait().unwrap();
    let mut message = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut message)
        .unwrap();
    assert!(!message.contains("panicked"), "{message}");
    assert_ne!(status.code(), Some(101), "{message}");
    assert!(message.is_empty(), "{message}");
}

#[test]
fn connection_flags_show_on_client_commands_only_under_their_heading() {
    for local in ["serve", "run", "bench"] {
        let output = bare_cli().args([local, "--help"]).output().unwrap();
        expect_code(&output, 0);
        let help = stdout(&output);
        assert!(
            !help.contains("--token") && !help.contains("--server"),
            "{local}: {help}"
        );
    }
    let output = bare_cli().args(["serve", "--help"]).output().unwrap();
    let help = stdout(&output);
    for default in ["127.0.0.1:7700", "qhost-data", "30s"] {
        assert!(help.contains(default), "no default {default}: {help}");
    }

    for client in [
        &["module", "--help"][..],
        &["module", "ls", "--help"],
        &["status", "--help"],
    ] {
        let output = bare_cli().args(client).output().unwrap();
        expect_code(&output, 0);
        let help = stdout(&output);
        let connection = help
            .split_once("Connection:")
            .unwrap_or_else(|| panic!("no Connection heading: {help}"))
            .1;
        for flag in ["--server", "--token", "--client-config"] {
            assert!(connection.contains(flag), "{client:?}: {help}");
        }
    }

    // Every flag says what it is for: no line of a help is a bare flag.
    for command in [
        &["serve", "--help"][..],
        &["run", "--help"],
        &["bench", "--help"],
        &["module", "add", "--help"],
        &["submit", "--help"],
        &["batch", "submit", "--help"],
        &["log", "--help"],
    ] {
        let output = bare_cli().args(command).output().unwrap();
        let help = stdout(&output);
        let lines: Vec<&str> = help.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if line.starts_with('-') {
                let words = line.split_whitespace().count();
                let flag_words = line
                    .split_whitespace()
                    .take_while(|w| w.starts_with('-') || w.starts_with('<'))
                    .count();
                // The long help puts a flag's text on the lines below it.
                let below = lines
                    .get(i + 1)
                    .is_some_and(|l| !l.is_empty() && !l.starts_with('-'));
                assert!(
                    words > flag_words || below,
                    "{command:?}: `{line}` has no help"
                );
            }
        }
    }
}

#[test]
fn a_refused_token_says_where_tokens_come_from() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let wrong = bare_cli()
        .env("QHOST_SERVER", &server.url)
        .args(["module", "ls", "--token", "qha_not-the-token"])
        .output()
        .unwrap();
    let missing = bare_cli()
        .env("QHOST_SERVER", &server.url)
        .args(["module", "ls"])
        .output()
        .unwrap();
    for output in [wrong, missing] {
        expect_code(&output, 4);
        let message = stderr(&output);
        for source in [
            "--token",
            "QHOST_TOKEN",
            "client.toml",
            "admin-token",
            "QHOST_DATA_DIR",
        ] {
            assert!(message.contains(source), "no {source}: {message}");
        }
    }
    let help = stdout(&bare_cli().args(["status", "--help"]).output().unwrap());
    assert!(help.contains("QHOST_DATA_DIR"), "{help}");
    assert!(server.stop().success());
}

#[test]
fn a_server_without_a_scheme_is_refused_clearly() {
    let output = bare_cli()
        .args(["status", "--server", "localhost:7700"])
        .output()
        .unwrap();
    expect_code(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains("`localhost:7700`")
            && message.contains("give a URL like http://HOST:PORT"),
        "{message}"
    );
}

#[test]
fn serve_says_what_it_runs_in_one_line_at_start() {
    use std::process::Stdio;
    let data = tempfile::tempdir().unwrap();
    let mut command = qhost_tests::server::serve_command(data.path(), 3);
    command.args(["--node", "n-one"]);
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It says it listens on stdout once started; by then the line is logged.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut log).unwrap();
    let found = log
        .lines()
        .find(|l| l.contains("listening on"))
        .map(str::to_owned);
    let seen = &log;
    let line = found.unwrap_or_else(|| panic!("no start line in {seen:?}"));
    for part in [
        concat!("qhost ", env!("CARGO_PKG_VERSION")),
        "node n-one",
        "3 workers",
        "store sqlite:",
        "listening on 127.0.0.1:",
    ] {
        assert!(line.contains(part), "no `{part}` in {line}");
    }
}

/// `--listen` takes a host name as well as an address, and a value without a port is
/// refused with what to give instead.
#[test]
fn serve_listens_on_a_host_name() {
    use std::process::{Command, Stdio};
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(qhost_tests::qhost_binary())
        .args(["serve", "--listen", "localhost:0", "--data-dir"])
        .arg(data.path())
        .env_remove("QHOST_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("qhost listening on ")
        .map(str::to_owned);
    let answer = url
        .as_deref()
        .map(|url| qhost_tests::server::call("GET", &format!("{url}/healthz"), None, None).0);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(answer, Some(200), "no server on localhost: {first:?}");

    let other = tempfile::tempdir().unwrap();
    let mut no_port = Command::new(qhost_tests::qhost_binary());
    no_port
        .args(["serve", "--listen", "localhost", "--data-dir"])
        .arg(other.path())
        .env_remove("QHOST_CONFIG");
    let err = qhost_tests::server::refused(no_port);
    assert!(err.contains("give HOST:PORT"), "{err}");
}

/// The task id of `submit`'s first line, `task ID in batch B`.
fn submitted_task(output: &Output) -> String {
    expect_code(output, 0);
    stdout(output)
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no task in {}", stdout(output)))
        .to_owned()
}

#[test]
fn task_logs_print_each_attempt_as_text_and_follow_until_the_task_ends() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    add_module(&server, "misbehave");
    let opened = server.run(&["batch", "open"]);
    let handle = field(&opened, "handle");
    let submit = |input: &str, order: &str, attempts: &str| {
        submitted_task(&server.run(&[
            "submit",
            "--module",
            "misbehave",
            "--input",
            input,
            "--order",
            order,
            "--max-attempts",
            attempts,
            "--batch",
            &handle,
        ]))
    };
    // The task to follow waits at the gate behind one that runs until it is cancelled, so
    // the follower starts before it has any attempt.
    let blocker = submit("sleep:600000", "0", "1");
    let panics = submit("panic", "1", "2");
    let follower = server
        .cli()
        .args(["task", "logs", &panics, "--follow"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    expect_code(&server.run(&["task", "cancel", &blocker]), 0);
    let followed = follower.wait_with_output().unwrap();
    expect_code(&followed, 0);
    let text = stdout(&followed);
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("== ")).collect();
    assert_eq!(headers.len(), 2, "{text}");
    assert!(headers[0].starts_with("== attempt 1 on ") && headers[0].contains(": trapped after"));
    assert!(headers[1].starts_with("== attempt 2 on "), "{text}");
    let panic_lines = text
        .lines()
        .filter(|l| l.starts_with("stderr ") && l.contains("asked to panic"))
        .count();
    assert_eq!(panic_lines, 2, "{text}");

    let second = server.run(&["task", "logs", &panics, "--attempt", "2"]);
    expect_code(&second, 0);
    assert_eq!(stdout(&second).matches("== attempt").count(), 1);
    assert!(stdout(&second).starts_with("== attempt 2 on "));
    let none = server.run(&["task", "logs", &panics, "--attempt", "3"]);
    expect_code(&none, 3);
    assert!(
        stderr(&none).contains("has no attempt 3"),
        "{}",
        stderr(&none)
    );

    // Bytes that are not UTF-8 read as text, and the API keeps them exactly beside it.
    let binary = submit("binary", "2", "1");
    let followed = server.run(&["task", "logs", &binary, "--follow"]);
    expect_code(&followed, 0);
    assert!(
        stdout(&followed).contains("\nstdout a\u{fffd}\n"),
        "{}",
        stdout(&followed)
    );
    let (status, body) = get(
        &format!("http://{}/v1/tasks/{binary}", server.address()),
        &server.token,
    );
    assert_eq!(status, 200, "{body}");
    let view: Value = serde_json::from_str(&body).unwrap();
    let attempt = &view["log"][0];
    assert_eq!(attempt["stdout"], "a\u{fffd}\n");
    assert_eq!(attempt["stdout_base64"], "Yf8K");
    assert_eq!(attempt["stderr"], "");
    assert!(attempt.get("stderr_base64").is_none(), "{attempt}");
    assert!(server.stop().success());
}

#[test]
fn a_delayed_task_says_when_it_is_due_and_a_bad_time_is_refused_by_name() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "echo");
    let delayed = submitted_task(&server.run(&[
        "submit",
        "--module",
        "echo",
        "--run-at",
        "2999-01-01T00:00:00+01:00",
    ]));
    let shown = server.run(&["task", "show", &delayed]);
    expect_code(&shown, 0);
    assert!(
        stdout(&shown).contains("state     waiting\n  waits on  delayed, due in "),
        "{}",
        stdout(&shown)
    );
    assert!(
        stdout(&shown).contains(" d (2998-12-31T23:00:00.000Z)\n")
            && stdout(&shown).contains("due       in "),
        "{}",
        stdout(&shown)
    );
    let refused = server.run(&["submit", "--module", "echo", "--run-at", "tomorrow"]);
    expect_code(&refused, 2);
    assert!(
        stderr(&refused).contains("field `run_at`: `tomorrow` is not an RFC 3339 time"),
        "{}",
        stderr(&refused)
    );
    let refused = server.run(&["submit", "--module", "echo", "--delay", "soon"]);
    expect_code(&refused, 2);
    assert!(
        stderr(&refused).contains("field `delay`"),
        "{}",
        stderr(&refused)
    );
    assert!(server.stop().success());
}

#[test]
fn a_schedule_opens_batches_from_its_plan_and_is_steered_by_name() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "echo");
    let plan = write_plan(
        data.path(),
        "tick.toml",
        "[[task]]\nmodule = \"echo\"\ninput = \"tick\"\n",
    );
    let refused = server.run(&[
        "schedule",
        "add",
        "bad",
        "--cron",
        "61 * * * *",
        "--plan",
        &plan,
    ]);
    expect_code(&refused, 2);
    assert!(
        stderr(&refused).contains("field `cron`"),
        "{}",
        stderr(&refused)
    );
    let unknown = write_plan(data.path(), "unknown.toml", "[[task]]\nmodule = \"ecko\"\n");
    let refused = server.run(&[
        "schedule",
        "add",
        "bad",
        "--cron",
        "* * * * *",
        "--plan",
        &unknown,
    ]);
    expect_code(&refused, 2);
    assert!(stderr(&refused).contains("task 0"), "{}", stderr(&refused));

    // Every second, in a named zone.
    let added = server.run(&[
        "schedule",
        "add",
        "often",
        "--cron",
        "* * * * * *",
        "--timezone",
        "Europe/Berlin",
        "--plan",
        &plan,
    ]);
    expect_code(&added, 0);
    assert!(
        stdout(&added).starts_with("schedule often: next tick "),
        "{}",
        stdout(&added)
    );
    let again = server.run(&[
        "schedule",
        "add",
        "often",
        "--cron",
        "* * * * *",
        "--plan",
        &plan,
    ]);
    expect_code(&again, 5);

    // The first tick's batch: the schedule names it, and its task runs.
    let show = |name: &str| -> Value {
        let output = server.run(&["schedule", "show", name, "--json"]);
        expect_code(&output, 0);
        serde_json::from_str(&stdout(&output)).unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let batch = loop {
        if let Some(batch) = show("often")["last_batch"].as_i64() {
            break batch;
        }
        assert!(std::time::Instant::now() < deadline, "no tick fired");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    expect_code(&server.run(&["batch", "wait", &batch.to_string()]), 0);
    let (_, body) = get(
        &format!("http://{}/v1/batches/{batch}", server.address()),
        &server.token,
    );
    let info: Value = serde_json::from_str(&body).unwrap();
    assert!(
        info["name"].as_str().unwrap().starts_with("often@"),
        "{info}"
    );
    assert_eq!(info["progress"]["succeeded"], 1, "{info}");

    let paused = server.run(&["schedule", "pause", "often"]);
    expect_code(&paused, 0);
    assert_eq!(stdout(&paused), "schedule often: paused\n");
    let listed = server.run(&["schedule", "ls"]);
    assert!(stdout(&listed).contains("paused"), "{}", stdout(&listed));

    // Out of turn, even while paused.
    let ran = server.run(&["schedule", "run-now", "often"]);
    expect_code(&ran, 0);
    assert!(
        stdout(&ran).starts_with("schedule often: opened batch "),
        "{}",
        stdout(&ran)
    );
    let view = show("often");
    assert_eq!(view["ticks"][0]["detail"], "run now", "{view}");

    expect_code(&server.run(&["schedule", "resume", "often"]), 0);
    expect_code(&server.run(&["schedule", "rm", "often"]), 0);
    let gone = server.run(&["schedule", "show", "often"]);
    expect_code(&gone, 3);
    assert!(
        stderr(&gone).contains("schedule often does not exist"),
        "{}",
        stderr(&gone)
    );
    assert!(server.stop().success());
}

/// Lines a child writes to a pipe, as they come, read by a thread of their own.
fn lines_of(pipe: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    receive
}

/// The next line; a minute without one fails the test rather than hang it.
fn next_line(lines: &std::sync::mpsc::Receiver<String>, what: &str) -> String {
    lines
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("no {what}: {e}"))
}

#[test]
fn log_follow_goes_on_across_a_restart_of_the_server() {
    use std::process::Stdio;
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "echo");
    let submit = |server: &Server, input: &str| -> i64 {
        let output = server.run(&["submit", "--module", "echo", "--input", input, "--json"]);
        expect_code(&output, 0);
        let submitted: Value = serde_json::from_str(&stdout(&output)).unwrap();
        expect_code(
            &server.run(&["batch", "wait", submitted["handle"].as_str().unwrap()]),
            0,
        );
        submitted["task"].as_i64().unwrap()
    };
    let first = submit(&server, "one");
    let mut follower = server
        .cli()
        .args(["log", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let printed = lines_of(follower.stdout.take().unwrap());
    let said = lines_of(follower.stderr.take().unwrap());
    let task_of = |line: String| -> i64 {
        let attempt: Value = serde_json::from_str(&line).unwrap();
        attempt["task"].as_i64().unwrap()
    };
    assert_eq!(task_of(next_line(&printed, "first attempt")), first);

    // Stopped: the follower says it lost the server; started again: that it is back.
    let address = server.address().to_owned();
    assert!(server.stop().success());
    let lost = next_line(&said, "word of the lost server");
    assert!(
        lost.contains(&format!("lost the qhost server at http://{address}"))
            && lost.contains("reconnecting"),
        "{lost}"
    );
    // The same data directory on the same address: the server restarted.
    let server = Server::start_at(data.path(), 1, &address);
    let second = submit(&server, "two");
    let third = submit(&server, "three");
    let back = next_line(&said, "word of the server back");
    assert!(back.contains("reconnected"), "{back}");
    assert_eq!(task_of(next_line(&printed, "second attempt")), second);
    assert_eq!(task_of(next_line(&printed, "third attempt")), third);
    // Nothing printed twice: the next line is the next attempt.
    let fourth = submit(&server, "four");
    assert_eq!(task_of(next_line(&printed, "fourth attempt")), fourth);
    let _ = follower.kill();
    let _ = follower.wait();
    assert!(server.stop().success());
}

#[test]
fn the_server_log_has_colour_codes_only_on_a_terminal() {
    use std::process::Stdio;
    let data = tempfile::tempdir().unwrap();
    let mut child = qhost_tests::server::serve_command(data.path(), 1)
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It says it listens on stdout once started; by then its start line is logged.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut log).unwrap();
    assert!(log.contains("listening on"), "{log:?}");
    assert!(
        !log.contains('\x1b'),
        "escape codes in a captured log: {log:?}"
    );
}

#[test]
fn a_refused_handle_says_what_it_opens_and_what_takes_the_admin_token() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let mine = field(&server.run(&["batch", "open"]), "handle");
    let other = field(&server.run(&["batch", "open"]), "batch");
    let mine_id = qhost::scheduler::handle_batch(&mine).unwrap();
    for args in [&["batch", "show", &other][..], &["module", "ls"]] {
        let output = server
            .cli()
            .args(args)
            .args(["--token", &mine])
            .output()
            .unwrap();
        expect_code(&output, 4);
        let message = stderr(&output);
        assert!(
            message.contains("403 forbidden")
                && message.contains(&format!(
                    "the token sent is the handle of batch {mine_id}: a batch handle opens \
                     only its own batch and that batch's tasks"
                ))
                && message.contains("admin token"),
            "{args:?}: {message}"
        );
    }
    assert!(server.stop().success());
}

#[test]
fn a_closed_stderr_loses_the_message_and_keeps_the_exit_code() {
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let output = bare_cli()
        .args(["status", "--server", "http://127.0.0.1:1"])
        .stderr(closed())
        .output()
        .unwrap();
    // A panic would exit 101.
    assert_eq!(output.status.code(), Some(6));
    // A task that failed still exits 1 when its report cannot be written.
    let guest = qhost_tests::guest("misbehave");
    let output = bare_cli()
        .args(["run", guest.to_str().unwrap(), "--input", "error"])
        .stderr(closed())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn status_nodes_and_log_tail_read_the_queue() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    add_module(&server, "echo");
    let mut tasks = Vec::new();
    for input in ["one", "two", "three"] {
        let output = server.run(&["submit", "--module", "echo", "--input", input, "--json"]);
        expect_code(&output, 0);
        let submitted: Value = serde_json::from_str(&stdout(&output)).unwrap();
        let handle = submitted["handle"].as_str().unwrap();
        expect_code(&server.run(&["batch", "wait", handle]), 0);
        tasks.push(submitted["task"].as_i64().unwrap());
    }

    let output = server.run(&["status", "--json"]);
    expect_code(&output, 0);
    let status: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(status["tasks"]["succeeded"], 3, "{status}");
    assert_eq!(status["ended_total"]["succeeded"], 3, "{status}");
    assert_eq!(status["oldest_ready_age_seconds"], Value::Null, "{status}");
    assert_eq!(
        status["batches"],
        serde_json::json!([]),
        "all ended: {status}"
    );
    assert_eq!(status["nodes"][0]["workers"], 2, "{status}");
    let table = stdout(&server.run(&["status"]));
    assert!(
        table.contains("0 ready") && table.contains("3 succeeded"),
        "{table}"
    );
    assert!(table.contains("no task ready to claim"), "{table}");

    let table = stdout(&server.run(&["nodes"]));
    let mut lines = table.lines();
    assert!(lines.next().unwrap().starts_with("NODE"), "{table}");
    assert!(lines.next().unwrap().contains(" 0/2 "), "{table}");
    let nodes: Value = serde_json::from_str(&stdout(&server.run(&["nodes", "--json"]))).unwrap();
    assert_eq!(
        (nodes[0]["busy"].as_u64(), nodes[0]["workers"].as_u64()),
        (Some(0), Some(2))
    );

    let tasks_of = |args: &[&str]| -> Vec<i64> {
        let output = server.run(args);
        expect_code(&output, 0);
        stdout(&output)
            .lines()
            .map(|line| {
                serde_json::from_str::<Value>(line).unwrap()["task"]
                    .as_i64()
                    .unwrap()
            })
            .collect()
    };
    let newest_first: Vec<i64> = tasks.iter().rev().copied().collect();
    assert_eq!(tasks_of(&["log", "--json"]), newest_first);
    assert_eq!(
        tasks_of(&["log", "-n", "2", "--json"]),
        tasks[1..],
        "the last two, oldest first"
    );
    assert_eq!(tasks_of(&["log", "--limit", "1", "--json"]), tasks[2..]);
    assert!(tasks_of(&["log", "--until", "2001-01-01T00:00:00Z", "--json"]).is_empty());
    assert_eq!(tasks_of(&["log", "--since", "1h", "--json"]), newest_first);
    let output = server.run(&["log", "--until", "yesterday"]);
    expect_code(&output, 2);
    assert!(stderr(&output).contains("--until"), "{}", stderr(&output));
    assert!(server.stop().success());
}
