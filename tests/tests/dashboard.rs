//! The web dashboard in a real browser: Debian's headless Chromium, driven through
//! `chromedriver` by fantoccini, against a real `qhost serve`. What the pages show is
//! checked against the API and the execution log; a screenshot of each page is saved under
//! `target/dashboard-screenshots/`.

mod browser;

use browser::*;
use fantoccini::Locator;
use fantoccini::key::Key;
use qhost_tests::server::{Server, call};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_draws_a_plan_as_it_runs_and_steers_tasks() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let driver = Driver::start();
    let browser = driver.browser().await;
    sign_in(&browser, &server).await;
    screenshot(&browser, "overview").await;

    // Two orders; the group `g` runs one task at a time across both.
    let sleep = |order: i64, group: Option<&str>| json!({ "module": "misbehave", "input": "sleep:200", "order": order, "group": group });
    let (plan, _) = open(
        &server,
        json!({ "name": "plan" }),
        json!([
            sleep(0, Some("g")),
            sleep(0, Some("g")),
            sleep(0, None),
            sleep(1, Some("g")),
            sleep(1, None)
        ]),
    );
    call(
        "PUT",
        &format!("{}/v1/groups/g", server.url),
        Some(&server.token),
        Some(json!({ "limit": 1 })),
    );
    // Held (max_parallel 0): tasks to cancel and reprioritize from the page.
    let (_, held) = open(
        &server,
        json!({ "max_parallel": 0 }),
        json!([{ "module": "misbehave", "input": "ok" }, { "module": "misbehave", "input": "ok" }]),
    );

    visit(
        &browser,
        &server,
        &format!("/batch/{plan}"),
        &format!("Batch {plan}"),
    )
    .await;
    // The timeline fills as the tasks run, without a reload.
    until(
        &browser,
        "five succeeded attempts on the timeline",
        "return document.querySelectorAll('rect.attempt[data-outcome=succeeded]').length === 5;",
    )
    .await;
    screenshot(&browser, "batch").await;
    let (_, log) = call(
        "GET",
        &format!("{}/v1/attempts?batch={plan}&limit=100", server.url),
        Some(&server.token),
        None,
    );
    let drawn = browser
        .execute(
            "return [...document.querySelectorAll('rect.attempt')]
               .map(r => [Number(r.dataset.task), r.dataset.outcome]).sort();",
            vec![],
        )
        .await
        .unwrap();
    let mut logged: Vec<Value> = log["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| json!([a["task"], a["outcome"]]))
        .collect();
    logged.sort_by_key(|v| v.to_string());
    let mut drawn: Vec<Value> = drawn.as_array().unwrap().clone();
    drawn.sort_by_key(|v| v.to_string());
    assert_eq!(drawn, logged, "the timeline draws the execution log");
    // What its attempts used, as the API sums it, once they ended.
    visit(
        &browser,
        &server,
        &format!("/batch/{plan}"),
        &format!("Batch {plan}"),
    )
    .await;
    let (_, usage) = call(
        "GET",
        &format!("{}/v1/batches/{plan}/usage", server.url),
        Some(&server.token),
        None,
    );
    let shown = browser
        .execute(
            "return document.querySelector('p.usage').textContent;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        shown.as_str().unwrap(),
        format!(
            "used by 5 attempts: slot {:.3} s · CPU {:.3} s · memory {:.3} MiB·s",
            usage["slot_micros"].as_f64().unwrap() / 1e6,
            usage["cpu_micros"].as_f64().unwrap() / 1e6,
            usage["memory_mib_seconds"].as_f64().unwrap()
        )
    );
    let lanes = browser
        .execute(
            "return document.querySelectorAll('.timeline text.lane').length;",
            vec![],
        )
        .await
        .unwrap();
    let slots: std::collections::BTreeSet<String> = log["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{}#{}", a["node"], a["slot"]))
        .collect();
    assert_eq!(
        lanes.as_u64(),
        Some(slots.len() as u64),
        "one lane per node and slot"
    );

    // Tenants, each with its usage as the API has it.
    let (status, _) = call(
        "POST",
        &format!("{}/v1/tenants", server.url),
        Some(&server.token),
        Some(json!({ "name": "acme" })),
    );
    assert_eq!(status, 201);
    let (status, _) = call(
        "PATCH",
        &format!("{}/v1/tenants/acme", server.url),
        Some(&server.token),
        Some(json!({
            "budget": {"period": "1h", "cpu": "10s", "http_bytes": 100000},
            "weight": 3
        })),
    );
    assert_eq!(status, 200);
    visit(&browser, &server, "/tenants", "Tenants").await;
    let rows = browser
        .execute(
            "return [...document.querySelectorAll('main tbody tr')]
               .map(r => [...r.cells].map(c => c.textContent));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        rows,
        json!([[
            "acme",
            "0 / none",
            "0 / none",
            "3",
            "0.000",
            "0.000",
            "0.000",
            "0",
            "CPU 0.000 s of 10s, HTTP 0 of 100000 B per 1h"
        ]])
    );

    // Cancel one held task from its page.
    visit(
        &browser,
        &server,
        &format!("/task/{}", held[0]),
        &format!("Task {}", held[0]),
    )
    .await;
    click(&browser, "#cancel-task").await;
    click(&browser, "#confirm-ok").await;
    until(
        &browser,
        "the task cancelled",
        "return document.querySelector('main p[role=status]')?.textContent.includes('cancelled')\
        || document.querySelector('main span.state')?.textContent === 'cancelled';",
    )
    .await;
    assert_eq!(task(&server, held[0])["state"], "cancelled");

    // Raise the other's priority from its page.
    visit(
        &browser,
        &server,
        &format!("/task/{}", held[1]),
        &format!("Task {}", held[1]),
    )
    .await;
    let input = browser.find(Locator::Id("task-priority")).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys("50").await.unwrap();
    click(&browser, "#set-priority").await;
    click(&browser, "#confirm-ok").await;
    until(&browser, "the new priority", "return document.querySelector('main p[role=status]')?.textContent.includes('priority 50');").await;
    assert_eq!(task(&server, held[1])["priority"], 50);
    screenshot(&browser, "task").await;

    for (route, heading, name) in [
        ("/batches", "Batches", "batches"),
        ("/tasks", "Tasks", "tasks"),
        ("/groups", "Groups", "groups"),
        ("/nodes", "Nodes", "nodes"),
        ("/modules", "Modules", "modules"),
    ] {
        visit(&browser, &server, route, heading).await;
        screenshot(&browser, name).await;
    }
    // The batches page lists both, newest first.
    visit(&browser, &server, "/batches", "Batches").await;
    let rows = browser
        .execute("return [...document.querySelectorAll('main tbody tr td:first-child')].map(td => td.textContent);", vec![])
        .await
        .unwrap();
    assert_eq!(
        rows,
        json!([format!("batch {}", plan + 1), format!("batch {plan}")])
    );
    browser.close().await.unwrap();
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_main_pages_work_from_the_keyboard_and_read_with_enough_contrast() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let (batch, _) = open(
        &server,
        json!({}),
        json!([{ "module": "misbehave", "input": "ok" }]),
    );
    let driver = Driver::start();
    let browser = driver.browser().await;

    // Signing in needs no mouse: the token field has the focus, Enter sends it.
    browser.goto(&server.url).await.unwrap();
    until(
        &browser,
        "the token field focused",
        "return document.activeElement?.id === 'token';",
    )
    .await;
    let field = browser.active_element().await.unwrap();
    field
        .send_keys(&format!("{}{}", server.token, Key::Enter))
        .await
        .unwrap();
    until(
        &browser,
        "the overview",
        "return document.querySelector('main h1')?.textContent === 'Overview';",
    )
    .await;

    // From the top of the page, Tab reaches the skip link first, then the pages' links;
    // Enter opens one.
    browser
        .execute("document.activeElement.blur();", vec![])
        .await
        .unwrap();
    for expected in ["Skip to content", "Overview", "Batches"] {
        press(&browser, Key::Tab).await;
        let focused = browser
            .active_element()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(focused, expected);
    }
    press(&browser, Key::Enter).await;
    until(
        &browser,
        "the batches page",
        "return document.querySelector('main h1')?.textContent === 'Batches';",
    )
    .await;

    // Every text on the main pages reads at a contrast of at least 4.5:1 (WCAG AA).
    // An ended task, whose page shows its output and what it wrote.
    let (second, ended) = open(
        &server,
        json!({}),
        json!([{ "module": "misbehave", "input": "stdout:10", "max_attempts": 1 }]),
    );
    wait(&server, second);
    for (route, heading) in [
        ("/", "Overview"),
        ("/batches", "Batches"),
        (&format!("/batch/{batch}") as &str, "Batch"),
        ("/tasks", "Tasks"),
        (&format!("/task/{}", ended[0]) as &str, "Task"),
        ("/modules", "Modules"),
    ] {
        visit(&browser, &server, route, heading).await;
        let poor = browser.execute(CONTRAST, vec![]).await.unwrap();
        assert_eq!(poor, json!([]), "text below 4.5:1 on {route}");
    }

    // A task's page from the keyboard: from the top of its content, Tab reaches its batch's
    // link, and Enter opens the batch.
    visit(&browser, &server, &format!("/task/{}", ended[0]), "Task").await;
    browser
        .execute("document.getElementById('view').focus();", vec![])
        .await
        .unwrap();
    press(&browser, Key::Tab).await;
    let focused = browser
        .active_element()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(focused, format!("batch {second}"));
    press(&browser, Key::Enter).await;
    until(
        &browser,
        "the task's batch",
        &format!(
            "return document.querySelector('main h1')?.textContent.startsWith('Batch {second}');"
        ),
    )
    .await;
    browser.close().await.unwrap();
    assert!(server.stop().success());
}
