//! Failed and cancelled tasks run again, and bulk actions on the tasks a filter names:
//! `POST /v1/tasks/{id}/retry`, `POST /v1/batches/{id}/retry?outcome=`, and
//! `POST /v1/tasks/retry`, `POST /v1/tasks/cancel`, `PUT /v1/tasks/priority` with the
//! filter `task`, `batch`, `group`, `outcome` in the query. Each answers with a count of
//! what changed.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::{BatchCaller, Caller, TaskCaller};
use super::batches::{SetPriority, json_body};
use super::error::{ApiResult, ErrorBody};
use crate::runtime::Outcome;
use crate::store::{BatchId, TaskId, TaskInfo, TaskSelect, TaskState};

/// The tasks a bulk action reaches; every filter given applies.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SelectQuery {
    /// This task only.
    pub task: Option<TaskId>,
    /// The tasks of this batch (a batch handle's own when it names none; it may name no
    /// other).
    pub batch: Option<BatchId>,
    /// The tasks of this group.
    pub group: Option<String>,
    /// Outcomes, comma-separated (`trap,lost`): of an ended task, how it ended; of one that
    /// will run again, how its last attempt ended.
    #[param(value_type = Option<Vec<Outcome>>, style = Form, explode = false, min_items = 1)]
    pub outcome: Option<String>,
    /// States, comma-separated (`failed`, `waiting,ready`): the tasks shown in one of them
    /// when the action runs.
    #[param(value_type = Option<Vec<TaskState>>, style = Form, explode = false, min_items = 1)]
    pub state: Option<String>,
    /// The tasks of this module: one of its names, its digest, or the start of its digest.
    #[param(min_length = 1)]
    pub module: Option<String>,
    /// Task ids, comma-separated (`4,7,9`): a selection, within which the other filters
    /// apply.
    #[param(value_type = Option<Vec<TaskId>>, style = Form, explode = false, min_items = 1)]
    pub tasks: Option<String>,
}

/// How many tasks a re-drive runs again.
#[derive(Debug, Serialize, ToSchema)]
pub struct Retried {
    pub retried: u64,
}

/// What a bulk cancel did: tasks cancelled before they started, and running or reserved
/// tasks whose nodes were asked to stop them.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cancelled {
    pub cancelled: u64,
    pub stopping: u64,
}

/// How many tasks a bulk priority change reached (those that had not started).
#[derive(Debug, Serialize, ToSchema)]
pub struct Changed {
    pub changed: u64,
}

/// The failure of a filter with an outcome the server does not know.
const BAD_OUTCOME: &str = "An outcome or state it does not know, or a malformed filter \
    (`bad-request`).";

/// The failure of a filter naming a module there is none of.
const NO_MODULE: &str = "No module has the `module` named (`not-found`).";

impl SelectQuery {
    async fn select(self, state: &AppState) -> ApiResult<TaskSelect> {
        let modules = match &self.module {
            Some(reference) => state
                .scheduler
                .modules_named(reference)
                .await?
                .iter()
                .map(|d| d.to_hex())
                .collect(),
            None => Vec::new(),
        };
        let states = match self.state.as_deref() {
            Some(text) => super::lists::comma_list("state", text, TaskState::parse)?,
            None => Vec::new(),
        };
        let tasks = match self.tasks.as_deref() {
            Some(text) => super::lists::comma_list("tasks", text, |v| {
                v.parse::<TaskId>()
                    .map_err(|_| format!("`{v}` is not a task id"))
            })?,
            None => Vec::new(),
        };
        Ok(TaskSelect {
            task: self.task,
            batch: self.batch,
            group: self.group,
            outcomes: outcomes(self.outcome.as_deref())?,
            states,
            modules,
            tasks,
        })
    }
}

/// `trap,lost` as outcomes.
fn outcomes(text: Option<&str>) -> ApiResult<Vec<Outcome>> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    super::lists::comma_list("outcome", text, |v| {
        v.parse::<Outcome>().map_err(|e| e.to_string())
    })
}

/// Run a failed or cancelled task again, with fresh attempts.
#[utoipa::path(
    post,
    path = "/tasks/{id}/retry",
    operation_id = "retry_task",
    tag = "tasks",
    params(("id" = i64, Path, description = "The task's id")),
    responses(
        (status = 200, description = "The task, pending again", body = TaskInfo),
        (status = 404, description = "No task has this id (`not-found`).", body = ErrorBody),
        (status = 409, description = "The task has not failed and was not cancelled \
            (`conflict`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn retry_task(
    State(state): State<AppState>,
    caller: TaskCaller,
) -> ApiResult<Json<TaskInfo>> {
    let task = state
        .scheduler
        .task_retry(&caller.access, caller.task.id)
        .await?;
    Ok(Json(task))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RetryQuery {
    /// Outcomes, comma-separated (`trap,lost`, or `cancelled`): run again the tasks that
    /// ended so. Without it, every failed task.
    #[param(value_type = Option<Vec<Outcome>>, style = Form, explode = false, min_items = 1)]
    pub outcome: Option<String>,
}

/// Run a batch's failed tasks again, or those that ended with one of the outcomes named
/// (`cancelled` included).
#[utoipa::path(
    post,
    path = "/batches/{id}/retry",
    operation_id = "retry_batch",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id"), RetryQuery),
    responses(
        (status = 200, description = "How many run again", body = Retried),
        (status = 400, description = BAD_OUTCOME, body = ErrorBody),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn retry_batch(
    State(state): State<AppState>,
    caller: BatchCaller,
    Query(query): Query<RetryQuery>,
) -> ApiResult<Json<Retried>> {
    let select = TaskSelect {
        outcomes: outcomes(query.outcome.as_deref())?,
        ..TaskSelect::batch(caller.batch)
    };
    let retried = state.scheduler.tasks_retry(&caller.access, select).await?;
    Ok(Json(Retried { retried }))
}

/// Run the failed tasks a filter names again (with `outcome` or `state`, those that ended
/// so, `cancelled` included; a `task` named runs again whether it failed or was
/// cancelled).
#[utoipa::path(
    post,
    path = "/tasks/retry",
    operation_id = "retry_tasks",
    tag = "tasks",
    params(SelectQuery),
    responses(
        (status = 200, description = "How many run again", body = Retried),
        (status = 400, description = BAD_OUTCOME, body = ErrorBody),
        (status = 404, description = NO_MODULE, body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn retry_where(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SelectQuery>,
) -> ApiResult<Json<Retried>> {
    let retried = state
        .scheduler
        .tasks_retry(&caller.0, query.select(&state).await?)
        .await?;
    Ok(Json(Retried { retried }))
}

/// Cancel the pending tasks a filter names, and stop its running ones.
#[utoipa::path(
    post,
    path = "/tasks/cancel",
    operation_id = "cancel_tasks",
    tag = "tasks",
    params(SelectQuery),
    responses(
        (status = 200, description = "What changed", body = Cancelled),
        (status = 400, description = BAD_OUTCOME, body = ErrorBody),
        (status = 404, description = NO_MODULE, body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn cancel_where(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SelectQuery>,
) -> ApiResult<Json<Cancelled>> {
    let result = state
        .scheduler
        .tasks_cancel(&caller.0, query.select(&state).await?)
        .await?;
    Ok(Json(Cancelled {
        cancelled: result.cancelled,
        stopping: result.stopping,
    }))
}

/// Set the priority of the tasks a filter names that have not started.
#[utoipa::path(
    put,
    path = "/tasks/priority",
    operation_id = "set_tasks_priority",
    tag = "tasks",
    params(SelectQuery),
    request_body = SetPriority,
    responses(
        (status = 200, description = "How many changed", body = Changed),
        (status = 400, description = BAD_OUTCOME, body = ErrorBody),
        (status = 404, description = NO_MODULE, body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn priority_where(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SelectQuery>,
    body: Result<Json<SetPriority>, JsonRejection>,
) -> ApiResult<Json<Changed>> {
    let body = json_body(body)?;
    let changed = state
        .scheduler
        .tasks_set_priority(&caller.0, query.select(&state).await?, body.priority)
        .await?;
    Ok(Json(Changed { changed }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bulk actions document `outcome` as a comma-separated list of the outcome
    /// schema, which names exactly the outcomes the parser reads.
    #[test]
    fn the_outcome_filter_names_every_outcome() {
        let document = serde_json::to_value(crate::api::document()).unwrap();
        for path in [
            "/v1/tasks/retry",
            "/v1/batches/{id}/retry",
            "/v1/tasks/cancel",
        ] {
            let parameters = document["paths"][path]["post"]["parameters"]
                .as_array()
                .unwrap();
            let outcome = parameters.iter().find(|p| p["name"] == "outcome").unwrap();
            assert_eq!(
                (&outcome["style"], &outcome["explode"]),
                (&serde_json::json!("form"), &serde_json::json!(false)),
                "{path}: {outcome}"
            );
            // An empty list (`outcome=`) filters nothing: the document does not allow it.
            assert_eq!(outcome["schema"]["minItems"], 1, "{path}: {outcome}");
            let items = &outcome["schema"]["items"];
            let reference = items["$ref"]
                .as_str()
                .or(items["allOf"][0]["$ref"].as_str());
            assert_eq!(
                reference,
                Some("#/components/schemas/Outcome"),
                "{path}: {outcome}"
            );
        }
        let listed = &document["components"]["schemas"]["Outcome"]["enum"];
        let mut listed: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap())
            .collect();
        let mut known: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        listed.sort();
        known.sort();
        assert_eq!(listed, known, "the outcome schema");
        for name in known {
            assert!(
                outcomes(Some(&format!(" {name} ,{name}"))).is_ok(),
                "{name}"
            );
        }
    }
}
