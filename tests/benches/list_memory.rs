//! The server's memory while it answers the largest page of each list: a real release
//! `qhost serve` holds 1,500 ended tasks whose attempts each failed with a 60 KB error (90 MB
//! of errors), then each list route is read at its largest page. For each, the server's peak
//! resident memory is reset (`/proc/PID/clear_refs`), the page read, and the peak read back
//! (`VmHWM`): what the page cost above the idle server.
//!
//!     cargo bench -p qhost-tests --bench list_memory
//!
//! Prints `figure: list-page-memory = <MiB> MiB`, the largest over the routes, which
//! `benches/targets.toml` reads. Linux only. Run it with RUST_BACKTRACE unset.

use qhost_tests::server::{Server, agent};
use serde_json::json;

const TASKS: usize = 1500;
const ERROR_BYTES: usize = 60 * 1024;

/// A field of the server's `/proc/PID/status`, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

fn main() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 2, |_| {});
    let pid = server.pid();
    server.upload("misbehave");
    let task =
        json!({"module": "misbehave", "input": format!("error:{ERROR_BYTES}"), "max_attempts": 1});
    let mut batch = None;
    for chunk in 0..TASKS / 500 {
        let tasks: Vec<_> = (0..500).map(|_| task.clone()).collect();
        match batch {
            None => batch = Some(server.open_batch(json!({"tasks": tasks}))),
            Some(ref b) => {
                let (status, body) = qhost_tests::server::call(
                    "POST",
                    &format!("{}/v1/batches/{}/tasks", server.url, b.id),
                    Some(&b.handle),
                    Some(json!({"tasks": tasks})),
                );
                assert_eq!(status, 201, "submitting chunk {chunk}: {body}");
            }
        }
    }
    let batch = batch.unwrap();
    let (status, ended) = qhost_tests::server::call(
        "GET",
        &format!("{}/v1/batches/{}/wait?timeout=5m", server.url, batch.id),
        Some(&batch.handle),
        None,
    );
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["progress"]["failed"], TASKS, "{ended}");
    let idle = status_kib(pid, "VmRSS:");
    println!("idle server: {} MiB resident", idle / 1024);
    let b = batch.id;
    let mut worst = 0u64;
    for path in [
        format!("/v1/attempts?batch={b}&limit=10000"),
        "/v1/attempts?limit=10000".to_owned(),
        format!("/v1/tasks?batch={b}&limit=10000"),
        "/v1/tasks?state=failed&limit=10000".to_owned(),
        "/v1/batches?limit=10000".to_owned(),
    ] {
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("resetting the peak");
        let base = status_kib(pid, "VmRSS:");
        let mut response = agent()
            .get(format!("{}{path}", server.url))
            .header("Authorization", format!("Bearer {}", server.token))
            .call()
            .unwrap();
        let body = response.body_mut().read_to_vec().unwrap();
        let peak = status_kib(pid, "VmHWM:");
        let above = peak.saturating_sub(idle.min(base));
        worst = worst.max(above);
        println!(
            "{path}: {} KiB of answer, peak {:.1} MiB above idle",
            body.len() / 1024,
            above as f64 / 1024.0
        );
    }
    println!(
        "figure: list-page-memory = {:.1} MiB",
        worst as f64 / 1024.0
    );
    assert!(server.stop().success());
}
