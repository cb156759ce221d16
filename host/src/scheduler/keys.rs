//! Opening a batch, with its tasks, in one request, and requests done exactly once.
//!
//! A client may send an idempotency key with an opening or a submission: a repeat under
//! the same key, asking the same, gets the first answer; asking something else, it is
//! refused. The store keeps only the key's hash and the request's (see
//! [`crate::store::keys`]). An opening's answer holds the batch's handle, which the store
//! never keeps: beside the answer it keeps the handle's secret sealed under the client's
//! key (a one-time pad from an HMAC of the key), so that only a repeat bringing the key
//! gets the handle back.

use hmac::{Hmac, Mac};
use sha2::{Digest as _, Sha256};

use super::{Access, Error, Result, Scheduler, check_name, hash_handle};
use crate::store::*;

/// The longest idempotency key taken, in bytes.
pub const MAX_KEY_LEN: usize = 255;

/// A client's idempotency key: 1 to [`MAX_KEY_LEN`] visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<Self> {
        if text.is_empty()
            || text.len() > MAX_KEY_LEN
            || !text.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(Error::Invalid(format!(
                "header `Idempotency-Key` must be 1 to {MAX_KEY_LEN} visible ASCII characters \
                 (no spaces); a random one such as a UUID is best"
            )));
        }
        Ok(IdempotencyKey(text.to_owned()))
    }

    /// This key as the tenant `tenant` sends it (none: the admin): each tenant's keys are
    /// apart from every other's, so no tenant can replay another's opening.
    pub fn of_tenant(&self, tenant: Option<TenantId>) -> IdempotencyKey {
        match tenant {
            None => self.clone(),
            Some(tenant) => IdempotencyKey(format!("tenant {tenant}/{}", self.0)),
        }
    }

    /// What the store keeps for a request under this key whose body hashes to `body_hash`.
    fn stored(&self, body_hash: [u8; 32], sealed: Option<Vec<u8>>) -> RequestKey {
        RequestKey {
            key_hash: Sha256::digest(self.0.as_bytes()).into(),
            body_hash,
            sealed,
        }
    }

    /// `secret` sealed under this key, or a sealed secret opened: the same operation.
    fn seal(&self, secret: &[u8]) -> Vec<u8> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(self.0.as_bytes()).expect("HMAC takes any key");
        mac.update(b"qhost batch handle");
        let pad = mac.finalize().into_bytes();
        secret.iter().zip(pad.iter()).map(|(s, p)| s ^ p).collect()
    }
}

/// An idempotency key with the request it came with, as the client sent it: a repeat is
/// the same request when it asks the same in the same words, whatever the server reads
/// from it now (a `delay` counts from now, a secret setting seals anew, a module name may
/// name a newer component): such a repeat gets the first answer.
pub struct Keyed<'a> {
    key: &'a IdempotencyKey,
    body_hash: [u8; 32],
}

impl<'a> Keyed<'a> {
    /// The request's hash is keyed with the idempotency key: a request as sent may hold a
    /// secret setting in clear, and the store, which keeps only the key's hash, must not
    /// keep what a guess at that secret could be checked against.
    pub fn new(key: &'a IdempotencyKey, asked: &impl serde::Serialize) -> Self {
        let body = serde_json::to_vec(asked).expect("requests serialize");
        let mut mac = Hmac::<Sha256>::new_from_slice(key.0.as_bytes()).expect("HMAC takes any key");
        mac.update(b"qhost request");
        mac.update(&body);
        Keyed {
            key,
            body_hash: mac.finalize().into_bytes().into(),
        }
    }
}

/// A batch opened, with its handle and the tasks submitted with it.
#[derive(Debug, Clone)]
pub struct Opened {
    pub batch: BatchInfo,
    pub handle: String,
    pub tasks: Vec<TaskId>,
    /// A repeat under an idempotency key: this is the first request's answer.
    pub repeated: bool,
}

/// The handle of batch `id` with `secret`: `qhb_<id>_<secret in hex>`.
fn handle_of(id: BatchId, secret: &[u8]) -> String {
    format!("qhb_{id}_{}", hex::encode(secret))
}

/// The hash the store keeps of the handle of batch `id` with `secret`.
fn handle_hash(id: BatchId, secret: &[u8; 32]) -> [u8; 32] {
    hash_handle(&handle_of(id, secret))
}

impl Scheduler {
    /// Opens a batch and submits `tasks` into it (none: an empty batch), all or nothing:
    /// a refused task leaves no batch behind. With a key, a repeat gets the first answer.
    pub async fn batch_create(
        &self,
        spec: BatchSpec,
        tasks: Vec<TaskSpec>,
        keyed: Option<Keyed<'_>>,
    ) -> Result<Opened> {
        check_name("name", spec.name.as_deref())?;
        self.check_for_tenant(spec.tenant, Some(spec.priority), &tasks)
            .await?;
        let tasks = if tasks.is_empty() {
            Admitted::none()
        } else {
            self.check_tasks(tasks)?
        };
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| Error::Internal(anyhow::anyhow!("random source: {e}")))?;
        let key = keyed.as_ref().map(|keyed| keyed.key);
        let stored = keyed.map(|k| k.key.stored(k.body_hash, Some(k.key.seal(&secret))));
        let new = NewBatch {
            spec,
            tasks,
            handle: NewHandle {
                secret,
                hash: handle_hash,
            },
            key: stored,
        };
        let now = now_micros();
        match self.store.batch_create(new, now).await? {
            Answer::First(created) => {
                if !created.tasks.is_empty() {
                    self.metrics.submitted(&created.tasks, now);
                    self.wake.notify_one();
                }
                Ok(Opened {
                    handle: handle_of(created.batch.id, &secret),
                    batch: created.batch,
                    tasks: created.tasks,
                    repeated: false,
                })
            }
            Answer::Repeat { answer, sealed } => {
                let key = key.expect("only a keyed request repeats");
                let secret = key.seal(&sealed.unwrap_or_default());
                Ok(Opened {
                    handle: handle_of(answer.batch.id, &secret),
                    batch: answer.batch,
                    tasks: answer.tasks,
                    repeated: true,
                })
            }
        }
    }

    /// Submits tasks into a batch once per key: a repeat gets the first answer, and says
    /// so (`true`).
    pub async fn submit_keyed(
        &self,
        access: &Access,
        batch: BatchId,
        tasks: Vec<TaskSpec>,
        keyed: Keyed<'_>,
    ) -> Result<(Vec<TaskId>, bool)> {
        let tenant = self
            .authorize_with(access, batch, !self.store.is_shared())
            .await?;
        self.check_for_tenant(tenant, None, &tasks).await?;
        let tasks = self.check_tasks(tasks)?;
        // The batch is part of the request: the same body sent to another batch differs.
        let body_hash = Sha256::digest([&batch.to_le_bytes()[..], &keyed.body_hash[..]].concat());
        let stored = keyed.key.stored(body_hash.into(), None);
        let now = now_micros();
        match self
            .store
            .task_submit_keyed(batch, tasks, stored, now)
            .await?
        {
            Answer::First(ids) => {
                self.metrics.submitted(&ids, now);
                self.wake.notify_one();
                Ok((ids, false))
            }
            Answer::Repeat { answer, .. } => Ok((answer, true)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_with_its_key_only() {
        let key = IdempotencyKey::parse("0f8fad5b-d9cb-469f-a165-70867728950e").unwrap();
        let secret = [7u8; 32];
        let sealed = key.seal(&secret);
        assert_ne!(sealed, secret);
        assert_eq!(key.seal(&sealed), secret);
        let other = IdempotencyKey::parse("another").unwrap();
        assert_ne!(other.seal(&sealed), secret);
    }

    #[test]
    fn keys_are_bounded_visible_ascii() {
        assert!(IdempotencyKey::parse("").is_err());
        assert!(IdempotencyKey::parse("with space").is_err());
        assert!(IdempotencyKey::parse(&"k".repeat(MAX_KEY_LEN + 1)).is_err());
        assert!(IdempotencyKey::parse(&"k".repeat(MAX_KEY_LEN)).is_ok());
    }
}
