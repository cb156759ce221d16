//! Outbound HTTP, driven with the `fetch` example against origin servers the test starts:
//! an allowed origin answers; another origin, a redirect out, and a batch granted nothing
//! are refused (the guest sees `HTTP-request-denied`, the log says why, and the server
//! sees no request); each HTTP limit ends the attempt with `http-limit`; the wall-clock
//! limit still interrupts a task waiting on the network. Then the same through a server:
//! the operator's list, a batch's grant, and a grant beyond the list refused; and the
//! Python example, alike. An origin that pushes back (429 with `Retry-After`) has the
//! task deferred: its group waits, and no attempt is used.

use std::sync::Arc;
use std::time::Duration;

use qhost::runtime::limits::KIB;
use qhost::runtime::{
    AllowedOrigin, Outcome, RunBudget, RunReport, RunRequest, Runtime, RuntimeConfig, TaskLimits,
    TaskModule,
};
use qhost_tests::origin_server::OriginServer;
use qhost_tests::server::call;
use qhost_tests::{guest, language_guest};
use serde_json::json;

/// sha256("hello"), what `fetch` returns for `/hello`.
const HELLO_SHA256: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

fn origins(list: &[String]) -> Vec<AllowedOrigin> {
    list.iter().map(|o| o.parse().unwrap()).collect()
}

/// A runtime whose operator allows `allowed`, with the fetch example loaded.
fn fetcher(allowed: &[String]) -> (Runtime, Arc<TaskModule>) {
    let mut config = RuntimeConfig::with_workers(1);
    config.allow_http = origins(allowed);
    let runtime = Runtime::new(config).expect("runtime");
    let fetch = runtime
        .load_file(&guest("fetch"))
        .expect("the fetch example loads");
    (runtime, fetch)
}

async fn fetch(
    runtime: &Runtime,
    module: &TaskModule,
    url: &str,
    granted: &[String],
    limits: TaskLimits,
) -> RunReport {
    let request = RunRequest {
        input: url.as_bytes().to_vec(),
        allow_http: origins(granted).into(),
        limits,
        ..RunRequest::default()
    };
    runtime.run(module, request).await.expect("run")
}

fn log_text(report: &mut RunReport) -> String {
    report
        .take_logs()
        .iter()
        .map(|line| line.message.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_origin_answers_and_the_log_records_the_request() {
    let server = OriginServer::start();
    let (runtime, fetch_module) = fetcher(&[server.origin()]);
    let mut report = fetch(
        &runtime,
        &fetch_module,
        &server.url("/hello"),
        &[server.origin()],
        TaskLimits::default(),
    )
    .await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert_eq!(report.output.as_deref(), Some(HELLO_SHA256.as_bytes()));
    assert_eq!(report.http.len(), 1);
    let call = &report.http[0];
    assert_eq!(
        (
            call.method.as_str(),
            call.origin.as_str(),
            call.status,
            call.received
        ),
        ("GET", server.origin().as_str(), Some(200), 5)
    );
    assert_eq!(call.error, None);
    let log = log_text(&mut report);
    assert!(
        log.contains(&format!("[qhost] http GET {} -> 200", server.origin())),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_origins_a_redirect_out_and_an_ungranted_batch_are_refused() {
    let allowed = OriginServer::start();
    let other = OriginServer::start();
    let (runtime, fetch_module) = fetcher(&[allowed.origin()]);
    let limits = TaskLimits::default();

    // Another origin: not in the batch's grant.
    let mut report = fetch(
        &runtime,
        &fetch_module,
        &other.url("/hello"),
        &[allowed.origin()],
        limits,
    )
    .await;
    assert_eq!(report.outcome, Outcome::GuestError);
    let error = report.error.clone().unwrap();
    assert!(error.contains("HttpRequestDenied"), "{error}");
    let log = log_text(&mut report);
    assert!(
        log.contains(&format!(
            "{} is not in its batch's `allow_http`",
            other.origin()
        )),
        "{log}"
    );

    // A redirect to it: the allowed origin answers, the request that follows is refused.
    let out = allowed.url(&format!("/redirect?to={}", other.url("/hello")));
    let mut report = fetch(&runtime, &fetch_module, &out, &[allowed.origin()], limits).await;
    assert_eq!(report.outcome, Outcome::GuestError);
    assert!(report.error.clone().unwrap().contains("HttpRequestDenied"));
    assert_eq!(report.http.len(), 2, "{:?}", report.http);
    assert_eq!(report.http[0].status, Some(302));
    assert!(log_text(&mut report).contains("redirected to"));

    // A batch granted nothing, though the operator allows the origin.
    let mut report = fetch(&runtime, &fetch_module, &allowed.url("/hello"), &[], limits).await;
    assert_eq!(report.outcome, Outcome::GuestError);
    assert!(log_text(&mut report).contains("its batch was not granted outbound HTTP"));

    // A grant the operator's list does not cover (it changed since the batch was opened).
    let (narrow, narrow_fetch) = fetcher(&[]);
    let mut report = fetch(
        &narrow,
        &narrow_fetch,
        &allowed.url("/hello"),
        &[allowed.origin()],
        limits,
    )
    .await;
    assert_eq!(report.outcome, Outcome::GuestError);
    assert!(log_text(&mut report).contains("this server allows no outbound HTTP"));

    assert_eq!(other.hits(), 0, "a refused request reached its origin");
    assert_eq!(allowed.hits(), 1, "only the redirect was served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_http_limit_ends_the_attempt_with_its_own_outcome() {
    let server = OriginServer::start();
    let (runtime, fetch_module) = fetcher(&[server.origin()]);
    let granted = [server.origin()];
    let cases = [
        (
            server.url("/bytes/300000"),
            TaskLimits {
                http_received: 100 * KIB,
                ..TaskLimits::default()
            },
            "limit `http_received`",
        ),
        (
            // Three requests: two redirects, then /hello.
            server.url(&format!(
                "/redirect?to={}",
                server.url(&format!("/redirect?to={}", server.url("/hello")))
            )),
            TaskLimits {
                http_requests: 2,
                ..TaskLimits::default()
            },
            "limit `http_requests`",
        ),
        (
            server.url("/hang"),
            TaskLimits {
                http_timeout: Duration::from_millis(300),
                ..TaskLimits::default()
            },
            "limit `http_timeout`",
        ),
    ];
    for (url, limits, says) in cases {
        let report = fetch(&runtime, &fetch_module, &url, &granted, limits).await;
        assert_eq!(
            report.outcome,
            Outcome::HttpLimit,
            "{url}: {:?}",
            report.error
        );
        let error = report.error.unwrap();
        assert!(error.contains(says), "{url}: {error}");
    }

    // The attempt's own wall-clock limit ends a task waiting on the network.
    let limits = TaskLimits {
        timeout: Duration::from_millis(300),
        ..TaskLimits::default()
    };
    let report = fetch(
        &runtime,
        &fetch_module,
        &server.url("/hang"),
        &granted,
        limits,
    )
    .await;
    assert_eq!(report.outcome, Outcome::Timeout, "{:?}", report.error);
}

/// A run given the HTTP bytes its tenant's budget has left ends `budget` at the chunk
/// that crosses them, saying what it used; one within them succeeds and reports the bytes
/// it moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_ends_at_the_http_bytes_it_was_given() {
    let server = OriginServer::start();
    let (runtime, fetch_module) = fetcher(&[server.origin()]);
    let run = |url: String, bytes: u64| {
        let request = RunRequest {
            input: url.into_bytes(),
            allow_http: origins(&[server.origin()]).into(),
            budget: RunBudget {
                http_bytes: Some(bytes),
                ..RunBudget::default()
            },
            ..RunRequest::default()
        };
        runtime.run(&fetch_module, request)
    };
    let over = run(server.url("/bytes/300000"), 100_000).await.unwrap();
    assert_eq!(over.outcome, Outcome::Budget, "{:?}", over.error);
    let error = over.error.unwrap_or_default();
    assert!(
        error.contains("HTTP bodies its tenant's budget had left"),
        "{error}"
    );
    assert!(
        over.http_bytes > 100_000 && over.http_bytes < 300_000,
        "moved {} bytes",
        over.http_bytes
    );
    let within = run(server.url("/hello"), 100_000).await.unwrap();
    assert_eq!(within.outcome, Outcome::Succeeded, "{:?}", within.error);
    assert_eq!(within.http_bytes, 5, "the body of /hello");
}

#[test]
fn a_server_runs_granted_requests_and_refuses_grants_beyond_its_list() {
    let origin = OriginServer::start();
    let data = tempfile::tempdir().unwrap();
    let server = origin.allowed_by_server(data.path());

    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        Some(json!({
            "allow_http": ["http://127.0.0.1:*"],
            "tasks": [{"module": "fetch", "input": origin.url("/hello")}],
        })),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string().contains("field `allow_http`"),
        "the refusal names the field: {body}"
    );

    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        Some(json!({
            "allow_http": [origin.origin()],
            "tasks": [{"module": "fetch", "input": origin.url("/hello")}],
        })),
    );
    assert_eq!(status, 201, "{body}");
    let batch = body["batch"]["id"].as_i64().unwrap();
    let task = body["tasks"][0].as_i64().unwrap();
    let (status, waited) = call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=60s", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{waited}");
    assert_eq!(waited["progress"]["succeeded"], 1, "{waited}");
    let (_, output) = call(
        "GET",
        &format!("{}/v1/tasks/{task}/output", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(output, serde_json::Value::String(HELLO_SHA256.into()));
}

/// `fetch` against an origin that answers its first request 429 with `Retry-After: 2`:
/// the task's attempt ends `deferred`, its group starts no task for 2 s (the execution log
/// says so), a task of another group is not held, and every task succeeds without using
/// one of its attempts.
#[test]
fn a_task_pushed_back_with_retry_after_holds_its_group_and_uses_no_attempt() {
    let origin = OriginServer::start();
    let data = tempfile::tempdir().unwrap();
    let server = origin.allowed_by_server(data.path());
    let fetch = |path: &str, group: &str| json!({"module": "fetch", "input": origin.url(path), "group": group});
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        Some(json!({
            "allow_http": [origin.origin()],
            "tasks": [
                fetch("/limited/first", "api"),
                fetch("/hello", "api"),
                fetch("/hello", "api"),
                fetch("/hello", "other"),
            ],
        })),
    );
    assert_eq!(status, 201, "{body}");
    let batch = body["batch"]["id"].as_i64().unwrap();
    let ids: Vec<i64> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();
    let (status, waited) = call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=60s", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{waited}");
    assert_eq!(
        waited["progress"]["succeeded"], 4,
        "every task succeeds: {waited}"
    );

    let (status, page) = call(
        "GET",
        &format!("{}/v1/attempts?batch={batch}&order=oldest", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{page}");
    let attempts = page["attempts"].as_array().unwrap();
    let deferred: Vec<_> = attempts
        .iter()
        .filter(|a| a["outcome"] == "deferred")
        .collect();
    assert_eq!(deferred.len(), 1, "{page}");
    let deferred = deferred[0];
    assert_eq!(deferred["task"], ids[0]);
    let hold_end = deferred["ended_at"].as_i64().unwrap() + 2_000_000;
    for a in attempts {
        let started = a["started_at"].as_i64().unwrap();
        if a["outcome"] == "deferred" || started < deferred["ended_at"].as_i64().unwrap() {
            continue;
        }
        if a["group"] == "api" {
            assert!(
                started >= hold_end,
                "task {} of the held group started {} ms into the 2 s hold",
                a["task"],
                (started - (hold_end - 2_000_000)) / 1000
            );
        }
    }
    let api_after_hold = attempts
        .iter()
        .filter(|a| a["group"] == "api" && a["outcome"] == "succeeded")
        .count();
    assert_eq!(api_after_hold, 3, "{page}");
    let other = attempts.iter().find(|a| a["group"] == "other").unwrap();
    assert!(
        other["started_at"].as_i64().unwrap() < hold_end,
        "another group is not held: {other}"
    );

    // Each task used one attempt of its three: the deferred run is not charged.
    for &id in &ids {
        let (_, view) = call(
            "GET",
            &format!("{}/v1/tasks/{id}", server.url),
            Some(&server.token),
            None,
        );
        let runs = view["attempts"].as_i64().unwrap();
        let max = view["max_attempts"].as_i64().unwrap();
        assert_eq!(
            (view["state"].as_str(), max - runs),
            (Some("succeeded"), 2),
            "two attempts left: {view}"
        );
    }
    let (_, first) = call(
        "GET",
        &format!("{}/v1/tasks/{}", server.url, ids[0]),
        Some(&server.token),
        None,
    );
    assert_eq!(first["attempts"], 2, "two runs in the log: {first}");
    let (_, output) = call(
        "GET",
        &format!("{}/v1/tasks/{}/output", server.url, ids[0]),
        Some(&server.token),
        None,
    );
    assert_eq!(output, serde_json::Value::String(HELLO_SHA256.into()));
}

/// The Python example fetches as the Rust one does, and is refused alike (it needs the
/// language toolchains: scripts/guest-toolchains.sh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_example_fetches_and_is_refused_alike() {
    let allowed = OriginServer::start();
    let other = OriginServer::start();
    let mut config = RuntimeConfig::with_workers(1);
    config.allow_http = origins(&[allowed.origin()]);
    let runtime = Runtime::new(config).expect("runtime");
    let python = runtime
        .load_file(&language_guest("fetch-python"))
        .expect("the Python fetch example loads");
    let granted = [allowed.origin()];
    let limits = TaskLimits::default();
    let report = fetch(&runtime, &python, &allowed.url("/hello"), &granted, limits).await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert_eq!(report.output.as_deref(), Some(HELLO_SHA256.as_bytes()));
    let out = allowed.url(&format!("/redirect?to={}", other.url("/hello")));
    let report = fetch(&runtime, &python, &out, &granted, limits).await;
    assert_eq!(report.outcome, Outcome::GuestError);
    let error = report.error.unwrap();
    assert!(error.contains("HttpRequestDenied"), "{error}");
    assert_eq!(other.hits(), 0);
}

/// `http://localhost:*` on both lists reaches local origins, but not qhost's own API:
/// that takes entries naming its very port.
#[test]
fn a_loopback_grant_does_not_reach_the_servers_own_api() {
    let origin = OriginServer::start();
    let data = tempfile::tempdir().unwrap();
    let server = qhost_tests::server::Server::start_with(data.path(), 1, |command| {
        command.args(["--allow-http", "http://localhost:*"]);
    });
    server.upload("fetch");
    let port = server.address().rsplit(':').next().unwrap().to_owned();
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        Some(json!({
            "allow_http": ["http://localhost:*"],
            "tasks": [
                {"module": "fetch", "input": format!("http://localhost:{port}/healthz"),
                 "max_attempts": 1},
                {"module": "fetch", "input": format!("http://localhost:{}/hello", origin.port())},
            ],
        })),
    );
    assert_eq!(status, 201, "{body}");
    let batch = body["batch"]["id"].as_i64().unwrap();
    let (own, local) = (
        body["tasks"][0].as_i64().unwrap(),
        body["tasks"][1].as_i64().unwrap(),
    );
    let (status, waited) = call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=60s", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{waited}");
    let show = |task: i64| {
        call(
            "GET",
            &format!("{}/v1/tasks/{task}", server.url),
            Some(&server.token),
            None,
        )
        .1
    };
    let local = show(local);
    assert_eq!(local["state"], "succeeded", "{local:#}");
    let own = show(own);
    assert_eq!(own["state"], "failed", "{own:#}");
    let attempt = &own["log"][0];
    let said = attempt["logs"].to_string();
    assert!(
        said.contains("this qhost server's own address"),
        "{attempt:#}"
    );
}

/// An entry naming the server's port exactly, on both lists, reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_address_is_reached_only_by_its_exact_port() {
    let own = OriginServer::start();
    let any_port = "http://localhost:*".to_owned();
    let exact = format!("http://localhost:{}", own.port());
    let mut config = RuntimeConfig::with_workers(1);
    config.allow_http = origins(&[any_port.clone(), exact.clone()]);
    config.own_addresses = vec![format!("127.0.0.1:{}", own.port()).parse().unwrap()];
    let runtime = Runtime::new(config).expect("runtime");
    let module = runtime.load_file(&guest("fetch")).unwrap();
    let url = format!("http://localhost:{}/hello", own.port());
    let limits = TaskLimits::default();
    let mut report = fetch(
        &runtime,
        &module,
        &url,
        std::slice::from_ref(&any_port),
        limits,
    )
    .await;
    assert_eq!(report.outcome, Outcome::GuestError);
    assert!(log_text(&mut report).contains("this qhost server's own address"));
    let report = fetch(&runtime, &module, &url, &[exact], limits).await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert_eq!(own.hits(), 1);
}
