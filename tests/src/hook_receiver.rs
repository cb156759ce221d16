//! A webhook receiver on 127.0.0.1 for the webhook tests: it keeps every request it is
//! sent (headers and body), answers `500` while it is told to fail and `200` otherwise,
//! and lets a test wait, with a deadline, until a number of requests have come.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request as received, and the status it was answered.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub status: u16,
}

impl Received {
    /// A header's value (names compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a webhook body is JSON")
    }
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    arrived: Condvar,
    /// Requests still to answer 500.
    failing: AtomicUsize,
}

pub struct HookReceiver {
    port: u16,
    shared: Arc<Shared>,
}

impl HookReceiver {
    /// Starts receiving on a free port; the first `fail_first` requests are answered 500.
    pub fn start(fail_first: usize) -> HookReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the receiver");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        shared.failing.store(fail_first, Ordering::SeqCst);
        let serving = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = serving.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        HookReceiver { port, shared }
    }

    /// Answers the next `count` requests 500 (and 200 after them).
    pub fn fail_next(&self, count: usize) {
        self.shared.failing.store(count, Ordering::SeqCst);
    }

    /// `http://127.0.0.1:PORT`: the origin to allow.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// What came so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits until `count` requests have come (a minute at most, else the test fails);
    /// returns them all.
    pub fn wait_for(&self, count: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut received = self.shared.received.lock().unwrap();
        while received.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let shown = format!(
                    "{} webhook request(s) came within a minute, {count} awaited: {received:?}",
                    received.len()
                );
                // Not while holding the lock: the receiver's threads go on with it.
                drop(received);
                panic!("{shown}");
            }
            received = self.shared.arrived.wait_timeout(received, left).unwrap().0;
        }
        received.clone()
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream.try_clone().expect("cloning a socket"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            let (name, value) = (name.trim().to_owned(), value.trim().to_owned());
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            }
            headers.push((name, value));
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let fail = shared
        .failing
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let status = if fail { 500 } else { 200 };
    let mut stream = stream;
    let reason = if fail { "Internal Server Error" } else { "OK" };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let mut received = shared.received.lock().unwrap();
    received.push(Received {
        path,
        headers,
        body,
        status,
    });
    shared.arrived.notify_all();
}
