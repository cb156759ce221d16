//! Quotas on what one batch stores, through a real `qhost serve`: the server's defaults, a
//! submission past one refused with the quota named and nothing stored, an opening that
//! sets its own (children per task and depth among them), and the admin alone raising them (`PATCH /v1/batches/{id}/quotas`,
//! `qhost batch quota`).

use qhost_tests::server::{Server, call};
use serde_json::{Value, json};

#[test]
fn a_batch_past_its_quota_is_refused_until_the_admin_raises_it() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 1, |c| {
        c.args(["--quota-tasks", "2", "--quota-input", "1KiB"])
            .args(["--quota-children", "5", "--quota-depth", "2"]);
    });
    server.upload("echo");
    let task = json!({"module": "echo", "input": "x", "delay": "1h"});
    let batch = server.open_batch(json!({"tasks": [task, task]}));
    let url = format!("{}/v1/batches/{}", server.url, batch.id);

    let submit = |body: Value| {
        call(
            "POST",
            &format!("{url}/tasks"),
            Some(&batch.handle),
            Some(body),
        )
    };
    let (status, refused) = submit(json!({"tasks": [task]}));
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("quota")),
        "{refused}"
    );
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains("`tasks` quota") && detail.contains("of 2"),
        "{detail}"
    );
    let (_, shown) = call("GET", &url, Some(&batch.handle), None);
    assert_eq!(
        shown["progress"]["waiting"], 2,
        "nothing of the refused submission stored"
    );
    assert_eq!(shown["quotas"]["tasks"], 2);
    assert_eq!(shown["quotas"]["input_bytes"], 1024);
    assert_eq!(shown["usage"]["tasks"], 2);
    assert_eq!(shown["usage"]["input_bytes"], 2);
    assert_eq!(
        (&shown["quotas"]["children"], &shown["quotas"]["depth"]),
        (&json!(5), &json!(2)),
        "how its tasks may grow it: {shown}"
    );

    // The handle may not raise its own quota; the admin may.
    let raise = json!({"tasks": 3.0});
    let (status, _) = call(
        "PATCH",
        &format!("{url}/quotas"),
        Some(&batch.handle),
        Some(raise.clone()),
    );
    assert_eq!(status, 403, "a handle changes no quota");
    let (status, raised) = call(
        "PATCH",
        &format!("{url}/quotas"),
        Some(&server.token),
        Some(raise),
    );
    assert_eq!(
        (status, &raised["quotas"]["tasks"]),
        (200, &json!(3)),
        "{raised}"
    );
    assert_eq!(raised["quotas"]["input_bytes"], 1024, "the others stay");
    let (status, answer) = submit(json!({"tasks": [task]}));
    assert_eq!(status, 201, "{answer}");

    // A field the change does not know is refused, naming it.
    let (status, bad) = call(
        "PATCH",
        &format!("{url}/quotas"),
        Some(&server.token),
        Some(json!({"rows": 1})),
    );
    assert_eq!(status, 422, "{bad}");
    assert!(bad["detail"].as_str().unwrap().contains("`rows`"), "{bad}");
    let (status, bad) = call(
        "PATCH",
        &format!("{url}/quotas"),
        Some(&server.token),
        Some(json!([null, 3])),
    );
    assert_eq!(status, 422, "an array is no change of quotas: {bad}");

    // An opening sets its own: none at all on tasks here.
    let free = server.open_batch(json!({"quotas": {"tasks": null}, "tasks": [task, task, task]}));
    assert_eq!(free.tasks.len(), 3);

    // The command line shows and changes them.
    let shown = server.run(&[
        "batch",
        "quota",
        &batch.id.to_string(),
        "--tasks",
        "off",
        "--children",
        "50",
        "--depth",
        "off",
    ]);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("tasks") && text.contains("3 of no quota"),
        "{text}"
    );
    let line = |name: &str| text.lines().find(|l| l.starts_with(name)).unwrap_or("");
    assert!(line("children").ends_with(" 50"), "{text}");
    assert!(line("depth").ends_with(" no quota"), "{text}");
}
