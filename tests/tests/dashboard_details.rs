//! The dashboard's details in a real browser (see `browser/`): the overview's last hour
//! against `/v1/status/history`, the modules' languages against `/v1/modules`, and a
//! task's input size, output, log lines, stdout and stderr against the API; and a busy
//! batch's page redrawn one read at a time, never over the page that follows it.

mod browser;

use browser::*;
use qhost_tests::server::{Server, call};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn the_pages_show_the_last_hour_the_modules_languages_and_a_tasks_input_and_output() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let task_of = |input: &str| json!({ "module": "misbehave", "input": input, "max_attempts": 1 });
    let (done, ids) = open(
        &server,
        json!({}),
        json!([
            task_of("info"),
            task_of("log:3"),
            task_of("stdout:150"),
            task_of("stderr:120"),
            task_of("output:70000")
        ]),
    );
    let (failing, _) = open(&server, json!({}), json!([task_of("error")]));
    for batch in [done, failing] {
        wait(&server, batch);
    }
    let driver = Driver::start();
    let browser = driver.browser().await;
    sign_in(&browser, &server).await;

    // The overview: what ended since this node started sampling, as the API's history
    // counts it, and both charts drawn.
    until(
        &browser,
        "the last hour's five successes and one failure",
        "return document.getElementById('history-summary')?.textContent
                 .includes('5 succeeded, 1 failed');",
    )
    .await;
    let history = read(&server, "/v1/status/history");
    let samples = history["samples"].as_array().unwrap();
    let (first, last) = (&samples[0], samples.last().unwrap());
    let ended = |kind: &str| {
        last["ended_total"][kind].as_u64().unwrap() - first["ended_total"][kind].as_u64().unwrap()
    };
    assert_eq!((ended("succeeded"), ended("failed")), (5, 1), "{history}");
    let series = browser
        .execute(
            "return [...document.querySelectorAll('svg.chart polyline.series')]
               .map(p => p.dataset.series);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        series,
        json!(["succeeded", "failed", "oldest ready", "ready"])
    );
    screenshot(&browser, "overview-history").await;

    // The modules page: the languages the upload read, as the API lists them.
    visit(&browser, &server, "/modules", "Modules").await;
    let modules = read(&server, "/v1/modules");
    let languages: Vec<String> = modules[0]["languages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(languages.first().map(String::as_str), Some("Rust"));
    let shown = browser
        .execute(
            "const heads = [...document.querySelectorAll('main thead th')].map(th => th.textContent);
             const column = heads.indexOf('Languages');
             return document.querySelector('main tbody tr').children[column].textContent;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(shown, json!(languages.join(", ")));
    screenshot(&browser, "modules-languages").await;

    // Each task's page: its input's size, its output, log lines, stdout and stderr, as
    // the API gives them.
    for (id, input) in ids
        .iter()
        .zip(["info", "log:3", "stdout:150", "stderr:120", "output:70000"])
    {
        visit(
            &browser,
            &server,
            &format!("/task/{id}"),
            &format!("Task {id}"),
        )
        .await;
        let view = read(&server, &format!("/v1/tasks/{id}"));
        let attempt = &view["log"][0];
        let logs: Vec<String> = attempt["logs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                format!(
                    "{} {}",
                    l["level"].as_str().unwrap(),
                    l["message"].as_str().unwrap()
                )
            })
            .collect();
        let output = match input {
            "output:70000" => "68.4 KiB, too large to show here: `qhost task output ID` prints it."
                .replace("ID", &id.to_string()),
            _ => read(&server, &format!("/v1/tasks/{id}/output"))
                .as_str()
                .unwrap()
                .to_owned(),
        };
        let page = until(
            &browser,
            "the task's output",
            "const field = (name) => [...document.querySelectorAll('main tr')]
               .find(tr => tr.children[0]?.textContent === name)?.children[1].textContent;
             const pre = (label) => document.querySelector(`main pre[aria-label='${label}']`)
               ?.textContent ?? '';
             const output = document.getElementById('task-output');
             return output && { input: field('input size'), output: output.textContent,
               logs: pre('Log lines'), stdout: pre('Standard output'),
               stderr: pre('Standard error') };",
        )
        .await;
        assert_eq!(
            page,
            json!({
                "input": format!("{} B", input.len()),
                "output": output,
                "logs": logs.join("\n"),
                "stdout": attempt["stdout"],
                "stderr": attempt["stderr"],
            }),
            "task {id} ({input})"
        );
        assert_eq!(view["input_size"], json!(input.len()));
        if input == "stdout:150" {
            browser
                .execute(
                    "document.querySelector('main h2').scrollIntoView();",
                    vec![],
                )
                .await
                .unwrap();
            screenshot(&browser, "task-output").await;
        }
    }
    assert!(server.stop().success());

    // A module stored before languages were read, as the migration leaves it: unknown.
    rusqlite::Connection::open(data.path().join("qhost.db"))
        .unwrap()
        .execute(
            "UPDATE modules SET languages = NULL, processed_by = NULL",
            [],
        )
        .unwrap();
    let server = Server::start(data.path(), 2);
    sign_in(&browser, &server).await;
    visit(&browser, &server, "/modules", "Modules").await;
    let cells = browser
        .execute(
            "return [...document.querySelector('main tbody tr').children].map(td => td.textContent);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(cells[4], "unknown", "{cells}");
    assert_eq!(cells[5], "unknown", "{cells}");
    browser.close().await.unwrap();
    assert!(server.stop().success());
}

/// Holds the page's reads of a batch's graph until `window.qhostRelease()`: counts them
/// (`qhostGraphs`), and counts in `qhostRead` those whose answer the page has read, once
/// the page's own steps after it have run.
const HOLD_GRAPH_READS: &str = r#"
const real = window.fetch;
window.qhostGraphs = 0;
window.qhostRead = 0;
const held = [];
window.qhostRelease = () => held.splice(0).forEach((go) => go());
window.fetch = (url, options) => {
  if (!String(url).endsWith('/graph')) return real(url, options);
  window.qhostGraphs += 1;
  return new Promise((resolve) => held.push(() => resolve(real(url, options).then((r) => {
    const text = r.text.bind(r);
    r.text = () => text().then((body) => {
      setTimeout(() => { window.qhostRead += 1; }, 0);
      return body;
    });
    return r;
  }))));
};
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_batch_draws_one_page_at_a_time_and_a_page_left_draws_nothing() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let ok = json!({ "module": "misbehave", "input": "ok" });
    let (batch, _) = open(&server, json!({ "max_parallel": 0 }), json!(vec![ok; 20]));
    let driver = Driver::start();
    let browser = driver.browser().await;
    sign_in(&browser, &server).await;
    visit(&browser, &server, &format!("/batch/{batch}"), "Batch").await;
    until(
        &browser,
        "the batch's events followed",
        "return document.getElementById('live').textContent === 'live';",
    )
    .await;

    // Every task starts and ends while the page's first redraw waits on its reads: the
    // events ask for one more redraw, not one each.
    browser.execute(HOLD_GRAPH_READS, vec![]).await.unwrap();
    let (status, body) = call(
        "PUT",
        &format!("{}/v1/batches/{batch}/max_parallel", server.url),
        Some(&server.token),
        Some(json!({ "max_parallel": null })),
    );
    assert_eq!(status, 200, "{body}");
    until(
        &browser,
        "the batch's end",
        "return document.getElementById('live').textContent === 'all tasks ended';",
    )
    .await;
    let graphs = browser
        .execute("return window.qhostGraphs;", vec![])
        .await
        .unwrap();
    assert_eq!(graphs, json!(1), "redraws under way at once");

    // Left for the tasks page, the batch's page draws nothing when its reads come back,
    // and asks for no more.
    browser
        .execute("location.hash = '#/tasks';", vec![])
        .await
        .unwrap();
    until(
        &browser,
        "the tasks page",
        "return document.querySelector('main h1')?.textContent === 'Tasks';",
    )
    .await;
    browser
        .execute("window.qhostRelease();", vec![])
        .await
        .unwrap();
    until(
        &browser,
        "the held read answered",
        "return window.qhostRead === 1;",
    )
    .await;
    let shown = browser
        .execute(
            "return [document.querySelector('main h1').textContent, window.qhostGraphs];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(shown, json!(["Tasks", 1]));
    browser.close().await.unwrap();
    assert!(server.stop().success());
}
