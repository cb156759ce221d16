//! Granted settings: a batch's settings reach its tasks through `wasi:config/store`; a
//! secret one is used by the task (the `fetch` example sends it as `Authorization`) but
//! shows in no answer of the API and in no file of the database, and a node whose secret
//! key cannot open the store's secrets refuses to start.

use qhost_tests::origin_server::OriginServer;
use qhost_tests::server::{call, refused, serve_command};
use serde_json::json;
use sha2::{Digest, Sha256};

const SECRET: &str = "Bearer s3cret-1f7c9a2e";

#[test]
fn a_secret_reaches_its_task_and_nothing_else() {
    let origin = OriginServer::start();
    let data = tempfile::tempdir().unwrap();
    let server = origin.allowed_by_server(data.path());

    let url = |path: &str| format!("{}/v1{path}", server.url);
    let mut answers = Vec::new();
    let (status, opened) = call(
        "POST",
        &url("/batches"),
        Some(&server.token),
        Some(json!({
            "allow_http": [origin.origin()],
            "settings": {
                "AUTHORIZATION": {"value": SECRET, "secret": true},
                "REGION": "eu",
            },
            "tasks": [{"module": "fetch", "input": origin.url("/authorization")}],
        })),
    );
    assert_eq!(status, 201, "{opened}");
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let task = opened["tasks"][0].as_i64().unwrap();
    answers.push(opened.to_string());
    let (_, waited) = call(
        "GET",
        &url(&format!("/batches/{batch}/wait?timeout=60s")),
        Some(&server.token),
        None,
    );
    assert_eq!(waited["progress"]["succeeded"], 1, "{waited}");
    answers.push(waited.to_string());

    // The task sent the secret: the origin's answer was its Authorization header.
    let (_, output) = call(
        "GET",
        &url(&format!("/tasks/{task}/output")),
        Some(&server.token),
        None,
    );
    let expected = hex::encode(Sha256::digest(SECRET.as_bytes()));
    assert_eq!(output, serde_json::Value::String(expected));

    for address in [
        url(&format!("/batches/{batch}")),
        url(&format!("/tasks/{task}")),
        url(&format!("/attempts?batch={batch}")),
        url("/running"),
        format!("{}/metrics", server.url),
    ] {
        let (status, body) = call("GET", &address, Some(&server.token), None);
        assert_eq!(status, 200, "{address}: {body}");
        answers.push(body.to_string());
    }
    for answer in &answers {
        assert!(
            !answer.contains("s3cret"),
            "an answer shows the secret: {answer}"
        );
    }
    drop(server);

    // The database holds it sealed.
    for entry in std::fs::read_dir(data.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(6).any(|w| w == b"s3cret"),
                "{} holds the secret in clear",
                path.display()
            );
        }
    }

    // Another key cannot open it: the node refuses to start.
    let mut command = serve_command(data.path(), 1);
    command.env("QHOST_SECRET_KEY", "00".repeat(32));
    let stderr = refused(command);
    assert!(stderr.contains("secret key cannot open"), "{stderr}");
}
