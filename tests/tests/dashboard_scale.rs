//! Measures, not a check (`cargo test -p qhost-tests --test dashboard_scale -- --ignored
//! --nocapture`): fills a SQLite store, then a PostgreSQL one, with 1,000,000 tasks
//! (`QHOST_SCALE_TASKS` to change it) by `qhost bench fill`, serves each, and times in
//! Chromium how long each page of the dashboard takes to render, from the change of route
//! to the page drawn with its data (the reads of the API included), five times each: the
//! median and the longest.

mod browser;

use std::process::Command;

use browser::*;
use qhost_tests::pg::TestDb;
use qhost_tests::qhost_binary;
use qhost_tests::server::Server;
use serde_json::json;

/// Goes to `route` from the page shown, and resolves with the milliseconds until the
/// page with `heading` is drawn with its data (`data-loaded` set after the draw).
const RENDER: &str = r#"
const [route, heading, done] = arguments;
const view = document.getElementById('view');
const asked = Date.now();
const t0 = performance.now();
const drawn = () => {
  const h = view.querySelector('h1');
  return Number(view.dataset.loaded) >= asked && h && h.textContent.startsWith(heading);
};
const watch = new MutationObserver(() => {
  if (drawn()) { watch.disconnect(); done(performance.now() - t0); }
});
watch.observe(view, { attributes: true, attributeFilter: ['data-loaded'] });
location.hash = '#' + route;
"#;

#[tokio::test(flavor = "multi_thread")]
#[ignore]
async fn every_page_renders_from_a_store_of_a_million_tasks() {
    let tasks: usize = std::env::var("QHOST_SCALE_TASKS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let data = tempfile::tempdir().unwrap();
    let sqlite = format!(
        "sqlite:{}",
        data.path().join("sqlite").join("qhost.db").display()
    );
    std::fs::create_dir_all(data.path().join("sqlite")).unwrap();
    fill(tasks, &sqlite, false);
    let server = Server::start(&data.path().join("sqlite"), 1);
    time_pages(&server, &format!("{tasks} tasks in SQLite")).await;
    assert!(server.stop().success());

    let db = TestDb::new().await;
    let kept = fill(tasks, &db.url, true);
    let url = kept
        .lines()
        .find_map(|l| l.strip_prefix("kept: --db "))
        .unwrap_or_else(|| panic!("no kept schema in: {kept}"))
        .to_owned();
    let server = Server::start_with(&data.path().join("postgres"), 1, |command| {
        command.args(["--db", &url]);
    });
    time_pages(&server, &format!("{tasks} tasks in PostgreSQL")).await;
    assert!(server.stop().success());
}

/// Fills `db` with `tasks` tasks by `qhost bench fill`; returns what it printed.
fn fill(tasks: usize, db: &str, keep: bool) -> String {
    let mut command = Command::new(qhost_binary());
    command.args(["bench", "fill", "--repeat", "1", "--db", db]);
    command.args(["--tasks", &tasks.to_string()]);
    if keep {
        command.arg("--keep");
    }
    let filled = command.output().expect("running qhost bench fill");
    assert!(filled.status.success(), "{filled:?}");
    String::from_utf8_lossy(&filled.stdout).into_owned()
}

/// Prints how long each page takes to render from `server`, under `title`.
async fn time_pages(server: &Server, title: &str) {
    let batch = read(server, "/v1/batches?limit=1")["batches"][0]["id"].clone();
    let task = read(server, &format!("/v1/tasks?batch={batch}&limit=1"))["tasks"][0]["id"].clone();
    let pages = [
        ("/".to_owned(), "Overview"),
        ("/batches".to_owned(), "Batches"),
        (format!("/batch/{batch}"), "Batch"),
        ("/tasks".to_owned(), "Tasks"),
        ("/tasks?state=failed".to_owned(), "Tasks"),
        (format!("/task/{task}"), "Task"),
        ("/groups".to_owned(), "Groups"),
        ("/nodes".to_owned(), "Nodes"),
        ("/modules".to_owned(), "Modules"),
        ("/schedules".to_owned(), "Schedules"),
        ("/tenants".to_owned(), "Tenants"),
    ];

    let driver = Driver::start();
    let browser = driver.browser().await;
    sign_in(&browser, server).await;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); pages.len()];
    for _ in 0..5 {
        for (i, (route, heading)) in pages.iter().enumerate() {
            let ms = browser
                .execute_async(RENDER, vec![json!(route), json!(heading)])
                .await
                .unwrap_or_else(|e| panic!("{route}: {e}"));
            times[i].push(ms.as_f64().unwrap());
        }
    }
    println!("{title}: each page from the change of route to drawn, 5 times");
    for ((route, _), mut ms) in pages.iter().zip(times) {
        ms.sort_by(f64::total_cmp);
        println!(
            "  {route:<18} median {:7.1} ms   longest {:7.1} ms",
            ms[ms.len() / 2],
            ms[ms.len() - 1]
        );
    }
    browser.close().await.unwrap();
}
