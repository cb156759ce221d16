//! Upload bodies (modules, openings, submissions): how many large ones are read at once.
//!
//! An upload route reads its body only after the caller was let in (see [`super::auth`]).
//! A body over [`LARGE_BODY`] then needs a permit: one announced that large waits for one
//! before a byte is read, a chunked one once it has passed that size. Batch handles share
//! [`LARGE_BODIES_AT_ONCE`] permits and each holds at most one at a time (a second upload
//! of the same handle waits for the first); the admin has a permit of its own besides.
//! The permit is held until the handler is done with what it parsed. How fast a body must
//! come is [`super::slow`]'s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::header::CONTENT_LENGTH;
use bytes::BytesMut;
use http_body_util::BodyExt as _;
use serde::de::DeserializeOwned;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::AppState;
use super::auth::{Caller, Holder};
use super::error::{ApiError, ApiResult};
use crate::scheduler::Access;

/// A body announced larger than this, or grown past it, needs a permit.
pub const LARGE_BODY: u64 = 1024 * 1024;
/// Large bodies of batch handles read at once.
pub const LARGE_BODIES_AT_ONCE: usize = 4;
/// The largest upload of any route.
const MAX_UPLOAD: u64 = {
    let (a, b) = (super::MAX_MODULE_BYTES, super::MAX_SUBMIT_BYTES);
    (if a > b { a } else { b }) as u64
};
/// How long a large body waits for a permit before it is refused.
const PERMIT_WAIT: Duration = Duration::from_secs(30);

/// The permits for large bodies.
#[derive(Clone)]
pub struct LargeBodies {
    shared: Arc<Semaphore>,
    admin: Arc<Semaphore>,
    /// One permit per batch handle or tenant with an upload being read or waiting.
    handles: Arc<Mutex<HashMap<Holder, Arc<Semaphore>>>>,
}

impl Default for LargeBodies {
    fn default() -> Self {
        LargeBodies {
            shared: Arc::new(Semaphore::new(LARGE_BODIES_AT_ONCE)),
            admin: Arc::new(Semaphore::new(1)),
            handles: Arc::default(),
        }
    }
}

/// A large body's permit, released when dropped.
struct Permit {
    _shared: OwnedSemaphorePermit,
    _turn: Option<Turn>,
}

/// A batch handle's turn at uploading; its entry goes when no upload of the handle waits.
struct Turn {
    permit: Option<OwnedSemaphorePermit>,
    holder: Holder,
    bodies: LargeBodies,
}

impl Drop for Turn {
    fn drop(&mut self) {
        drop(self.permit.take());
        let mut handles = self.bodies.handles.lock().expect("upload turns lock");
        // Only the map holds it: no upload of this handle waits or is read.
        if handles
            .get(&self.holder)
            .is_some_and(|s| Arc::strong_count(s) == 1)
        {
            handles.remove(&self.holder);
        }
    }
}

fn busy() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        super::error::ErrorCode::Busy,
        format!("{LARGE_BODIES_AT_ONCE} large uploads are being read already; try again shortly"),
    )
}

impl LargeBodies {
    /// A permit for a large body of `access`, waiting at most [`PERMIT_WAIT`] in all.
    async fn acquire(&self, access: &Access) -> ApiResult<Permit> {
        let holder = match Holder::of(access)? {
            Holder::Admin => {
                // The admin's own permit, or a shared one if that comes first.
                let permit = tokio::time::timeout(PERMIT_WAIT, async {
                    tokio::select! {
                        p = self.admin.clone().acquire_owned() => p,
                        p = self.shared.clone().acquire_owned() => p,
                    }
                })
                .await;
                return match permit {
                    Ok(Ok(permit)) => Ok(Permit {
                        _shared: permit,
                        _turn: None,
                    }),
                    _ => Err(busy()),
                };
            }
            holder => holder,
        };
        let deadline = tokio::time::Instant::now() + PERMIT_WAIT;
        let own = self
            .handles
            .lock()
            .expect("upload turns lock")
            .entry(holder)
            .or_insert_with(|| Arc::new(Semaphore::new(1)))
            .clone();
        let turn = match tokio::time::timeout_at(deadline, own.acquire_owned()).await {
            Ok(Ok(turn)) => turn,
            _ => {
                // Tidies the entry if no other upload of the handle holds it.
                drop(Turn {
                    permit: None,
                    holder,
                    bodies: self.clone(),
                });
                return Err(ApiError::too_many(
                    "another large upload with this credential is being read; send one at a time",
                ));
            }
        };
        let turn = Turn {
            permit: Some(turn),
            holder,
            bodies: self.clone(),
        };
        match tokio::time::timeout_at(deadline, self.shared.clone().acquire_owned()).await {
            Ok(Ok(shared)) => Ok(Permit {
                _shared: shared,
                _turn: Some(turn),
            }),
            _ => Err(busy()),
        }
    }
}

/// An upload's body, read whole within its permit; the permit is held as long as this is.
pub struct Upload {
    request: Option<Request>,
    _permit: Option<Permit>,
}

impl FromRequest<AppState> for Upload {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = request.into_parts();
        let Caller(access) = Caller::from_request_parts(&mut parts, state).await?;
        let length = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let too_large = || {
            ApiError::rejected(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than the {MAX_UPLOAD} bytes allowed"),
            )
        };
        if length.is_some_and(|n| n > MAX_UPLOAD) {
            return Err(too_large());
        }
        let bodies = &state.large_bodies;
        let mut permit = match length {
            Some(n) if n > LARGE_BODY => Some(bodies.acquire(&access).await?),
            _ => None,
        };
        let mut read = BytesMut::with_capacity(length.unwrap_or(0).min(LARGE_BODY) as usize);
        let mut body = body;
        while let Some(frame) = body.frame().await {
            let frame = frame
                .map_err(|err| ApiError::bad_request(format!("reading the request body: {err}")))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            read.extend_from_slice(&data);
            let size = read.len() as u64;
            if size > MAX_UPLOAD {
                return Err(too_large());
            }
            if size > LARGE_BODY && permit.is_none() {
                permit = Some(bodies.acquire(&access).await?);
            }
        }
        let bytes: Bytes = read.freeze();
        Ok(Upload {
            request: Some(Request::from_parts(parts, Body::from(bytes))),
            _permit: permit,
        })
    }
}

impl Upload {
    /// The body as JSON of `T`, refused as axum's `Json` refuses it (content type, size
    /// for the route, shape).
    pub async fn json<T: DeserializeOwned>(&mut self) -> ApiResult<T> {
        let request = self.request.take().expect("an upload is read once");
        Json::<T>::from_request(request, &())
            .await
            .map(|Json(value)| value)
            .map_err(|r| ApiError::rejected(r.status(), r.body_text()))
    }

    /// The body's bytes, within the route's size.
    pub async fn bytes(&mut self) -> ApiResult<Bytes> {
        let request = self.request.take().expect("an upload is read once");
        Bytes::from_request(request, &())
            .await
            .map_err(|r| ApiError::rejected(r.status(), r.body_text()))
    }
}
