//! A real `qhost serve` on port 0 in a temporary data directory, and the `qhost` command
//! line pointed at it: what the client tests and the serve benchmark start from.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A batch just opened: its id, its handle and its tasks' ids.
pub struct Opened {
    pub id: i64,
    pub handle: String,
    pub tasks: Vec<i64>,
}

pub struct Server {
    child: Child,
    pub url: String,
    pub token: String,
    pub data: PathBuf,
}

impl Server {
    /// Starts `qhost serve` with `workers` slots, its data in `data`, and waits until it
    /// listens.
    pub fn start(data: &Path, workers: usize) -> Server {
        Server::start_with(data, workers, |_| {})
    }

    /// Like [`Server::start`], with more settings given by `configure` (flags, variables).
    /// The admin token is `QHOST_ADMIN_TOKEN` when `configure` sets it, else the generated one.
    pub fn start_with(data: &Path, workers: usize, configure: impl FnOnce(&mut Command)) -> Server {
        Server::start_on(data, workers, "127.0.0.1:0", configure)
    }

    /// Like [`Server::start`], listening on `listen` (`127.0.0.1:PORT`): to start a server
    /// again where it was.
    pub fn start_at(data: &Path, workers: usize, listen: &str) -> Server {
        Server::start_on(data, workers, listen, |_| {})
    }

    fn start_on(
        data: &Path,
        workers: usize,
        listen: &str,
        configure: impl FnOnce(&mut Command),
    ) -> Server {
        let mut command = serve_command_on(data, workers, listen);
        command.stdout(Stdio::piped()).stderr(Stdio::null());
        configure(&mut command);
        let given_token = command
            .get_envs()
            .find(|(name, _)| *name == "QHOST_ADMIN_TOKEN")
            .and_then(|(_, value)| value)
            .map(|value| value.to_string_lossy().into_owned());
        let mut child = command.spawn().expect("starting qhost serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("qhost serve printed nothing").unwrap();
        let url = first
            .strip_prefix("qhost listening on ")
            .expect(&first)
            .to_owned();
        let token = given_token.unwrap_or_else(|| {
            std::fs::read_to_string(data.join("admin-token"))
                .unwrap()
                .trim()
                .to_owned()
        });
        Server {
            child,
            url,
            token,
            data: data.to_owned(),
        }
    }

    /// The address it listens on (`127.0.0.1:PORT`).
    pub fn address(&self) -> &str {
        self.url.strip_prefix("http://").expect("an http URL")
    }

    /// Opens a batch as the admin with `body` (`POST /v1/batches`), which must succeed.
    pub fn open_batch(&self, body: Value) -> Opened {
        let (status, opened) = call(
            "POST",
            &format!("{}/v1/batches", self.url),
            Some(&self.token),
            Some(body),
        );
        assert_eq!(status, 201, "opening a batch: {opened}");
        Opened {
            id: opened["batch"]["id"].as_i64().expect("the batch's id"),
            handle: opened["handle"].as_str().expect("a handle").to_owned(),
            tasks: opened["tasks"]
                .as_array()
                .map(|tasks| tasks.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default(),
        }
    }

    /// A batch's raw event stream from `Last-Event-ID: last` (if given): its status line,
    /// then each event's name, `id` and task id, as they come. A stream quiet for a
    /// minute fails the test.
    pub fn events(
        &self,
        batch: i64,
        last: Option<&str>,
    ) -> (
        String,
        impl Iterator<Item = (String, Option<String>, Option<i64>)>,
    ) {
        let mut stream = TcpStream::connect(self.address()).expect("connecting for events");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("a read timeout");
        let resume = last
            .map(|id| format!("Last-Event-ID: {id}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET /v1/batches/{batch}/events HTTP/1.1\r\nHost: x\r\n{resume}Authorization: Bearer {}\r\n\r\n",
            self.token
        )
        .expect("asking for events");
        let mut lines = BufReader::new(stream)
            .lines()
            .map(|line| line.expect("the event stream went quiet for a minute"));
        let status = lines.next().expect("a status line");
        // An event's fields end at a blank line, in whatever order they came.
        let (mut name, mut id, mut task) = (String::new(), None, None);
        let events = lines.filter_map(move |line| {
            if let Some(event) = line.strip_prefix("event: ") {
                name = event.to_owned();
            } else if let Some(value) = line.strip_prefix("id: ") {
                id = Some(value.to_owned());
            } else if let Some(data) = line.strip_prefix("data: ") {
                let data: Value = serde_json::from_str(data).expect("an event's JSON");
                task = data["task"].as_i64().or(data["id"].as_i64());
            } else if line.is_empty() && !name.is_empty() {
                return Some((std::mem::take(&mut name), id.take(), task.take()));
            }
            None
        });
        (status, events)
    }

    /// The `qhost` command line with this server and the admin token set by variables, and
    /// nothing inherited that could point it elsewhere.
    pub fn cli(&self) -> Command {
        let mut command = bare_cli();
        command
            .env("QHOST_SERVER", &self.url)
            .env("QHOST_TOKEN", &self.token);
        command
    }

    /// Adds the test guest `guest` under its own name, as admin; it must be accepted.
    pub fn upload(&self, guest: &str) {
        let bytes = std::fs::read(crate::guest(guest)).unwrap();
        let mut response = agent()
            .post(format!("{}/v1/modules?name={guest}", self.url))
            .header("Authorization", format!("Bearer {}", self.token))
            .send(&bytes[..])
            .unwrap();
        let status = response.status().as_u16();
        let body = response.body_mut().read_to_string().unwrap_or_default();
        assert_eq!(status, 201, "uploading {guest}: {body}");
    }

    /// The whole execution log, page by page, as admin.
    pub fn log(&self) -> Vec<qhost::store::AttemptRecord> {
        let mut all = Vec::new();
        let mut after = 0;
        loop {
            let path = format!("{}/v1/attempts?after={after}&limit=1000", self.url);
            let (status, page) = call("GET", &path, Some(&self.token), None);
            assert_eq!(status, 200, "{page}");
            let attempts: Vec<qhost::store::AttemptRecord> =
                serde_json::from_value(page["attempts"].clone()).unwrap();
            if attempts.is_empty() {
                return all;
            }
            after = page["next"].as_i64().unwrap();
            all.extend(attempts);
        }
    }

    /// Runs the command line with `args`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cli().args(args).output().expect("running qhost")
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// kill -9, as a crash would.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `qhost serve` command [`Server::start_with`] runs: port 0, `workers` slots, its data
/// in `data`, no admin token or config file inherited.
pub fn serve_command(data: &Path, workers: usize) -> Command {
    serve_command_on(data, workers, "127.0.0.1:0")
}

fn serve_command_on(data: &Path, workers: usize, listen: &str) -> Command {
    let mut command = Command::new(crate::qhost_binary());
    command
        .args(["serve", "--listen", listen, "--grace", "30s"])
        .arg("--workers")
        .arg(workers.to_string())
        .arg("--data-dir")
        .arg(data)
        .env_remove("QHOST_ADMIN_TOKEN")
        .env_remove("QHOST_CONFIG")
        .env_remove("QHOST_RETENTION");
    command
}

/// Runs a `qhost serve` that must refuse to start: returns its stderr. Panics if it exits 0,
/// or is still running after a minute (it started instead of refusing).
pub fn refused(mut command: Command) -> String {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting qhost serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("qhost serve started instead of refusing to");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "qhost serve exited 0: {stderr}");
    stderr
}

/// The `qhost` command line with no server, token or config set from outside, and a home
/// without a client config.
pub fn bare_cli() -> Command {
    let mut command = Command::new(crate::qhost_binary());
    for var in [
        "QHOST_SERVER",
        "QHOST_TOKEN",
        "QHOST_CLIENT_CONFIG",
        "QHOST_DATA_DIR",
    ] {
        command.env_remove(var);
    }
    command.env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("qhost-tests-no-config"),
    );
    command
}

/// An HTTP client that hands back error statuses as responses, for tests to check.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// A request with `credential` as bearer; returns the status and the JSON body.
pub fn call(
    method: &str,
    url: &str,
    credential: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let agent = agent();
    let mut request = ureq::http::Request::builder().method(method).uri(url);
    if let Some(token) = credential {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = match body {
        Some(body) => agent.run(
            request
                .header("content-type", "application/json")
                .body(body.to_string())
                .unwrap(),
        ),
        None => agent.run(request.body(()).unwrap()),
    };
    let mut response = response.expect("request");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}
