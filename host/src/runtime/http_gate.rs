//! The gate of a task's outbound HTTP (`wasi:http/outgoing-handler`): which requests go
//! out, and the ledger of what each attempt sent and received.
//!
//! A request goes out only when its origin is in both the operator's allow-list and its
//! batch's grant ([`super::origin`]). A refused request fails in the guest with
//! `HTTP-request-denied`, and the attempt's log says why. wasi:http never follows a
//! redirect itself: a guest that follows one makes a new request, which passes this gate
//! again, so a `Location` outside the lists is refused like any other origin.
//!
//! The server's own listen addresses are reached only through entries of both lists that
//! name their very port: `http://localhost:*` does not open qhost's own API to its tasks.
//!
//! The attempt's HTTP limits are kept here: past one of them the ledger trips, which
//! ends the attempt with outcome `http-limit` (see [`super::Runtime::run_in`]).
//!
//! With traces on, each request carries the attempt's W3C `traceparent`, unless the guest
//! set one itself, so that the services it calls join the attempt's trace.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::TaskLimits;
use super::http_send;
use super::origin::{AllowedOrigin, Port, RequestOrigin};
use super::outcome::{HttpCall, Outcome};

/// Whom a request is refused by, and how the guest sees it.
type Refusal = (Error, String);

/// The send future [`WasiHttpHooks::send_request`] returns.
type Sending = Box<dyn Future<Output = http_send::Answer> + Send>;

/// One attempt's gate: the lists it checks, its limits and its ledger.
pub(crate) struct HttpGate {
    operator: Arc<[AllowedOrigin]>,
    grant: Arc<[AllowedOrigin]>,
    own_addresses: Arc<[SocketAddr]>,
    limits: TaskLimits,
    ledger: Arc<HttpLedger>,
    /// The context of the attempt's span, when traces are on: its `traceparent` is made
    /// at each request, not at every attempt, since most send none.
    trace: Option<opentelemetry::trace::SpanContext>,
}

impl HttpGate {
    pub(crate) fn new(
        operator: Arc<[AllowedOrigin]>,
        grant: Arc<[AllowedOrigin]>,
        own_addresses: Arc<[SocketAddr]>,
        limits: TaskLimits,
        budget: Option<u64>,
        started: Instant,
        trace: Option<opentelemetry::trace::SpanContext>,
    ) -> Self {
        HttpGate {
            operator,
            grant,
            own_addresses,
            limits,
            trace,
            ledger: Arc::new(HttpLedger {
                started,
                budget,
                state: Mutex::new(LedgerState::default()),
                tripped: CancellationToken::new(),
            }),
        }
    }

    pub(crate) fn ledger(&self) -> Arc<HttpLedger> {
        self.ledger.clone()
    }

    /// Whether a request to `origin` may go out; if so, the server's own addresses it may
    /// not connect to (none when both lists name its port).
    fn admit(
        &self,
        origin: Option<&RequestOrigin>,
    ) -> Result<(RequestOrigin, Arc<[SocketAddr]>), Refusal> {
        let requests = self.ledger.count_request();
        if requests > self.limits.http_requests {
            let reason = format!(
                "more than {} outbound HTTP requests, its limit `http_requests`",
                self.limits.http_requests
            );
            self.ledger.trip(format!("made {reason}"));
            return Err((Error::HttpRequestDenied, reason));
        }
        let Some(origin) = origin else {
            return Err((
                Error::HttpRequestUriInvalid,
                "the request names no http or https host".into(),
            ));
        };
        let forbidden = check_lists(&self.operator, &self.grant, &self.own_addresses, origin)
            .map_err(|reason| (Error::HttpRequestDenied, reason))?;
        Ok((origin.clone(), forbidden))
    }
}

/// Whether a request to `origin` may go out under the operator's list and a grant (a
/// batch's `allow_http`, or a webhook's own origin); if so, the server's own addresses it
/// may not connect to (none when both lists name its port). The refusal says why.
pub(crate) fn check_lists(
    operator: &[AllowedOrigin],
    grant: &[AllowedOrigin],
    own_addresses: &Arc<[SocketAddr]>,
    origin: &RequestOrigin,
) -> Result<Arc<[SocketAddr]>, String> {
    if operator.is_empty() {
        return Err("refused: this server allows no outbound HTTP (no --allow-http)".into());
    }
    if grant.is_empty() {
        return Err(
            "refused: its batch was not granted outbound HTTP (`allow_http` when the \
             batch is opened)"
                .into(),
        );
    }
    if !grant.iter().any(|allowed| allowed.matches(origin)) {
        return Err(format!(
            "refused: {origin} is not in its batch's `allow_http`"
        ));
    }
    if !operator.iter().any(|allowed| allowed.matches(origin)) {
        return Err(format!(
            "refused: {origin} is not in this server's --allow-http"
        ));
    }
    let exact = |list: &[AllowedOrigin]| {
        list.iter()
            .any(|allowed| allowed.matches(origin) && allowed.port == Port::Is(origin.port))
    };
    Ok(if exact(operator) && exact(grant) {
        Arc::from([])
    } else {
        own_addresses.clone()
    })
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Sending {
        let origin = RequestOrigin::of(request.uri());
        let shown = origin
            .as_ref()
            .map_or_else(|| "(no host)".to_owned(), ToString::to_string);
        let call = self.ledger.open(request.method().to_string(), shown);
        match self.admit(origin.as_ref()) {
            Err((error, reason)) => {
                self.ledger.refuse(call, reason);
                Box::new(http_send::refused(error))
            }
            Ok((origin, forbidden)) => {
                let header = crate::telemetry::context::TRACEPARENT;
                if let Some(span) = &self.trace
                    && !request.headers().contains_key(header)
                    && let Some(trace) = crate::telemetry::context::of(span)
                        .and_then(|trace| http::HeaderValue::from_str(&trace).ok())
                {
                    request.headers_mut().insert(header, trace);
                }
                Box::new(http_send::send(
                    request,
                    origin,
                    forbidden,
                    self.limits,
                    self.ledger.clone(),
                    call,
                ))
            }
        }
    }
}

/// What one attempt's requests did, shared by the gate and the requests in flight.
pub(crate) struct HttpLedger {
    started: Instant,
    /// The body bytes, sent and received together, its tenant's budget had left.
    budget: Option<u64>,
    state: Mutex<LedgerState>,
    /// Cancelled when a limit is passed: the attempt ends.
    pub(crate) tripped: CancellationToken,
}

#[derive(Default)]
struct LedgerState {
    calls: Vec<HttpCall>,
    /// When each call started, while it has not ended.
    open: Vec<Option<Instant>>,
    requests: u32,
    sent: u64,
    received: u64,
    trip: Option<(Outcome, String)>,
}

/// Which way body bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Sent,
    Received,
}

impl HttpLedger {
    fn lock(&self) -> std::sync::MutexGuard<'_, LedgerState> {
        self.state.lock().expect("http ledger lock")
    }

    fn count_request(&self) -> u32 {
        let mut state = self.lock();
        state.requests = state.requests.saturating_add(1);
        state.requests
    }

    /// Records a request starting; returns its index.
    fn open(&self, method: String, origin: String) -> usize {
        let now = Instant::now();
        let mut state = self.lock();
        state.calls.push(HttpCall {
            at_micros: micros(now - self.started),
            method,
            origin,
            status: None,
            sent: 0,
            received: 0,
            duration: Duration::ZERO,
            error: None,
            refused: false,
        });
        state.open.push(Some(now));
        state.calls.len() - 1
    }

    /// Records a request's end, with why it failed if it did. Only its first end counts.
    pub(crate) fn close(&self, call: usize, error: Option<String>) {
        let mut state = self.lock();
        if let Some(started) = state.open[call].take() {
            let entry = &mut state.calls[call];
            entry.duration = started.elapsed();
            entry.error = error;
        }
    }

    /// Records that a request was refused before it went out.
    pub(crate) fn refuse(&self, call: usize, reason: String) {
        self.lock().calls[call].refused = true;
        self.close(call, Some(reason));
    }

    pub(crate) fn set_status(&self, call: usize, status: u16) {
        self.lock().calls[call].status = Some(status);
    }

    /// Counts body bytes of a request; past the attempt's `limit` for that direction,
    /// trips the ledger and answers the reason.
    pub(crate) fn add(
        &self,
        call: usize,
        direction: Direction,
        bytes: u64,
        limit: u64,
    ) -> Result<(), String> {
        let mut state = self.lock();
        let (total, name, verb) = match direction {
            Direction::Sent => {
                state.calls[call].sent += bytes;
                (&mut state.sent, "http_sent", "sent")
            }
            Direction::Received => {
                state.calls[call].received += bytes;
                (&mut state.received, "http_received", "received")
            }
        };
        *total += bytes;
        let total = *total;
        let moved = state.sent + state.received;
        drop(state);
        if total > limit {
            let reason = format!(
                "{verb} more than {} of HTTP bodies, its limit `{name}`",
                bytesize::ByteSize(limit)
            );
            self.trip(reason.clone());
            return Err(reason);
        }
        match self.budget {
            Some(budget) if moved > budget => {
                let reason = super::budget::Used::Http(budget).message();
                self.trip_as(Outcome::Budget, reason.clone());
                Err(reason)
            }
            _ => Ok(()),
        }
    }

    /// Ends the attempt with outcome `http-limit` for `reason`; the first reason stays.
    pub(crate) fn trip(&self, reason: String) {
        self.trip_as(Outcome::HttpLimit, reason);
    }

    /// Ends the attempt with `outcome` for `reason`; the first stays.
    pub(crate) fn trip_as(&self, outcome: Outcome, reason: String) {
        self.lock().trip.get_or_insert((outcome, reason));
        self.tripped.cancel();
    }

    /// How and why the attempt was ended, if a limit ended it.
    pub(crate) fn trip_reason(&self) -> Option<(Outcome, String)> {
        self.lock().trip.clone()
    }

    /// The body bytes sent and received so far.
    pub(crate) fn moved(&self) -> u64 {
        let state = self.lock();
        state.sent + state.received
    }

    /// The calls made, those still open timed to now.
    pub(crate) fn take(&self) -> Vec<HttpCall> {
        let mut state = self.lock();
        let open = std::mem::take(&mut state.open);
        let mut calls = std::mem::take(&mut state.calls);
        for (call, started) in calls.iter_mut().zip(open) {
            if let Some(started) = started {
                call.duration = started.elapsed();
                call.error
                    .get_or_insert_with(|| "not finished when the attempt ended".into());
            }
        }
        calls
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
