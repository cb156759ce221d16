//! `GET /v1/backup`: a consistent copy of a running node's SQLite store, streamed to the
//! admin. The node holds its database file exclusively, so only it can copy it: the
//! store writes a snapshot beside the database ([`crate::store::Store::backup`]), which
//! is unlinked at once and streamed from its open handle, so nothing is left behind
//! however the download ends. One backup at a time: each costs a full copy on disk.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use tokio::io::AsyncReadExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::AppState;
use super::auth::Admin;
use super::doc::Binary;
use super::error::{ApiError, ApiResult, ErrorBody};

/// The one permit to make a backup, held until its stream ends.
#[derive(Clone)]
pub struct Backups(Arc<Semaphore>);

impl Default for Backups {
    fn default() -> Self {
        Backups(Arc::new(Semaphore::new(1)))
    }
}

/// Bytes read from the copy per piece of the body.
const CHUNK: usize = 256 * 1024;

/// A consistent copy of the store, made while the node runs: a SQLite database file,
/// which `qhost serve --data-dir` opens as its `qhost.db`. Writes wait while the copy is
/// made. On PostgreSQL, `409 conflict`: use `pg_dump`.
#[utoipa::path(
    get,
    path = "/backup",
    operation_id = "backup",
    tag = "observe",
    responses(
        (status = 200, description = "The copy, a SQLite database file", content_type = "application/vnd.sqlite3", body = inline(Binary)),
        (status = 409, description = "The store is PostgreSQL, which `pg_dump` backs up (`conflict`).", body = ErrorBody),
        (status = 429, description = "Another backup is being made or read (`too-many-requests`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn backup(State(state): State<AppState>, _: Admin) -> ApiResult<Response> {
    let permit = state.backups.0.clone().try_acquire_owned().map_err(|_| {
        ApiError::too_many(
            "a backup is being made or downloaded; try again once it has ended (one at a time)",
        )
    })?;
    let file = state.scheduler.backup().await?;
    let length = file
        .metadata()
        .map_err(|e| internal(anyhow::anyhow!("reading the backup's size: {e}")))?
        .len();
    let stream =
        futures_util::stream::unfold((tokio::fs::File::from_std(file), Some(permit)), read_piece);
    Ok((
        [
            (CONTENT_TYPE, "application/vnd.sqlite3".to_owned()),
            (CONTENT_LENGTH, length.to_string()),
            (
                CONTENT_DISPOSITION,
                "attachment; filename=\"qhost-backup.db\"".to_owned(),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

type Piece = Result<Bytes, std::io::Error>;

/// The next piece of the copy; the permit goes with the file, when the stream ends or is
/// dropped (a client that went away).
async fn read_piece(
    (mut file, permit): (tokio::fs::File, Option<OwnedSemaphorePermit>),
) -> Option<(Piece, (tokio::fs::File, Option<OwnedSemaphorePermit>))> {
    permit.as_ref()?;
    let mut piece = Vec::with_capacity(CHUNK);
    match (&mut file).take(CHUNK as u64).read_to_end(&mut piece).await {
        Ok(0) => None,
        Ok(_) => Some((Ok(Bytes::from(piece)), (file, permit))),
        // Said once; the stream then ends, and the client sees a short body.
        Err(err) => Some((Err(err), (file, None))),
    }
}

fn internal(err: anyhow::Error) -> ApiError {
    ApiError::from(crate::scheduler::Error::Internal(err))
}
