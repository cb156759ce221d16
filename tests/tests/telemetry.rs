//! What an operator watching `qhost serve` gets: a JSON log with a line per attempt and
//! per request (and never a credential), and OpenTelemetry traces sent to a collector
//! (here a receiver the test starts) that follow a submission to the attempts that ran
//! its tasks and on to the requests those attempts sent.

use std::collections::HashSet;
use std::time::Duration;

use qhost_tests::origin_server::OriginServer;
use qhost_tests::otlp_receiver::OtlpReceiver;
use qhost_tests::server::{Server, agent, call};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// The spans received, one a line: name, trace, span, parent, attributes.
fn summary(spans: &[qhost_tests::otlp_receiver::Received]) -> String {
    spans
        .iter()
        .map(|s| {
            let attributes: Vec<String> = s
                .span
                .attributes
                .iter()
                .map(|kv| format!("{}={:?}", kv.key, kv.value))
                .collect();
            format!(
                "{} trace {} span {} parent {} {}\n",
                s.span.name,
                s.trace_id(),
                s.span_id(),
                s.parent_span_id(),
                attributes.join(" ")
            )
        })
        .collect()
}

/// Waits for a batch to end, as `who`; returns its view.
fn wait(server: &Server, batch: i64, who: &str) -> Value {
    let (status, waited) = call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=60s", server.url),
        Some(who),
        None,
    );
    assert_eq!(status, 200, "{waited}");
    waited
}

#[test]
fn the_json_log_has_a_line_per_attempt_and_per_request_and_no_credential() {
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log_path = logs.path().join("stderr");
    let log_file = std::fs::File::create(&log_path).unwrap();
    let server = Server::start_with(data.path(), 2, |command| {
        command
            .arg("--log-json")
            .env("QHOST_LOG", "debug")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stderr(log_file);
    });
    server.upload("echo");
    server.upload("misbehave");
    let opened = server.open_batch(json!({"tasks": [
        {"module": "echo", "input": "a"},
        {"module": "echo", "input": "b"},
        {"module": "misbehave", "input": "error:5000", "max_attempts": 1},
    ]}));
    let waited = wait(&server, opened.id, &opened.handle);
    assert_eq!(waited["progress"]["succeeded"], 2, "{waited}");
    assert_eq!(waited["progress"]["failed"], 1, "{waited}");
    let metrics = format!("{}/metrics", server.url);
    assert_eq!(call("GET", &metrics, None, None).0, 401);
    let status = format!("{}/v1/status", server.url);
    assert_eq!(
        call("GET", &status, Some("not-a-token-at-all"), None).0,
        401
    );
    let (token, handle) = (server.token.clone(), opened.handle.clone());
    assert!(server.stop().success());

    let text = std::fs::read_to_string(&log_path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    let of = |target: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|line| line["target"] == target)
            .collect()
    };

    // A line per attempt at info: task, batch, module, outcome, duration, node and slot.
    let attempts = of("qhost::attempt");
    assert_eq!(attempts.len(), 3, "one line per attempt: {text}");
    let mut modules = Vec::new();
    for line in &attempts {
        assert_eq!(line["level"], "INFO", "{line}");
        let fields = &line["fields"];
        assert!(
            opened.tasks.contains(&fields["task"].as_i64().unwrap()),
            "{line}"
        );
        assert_eq!(fields["batch"], opened.id, "{line}");
        assert_eq!(fields["attempt"], 1, "{line}");
        assert!(fields["ms"].as_f64().unwrap() >= 0.0, "{line}");
        assert!(fields["node"].is_string(), "{line}");
        assert!(fields["slot"].as_u64().unwrap() < 2, "{line}");
        modules.push((
            fields["module"].as_str().unwrap().to_owned(),
            fields["outcome"].as_str().unwrap().to_owned(),
        ));
        if fields["outcome"] == "guest-error" {
            let error = fields["error"].as_str().unwrap();
            assert!(error.starts_with("eeee"), "{line}");
            assert!(
                error.len() <= 256,
                "the error is cut: {} bytes",
                error.len()
            );
        } else {
            assert!(fields.get("error").is_none(), "{line}");
        }
    }
    modules.sort();
    assert_eq!(
        modules,
        [
            ("echo".to_owned(), "succeeded".to_owned()),
            ("echo".to_owned(), "succeeded".to_owned()),
            ("misbehave".to_owned(), "guest-error".to_owned()),
        ]
    );

    // A line per request at debug: the route's template, status, time, credential kind.
    let requests = of("qhost::http");
    let find = |method: &str, route: &str| -> &Value {
        requests
            .iter()
            .map(|line| &line["fields"])
            .find(|f| f["method"] == method && f["route"] == route)
            .unwrap_or_else(|| panic!("no line for {method} {route}: {text}"))
    };
    for line in &requests {
        assert_eq!(line["level"], "DEBUG", "{line}");
        assert!(line["fields"]["ms"].as_f64().unwrap() >= 0.0, "{line}");
    }
    let opening = find("POST", "/v1/batches");
    assert_eq!(
        (opening["status"].as_u64(), opening["credential"].as_str()),
        (Some(201), Some("admin"))
    );
    let upload = find("POST", "/v1/modules");
    assert_eq!(upload["credential"], "admin");
    let waiting = find("GET", "/v1/batches/{id}/wait");
    assert_eq!(
        (waiting["status"].as_u64(), waiting["credential"].as_str()),
        (Some(200), Some("handle"))
    );
    let scrape = find("GET", "/metrics");
    assert_eq!(
        (scrape["status"].as_u64(), scrape["credential"].as_str()),
        (Some(401), Some("none"))
    );
    let wrong = find("GET", "/v1/status");
    assert_eq!(
        (wrong["status"].as_u64(), wrong["credential"].as_str()),
        (Some(401), Some("invalid"))
    );
    let path = format!("/v1/batches/{}/wait", opened.id);
    assert!(
        !requests
            .iter()
            .any(|l| l["fields"]["route"] == path.as_str()),
        "routes are templates, not paths"
    );

    // No credential anywhere in the log.
    let secret = handle.rsplit('_').next().unwrap();
    assert!(!text.contains(&token), "the admin token is in the log");
    assert!(!text.contains(secret), "a batch handle is in the log");
    assert!(
        !text.contains("not-a-token-at-all"),
        "a refused token is in the log"
    );
}

#[test]
fn traces_follow_a_submission_to_its_attempts_and_their_outbound_requests() {
    let receiver = OtlpReceiver::start();
    let origin = OriginServer::start();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 2, |command| {
        command
            .arg("--otlp-endpoint")
            .arg(receiver.endpoint())
            .arg("--allow-http")
            .arg(origin.origin());
    });
    server.upload("fetch");
    server.upload("echo");
    server.upload("misbehave");
    server.upload("spawner");

    // The caller's own trace: the request joins it, and the attempts join the request.
    let caller_trace = "0af7651916cd43dd8448eb211c80319c";
    let caller_span = "b7ad6b7169203331";
    let body = json!({
        "allow_http": [origin.origin()],
        "tasks": [
            {"module": "fetch", "input": origin.url("/traceparent")},
            {"module": "echo", "input": "x"},
            {"module": "misbehave", "input": "trap", "max_attempts": 1},
            {"module": "spawner", "input": "many:1"},
        ],
    });
    let mut response = agent()
        .post(format!("{}/v1/batches", server.url))
        .header("Authorization", format!("Bearer {}", server.token))
        .header("traceparent", format!("00-{caller_trace}-{caller_span}-01"))
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap();
    let opened: Value =
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(response.status().as_u16(), 201, "{opened}");
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let fetch_task = opened["tasks"][0].as_i64().unwrap();
    let waited = wait(&server, batch, &server.token);
    // The spawner and the child it submitted succeed too.
    assert_eq!(waited["progress"]["succeeded"], 4, "{waited}");
    let (_, output) = call(
        "GET",
        &format!("{}/v1/tasks/{fetch_task}/output", server.url),
        Some(&server.token),
        None,
    );
    // Stopping sends what is queued: the exporter is flushed at shutdown.
    assert!(server.stop().success());
    let spans = receiver.wait_for(Duration::from_secs(30), |spans| {
        spans.iter().filter(|s| s.span.name == "attempt").count() >= 5
    });
    assert!(spans.iter().all(|s| s.service == "qhost"), "service.name");

    let request = spans
        .iter()
        .find(|s| s.span.name == "POST /v1/batches")
        .unwrap_or_else(|| panic!("no span of the opening: {}", summary(&spans)));
    assert_eq!(
        request.trace_id(),
        caller_trace,
        "the request joins the caller's trace"
    );
    assert_eq!(request.parent_span_id(), caller_span);
    assert_eq!(
        request.attribute("http.route").as_deref(),
        Some("/v1/batches")
    );
    assert_eq!(
        request.attribute("http.response.status_code").as_deref(),
        Some("201")
    );
    assert_eq!(
        request.attribute("qhost.credential").as_deref(),
        Some("admin")
    );

    let claims: HashSet<String> = spans
        .iter()
        .filter(|s| s.span.name == "claim")
        .map(|s| s.span_id())
        .collect();
    assert!(!claims.is_empty(), "claim spans: {}", summary(&spans));
    let attempts: Vec<_> = spans.iter().filter(|s| s.span.name == "attempt").collect();
    assert_eq!(attempts.len(), 5, "{attempts:#?}");
    // The child's attempt is under the attempt of the task that submitted it.
    let spawner = |input_task: bool| {
        attempts
            .iter()
            .filter(|a| a.attribute("qhost.module").as_deref() == Some("spawner"))
            .find(|a| (a.parent_span_id() == request.span_id()) == input_task)
            .unwrap_or_else(|| panic!("a spawner's attempt: {}", summary(&spans)))
    };
    let (parent, child) = (spawner(true), spawner(false));
    assert_eq!(
        child.parent_span_id(),
        parent.span_id(),
        "{}",
        summary(&spans)
    );
    let mut modules = Vec::new();
    for attempt in &attempts {
        // Under the submission's span (or its parent's attempt), in its trace, linked to
        // the claim that took it.
        assert_eq!(attempt.trace_id(), caller_trace);
        if attempt.span_id() != child.span_id() {
            assert_eq!(attempt.parent_span_id(), request.span_id());
        }
        assert_eq!(attempt.attribute("qhost.batch"), Some(batch.to_string()));
        assert_eq!(attempt.span.links.len(), 1, "{attempt:#?}");
        let link = hex::encode(&attempt.span.links[0].span_id);
        assert!(claims.contains(&link), "linked to a claim: {link}");
        let outcome = attempt.attribute("qhost.outcome").unwrap();
        let status = attempt.span.status.clone().unwrap_or_default().code;
        // 2: STATUS_CODE_ERROR
        assert_eq!(status == 2, outcome != "succeeded", "{attempt:#?}");
        modules.push((attempt.attribute("qhost.module").unwrap(), outcome));
    }
    modules.sort();
    assert_eq!(
        modules,
        [
            ("echo".to_owned(), "succeeded".to_owned()),
            ("fetch".to_owned(), "succeeded".to_owned()),
            ("misbehave".to_owned(), "trap".to_owned()),
            ("spawner".to_owned(), "succeeded".to_owned()),
            ("spawner".to_owned(), "succeeded".to_owned()),
        ]
    );

    // The fetch task's request carried its attempt's context (`fetch` answers the sha256
    // of the body, which the origin made of the `traceparent` it got).
    let fetch = attempts
        .iter()
        .find(|a| a.attribute("qhost.module").as_deref() == Some("fetch"))
        .unwrap();
    let sent = format!("00-{caller_trace}-{}-01", fetch.span_id());
    let expected = hex::encode(Sha256::digest(sent.as_bytes()));
    assert_eq!(
        output,
        Value::String(expected),
        "the traceparent sent was not {sent}"
    );
}
