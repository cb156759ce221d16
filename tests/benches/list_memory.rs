//! The server's memory while it answers the largest page of each list: a real release
//! `qhost serve` holds 1,500 ended tasks whose attempts each failed with a 60 KB error (90 MB
//! of errors), then each list route is read at its largest page. For each, the server's peak
//! resident memory is reset (`/proc/PID/clear_refs`), the page read, and the peak read back
//! (`VmHWM`): what the page cost above the server's resident memory before it.
//!
//! The first read of the log after a start also fills SQLite's page cache, which is shared
//! by every request and bounded (`cache_size`, 64 MiB, in `store/sqlite/schema.rs`): each
//! route is read once before it is measured, and that first read's figure is printed too.
//!
//!     cargo bench -p qhost-tests --bench list_memory
//!
//! Prints `figure: list-page-memory = <MiB> MiB`, the largest over the routes, which
//! `benches/targets.toml` reads, and `figure: list-page-memory-cold = <MiB> MiB`, the first
//! read's. Linux only. Run it with RUST_BACKTRACE unset.

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
    let read = |path: &str| {
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("resetting the peak");
        let base = status_kib(pid, "VmRSS:");
        let mut response = agent()
            .get(format!("{}{path}", server.url))
            .header("Authorization", format!("Bearer {}", server.token))
            .call()
            .unwrap_or_else(|err| panic!("GET {path}: {err}"));
        assert_eq!(response.status(), 200, "GET {path}");
        let body = response.body_mut().read_to_vec().unwrap();
        let above = status_kib(pid, "VmHWM:").saturating_sub(base);
        (body.len(), above)
    };
    // Each at its largest page (MAX_LIST for tasks and batches, 10,000 for the log).
    let routes = [
        format!("/v1/attempts?batch={b}&limit=10000"),
        "/v1/attempts?limit=10000".to_owned(),
        format!("/v1/tasks?batch={b}&limit=500"),
        "/v1/tasks?state=failed&limit=500".to_owned(),
        "/v1/batches?limit=500".to_owned(),
    ];
    let mib = |kib: u64| kib as f64 / 1024.0;
    let (mut worst, mut worst_cold) = (0u64, 0u64);
    for path in &routes {
        let (size, cold) = read(path);
        let (again, warm) = read(path);
        assert_eq!(size, again, "{path} gave the same page twice");
        worst = worst.max(warm);
        worst_cold = worst_cold.max(cold);
        println!(
            "{path}: {} KiB of answer, peak {:.1} MiB above the resident before it ({:.1} MiB on its first read)",
            size / 1024,
            mib(warm),
            mib(cold)
        );
    }
    println!(
        "server resident after the reads: {} MiB",
        status_kib(pid, "VmRSS:") / 1024
    );
    println!("figure: list-page-memory = {:.1} MiB", mib(worst));
    println!("figure: list-page-memory-cold = {:.1} MiB", mib(worst_cold));
    assert!(server.stop().success());
}
