//! What the dashboard's browser tests share: Debian's headless Chromium driven through
//! `chromedriver` by fantoccini, a phone's width and the dark scheme emulated over the
//! DevTools protocol, waits on what a page shows, signing in, screenshots under
//! `target/dashboard-screenshots/`, reads of the API, and a colour contrast check.

// Each test file uses part of these.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::error::CmdError;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use qhost_tests::server::{Server, agent, call};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a page may take to show what the test waits for.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A `chromedriver` on a free port, stopped when dropped.
pub struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    pub fn start() -> Driver {
        for path in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                std::path::Path::new(path).exists(),
                "{path} is missing: the dashboard tests need Debian's Chromium and its driver \
                 (`apt-get install chromium chromium-driver`; scripts/test.sh installs them)"
            );
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + PATIENCE;
        // Ready once it answers its status.
        while agent().get(format!("{url}/status")).call().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Driver { child, url }
    }

    pub async fn browser(&self) -> Client {
        let options = json!({
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1400,1000"],
        });
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), options);
        ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session")
    }
}

impl Driver {
    /// Runs the Chrome DevTools Protocol command `cmd` in `browser`'s page (chromedriver's
    /// `goog/cdp/execute`); returns its answer.
    pub async fn cdp(&self, browser: &Client, cmd: &str, params: Value) -> Value {
        let session = browser
            .session_id()
            .await
            .unwrap()
            .expect("a WebDriver session");
        let url = format!("{}/session/{session}/goog/cdp/execute", self.url);
        let body = json!({ "cmd": cmd, "params": params });
        let (status, answer) =
            tokio::task::spawn_blocking(move || call("POST", &url, None, Some(body)))
                .await
                .unwrap();
        assert_eq!(status, 200, "{cmd}: {answer}");
        answer
    }

    /// Shows pages `width` CSS pixels wide (a phone's screen below 600, with its viewport
    /// rules), in the dark colour scheme or the light one, as a system that prefers it.
    pub async fn emulate(&self, browser: &Client, width: u32, dark: bool) {
        let height = if width < 600 { 844 } else { 1000 };
        self.cdp(
            browser,
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1,
                    "mobile": width < 600 }),
        )
        .await;
        let scheme = if dark { "dark" } else { "light" };
        self.cdp(
            browser,
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
        )
        .await;
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Evaluates `script` (a function body returning a value) until it returns something
/// truthy, and returns that; panics with `what` after [`PATIENCE`].
pub async fn until(browser: &Client, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let value = browser.execute(script, vec![]).await.unwrap();
        if !matches!(value, Value::Null | Value::Bool(false)) {
            return value;
        }
        assert!(Instant::now() < deadline, "the page never showed {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Clicks the element `css` names; again if the page was redrawn under the click.
pub async fn click(browser: &Client, css: &str) {
    for _ in 0..20 {
        match browser
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
        {
            Ok(element) => match element.click().await {
                Ok(()) => return,
                Err(CmdError::Standard(e)) if e.error.to_string().contains("stale") => continue,
                Err(e) => panic!("clicking {css}: {e}"),
            },
            Err(e) => panic!("no {css} on the page: {e}"),
        }
    }
    panic!("{css} was redrawn under every click");
}

/// Goes to `route` and waits until its page has loaded with `heading`.
pub async fn visit(browser: &Client, server: &Server, route: &str, heading: &str) {
    browser
        .goto(&format!("{}/#{route}", server.url))
        .await
        .unwrap();
    until(
        browser,
        &format!("the heading {heading:?}"),
        &format!(
            "const h = document.querySelector('main h1');
             return h && h.textContent.startsWith({heading:?});"
        ),
    )
    .await;
}

/// Presses `key` on the keyboard, wherever the focus is.
pub async fn press(browser: &Client, key: Key) {
    let keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: key.into() })
        .then(KeyAction::Up { value: key.into() });
    browser.perform_actions(keys).await.unwrap();
}

pub async fn screenshot(browser: &Client, name: &str) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("dashboard-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = browser.screenshot().await.unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

pub async fn sign_in(browser: &Client, server: &Server) {
    browser.goto(&server.url).await.unwrap();
    let token = browser
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Id("token"))
        .await
        .unwrap();
    token.send_keys(&server.token).await.unwrap();
    token.send_keys(&Key::Enter.to_string()).await.unwrap();
    until(
        browser,
        "the overview",
        "return document.querySelector('main h1')?.textContent === 'Overview';",
    )
    .await;
}

/// Opens a batch with `settings` and `tasks`; returns its id and its tasks' ids.
pub fn open(server: &Server, settings: Value, tasks: Value) -> (i64, Vec<i64>) {
    let mut body = settings;
    body["tasks"] = tasks;
    let opened = server.open_batch(body);
    (opened.id, opened.tasks)
}

pub fn task(server: &Server, id: i64) -> Value {
    let (status, task) = call(
        "GET",
        &format!("{}/v1/tasks/{id}", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{task}");
    task
}

/// Reads `path` of the API as the admin; panics unless it answers 200.
pub fn read(server: &Server, path: &str) -> Value {
    let (status, body) = call(
        "GET",
        &format!("{}{path}", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// Waits until every task of `batch` has ended.
pub fn wait(server: &Server, batch: i64) {
    let info = read(server, &format!("/v1/batches/{batch}/wait?timeout=60s"));
    let progress = &info["progress"];
    for pending in ["waiting", "ready", "held", "reserved", "running"] {
        assert_eq!(progress[pending], 0, "batch {batch} has not ended: {info}");
    }
}

/// Returns each text whose colour against its background is below 4.5:1.
pub const CONTRAST: &str = r#"
const rgb = (c) => c.match(/[\d.]+/g).map(Number);
const lum = ([r, g, b]) => {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
};
const background = (el) => {
  for (; el; el = el.parentElement) {
    const c = rgb(getComputedStyle(el).backgroundColor);
    if (c.length < 4 || c[3] > 0) return c.slice(0, 3);
  }
  return [255, 255, 255];
};
const poor = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode;
  const el = node.parentElement;
  if (!node.textContent.trim() || el.getClientRects().length === 0) continue;
  if (el.closest('svg') || el.closest('dialog:not([open])')) continue;
  const fg = lum(rgb(getComputedStyle(el).color));
  const bg = lum(background(el));
  const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
  if (ratio < 4.5) poor.push(`${node.textContent.trim().slice(0, 40)}: ${ratio.toFixed(2)}`);
}
return poor;
"#;

/// Whether the page is wider than the window: a sideways scroll of the whole page, with
/// what sticks out.
pub const OVERFLOW: &str = r#"
const width = document.documentElement.clientWidth;
if (document.documentElement.scrollWidth <= width) return null;
const wide = [...document.querySelectorAll('main *')]
  .filter((el) => el.getBoundingClientRect().right > width + 1 && !el.closest('.table-box, .timeline'))
  .slice(0, 5).map((el) => `${el.tagName}.${el.className}`);
return { scroll: document.documentElement.scrollWidth, width, wide };
"#;
