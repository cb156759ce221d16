//! `GET /v1/batches` and `GET /v1/tasks`: lists, newest first, filtered and paged by an
//! opaque cursor. A `state` may be repeated or comma-separated, so the query is read as
//! pairs and checked here: an unknown parameter or a bad value is named in the error.

use axum::Json;
use axum::extract::{Query, State};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::Caller;
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::runtime::Outcome;
use crate::scheduler::rules::WaitingOn;
use crate::store::*;
use crate::units::parse_time;

/// The query of `GET /v1/batches`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct BatchListQuery {
    /// Only batches of this exact name.
    name: Option<String>,
    /// Only batches in these states (`open`: not sealed; `sealed`: sealed, with tasks not
    /// ended; `ended`: every task ended), repeated (`state=open&state=sealed`) or
    /// comma-separated (`state=open,sealed`).
    #[param(value_type = Option<Vec<BatchState>>)]
    state: Option<String>,
    /// Only this batch (a batch handle lists its own batch only).
    batch: Option<BatchId>,
    /// Only batches created at or after this RFC 3339 time.
    #[param(format = DateTime, example = "2026-11-24T09:00:00Z")]
    created_after: Option<String>,
    /// Only batches created before this RFC 3339 time.
    #[param(format = DateTime)]
    created_before: Option<String>,
    /// The most batches in a page; none: 50.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^-?[0-9]{1,18}\.-?[0-9]{1,18}$")]
    cursor: Option<String>,
}

/// The query of `GET /v1/tasks`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct TaskListQuery {
    /// Only this batch's tasks; a batch handle lists its own batch's only, whether it
    /// names it or not.
    batch: Option<BatchId>,
    /// Only tasks in these states (the `TaskState` schema says what each means), repeated
    /// (`state=waiting&state=ready`) or comma-separated (`state=waiting,ready`).
    #[param(value_type = Option<Vec<TaskState>>)]
    state: Option<String>,
    /// Only this group's tasks.
    group: Option<String>,
    /// Only tasks of this module: one of its names, its digest, or the start of its
    /// digest.
    #[param(min_length = 1)]
    module: Option<String>,
    /// Only tasks whose outcome is one of these, repeated or comma-separated.
    #[param(value_type = Option<Vec<Outcome>>)]
    outcome: Option<String>,
    /// Only tasks submitted at or after this RFC 3339 time.
    #[param(format = DateTime)]
    submitted_after: Option<String>,
    /// Only tasks submitted before this RFC 3339 time.
    #[param(format = DateTime)]
    submitted_before: Option<String>,
    /// The most tasks in a page; none: 50.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^-?[0-9]{1,18}\.-?[0-9]{1,18}$")]
    cursor: Option<String>,
}

/// A batch in a list: as `GET /v1/batches/{id}` shows it, with its state.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchRow {
    #[serde(flatten)]
    pub batch: BatchInfo,
    pub state: BatchState,
}

/// A page of batches, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchListPage {
    pub batches: Vec<BatchRow>,
    /// Pass as `cursor` for the next page; none at the end.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// A task in a list, with what holds it back.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskRow {
    #[serde(flatten)]
    pub task: TaskInfo,
    /// Why no node claims it now; none when it is not pending, or is claimable now.
    #[schema(required = true)]
    pub waiting_on: Option<WaitingOn>,
}

/// A page of tasks, newest first, and how many the filter names in each state.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskListPage {
    pub tasks: Vec<TaskRow>,
    /// Pass as `cursor` for the next page; none at the end.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
    /// The filter's tasks by state (with every filter but the cursor).
    pub counts: Progress,
    /// A count stopped at 10,000 tasks of one stored state: there may be more.
    pub counts_capped: bool,
}

/// The query's pairs, taken one name at a time; what is left at the end is unknown.
struct Pairs(Vec<(String, String)>);

impl Pairs {
    /// The value of a parameter given at most once.
    fn one(&mut self, name: &str) -> ApiResult<Option<String>> {
        let mut values = self.all(name);
        match values.len() {
            0 => Ok(None),
            1 => Ok(values.pop()),
            _ => Err(ApiError::bad_request(format!(
                "parameter `{name}` is given more than once"
            ))),
        }
    }

    /// Every value of a parameter, each split at commas.
    fn all(&mut self, name: &str) -> Vec<String> {
        let (mine, rest) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|(n, _)| n == name);
        self.0 = rest;
        mine.into_iter().map(|(_, v)| v).collect()
    }

    fn list<T>(
        &mut self,
        name: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> ApiResult<Vec<T>> {
        let mut parsed = Vec::new();
        for value in self.all(name) {
            parsed.extend(comma_list(name, &value, &parse)?);
        }
        Ok(parsed)
    }

    fn parsed<T: std::str::FromStr>(&mut self, name: &str, what: &str) -> ApiResult<Option<T>> {
        self.one(name)?
            .map(|v| {
                v.parse().map_err(|_| {
                    ApiError::bad_request(format!("parameter `{name}`: `{v}` is not {what}"))
                })
            })
            .transpose()
    }

    fn time(&mut self, name: &str) -> ApiResult<Option<Micros>> {
        self.one(name)?
            .map(|v| {
                parse_time(&v)
                    .map_err(|e| ApiError::bad_request(format!("parameter `{name}`: {e}")))
            })
            .transpose()
    }

    fn limit(&mut self) -> ApiResult<usize> {
        let limit = self.parsed::<usize>("limit", "a whole number")?;
        match limit.unwrap_or(DEFAULT_LIST) {
            limit @ 1..=MAX_LIST => Ok(limit),
            _ => Err(ApiError::bad_request(format!(
                "parameter `limit`: 1 to {MAX_LIST}"
            ))),
        }
    }

    fn cursor(&mut self) -> ApiResult<Option<Position>> {
        self.one("cursor")?
            .map(|v| {
                Position::from_cursor(&v)
                    .map_err(|e| ApiError::bad_request(format!("parameter `cursor`: {e}")))
            })
            .transpose()
    }

    /// Refuses what no filter took.
    fn done(self) -> ApiResult<()> {
        match self.0.first() {
            None => Ok(()),
            Some((name, _)) => Err(ApiError::bad_request(format!("unknown parameter `{name}`"))),
        }
    }
}

/// Batches, newest first. A batch handle sees its own batch only.
#[utoipa::path(
    get,
    path = "/batches",
    operation_id = "list_batches",
    tag = "batches",
    params(BatchListQuery),
    responses(
        (status = 200, description = "A page of batches", body = BatchListPage),
        (status = 400, description = "A state, time, limit or cursor it does not take, or an \
            unknown parameter (`bad-request`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn list_batches(
    State(state): State<AppState>,
    caller: Caller,
    Query(pairs): Query<Vec<(String, String)>>,
) -> ApiResult<Json<BatchListPage>> {
    let mut q = Pairs(pairs);
    let filter = BatchFilter {
        batch: q.parsed("batch", "a batch id")?,
        name: q.one("name")?,
        tenant: None,
        states: q.list("state", BatchState::parse)?,
        created_after: q.time("created_after")?,
        created_before: q.time("created_before")?,
        after: q.cursor()?,
        limit: q.limit()?,
    };
    q.done()?;
    let (batches, next) = state.scheduler.batch_list(&caller.0, filter).await?;
    Ok(Json(BatchListPage {
        batches: batches
            .into_iter()
            .map(|batch| BatchRow {
                state: BatchState::of(&batch),
                batch,
            })
            .collect(),
        next_cursor: next.map(Position::to_cursor),
    }))
}

/// Tasks, newest first, with what holds each pending one back. A batch handle lists its own
/// batch's tasks only.
#[utoipa::path(
    get,
    path = "/tasks",
    operation_id = "list_tasks",
    tag = "tasks",
    params(TaskListQuery),
    responses(
        (status = 200, description = "A page of tasks", body = TaskListPage),
        (status = 400, description = "A state, outcome, time, limit or cursor it does not \
            take, or an unknown parameter (`bad-request`).", body = ErrorBody),
        (status = 404, description = "No module has the `module` named (`not-found`), with \
            the candidates or the nearest name.", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn list_tasks(
    State(state): State<AppState>,
    caller: Caller,
    Query(pairs): Query<Vec<(String, String)>>,
) -> ApiResult<Json<TaskListPage>> {
    let mut q = Pairs(pairs);
    let module = q.one("module")?;
    let filter = TaskFilter {
        batch: q.parsed("batch", "a batch id")?,
        states: q.list("state", TaskState::parse)?,
        group: q.one("group")?,
        modules: Vec::new(),
        outcomes: q.list("outcome", |v| {
            v.parse::<Outcome>().map_err(|e| e.to_string())
        })?,
        submitted_after: q.time("submitted_after")?,
        submitted_before: q.time("submitted_before")?,
        after: q.cursor()?,
        limit: q.limit()?,
        now: now_micros(),
    };
    q.done()?;
    let list = state
        .scheduler
        .task_list(&caller.0, filter, module.as_deref())
        .await?;
    Ok(Json(TaskListPage {
        tasks: list
            .tasks
            .into_iter()
            .map(|(mut task, waiting_on)| {
                task.cut_error(super::attempt_page::LIST_CUT);
                TaskRow { task, waiting_on }
            })
            .collect(),
        next_cursor: list.next.map(Position::to_cursor),
        counts: list.counts,
        counts_capped: list.counts_capped,
    }))
}

/// The comma-separated values of parameter `name` (`trap,lost`; spaces around a value are
/// ignored), each parsed, or the first one refused.
pub(super) fn comma_list<T>(
    name: &str,
    text: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> ApiResult<Vec<T>> {
    text.split(',')
        .map(|v| {
            parse(v.trim_matches(' '))
                .map_err(|e| ApiError::bad_request(format!("parameter `{name}`: {e}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::store::TaskState;

    /// The list filters the document offers are arrays of the states and outcomes the
    /// server reads, each named by its schema: the task states, every one and no other.
    #[test]
    fn the_state_and_outcome_filters_are_arrays_of_their_enums() {
        let doc = serde_json::to_value(super::super::document()).unwrap();
        for (path, name, schema) in [
            ("/v1/tasks", "state", "TaskState"),
            ("/v1/tasks", "outcome", "Outcome"),
            ("/v1/batches", "state", "BatchState"),
        ] {
            let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
            let param = params.iter().find(|p| p["name"] == name).unwrap();
            let items = &param["schema"]["items"];
            assert_eq!(param["schema"]["type"], "array", "{path} {name}");
            assert_eq!(
                items["$ref"],
                format!("#/components/schemas/{schema}"),
                "{path} {name}"
            );
        }
        let states = &doc["components"]["schemas"]["TaskState"]["enum"];
        assert_eq!(*states, serde_json::json!(TaskState::names()));
    }
}
