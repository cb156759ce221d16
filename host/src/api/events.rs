//! `GET /v1/batches/{id}/events`: a server-sent-events stream of a batch's task starts and
//! completions.
//!
//! Each task that has ended after running is sent once as a `task` event (the task as
//! `GET /v1/tasks/{id}` shows it, without its attempts), those that ended before the
//! stream was opened first; a task re-driven and ended again after running is sent again.
//! A `task` event's `id` is its place in the execution log: a client that reconnects with
//! `Last-Event-ID` gets the completions after it, none twice. A `started` event (the task
//! as `GET /v1/running` shows it) says that an attempt runs; it has no `id`, and a stream
//! (re)opened sends one for each attempt of the batch running then. A task that ends in
//! the moment it starts may be sent as ended alone.
//! When every task of the batch has ended, an `end` event carries the batch with its
//! progress (which also counts tasks cancelled before they ran) and the stream closes; a
//! re-drive after that reopens the batch, and a new stream follows it to its next `end`.
//! The stream also closes when the server stops.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;

use axum::Extension;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use utoipa::openapi::schema::{Object, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::AppState;
use super::auth::BatchCaller;
use super::error::{ApiError, ApiResult, ErrorBody};
use super::long_polls::LongPermit;
use crate::scheduler::BatchEvent;
use crate::store::{AttemptFilter, BatchId, BatchInfo, RunningTask, TaskId, TaskInfo};

/// One event of the stream, as the document gives it: its name, and its data, the JSON
/// of the schema that name says (`task`: a task; `started`: a running attempt; `end`: the
/// batch; `error`: a failure that ends the stream), and a `task` event's `id`.
pub struct StreamEvent;

impl StreamEvent {
    fn event<T: ToSchema>(name: &str) -> Object {
        let data = ObjectBuilder::new()
            .schema_type(Type::String)
            .content_media_type("application/json")
            .content_schema(Some(Ref::from_schema_name(T::name())));
        ObjectBuilder::new()
            .property(
                "event",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some([name])),
            )
            .property("data", data)
            .property("id", ObjectBuilder::new().schema_type(Type::String))
            .required("event")
            .required("data")
            .build()
    }
}

impl PartialSchema for StreamEvent {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(Self::event::<TaskInfo>("task"))
            .item(Self::event::<RunningTask>("started"))
            .item(Self::event::<BatchInfo>("end"))
            .item(Self::event::<ErrorBody>("error"))
            .into()
    }
}

impl ToSchema for StreamEvent {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((TaskInfo::name().into(), TaskInfo::schema()));
        <TaskInfo as ToSchema>::schemas(schemas);
        schemas.push((RunningTask::name().into(), RunningTask::schema()));
        <RunningTask as ToSchema>::schemas(schemas);
        schemas.push((BatchInfo::name().into(), BatchInfo::schema()));
        <BatchInfo as ToSchema>::schemas(schemas);
        schemas.push((ErrorBody::name().into(), ErrorBody::schema()));
    }
}

/// Attempts read from the log at a time: each is read whole, so few, to bound the memory a
/// stream takes.
const PAGE: usize = 100;

/// The batch's task starts and completions as server-sent events: a `started` event (a
/// running attempt, as `list_running` gives it) for each attempt seen running, a `task`
/// event (a task as `show_task` gives it, without its log; its `id` the place in the log)
/// for each task that has ended after running, then an `end` event (the batch) once all
/// have ended, and the stream closes. `Last-Event-ID` resumes after a `task` event's `id`.
#[utoipa::path(
    get,
    path = "/batches/{id}/events",
    operation_id = "batch_events",
    tag = "batches",
    params(
        ("id" = i64, Path, description = "The batch's id"),
        ("Last-Event-ID" = Option<String>, Header, nullable = false, description = "The `id` of the last event \
            received: the stream goes on after it", pattern = "^[0-9]{1,18}$"),
    ),
    responses(
        (status = 200, description = "The event stream", content_type = "text/event-stream", body = StreamEvent),
        (status = 400, description = "A `Last-Event-ID` this stream did not send \
            (`bad-request`).", body = ErrorBody),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
        (status = 429, description = "The credential, or batch handles together, hold as many \
            waits and event streams as they may (`too-many-requests`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn events(
    State(state): State<AppState>,
    caller: BatchCaller,
    stopping: Option<Extension<CancellationToken>>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let batch = caller.batch;
    let after = last_event_id(&headers)?;
    let long = state.long_polls.take(&caller.access)?;
    // Subscribe before the first read: nothing that ends after it is missed.
    let events = state.scheduler.subscribe();
    state.scheduler.batch_get(batch).await?;
    let follow = Follow {
        _long: long,
        state,
        batch,
        events,
        stopping: stopping.map(|Extension(t)| t).unwrap_or_default(),
        after,
        sent: HashMap::new(),
        announced: HashMap::new(),
        pending: VecDeque::new(),
        ended: false,
    };
    let stream = futures_util::stream::unfold(follow, |mut follow| async move {
        let event = follow.next().await?;
        Some((Ok::<_, Infallible>(event), follow))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Where a stream is in the batch's execution log.
struct Follow {
    /// Counts the stream among its credential's long requests while it is open.
    _long: LongPermit,
    state: AppState,
    batch: BatchId,
    events: broadcast::Receiver<BatchEvent>,
    stopping: CancellationToken,
    /// The log position read up to.
    after: Option<i64>,
    /// Tasks already sent, with their attempts then: a task with several attempts is sent
    /// once per end.
    sent: HashMap<TaskId, u32>,
    /// Attempts sent as started, by task.
    announced: HashMap<TaskId, u32>,
    pending: VecDeque<Event>,
    ended: bool,
}

impl Follow {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            if self.ended {
                return None;
            }
            match self.read().await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(err) => {
                    tracing::error!("event stream of batch {}: {err:#}", self.batch);
                    self.ended = true;
                    let data = ErrorBody {
                        error: super::error::ErrorCode::Internal,
                        detail: "internal error; see the server log".into(),
                    };
                    return Some(json_event("error", &data));
                }
            }
            // Caught up: wait until something happens to this batch.
            loop {
                let received = tokio::select! {
                    received = self.events.recv() => received,
                    () = self.stopping.cancelled() => return None,
                };
                match received {
                    Ok(event) if !event.concerns(self.batch) => continue,
                    // Lagged behind: read the log again, it has everything.
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        }
    }

    /// Queues the events of what the log has gained; whether there were any.
    async fn read(&mut self) -> crate::scheduler::Result<bool> {
        let scheduler = &self.state.scheduler;
        // Counted before the log is read: when nothing is open, the log has every attempt.
        let open = scheduler.batch_open_count(self.batch).await?;
        let page = scheduler
            .attempt_list(AttemptFilter {
                batch: Some(self.batch),
                after: self.after,
                limit: Some(PAGE),
                ..Default::default()
            })
            .await?;
        if let Some((last, _)) = page.last() {
            self.after = Some(*last);
            for (position, attempt) in page {
                if self
                    .sent
                    .get(&attempt.task)
                    .is_some_and(|&sent| sent >= attempt.attempt)
                {
                    continue;
                }
                let mut task = scheduler.task_get(attempt.task).await?;
                task.cut_error(super::attempt_page::VIEW_CUT);
                if task.state.is_ended() {
                    self.sent.insert(task.id, task.attempts);
                    let event = json_event("task", &task).id(position.to_string());
                    self.pending.push_back(event);
                }
            }
            return Ok(true);
        }
        if open == 0 {
            let batch = scheduler.batch_get(self.batch).await?;
            self.pending.push_back(json_event("end", &batch));
            self.ended = true;
            return Ok(true);
        }
        self.read_starts().await
    }

    /// Queues a `started` event for each attempt of the batch running now that was not
    /// sent yet; whether there were any.
    async fn read_starts(&mut self) -> crate::scheduler::Result<bool> {
        let running = self.state.scheduler.running_now().await?;
        let mut any = false;
        for run in running.into_iter().filter(|r| r.batch == self.batch) {
            let known = |sent: &HashMap<TaskId, u32>| sent.get(&run.task) >= Some(&run.attempt);
            if known(&self.sent) || known(&self.announced) {
                continue;
            }
            self.announced.insert(run.task, run.attempt);
            self.pending.push_back(json_event("started", &run));
            any = true;
        }
        Ok(any)
    }
}

/// The log position a reconnecting client gives in `Last-Event-ID`.
fn last_event_id(headers: &HeaderMap) -> ApiResult<Option<i64>> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let refused = || {
        ApiError::bad_request(
            "header `Last-Event-ID`: give the `id` of an event this stream sent (digits)",
        )
    };
    // As the document says: 1 to 18 digits, nothing else (no sign, no spaces).
    let text = value.to_str().map_err(|_| refused())?;
    if !(1..=18).contains(&text.len()) || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refused());
    }
    text.parse().map(Some).map_err(|_| refused())
}

fn json_event(name: &str, value: &impl serde::Serialize) -> Event {
    let data = serde_json::to_string(value).expect("JSON serializes");
    Event::default().event(name).data(data)
}
