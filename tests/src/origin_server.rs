//! A tiny HTTP/1.1 server on 127.0.0.1 for the outbound HTTP tests: the origin a task is
//! allowed to reach, or one it must not. It counts the requests it is sent.
//!
//! - `/hello`: `200`, body `hello`
//! - `/bytes/N`: `200`, N bytes of `x`
//! - `/redirect?to=URL`: `302`, `Location: URL`
//! - `/authorization`: `200`, body the request's `Authorization` header
//! - `/traceparent`: `200`, body the request's `traceparent` header
//! - `/hang`: never answers (until the client goes away)
//! - `/limited/NAME`: the first request for each NAME gets `429`, `Retry-After: 2`; the
//!   next ones `200`, body `hello`

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::server::Server;

pub struct OriginServer {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl OriginServer {
    /// Starts serving on a free port, on threads that live as long as the test process.
    pub fn start() -> OriginServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the origin server");
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let limited = Arc::new(Mutex::new(HashSet::new()));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let counted = counted.clone();
                let limited = limited.clone();
                std::thread::spawn(move || serve(stream, &counted, &limited));
            }
        });
        OriginServer { port, hits }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A `qhost serve` with one slot, its data in `data`, allowed to reach this origin,
    /// with the `fetch` example added as `fetch`.
    pub fn allowed_by_server(&self, data: &Path) -> Server {
        let server = Server::start_with(data, 1, |command| {
            command.arg("--allow-http").arg(self.origin());
        });
        server.upload("fetch");
        server
    }

    /// `http://127.0.0.1:PORT`
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// How many requests reached it.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn serve(stream: TcpStream, hits: &AtomicUsize, limited: &Mutex<HashSet<String>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("cloning a socket"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    // The rest of the head; the requests the tests make have no body.
    let mut authorization = String::new();
    let mut traceparent = String::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("authorization")
        {
            authorization = value.trim().to_owned();
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("traceparent")
        {
            traceparent = value.trim().to_owned();
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (status, extra, body) = if path == "/hello" {
        ("200 OK", String::new(), b"hello".to_vec())
    } else if let Some(n) = path.strip_prefix("/bytes/") {
        ("200 OK", String::new(), vec![b'x'; n.parse().unwrap_or(0)])
    } else if let Some(to) = path.strip_prefix("/redirect?to=") {
        ("302 Found", format!("Location: {to}\r\n"), Vec::new())
    } else if path == "/authorization" {
        ("200 OK", String::new(), authorization.into_bytes())
    } else if path == "/traceparent" {
        ("200 OK", String::new(), traceparent.into_bytes())
    } else if let Some(name) = path.strip_prefix("/limited/") {
        if limited.lock().unwrap().insert(name.to_owned()) {
            (
                "429 Too Many Requests",
                "Retry-After: 2\r\n".to_owned(),
                Vec::new(),
            )
        } else {
            ("200 OK", String::new(), b"hello".to_vec())
        }
    } else if path == "/hang" {
        // Hold the request until the client gives up on it.
        let _ = reader.read_to_end(&mut Vec::new());
        return;
    } else {
        ("404 Not Found", String::new(), Vec::new())
    };
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}
