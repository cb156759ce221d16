//! The webhook sender: claims the outbox's events as they fall due, posts each one
//! signed (a few at a time, so that an unreachable hook holds no more than
//! [`MAX_IN_FLIGHT`] tries, and never a slot or a completion), and records how it went:
//! delivered (deleted), tried again after [`backoff`], or given up after [`MAX_TRIES`]
//! tries or [`MAX_AGE`].
//!
//! It waits for a wake-up (this node wrote events), or for the next event due; on a
//! store other nodes share it also looks every half minute, for events whose node died
//! while trying them.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::scheduler::Scheduler;
use crate::store::*;
use crate::webhooks::{
    self, MAX_AGE, MAX_BODY, MAX_IN_FLIGHT, MAX_TRIES, TRY_TIMEOUT, backoff, sign,
};

/// How long a claimed event is held: a try, and room to record it.
const HOLD: Duration = Duration::from_secs(TRY_TIMEOUT.as_secs() + 20);
/// On a shared store, the longest the sender waits without looking.
const SHARED_LOOK: Duration = Duration::from_secs(30);
/// After the store fails, the wait before trying it again.
const STORE_RETRY: Duration = Duration::from_secs(5);

pub(super) async fn send_webhooks(scheduler: Arc<Scheduler>, stop: CancellationToken) {
    let server = scheduler.config.webhook.is_some();
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    loop {
        let free = slots.available_permits();
        let wait = if free == 0 {
            // Every try in flight: one ending frees a permit, and the loop looks again.
            tokio::select! {
                permit = slots.clone().acquire_owned() => drop(permit),
                () = stop.cancelled() => return,
            }
            continue;
        } else {
            let now = now_micros();
            let hold = now + duration_micros(HOLD);
            match scheduler.store.hook_claim(now, hold, free, server).await {
                Ok(claim) => {
                    let claimed = claim.events.len();
                    for event in claim.events {
                        let permit = slots.clone().try_acquire_owned().expect("a free permit");
                        let scheduler = scheduler.clone();
                        tokio::spawn(async move {
                            try_event(&scheduler, event).await;
                            drop(permit);
                        });
                    }
                    if claimed == free {
                        // There may be more due now.
                        continue;
                    }
                    claim
                        .next_due
                        .map(|due| Duration::from_micros((due - now_micros()).max(0) as u64))
                }
                Err(err) => {
                    tracing::error!("reading the webhook outbox failed: {err:#}");
                    Some(STORE_RETRY)
                }
            }
        };
        let wait = match (wait, scheduler.store.is_shared()) {
            (Some(wait), true) => Some(wait.min(SHARED_LOOK)),
            (None, true) => Some(SHARED_LOOK),
            (wait, false) => wait,
        };
        let sleep = async {
            match wait {
                Some(wait) => tokio::time::sleep(wait).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = sleep => {}
            () = scheduler.hooks_wake.notified() => {}
            () = stop.cancelled() => return,
        }
    }
}

/// One try of `event`, recorded.
async fn try_event(scheduler: &Scheduler, event: HookEvent) {
    let (id, tries, kind) = (event.id, event.tries, event.kind.as_str());
    let outcome = attempt(scheduler, &event).await;
    let store = &scheduler.store;
    let recorded = match outcome {
        Ok(status) => {
            tracing::debug!(event = id, kind, tries, status, "webhook delivered");
            store.hook_done(id).await
        }
        Err((reason, body)) => {
            let age = now_micros() - event.created_at;
            let next = now_micros() + duration_micros(backoff(tries));
            if tries >= MAX_TRIES || next - event.created_at > duration_micros(MAX_AGE) {
                tracing::warn!(
                    event = id,
                    kind,
                    batch = event.batch,
                    tries,
                    age_s = age / 1_000_000,
                    "webhook given up: {reason}"
                );
                store.hook_done(id).await
            } else {
                tracing::info!(event = id, kind, tries, "webhook try failed: {reason}");
                let retried = store.hook_retry(id, next, body.to_vec()).await;
                // The sender waits for the hold it set: it must see the sooner time.
                scheduler.hooks_wake.notify_one();
                retried
            }
        }
    };
    if let Err(err) = recorded {
        // Held until its hold ends, then tried again: at least once.
        tracing::error!(event = id, "recording a webhook try failed: {err:#}");
    }
}

/// Posts `event`: the status of a delivery, or why it failed and the body sent.
async fn attempt(scheduler: &Scheduler, event: &HookEvent) -> Result<u16, (String, Bytes)> {
    let body = match &event.body {
        Some(body) => Bytes::from(body.clone()),
        None => Bytes::from(body_of(scheduler, event).await),
    };
    let fail = |reason: String| Err((reason, body.clone()));
    let (url, secret) = match &event.hook {
        Some(hook) => {
            let Some(key) = scheduler.config.secret_key.as_ref() else {
                return fail("this node has no secret key to open the webhook's secret".into());
            };
            match key.open(SECRET_NAME, &hook.sealed_secret) {
                Ok(secret) => (hook.url.clone(), secret),
                Err(err) => return fail(format!("{err:#}")),
            }
        }
        None => match &scheduler.config.webhook {
            Some(hook) => (hook.url.clone(), hook.secret.clone()),
            None => return fail("this node has no server webhook (--webhook)".into()),
        },
    };
    let config = scheduler.runtime.config();
    let (uri, origin) = match webhooks::check_url(&config.allow_http, &url, "the webhook") {
        Ok(checked) => checked,
        Err(reason) => return fail(reason),
    };
    let sent_at = now_micros() / 1_000_000;
    let headers = vec![
        (
            sign::HEADER,
            sign::signature(secret.as_bytes(), sent_at, &body),
        ),
        ("Qhost-Event", event.kind.as_str().to_owned()),
        ("Qhost-Event-Id", event.id.to_string()),
        ("Qhost-Delivery-Try", event.tries.to_string()),
    ];
    match webhooks::deliver(config, &uri, &origin, headers, body.clone()).await {
        Ok(status) => Ok(status),
        Err(reason) => fail(reason),
    }
}

/// The JSON an event posts: what happened, when, and the batch (and task) as the API
/// shows them now; a view that would make the body larger than [`MAX_BODY`] is left out.
async fn body_of(scheduler: &Scheduler, event: &HookEvent) -> Vec<u8> {
    let batch = scheduler.store.batch_get(event.batch).await.ok();
    let task = match event.task {
        Some(task) => scheduler.store.task_get(task).await.ok().map(|mut t| {
            t.cut_error(MAX_EVENT_ERROR);
            t
        }),
        None => None,
    };
    let at = jiff::Timestamp::from_microsecond(event.created_at)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let mut body = json!({
        "id": event.id,
        "type": event.kind.as_str(),
        "at": at,
        "batch_id": event.batch,
        "task_id": event.task,
        "outcome": event.outcome,
        "error": event.error,
        "batch": batch,
        "task": task,
    });
    let mut bytes = serde_json::to_vec(&body).expect("JSON serializes");
    for view in ["task", "batch"] {
        if bytes.len() <= MAX_BODY {
            break;
        }
        body[view] = serde_json::Value::Null;
        bytes = serde_json::to_vec(&body).expect("JSON serializes");
    }
    bytes
}
