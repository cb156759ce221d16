//! `GET /v1/batches/{id}/events`: a server-sent-events stream of a batch's task
//! completions.
//!
//! Each task that has ended after running is sent once as a `task` event (the task as
//! `GET /v1/tasks/{id}` shows it, without its attempts), those that ended before the
//! stream was opened first; a task re-driven and ended again after running is sent again.
//! When every task of the batch has ended, an `end` event carries the batch with its
//! progress (which also counts tasks cancelled before they ran) and the stream closes; a
//! re-drive after that reopens the batch, and a new stream follows it to its next `end`.
//! The stream also closes when the server stops.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;

use axum::Extension;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use utoipa::openapi::schema::{Object, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::AppState;
use super::auth::BatchCaller;
use super::error::{ApiResult, ErrorBody};
use crate::scheduler::BatchEvent;
use crate::store::{AttemptFilter, BatchId, BatchInfo, TaskId, TaskInfo};

/// One event of the stream, as the document gives it: its name, and its data, the JSON
/// of the schema that name says (`task`: a task; `end`: the batch; `error`: a failure
/// that ends the stream).
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
            .required("event")
            .required("data")
            .build()
    }
}

impl PartialSchema for StreamEvent {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(Self::event::<TaskInfo>("task"))
            .item(Self::event::<BatchInfo>("end"))
            .item(Self::event::<ErrorBody>("error"))
            .into()
    }
}

impl ToSchema for StreamEvent {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((TaskInfo::name().into(), TaskInfo::schema()));
        <TaskInfo as ToSchema>::schemas(schemas);
        schemas.push((BatchInfo::name().into(), BatchInfo::schema()));
        <BatchInfo as ToSchema>::schemas(schemas);
        schemas.push((ErrorBody::name().into(), ErrorBody::schema()));
    }
}

/// Attempts read from the log at a time.
const PAGE: usize = 1000;

/// The batch's task completions as server-sent events: a `task` event (a task as
/// `show_task` gives it, without its log) for each task that has ended after running,
/// then an `end` event (the batch) once all have ended, and the stream closes.
#[utoipa::path(
    get,
    path = "/batches/{id}/events",
    operation_id = "batch_events",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 200, description = "The event stream", content_type = "text/event-stream", body = StreamEvent),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
pub async fn events(
    State(state): State<AppState>,
    caller: BatchCaller,
    stopping: Option<Extension<CancellationToken>>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let batch = caller.batch;
    // Subscribe before the first read: nothing that ends after it is missed.
    let events = state.scheduler.subscribe();
    state.scheduler.batch_get(batch).await?;
    let follow = Follow {
        state,
        batch,
        events,
        stopping: stopping.map(|Extension(t)| t).unwrap_or_default(),
        after: None,
        sent: HashMap::new(),
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
    state: AppState,
    batch: BatchId,
    events: broadcast::Receiver<BatchEvent>,
    stopping: CancellationToken,
    /// The log position read up to.
    after: Option<i64>,
    /// Tasks already sent, with their attempts then: a task with several attempts is sent
    /// once per end.
    sent: HashMap<TaskId, u32>,
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
                        error: "internal".into(),
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
        if let Some((position, _)) = page.last() {
            self.after = Some(*position);
            for (_, attempt) in page {
                if self
                    .sent
                    .get(&attempt.task)
                    .is_some_and(|&sent| sent >= attempt.attempt)
                {
                    continue;
                }
                let task = scheduler.task_get(attempt.task).await?;
                if task.state.is_ended() {
                    self.sent.insert(task.id, task.attempts);
                    self.pending.push_back(json_event("task", &task));
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
        Ok(false)
    }
}

fn json_event(name: &str, value: &impl serde::Serialize) -> Event {
    let data = serde_json::to_string(value).expect("JSON serializes");
    Event::default().event(name).data(data)
}
