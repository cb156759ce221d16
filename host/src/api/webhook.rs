//! A batch's webhook (`webhook` in `POST /v1/batches`): its URL, checked against the
//! operator's allow-list as a task's outbound HTTP is, and its secret, sealed here before
//! it reaches the store. No answer ever carries the secret.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::error::{ApiError, ApiResult};
use super::tenants::TenantOrigins;
use crate::store::{BatchHook, SECRET_NAME};
use crate::webhooks;

/// A webhook to open a batch with.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenWebhook {
    /// `http://` or `https://`, its origin within the server's `--allow-http`.
    #[schema(max_length = 2048)]
    pub url: String,
    /// The key of each request's `Qhost-Signature` (HMAC-SHA256): 16 to 1024 bytes.
    #[schema(min_length = 16, max_length = 1024)]
    pub secret: String,
}

impl fmt::Debug for OpenWebhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenWebhook")
            .field("url", &self.url)
            .field("secret", &"[secret]")
            .finish()
    }
}

/// The webhook of an opening, checked, its secret sealed with the server's key.
pub(super) fn sealed(
    state: &AppState,
    narrowed: Option<&TenantOrigins>,
    hook: Option<OpenWebhook>,
) -> ApiResult<Option<BatchHook>> {
    let Some(hook) = hook else {
        return Ok(None);
    };
    let operator = &state.scheduler.runtime.config().allow_http;
    let (_, origin) = webhooks::check_url(operator, &hook.url, "field `webhook.url`")
        .map_err(ApiError::bad_request)?;
    if let Some(narrowed) = narrowed {
        let origin = origin.to_string().parse().map_err(ApiError::bad_request)?;
        narrowed.check("webhook.url", &[origin])?;
    }
    webhooks::check_secret(&hook.secret, "field `webhook.secret`")
        .map_err(ApiError::bad_request)?;
    let key = state.scheduler.config().secret_key.as_ref().ok_or_else(|| {
        ApiError::bad_request(
            "field `webhook`: this server keeps no secrets: it was started without a secret key",
        )
    })?;
    let sealed_secret = key.seal(SECRET_NAME, &hook.secret).map_err(|e| {
        ApiError::from(crate::scheduler::Error::Internal(
            e.context("sealing a webhook's secret"),
        ))
    })?;
    Ok(Some(BatchHook {
        url: hook.url,
        sealed_secret,
    }))
}
