//! The trace exporter: OTLP over HTTP with protobuf bodies, sent by a small blocking
//! client (ureq, which qhost's command line uses already) from the batch processor's own
//! thread, so that neither gRPC nor a second HTTP stack is built in.
//!
//! Spans are queued and sent in batches. The queue is larger than the SDK's default
//! (2,048): a node ends tens of thousands of attempts a second, and a span the full
//! queue cannot take is dropped, not waited for. `OTEL_BSP_MAX_QUEUE_SIZE` and
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` still set them.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};

/// Spans queued for export at most, unless `OTEL_BSP_MAX_QUEUE_SIZE` says otherwise.
const QUEUE: usize = 65_536;
/// Spans sent in one request at most, unless `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` says
/// otherwise.
const BATCH: usize = 4_096;
/// How long one export may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The tracer provider: spans of `node` sent to `endpoint` (a base URL, `/v1/traces`
/// added), or where the standard variables say.
pub fn provider(endpoint: Option<&str>, node: &str) -> anyhow::Result<SdkTracerProvider> {
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Client::new())
        .with_timeout(TIMEOUT);
    if let Some(endpoint) = endpoint.map(str::trim).filter(|e| !e.is_empty()) {
        anyhow::ensure!(
            endpoint.starts_with("http://") || endpoint.starts_with("https://"),
            "`{endpoint}` is not an http:// or https:// URL (give the collector's base URL, \
             such as http://localhost:4318)"
        );
        exporter = exporter.with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')));
    }
    let exporter = exporter.build()?;
    let mut batch = BatchConfigBuilder::default();
    if std::env::var_os("OTEL_BSP_MAX_QUEUE_SIZE").is_none() {
        batch = batch.with_max_queue_size(QUEUE);
    }
    if std::env::var_os("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").is_none() {
        batch = batch.with_max_export_batch_size(BATCH);
    }
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch.build())
        .build();
    let mut resource = Resource::builder().with_attributes([
        KeyValue::new("service.instance.id", node.to_owned()),
        KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
    ]);
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("qhost");
    }
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource.build())
        .build())
}

/// Sends the exporter's requests. The batch processor runs on a thread of its own and
/// waits for each export, so a blocking client is what it needs.
#[derive(Debug)]
struct Client(ureq::Agent);

impl Client {
    fn new() -> Self {
        let tls = ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::PlatformVerifier)
            .build();
        Client(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(TIMEOUT))
                .tls_config(tls)
                .build()
                .into(),
        )
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        // Sent from the encoded body itself: a batch is a megabyte or more.
        let (parts, body) = request.into_parts();
        let mut response = self.0.run(Request::from_parts(parts, &body[..]))?;
        let status = response.status();
        // The answer's body says why a batch was refused; it is short.
        let body = response
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_vec()?;
        Ok(Response::builder().status(status).body(Bytes::from(body))?)
    }
}
