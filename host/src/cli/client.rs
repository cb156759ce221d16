//! The HTTP client the remote subcommands share: where the server is and which token to
//! send (flags, `QHOST_*` variables, the client config file, the local data directory),
//! the requests themselves, and how a refusal or an unreachable server reads.

use std::io::BufRead;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, anyhow};
use clap::Args;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::store::{BatchId, Micros};

/// Where `qhost serve` listens unless told otherwise.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:7700";
/// Where `qhost serve` keeps its data unless told otherwise (relative to where it runs).
const DEFAULT_DATA_DIR: &str = "qhost-data";

/// A request that got no answer: the server was not reached, or stopped answering. A
/// command that follows the server (`log --follow`) waits this out; a refusal it does not.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Unreachable {
    /// What failed and what to do.
    message: String,
    /// What failed alone, such as `Connection refused`.
    pub cause: String,
}

/// An error answer from the server: its status, and what it said.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub status: u16,
    message: String,
}

/// The [`Unreachable`] the error is or stands for, if it is one.
pub fn unreachable(err: &anyhow::Error) -> Option<&Unreachable> {
    err.chain()
        .find_map(|cause| cause.downcast_ref::<Unreachable>())
}

/// `Some` when the request failed in TLS, with rustls's own error when there is one.
fn tls_failure(err: &ureq::Error) -> Option<Option<&rustls::Error>> {
    match err {
        ureq::Error::Rustls(tls) => Some(Some(tls)),
        ureq::Error::Tls(_) | ureq::Error::TlsRequired => Some(None),
        // The handshake's failures come as I/O errors that carry rustls's.
        ureq::Error::Io(io) => io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .map(Some),
        _ => None,
    }
}

/// How to reach the server: flags of every client subcommand, under their own heading
/// (the local ones, `run`, `serve` and `bench`, have no server to reach).
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// The qhost server's URL [default: http://127.0.0.1:7700].
    #[arg(long, global = true, help_heading = "Connection", env = "QHOST_SERVER")]
    pub server: Option<String>,
    /// The admin token, a tenant's token or a batch handle (default: the `admin-token`
    /// file in the local server's data directory, QHOST_DATA_DIR or ./qhost-data).
    #[arg(
        long,
        global = true,
        help_heading = "Connection",
        env = "QHOST_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// The client config file, a TOML file with `server` and `token`
    /// [default: ~/.config/qhost/client.toml].
    #[arg(
        long,
        global = true,
        help_heading = "Connection",
        env = "QHOST_CLIENT_CONFIG"
    )]
    pub client_config: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientFile {
    server: Option<String>,
    token: Option<String>,
}

/// A connection to one server with one credential.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    server: String,
    token: Option<String>,
    /// Where the server setting came from, for the message when it cannot be reached.
    config_path: Option<PathBuf>,
}

impl Client {
    /// Resolves the server and the token: flag or variable, then the config file, then the
    /// defaults (the local server and the `admin-token` of its default data directory).
    pub fn new(args: &ConnectArgs) -> anyhow::Result<Client> {
        let (file, config_path) = match &args.client_config {
            Some(path) => (read_client_file(path)?, Some(path.clone())),
            None => match dirs::config_dir().map(|d| d.join("qhost").join("client.toml")) {
                Some(path) if path.exists() => (read_client_file(&path)?, Some(path)),
                path => (ClientFile::default(), path),
            },
        };
        let from = match (&args.server, &config_path) {
            (Some(_), _) => "--server or QHOST_SERVER".to_owned(),
            (None, Some(path)) => format!("`server` in {}", path.display()),
            (None, None) => "the client config file".to_owned(),
        };
        let server = args
            .server
            .clone()
            .or(file.server)
            .unwrap_or_else(|| DEFAULT_SERVER.to_owned());
        let server = server.trim_end_matches('/').to_owned();
        // Without a scheme the request fails with no more than "invalid format".
        anyhow::ensure!(
            server.starts_with("http://") || server.starts_with("https://"),
            "the server `{server}` (from {from}) is not a URL: give a URL like \
             http://HOST:PORT"
        );
        let token = args.token.clone().or(file.token).or_else(local_admin_token);
        // The system's trust store, as curl uses: a private CA installed there, or named
        // by SSL_CERT_FILE or SSL_CERT_DIR, is trusted.
        let tls = ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::PlatformVerifier)
            .build();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .tls_config(tls)
            .build()
            .into();
        Ok(Client {
            agent,
            server,
            token,
            config_path,
        })
    }

    /// The same server with another credential (a batch handle).
    pub fn with_token(&self, token: &str) -> Client {
        Client {
            token: Some(token.to_owned()),
            ..self.clone()
        }
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The batch the token is the handle of, when it is one.
    pub fn handle_batch(&self) -> Option<BatchId> {
        self.token
            .as_deref()
            .and_then(crate::scheduler::handle_batch)
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.server));
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let context = || format!("{method} {path}");
        // No body at all rather than an empty one: a GET must not carry one.
        let sent = match body {
            Some(body) => self.agent.run(request.body(body).with_context(context)?),
            None => self.agent.run(request.body(()).with_context(context)?),
        };
        let response = sent
            .map_err(|e| self.unreachable(e))
            .with_context(context)?;
        if response.status().as_u16() >= 400 {
            return Err(refusal(
                response,
                self.token.as_deref(),
                &self.token_sources(),
            ));
        }
        Ok(response)
    }

    /// Where a token comes from, in the order they are tried.
    fn token_sources(&self) -> String {
        let config = match &self.config_path {
            Some(path) => path.display().to_string(),
            None => "the client config file".to_owned(),
        };
        format!(
            "give the admin token or a batch handle with --token, QHOST_TOKEN or `token` in \
             {config}; without them the local server's `admin-token` file is used, in its \
             data directory (QHOST_DATA_DIR, or ./{DEFAULT_DATA_DIR})"
        )
    }

    fn read_json<T: DeserializeOwned>(
        &self,
        response: &mut ureq::http::Response<ureq::Body>,
    ) -> anyhow::Result<T> {
        let text = response
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
            .map_err(|e| self.unreachable(e))
            .context("reading the answer")?;
        serde_json::from_str(&text)
            .with_context(|| format!("the server's answer is not as expected: {text}"))
    }

    /// A request that got no answer, as a message that says what to do.
    fn unreachable(&self, err: ureq::Error) -> anyhow::Error {
        if let Some(tls) = tls_failure(&err) {
            let advice = match tls {
                Some(rustls::Error::InvalidCertificate(_)) => {
                    "its certificate is not trusted here: install the CA that signed it in \
                     the system's trust store, or name a file of trusted certificates (PEM) \
                     with SSL_CERT_FILE"
                }
                // What came back was not TLS at all.
                Some(rustls::Error::InvalidMessage(_)) => {
                    "does it speak TLS? `qhost serve` speaks plain HTTP: give http:// for a \
                     server reached directly, and https:// for one behind a TLS proxy"
                }
                _ => {
                    "the certificates trusted are the system's (its trust store), or those \
                     in the file SSL_CERT_FILE names"
                }
            };
            return anyhow!(Unreachable {
                message: format!(
                    "TLS with the qhost server at {} failed ({err}); {advice}",
                    self.server
                ),
                cause: err.to_string(),
            });
        }
        let refused = matches!(
            &err,
            ureq::Error::ConnectionFailed
                | ureq::Error::HostNotFound
                | ureq::Error::Io(_)
                | ureq::Error::Timeout(_)
        );
        if !refused {
            return anyhow!(err);
        }
        let config = match &self.config_path {
            Some(path) => format!("`server` in {}", path.display()),
            None => "`server` in the client config file".to_owned(),
        };
        anyhow!(Unreachable {
            message: format!(
                "could not reach the qhost server at {} ({err}); start `qhost serve`, or \
                 say where it runs with --server, QHOST_SERVER or {config}",
                self.server
            ),
            cause: err.to_string(),
        })
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        let mut response = self.send("GET", path, None, None)?;
        self.read_json(&mut response)
    }

    /// A request with a JSON body (or none), answered with JSON (or nothing: `Value::Null`).
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let mut response = match body {
            Some(body) => self.send(
                method,
                path,
                Some("application/json"),
                Some(serde_json::to_vec(body)?),
            )?,
            None => self.send(method, path, None, None)?,
        };
        if response.status().as_u16() == 204 {
            return Ok(Value::Null);
        }
        self.read_json(&mut response)
    }

    /// A request that must be done once: sent with a fresh `Idempotency-Key`, and sent
    /// again under the same key when the server could not be reached or said it was
    /// unavailable (up to [`ONCE_TRIES`] times, waiting longer each time). A request or an
    /// answer lost on the way is then done once all the same: the server answers a repeat
    /// with the first answer.
    pub fn call_once(&self, method: &str, path: &str, body: &Value) -> anyhow::Result<Value> {
        let key = new_idempotency_key()?;
        let bytes = serde_json::to_vec(body)?;
        let context = || format!("{method} {path}");
        let mut pause = Duration::from_millis(250);
        for attempt in 1..=ONCE_TRIES {
            let mut request = ureq::http::Request::builder()
                .method(method)
                .uri(format!("{}{path}", self.server))
                .header("content-type", "application/json")
                .header("idempotency-key", &key);
            if let Some(token) = &self.token {
                request = request.header("Authorization", format!("Bearer {token}"));
            }
            let sent = self
                .agent
                .run(request.body(bytes.clone()).with_context(context)?);
            let again = match &sent {
                Err(_) => true,
                Ok(response) => matches!(response.status().as_u16(), 502..=504),
            };
            if again && attempt < ONCE_TRIES {
                errln!(
                    "qhost: {method} {path} did not get through; sending it again ({} of \
                     {ONCE_TRIES})",
                    attempt + 1
                );
                std::thread::sleep(pause);
                pause *= 2;
                continue;
            }
            let mut response = sent
                .map_err(|e| self.unreachable(e))
                .with_context(context)?;
            if response.status().as_u16() >= 400 {
                return Err(refusal(
                    response,
                    self.token.as_deref(),
                    &self.token_sources(),
                ));
            }
            return self.read_json(&mut response);
        }
        unreachable!("the last try returns")
    }

    /// A request with a raw body, answered with JSON.
    pub fn upload<T: DeserializeOwned>(&self, path: &str, bytes: Vec<u8>) -> anyhow::Result<T> {
        let mut response = self.send("POST", path, Some("application/wasm"), Some(bytes))?;
        self.read_json(&mut response)
    }

    /// The raw body of a GET.
    pub fn get_bytes(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        let mut response = self.send("GET", path, None, None)?;
        response
            .body_mut()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .map_err(|e| self.unreachable(e))
            .context("reading the answer")
    }

    /// A GET answered with a large body, read as it comes: its length, when the server
    /// says it, and a reader of it.
    pub fn download(&self, path: &str) -> anyhow::Result<(Option<u64>, impl std::io::Read)> {
        let response = self.send("GET", path, None, None)?;
        let length = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        Ok((length, response.into_body().into_reader()))
    }

    /// A server-sent-events stream: each event's name and data, until the server ends it.
    pub fn events(&self, path: &str) -> anyhow::Result<Events> {
        let response = self.send("GET", path, None, None)?;
        Ok(Events {
            lines: Box::new(std::io::BufReader::new(response.into_body().into_reader())),
        })
    }
}

/// How many times [`Client::call_once`] sends a request that did not get through.
pub const ONCE_TRIES: u32 = 5;

/// A random idempotency key: 128 bits, in hex.
fn new_idempotency_key() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| anyhow!("the system random source: {e}"))?;
    Ok(format!("qhost-{}", hex::encode(bytes)))
}

/// Events read from a `text/event-stream` answer.
pub struct Events {
    lines: Box<dyn BufRead>,
}

impl Iterator for Events {
    /// The event's name (`message` when unnamed) and its data.
    type Item = anyhow::Result<(String, String)>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut name = String::new();
        let mut data = String::new();
        loop {
            let mut line = String::new();
            match self.lines.read_line(&mut line) {
                Err(e) => return Some(Err(anyhow!(e).context("reading the event stream"))),
                Ok(0) => return None,
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if data.is_empty() && name.is_empty() {
                    continue;
                }
                if name.is_empty() {
                    name.push_str("message");
                }
                return Some(Ok((name, data)));
            }
            if let Some(value) = line.strip_prefix("event:") {
                name = value.trim_start().to_owned();
            } else if let Some(value) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value.strip_prefix(' ').unwrap_or(value));
            }
            // Comments (keep-alives) and other fields are skipped.
        }
    }
}

/// An error answer (`{"error", "detail"}`) as an error message.
fn refusal(
    mut response: ureq::http::Response<ureq::Body>,
    token: Option<&str>,
    token_sources: &str,
) -> anyhow::Error {
    let status = response.status();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let (kind, detail) = match serde_json::from_str::<Value>(&text) {
        Ok(body) => (
            body["error"].as_str().unwrap_or("error").to_owned(),
            body["detail"].as_str().unwrap_or(&text).to_owned(),
        ),
        Err(_) => ("error".to_owned(), text),
    };
    let mut message = format!("the server answered {} {kind}: {detail}", status.as_u16());
    match status.as_u16() {
        401 => {
            let what = if token.is_some() {
                "the token sent was refused"
            } else {
                "no token was found"
            };
            message.push_str(&format!(" ({what}: {token_sources})"));
        }
        403 => {
            let tenant = token.and_then(crate::scheduler::token_parts).is_some();
            let opens = match token.and_then(crate::scheduler::handle_batch) {
                Some(batch) => format!(
                    "the token sent is the handle of batch {batch}: a batch handle opens only \
                     its own batch and that batch's tasks; other batches and tasks, modules, \
                     groups, status and the whole log take the admin token"
                ),
                None if tenant => "the token sent is a tenant's: it opens its tenant's \
                    batches and their tasks, the modules it may run and its usage; other \
                    batches and tasks, groups, status and the whole log take the admin token"
                    .to_owned(),
                None => "a batch handle opens only its own batch and that batch's tasks; other \
                    batches and tasks, modules, groups, status and the whole log take the \
                    admin token"
                    .to_owned(),
            };
            message.push_str(&format!(" ({opens}: {token_sources})"));
        }
        _ => {}
    }
    anyhow!(Refusal {
        status: status.as_u16(),
        message,
    })
}

fn read_client_file(path: &std::path::Path) -> anyhow::Result<ClientFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("in the client config file {}", path.display()))
}

/// The admin token a local `qhost serve` keeps in its data directory.
fn local_admin_token() -> Option<String> {
    let dir = std::env::var_os("QHOST_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
    let token = std::fs::read_to_string(dir.join("admin-token")).ok()?;
    Some(token.trim().to_owned()).filter(|t| !t.is_empty())
}

/// A batch named by its id (with the admin token) or by its handle (which names its id).
#[derive(Debug, Clone)]
pub struct BatchRef {
    pub id: BatchId,
    pub handle: Option<String>,
}

impl std::str::FromStr for BatchRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.starts_with("qhb_") {
            let id = crate::scheduler::handle_batch(text)
                .ok_or_else(|| "not a batch handle (qhb_<id>_<secret>)".to_owned())?;
            return Ok(BatchRef {
                id,
                handle: Some(text.to_owned()),
            });
        }
        let id = text
            .parse()
            .map_err(|_| "give a batch id or a batch handle (qhb_...)".to_owned())?;
        Ok(BatchRef { id, handle: None })
    }
}

impl BatchRef {
    /// The client that opens this batch: with its handle when it was named by one.
    pub fn client(&self, client: &Client) -> Client {
        match &self.handle {
            Some(handle) => client.with_token(handle),
            None => client.clone(),
        }
    }
}

/// Prints a value as indented JSON, each time in it (microseconds since the epoch) with
/// its RFC 3339 form beside it ([`with_times`]).
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(value)?;
    with_times(&mut value);
    outln!("{}", serde_json::to_string_pretty(&value)?)?;
    Ok(())
}

/// Prints a value as one line of JSON, times as [`print_json`] does.
pub fn print_json_line(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(value)?;
    with_times(&mut value);
    outln!("{}", serde_json::to_string(&value)?)?;
    Ok(())
}

/// Whether a field of this name holds a time in microseconds since the epoch.
fn is_time(key: &str) -> bool {
    key.ends_with("_at")
        || matches!(
            key,
            "next_due" | "since" | "until" | "lease_expires" | "next_ticks"
        )
}

/// Adds beside every time field (`submitted_at`: microseconds) its RFC 3339 form
/// (`submitted_at_rfc3339`), at any depth; a list of times gets a list.
pub fn with_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let mut added = Vec::new();
            for (key, field) in map.iter_mut() {
                if is_time(key) {
                    let text = match field {
                        Value::Number(n) => n.as_i64().map(|at| Value::String(rfc3339(at))),
                        Value::Array(items) => Some(Value::Array(
                            items
                                .iter()
                                .map(|v| v.as_i64().map(rfc3339).map_or(Value::Null, Value::String))
                                .collect(),
                        )),
                        _ => None,
                    };
                    if let Some(text) = text {
                        added.push((format!("{key}_rfc3339"), text));
                    }
                } else {
                    with_times(field);
                }
            }
            map.extend(added);
        }
        Value::Array(items) => items.iter_mut().for_each(with_times),
        _ => {}
    }
}

/// A time in microseconds since the epoch, in RFC 3339 (UTC) to the microsecond.
pub fn rfc3339(at: Micros) -> String {
    let time = UNIX_EPOCH + Duration::from_micros(u64::try_from(at).unwrap_or(0));
    humantime::format_rfc3339_micros(time).to_string()
}

/// A time as people read it: `5 s ago`, `in 3 min`, with the time itself after it.
pub fn when(at: Micros) -> String {
    let now = crate::store::now_micros();
    let span = short_span((now - at).unsigned_abs());
    if at <= now {
        format!("{span} ago ({})", time(at))
    } else {
        format!("in {span} ({})", time(at))
    }
}

/// A span in microseconds, short and rounded: `850 ms`, `5 s`, `3 min`, `2 h`, `4 d`.
pub fn short_span(micros: u64) -> String {
    let seconds = micros / 1_000_000;
    match seconds {
        0 => format!("{} ms", micros / 1000),
        1..=119 => format!("{seconds} s"),
        120..=7199 => format!("{} min", seconds / 60),
        7200..=172_799 => format!("{} h", seconds / 3600),
        _ => format!("{} d", seconds / 86_400),
    }
}

/// `1 task`, `2 tasks`: a count with its noun, singular or plural.
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Prints rows under a header, each column as wide as its widest cell.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  "));
            }
        }
        outln!("{}", out.trim_end())
    };
    line(header.to_vec())?;
    for row in rows {
        line(row.iter().map(String::as_str).collect())?;
    }
    Ok(())
}

/// A store timestamp as local-free UTC time, to the millisecond.
pub fn time(at: Micros) -> String {
    let time = UNIX_EPOCH + Duration::from_micros(u64::try_from(at).unwrap_or(0));
    humantime::format_rfc3339_millis(time).to_string()
}

/// How long ago a store timestamp was, to the millisecond.
pub fn age(at: Micros) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as i64;
    duration(now - at)
}

/// A span in microseconds, short: fractions of a millisecond under a second.
pub fn duration(micros: i64) -> String {
    let micros = u64::try_from(micros).unwrap_or(0);
    if micros < 1_000_000 {
        return format!("{:.1}ms", micros as f64 / 1000.0);
    }
    humantime::format_duration(Duration::from_millis(micros / 1000)).to_string()
}
