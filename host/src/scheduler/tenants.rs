//! Tenants as the scheduler sees them: the admin adds them, sets what their batches may
//! do, and makes and revokes their tokens; a request's token is turned into the tenant it
//! speaks for; what is asked of a tenant's batch is checked against its rules
//! ([`TenantRules`]), whoever of its token and its batches' handles asks; and a limit its
//! task does not ask is the server's default within the tenant's maximum.

use std::collections::HashSet;

use sha2::{Digest as _, Sha256};

use super::{Access, Error, Result, Scheduler};
use crate::runtime::{Digest, TaskLimits};
use crate::store::*;

/// A token just made: shown this once.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct NewToken {
    /// `qht_<id>_<secret>`: send it as `Authorization: Bearer <token>`. Only its hash is
    /// kept, so it cannot be shown again.
    pub token: String,
    #[serde(flatten)]
    pub info: TokenInfo,
}

/// The token id and secret a tenant token names (`qht_<id>_<secret>`), if it has that
/// shape.
pub fn token_parts(token: &str) -> Option<(i64, &str)> {
    let (id, secret) = token.strip_prefix("qht_")?.split_once('_')?;
    (secret.len() == 64).then_some(())?;
    Some((id.parse().ok()?, secret))
}

fn secret_hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl Scheduler {
    /// Adds a tenant, with the server's running and open limits, budget and weight for
    /// new tenants, where it has them.
    pub async fn tenant_add(&self, name: String) -> Result<TenantInfo> {
        let info = self.store.tenant_add(name, now_micros()).await?;
        let config = &self.config;
        let change = TenantChange {
            max_running: config.tenant_max_running.map(Some),
            max_open: config.tenant_max_open.map(Some),
            budget: config.tenant_budget.map(Some),
            weight: config.tenant_weight,
            ..TenantChange::default()
        };
        if change.max_running.is_none()
            && change.max_open.is_none()
            && change.budget.is_none()
            && change.weight.is_none()
        {
            return Ok(info);
        }
        Ok(self
            .store
            .tenant_set(info.name, change, now_micros())
            .await?)
    }

    pub async fn tenant_list(&self) -> Result<Vec<TenantInfo>> {
        Ok(self.store.tenant_list().await?)
    }

    /// What `tenant` has used and holds now.
    pub async fn tenant_usage(&self, tenant: TenantId) -> Result<TenantUsage> {
        Ok(self.store.tenant_get(tenant).await?.into())
    }

    /// Makes a token for `tenant`.
    pub async fn token_make(&self, tenant: String) -> Result<NewToken> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the system random source");
        let secret = hex::encode(bytes);
        let info = self
            .store
            .token_add(tenant, secret_hash(&secret), now_micros())
            .await?;
        Ok(NewToken {
            token: format!("qht_{}_{secret}", info.id),
            info,
        })
    }

    pub async fn token_list(&self, tenant: String) -> Result<Vec<TokenInfo>> {
        Ok(self.store.token_list(tenant).await?)
    }

    pub async fn token_revoke(&self, tenant: String, token: i64) -> Result<TokenInfo> {
        Ok(self.store.token_revoke(tenant, token, now_micros()).await?)
    }

    /// Checks what is asked of a tenant's batch against its rules: a priority given
    /// (`priority`), and each task's module, priority and group. Nothing is checked for
    /// the admin's batches, or the admin (`tenant` none).
    pub(crate) async fn check_for_tenant(
        &self,
        tenant: Option<TenantId>,
        priority: Option<i32>,
        tasks: &[TaskSpec],
    ) -> Result<()> {
        let Some(tenant) = tenant else {
            return Ok(());
        };
        let rules = self.tenant_rules(tenant).await?;
        if let Some(allowed) = self.allowed_modules(&rules).await?
            && let Some((index, _)) = tasks
                .iter()
                .enumerate()
                .find(|(_, t)| !allowed.contains(&t.module))
        {
            return Err(Error::Invalid(format!(
                "task {index}: field `module`: tenant {name} may run only the modules the \
                 admin allows it ({}); the admin adds one with `qhost tenant set {name} \
                 --allow-module NAME`",
                rules.modules.as_deref().unwrap_or_default().join(", "),
                name = rules.name
            )));
        }
        if let Some(priority) = priority {
            rules
                .check_priority("priority", priority)
                .map_err(Error::Invalid)?;
        }
        let maxima = rules.max_limits.within(&self.runtime.config().max_limits);
        for (index, task) in tasks.iter().enumerate() {
            let refused = |e: String| Error::Invalid(format!("task {index}: {e}"));
            task.limits.check_within(&maxima).map_err(|e| {
                refused(format!(
                    "field `limits`: {e}, tenant {name}'s; the admin raises it (`qhost \
                     tenant set {name} --max-limit NAME=VALUE`)",
                    name = rules.name
                ))
            })?;
            if let Some(priority) = task.priority {
                rules
                    .check_priority("priority", priority)
                    .map_err(refused)?;
            }
            if let Some(group) = &task.group {
                rules.check_group(group).map_err(refused)?;
            }
        }
        Ok(())
    }

    pub(crate) async fn tenant_rules(&self, tenant: TenantId) -> Result<TenantRules> {
        Ok(self
            .store
            .tenant_rules(tenant, self.config.tenant_max_priority)
            .await?)
    }

    /// The digests of the modules a tenant may run; none: every one. A name that names no
    /// module now allows none.
    async fn allowed_modules(&self, rules: &TenantRules) -> Result<Option<HashSet<Digest>>> {
        let Some(allowed) = &rules.modules else {
            return Ok(None);
        };
        let named = self.store.module_lookup(allowed.clone()).await?;
        let digests = allowed.iter().filter_map(|m| Digest::from_hex(m).ok());
        Ok(Some(
            named
                .into_iter()
                .map(|(_, digest)| digest)
                .chain(digests)
                .collect(),
        ))
    }

    /// The modules `access` may see: every one for the admin, those its tenant may run for
    /// a tenant.
    pub async fn modules_for(&self, access: &Access) -> Result<Vec<ModuleInfo>> {
        let modules = self.store.module_list().await?;
        let Access::Tenant(tenant) = access else {
            return Ok(modules);
        };
        let rules = self.tenant_rules(*tenant).await?;
        Ok(match self.allowed_modules(&rules).await? {
            None => modules,
            Some(allowed) => modules
                .into_iter()
                .filter(|m| allowed.contains(&m.digest))
                .collect(),
        })
    }

    /// Checks a child a task of `batch` submits against the rules of the batch's tenant.
    pub(crate) async fn check_child(&self, batch: BatchId, child: &TaskSpec) -> Result<()> {
        let tenant = self.store.batch_tenant(batch).await?;
        self.check_for_tenant(tenant, None, std::slice::from_ref(child))
            .await
    }

    /// Lowers every tenant's work not started to its ceiling: a server started with a
    /// lower `--tenant-max-priority` holds it for what was submitted before too.
    pub(crate) async fn hold_tenant_ceilings(&self) -> Result<u64> {
        let mut changed = 0;
        for tenant in self.store.tenant_list().await? {
            let ceiling = tenant
                .max_priority
                .unwrap_or(self.config.tenant_max_priority);
            changed += self
                .store
                .tenant_lower_priorities(tenant.id, ceiling)
                .await?;
        }
        Ok(changed)
    }

    pub async fn tenant_set(&self, name: String, mut change: TenantChange) -> Result<TenantInfo> {
        if let Some(maxima) = &change.max_limits {
            maxima
                .check(&self.runtime.config().max_limits)
                .map_err(Error::Invalid)?;
        }
        if let Some(Some(budget)) = &change.budget {
            budget.check().map_err(Error::Invalid)?;
        }
        let budgeted = change.budget.is_some();
        // A ceiling reaches the work not started too: nothing waits above it.
        change.ceiling = change
            .max_priority
            .map(|ceiling| ceiling.unwrap_or(self.config.tenant_max_priority));
        // A ceiling reorders the work not started; a weight shares it anew.
        let reorders = change.ceiling.is_some() || change.weight.is_some();
        let info = self.store.tenant_set(name, change, now_micros()).await?;
        if reorders {
            // What this node reserved goes back, so its next claims take the new order.
            self.reclaim.notify_one();
        }
        if budgeted {
            // A budget raised or lifted lets held work go at once.
            self.wake.notify_one();
        }
        Ok(info)
    }

    /// What a task of a batch of `tenant` (none: the admin's) gets of a limit it does not
    /// ask: the server's default, at most the tenant's maximum.
    pub(crate) async fn task_defaults(&self, tenant: Option<TenantId>) -> Result<TaskLimits> {
        let defaults = self.config.default_limits;
        let Some(tenant) = tenant else {
            return Ok(defaults);
        };
        let rules = self.tenant_rules(tenant).await?;
        Ok(rules
            .max_limits
            .defaults(&defaults, &self.runtime.config().max_limits))
    }

    /// The tenant a token speaks for; `None` for a token of no tenant, or revoked.
    /// Looked up at every request, so a revocation holds at once on every node.
    pub async fn token_tenant(&self, token: &str) -> Result<Option<TenantId>> {
        let Some((id, secret)) = token_parts(token) else {
            return Ok(None);
        };
        match self.store.token_check(id, secret_hash(secret)).await {
            Ok(tenant) => Ok(Some(tenant)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(err) => Err(Error::from(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_token_of_its_shape_is_looked_up() {
        let secret = "a".repeat(64);
        assert_eq!(token_parts(&format!("qht_7_{secret}")), Some((7, &*secret)));
        for bad in [
            format!("qhb_7_{secret}"),
            format!("qht_x_{secret}"),
            "qht_7_short".to_owned(),
            format!("qht_7{secret}"),
        ] {
            assert_eq!(token_parts(&bad), None, "{bad}");
        }
    }
}
