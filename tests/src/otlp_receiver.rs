//! A tiny OTLP/HTTP receiver on 127.0.0.1, for the trace tests and the tracing benchmark:
//! it answers `POST /v1/traces`, decodes each protobuf body and keeps the spans (or only
//! counts them), as a collector would receive them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// A span as received, with the `service.*` attributes of its resource.
#[derive(Debug, Clone)]
pub struct Received {
    pub span: Span,
    pub service: String,
    pub instance: String,
}

impl Received {
    /// An attribute of the span, as text (numbers written out).
    pub fn attribute(&self, key: &str) -> Option<String> {
        attribute(&self.span.attributes, key)
    }

    pub fn trace_id(&self) -> String {
        hex::encode(&self.span.trace_id)
    }

    pub fn span_id(&self) -> String {
        hex::encode(&self.span.span_id)
    }

    pub fn parent_span_id(&self) -> String {
        hex::encode(&self.span.parent_span_id)
    }
}

#[derive(Default)]
struct Inbox {
    spans: Vec<Received>,
    count: usize,
    requests: usize,
}

pub struct OtlpReceiver {
    port: u16,
    inbox: Arc<Mutex<Inbox>>,
}

impl OtlpReceiver {
    /// Starts receiving on a free port, keeping every span.
    pub fn start() -> OtlpReceiver {
        OtlpReceiver::start_keeping(true)
    }

    /// Starts receiving, keeping the spans or only counting them.
    pub fn start_keeping(keep: bool) -> OtlpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the OTLP receiver");
        let port = listener.local_addr().unwrap().port();
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let shared = inbox.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let inbox = shared.clone();
                std::thread::spawn(move || serve(stream, &inbox, keep));
            }
        });
        OtlpReceiver { port, inbox }
    }

    /// Its base URL, as `--otlp-endpoint` takes it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span kept so far.
    pub fn spans(&self) -> Vec<Received> {
        self.inbox.lock().unwrap().spans.clone()
    }

    /// Spans received so far, and the requests that brought them.
    pub fn counts(&self) -> (usize, usize) {
        let inbox = self.inbox.lock().unwrap();
        (inbox.count, inbox.requests)
    }

    /// Waits until `done` holds of the spans kept, for at most `within`; returns them.
    pub fn wait_for(&self, within: Duration, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let spans = self.spans();
            if done(&spans) || Instant::now() > deadline {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(stream: TcpStream, inbox: &Mutex<Inbox>, keep: bool) {
    let mut reader = BufReader::new(stream.try_clone().expect("cloning a socket"));
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header == "\r\n" {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let status = if line.starts_with("POST /v1/traces ") {
            match ExportTraceServiceRequest::decode(&body[..]) {
                Ok(request) => {
                    take(request, inbox, keep);
                    "200 OK"
                }
                Err(_) => "400 Bad Request",
            }
        } else {
            "404 Not Found"
        };
        // An empty ExportTraceServiceResponse: nothing rejected.
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n"
        );
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
    }
}

fn take(request: ExportTraceServiceRequest, inbox: &Mutex<Inbox>, keep: bool) {
    let mut inbox = inbox.lock().unwrap();
    inbox.requests += 1;
    for resource_spans in request.resource_spans {
        let resource = resource_spans.resource.unwrap_or_default();
        let service = attribute(&resource.attributes, "service.name").unwrap_or_default();
        let instance = attribute(&resource.attributes, "service.instance.id").unwrap_or_default();
        for scope in resource_spans.scope_spans {
            inbox.count += scope.spans.len();
            if keep {
                for span in scope.spans {
                    inbox.spans.push(Received {
                        span,
                        service: service.clone(),
                        instance: instance.clone(),
                    });
                }
            }
        }
    }
}

fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    text(value)
}

fn text(value: &AnyValue) -> Option<String> {
    Some(match value.value.as_ref()? {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::IntValue(n) => n.to_string(),
        any_value::Value::DoubleValue(x) => x.to_string(),
        any_value::Value::BoolValue(b) => b.to_string(),
        other => format!("{other:?}"),
    })
}
