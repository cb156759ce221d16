//! The dashboard made for triage, in a real browser (see `browser/`): a failed task's page
//! opens with its state, outcome, error and input; task lists show attempts, duration, end
//! and error, retry or cancel every task of any filter (a state alone included) or the rows
//! picked; schedules, groups (idle ones too) and the nodes' slots have pages; and every page
//! fits a phone's 390 px and reads in the dark scheme, checked against the API.

mod browser;

use browser::*;
use qhost_tests::server::{Server, call};
use serde_json::{Value, json};

/// Where an element's top and bottom are, and the window's height.
const PLACE: &str = "const el = document.getElementById(arguments[0]);
    if (!el) return null;
    const r = el.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, height: window.innerHeight, text: el.textContent };";

/// Confirms the dialog the last click opened and waits for the page's status line to
/// include `expected`.
async fn confirm_and_see(browser: &fantoccini::Client, status: &str, expected: &str) {
    click(browser, "#confirm-ok").await;
    until(
        browser,
        &format!("{expected:?} in {status}"),
        &format!("return document.querySelector({status:?})?.textContent.includes({expected:?});"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_task_shows_why_first_and_lists_act_on_any_filter_or_the_rows_picked() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let once = |input: &str| json!({ "module": "misbehave", "input": input, "max_attempts": 1 });
    let (failing, failed) = open(
        &server,
        json!({}),
        json!([once("error"), once("error"), once("error"), once("ok")]),
    );
    wait(&server, failing);
    // Held: its batch runs nothing (max_parallel 0). Delayed: waiting for an hour.
    let (held_batch, held) = open(
        &server,
        json!({ "max_parallel": 0 }),
        json!([once("ok"), once("ok"), once("ok")]),
    );
    let (_, delayed) = open(
        &server,
        json!({}),
        json!([{ "module": "misbehave", "input": "ok", "delay": "1h" }]),
    );
    let driver = Driver::start();
    let browser = driver.browser().await;
    sign_in(&browser, &server).await;

    // A failed task's page opens with its state, outcome, error and input, above the fold
    // on a desktop and on a phone.
    let view = task(&server, failed[0]);
    for width in [1400, 390] {
        driver.emulate(&browser, width, false).await;
        visit(
            &browser,
            &server,
            &format!("/task/{}", failed[0]),
            &format!("Task {}", failed[0]),
        )
        .await;
        until(
            &browser,
            "the task's input",
            "return document.getElementById('task-input');",
        )
        .await;
        for (id, expected) in [
            ("task-state", "failed".to_owned()),
            ("task-outcome", view["outcome"].as_str().unwrap().to_owned()),
            ("task-error", view["error"].as_str().unwrap().to_owned()),
            ("task-input", "error".to_owned()),
        ] {
            let place = browser.execute(PLACE, vec![json!(id)]).await.unwrap();
            assert!(
                place["text"].as_str().unwrap().contains(&expected),
                "#{id} at {width} px shows {expected:?}: {place}"
            );
            assert!(
                place["top"].as_f64().unwrap() < place["height"].as_f64().unwrap(),
                "#{id} is above the fold at {width} px: {place}"
            );
        }
        screenshot(&browser, &format!("task-failed-{width}")).await;
    }
    assert_eq!(view["error"], "asked to fail");
    driver.emulate(&browser, 1400, false).await;

    // The failed tasks alone: attempts, duration, end and error in each row.
    visit(&browser, &server, "/tasks?state=failed", "Tasks").await;
    let rows = until(
        &browser,
        "the failed tasks",
        "const heads = [...document.querySelectorAll('main thead th')].map(th => th.textContent);
         const rows = [...document.querySelectorAll('main tbody tr')].map(tr =>
           Object.fromEntries([...tr.children].map((td, i) => [heads[i], td.textContent])));
         return rows.length === 3 && rows;",
    )
    .await;
    for row in rows.as_array().unwrap() {
        assert_eq!(row["Attempts"], "1 / 1", "{row}");
        assert_eq!(row["Error"], "asked to fail", "{row}");
        assert!(row["Ended"].as_str().unwrap().ends_with(" ago"), "{row}");
        assert!(row["Duration"].as_str().unwrap().ends_with('s'), "{row}");
    }
    screenshot(&browser, "tasks-failed").await;
    // Retry every task of the filter `state=failed`: the three run again (and fail again).
    click(&browser, "#retry-all").await;
    confirm_and_see(&browser, "#bulk-status", "3 tasks run again").await;
    wait(&server, failing);
    for id in &failed[..3] {
        assert_eq!(task(&server, *id)["attempts"], 2, "task {id} ran again");
    }
    assert_eq!(
        task(&server, failed[3])["attempts"],
        1,
        "the one that succeeded did not"
    );

    // Rows picked: two of the held batch's three, cancelled.
    visit(
        &browser,
        &server,
        &format!("/tasks?batch={held_batch}"),
        "Tasks",
    )
    .await;
    for id in &held[..2] {
        click(&browser, &format!("input.pick[value='{id}']")).await;
    }
    until(
        &browser,
        "two picked",
        "return document.getElementById('picked-count')?.textContent === '2 tasks picked';",
    )
    .await;
    screenshot(&browser, "tasks-picked").await;
    click(&browser, "#cancel-picked").await;
    confirm_and_see(&browser, "#bulk-status", "2 cancelled, 0 stopping").await;
    let states: Vec<Value> = held
        .iter()
        .map(|id| task(&server, *id)["state"].clone())
        .collect();
    assert_eq!(
        states,
        json!(["cancelled", "cancelled", "held"])
            .as_array()
            .unwrap()
            .clone()
    );

    // Cancel every held task: the delayed one, waiting, is not held and stays.
    visit(&browser, &server, "/tasks?state=held", "Tasks").await;
    click(&browser, "#cancel-all").await;
    confirm_and_see(&browser, "#bulk-status", "1 cancelled, 0 stopping").await;
    assert_eq!(task(&server, held[2])["state"], "cancelled");
    assert_eq!(task(&server, delayed[0])["state"], "waiting");
    browser.close().await.unwrap();
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn schedules_groups_and_the_nodes_slots_have_pages() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let admin = |method: &str, path: &str, body: Option<Value>| {
        let (status, answer) = call(
            method,
            &format!("{}{path}", server.url),
            Some(&server.token),
            body,
        );
        assert!(status < 300, "{method} {path}: {status} {answer}");
        answer
    };
    admin(
        "POST",
        "/v1/schedules",
        Some(json!({
            "name": "morning",
            "cron": "0 9 * * *",
            "timezone": "Europe/Berlin",
            "plan": { "tasks": [{ "module": "misbehave", "input": "ok" }] },
        })),
    );
    // A group with a limit and no task: idle.
    admin("PUT", "/v1/groups/idle", Some(json!({ "limit": 3 })));
    // A task that runs until cancelled, in group `busy`.
    let (_, running) = open(
        &server,
        json!({}),
        json!([{ "module": "misbehave", "input": "sleep:600000", "group": "busy" }]),
    );
    let driver = Driver::start();
    let browser = driver.browser().await;
    sign_in(&browser, &server).await;

    // The schedule's next ticks, at nine o'clock in its zone, and its recent ticks.
    visit(&browser, &server, "/schedules", "Schedules").await;
    let view = admin("GET", "/v1/schedules/morning", None);
    assert_eq!(view["next_ticks"].as_array().unwrap().len(), 5, "{view}");
    let ticks = until(
        &browser,
        "the next ticks",
        "const ticks = [...document.querySelectorAll('ul.ticks li')].map(li => li.textContent);
         return ticks.length > 0 && ticks;",
    )
    .await;
    let ticks = ticks.as_array().unwrap();
    assert_eq!(ticks.len(), 5, "{ticks:?}");
    for tick in ticks {
        assert!(tick.as_str().unwrap().contains("9:00:00"), "{tick}");
    }
    click(&browser, "#run-morning").await;
    confirm_and_see(
        &browser,
        "#schedule-status",
        "schedule morning: fired, batch",
    )
    .await;
    let view = admin("GET", "/v1/schedules/morning", None);
    let batch = view["ticks"][0]["batch"].as_i64().unwrap();
    assert_eq!(view["ticks"][0]["result"], "fired");
    until(
        &browser,
        "the tick out of turn among the recent ones",
        &format!(
            "return [...document.querySelectorAll('main section td a')]
               .some(a => a.textContent === 'batch {batch}');"
        ),
    )
    .await;
    screenshot(&browser, "schedules").await;
    click(&browser, "#pause-morning").await;
    confirm_and_see(&browser, "#schedule-status", "schedule morning: paused").await;
    assert_eq!(admin("GET", "/v1/schedules/morning", None)["paused"], true);

    // Groups: the idle one with its limit, and the busy one.
    wait_running(&server, running[0]);
    visit(&browser, &server, "/groups", "Groups").await;
    let groups = until(
        &browser,
        "both groups",
        "const rows = [...document.querySelectorAll('main tbody tr')]
           .map(tr => [...tr.children].slice(0, 3).map(td => td.textContent));
         return rows.length === 2 && rows;",
    )
    .await;
    assert_eq!(groups, json!([["busy", "1", "1"], ["idle", "3", "0"]]));
    let listed = admin("GET", "/v1/groups", None);
    assert_eq!(
        listed["groups"][1],
        json!({ "key": "idle", "limit": 3, "paused": false, "rate": null, "running": 0 })
    );
    screenshot(&browser, "groups-idle").await;

    // Nodes: the slot that runs the task names it.
    visit(&browser, &server, "/nodes", "Nodes").await;
    let runs = admin("GET", "/v1/running", None);
    let slot = runs[0]["slot"].as_u64().unwrap();
    let shown = until(
        &browser,
        "the running task in its slot",
        &format!(
            "return [...document.querySelectorAll('main tbody tr')]
               .map(tr => [...tr.children].map(td => td.textContent))
               .find(cells => cells[2] === 'task {}');",
            running[0]
        ),
    )
    .await;
    assert_eq!(shown[1], json!(slot.to_string()), "{shown}");
    screenshot(&browser, "nodes-slots").await;
    admin("POST", &format!("/v1/tasks/{}/cancel", running[0]), None);
    browser.close().await.unwrap();
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_attempt_cut_in_the_task_page_is_shown_whole_on_demand() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let (batch, tasks) = open(
        &server,
        json!({}),
        json!([{ "module": "misbehave", "input": "error:60000", "max_attempts": 1 }]),
    );
    wait(&server, batch);
    let driver = Driver::start();
    let browser = driver.browser().await;
    sign_in(&browser, &server).await;
    visit(
        &browser,
        &server,
        &format!("/task/{}", tasks[0]),
        &format!("Task {}", tasks[0]),
    )
    .await;
    let shown = "return document.querySelector('#attempt-1 pre.error-text')?.textContent.length;";
    let cut = until(&browser, "the attempt's error, cut", shown).await;
    assert!(cut.as_u64().unwrap() <= 4096, "cut to 4 KiB: {cut}");
    let note = until(
        &browser,
        "a note naming what was cut",
        "return document.querySelector('#attempt-1 .cut-note')?.textContent;",
    )
    .await;
    assert!(note.as_str().unwrap().contains("error"), "{note}");
    click(&browser, "#attempt-1 .whole-attempt").await;
    until(
        &browser,
        "the attempt's error whole",
        &format!("{} === 60000", shown.trim_end_matches(';')),
    )
    .await;
    assert!(server.stop().success());
}

/// Waits until `task` runs on a slot.
fn wait_running(server: &Server, id: i64) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while task(server, id)["state"] != "running" {
        assert!(std::time::Instant::now() < deadline, "task {id} never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_fits_a_phone_and_reads_in_either_scheme() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let once = |input: &str| json!({ "module": "misbehave", "input": input, "max_attempts": 1 });
    let (batch, ids) = open(
        &server,
        json!({ "name": "a batch with a long name to fit a phone's screen" }),
        json!([once("error"), once("stdout:10"), once("log:3")]),
    );
    wait(&server, batch);
    call(
        "POST",
        &format!("{}/v1/schedules", server.url),
        Some(&server.token),
        Some(
            json!({ "name": "nightly", "cron": "0 2 * * *", "timezone": "UTC",
                     "plan": { "tasks": [{ "module": "misbehave", "input": "ok" }] } }),
        ),
    );
    let (status, body) = call(
        "POST",
        &format!("{}/v1/tenants", server.url),
        Some(&server.token),
        Some(json!({ "name": "acme" })),
    );
    assert_eq!(status, 201, "{body}");
    let driver = Driver::start();
    let browser = driver.browser().await;
    sign_in(&browser, &server).await;
    let pages = [
        ("/".to_owned(), "Overview", "overview"),
        ("/batches".to_owned(), "Batches", "batches"),
        (format!("/batch/{batch}"), "Batch", "batch"),
        ("/tasks".to_owned(), "Tasks", "tasks"),
        (format!("/task/{}", ids[0]), "Task", "task"),
        ("/groups".to_owned(), "Groups", "groups"),
        ("/nodes".to_owned(), "Nodes", "nodes"),
        ("/modules".to_owned(), "Modules", "modules"),
        ("/schedules".to_owned(), "Schedules", "schedules"),
        ("/tenants".to_owned(), "Tenants", "tenants"),
    ];
    for (width, dark) in [(1400, false), (1400, true), (390, false), (390, true)] {
        driver.emulate(&browser, width, dark).await;
        let scheme = if dark { "dark" } else { "light" };
        for (route, heading, name) in &pages {
            visit(&browser, &server, route, heading).await;
            let at = format!("{route} at {width} px, {scheme}");
            let background = browser
                .execute(
                    "return getComputedStyle(document.documentElement).backgroundColor;",
                    vec![],
                )
                .await
                .unwrap();
            let expected = if dark {
                "rgb(13, 17, 23)"
            } else {
                "rgb(255, 255, 255)"
            };
            assert_eq!(background, json!(expected), "the page's background on {at}");
            let poor = browser.execute(CONTRAST, vec![]).await.unwrap();
            assert_eq!(poor, json!([]), "text below 4.5:1 on {at}");
            let overflow = browser.execute(OVERFLOW, vec![]).await.unwrap();
            assert_eq!(
                overflow,
                Value::Null,
                "the page is wider than the window on {at}"
            );
            screenshot(&browser, &format!("{name}-{width}-{scheme}")).await;
        }
        // From the skip link, the first stop, Tab reaches the pages' links in order.
        browser
            .execute("document.querySelector('a.skip').focus();", vec![])
            .await
            .unwrap();
        for expected in ["Overview", "Batches"] {
            press(&browser, fantoccini::key::Key::Tab).await;
            let focused = browser
                .active_element()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert_eq!(focused, expected, "at {width} px, {scheme}");
        }
    }
    browser.close().await.unwrap();
    assert!(server.stop().success());
}
