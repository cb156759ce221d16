//! What a node needs of a batch's grant to run its tasks: the origins they may reach over
//! HTTP, and their settings in clear. A grant never changes once its batch is open, so a
//! node reads it once per batch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::Context;

use super::Scheduler;
use crate::runtime::{AllowedOrigin, GrantedSetting};
use crate::store::BatchId;

/// Grants read so far, by batch; forgotten all at once past this many batches.
const MAX_CACHED: usize = 10_000;

/// A batch's grant, ready for its tasks' runs.
#[derive(Debug, Default)]
pub(crate) struct RunGrant {
    pub(crate) allow_http: Arc<[AllowedOrigin]>,
    pub(crate) settings: Arc<[GrantedSetting]>,
}

#[derive(Default)]
pub(crate) struct GrantCache(Mutex<HashMap<BatchId, Arc<RunGrant>>>);

impl Scheduler {
    /// What `batch` was granted, its secrets opened with this node's secret key. An origin
    /// that no longer parses (it was checked when the batch was opened) is left out: it
    /// allows nothing.
    pub(crate) async fn batch_grant(&self, batch: BatchId) -> anyhow::Result<Arc<RunGrant>> {
        if let Some(found) = self.grants.0.lock().expect("grants lock").get(&batch) {
            return Ok(found.clone());
        }
        let grant = self.store.batch_grant(batch).await?;
        let mut settings = Vec::with_capacity(grant.settings.len());
        for setting in grant.settings {
            let value = if setting.secret {
                let key = self.config.secret_key.as_ref().with_context(|| {
                    format!("batch {batch} holds secrets and this node has no secret key")
                })?;
                key.open(&setting.name, &setting.value)
                    .with_context(|| format!("opening the secrets of batch {batch}"))?
            } else {
                setting.value
            };
            settings.push(GrantedSetting {
                name: setting.name,
                value,
                secret: setting.secret,
            });
        }
        let found = Arc::new(RunGrant {
            allow_http: grant
                .allow_http
                .iter()
                .filter_map(|t| t.parse().ok())
                .collect(),
            settings: settings.into(),
        });
        let mut cache = self.grants.0.lock().expect("grants lock");
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(batch, found.clone());
        Ok(found)
    }
}
