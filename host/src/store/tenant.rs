//! Tenants: who, besides the admin, may open batches, the tokens they do it with, and
//! what their batches may do. A token is `qht_<id>_<secret>`; a store keeps the sha256 of
//! its secret only, so a token is shown once, when it is made, and a stolen copy of the
//! store opens nothing.
//!
//! What a tenant's batches may do holds for every credential but the admin's, its token
//! and its batches' handles alike: no priority above its ceiling, and groups in its own
//! namespace (`<tenant>/<key>`) or shared with it by the admin.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Budget, BudgetUsed, Micros, StoreError, TenantMaxima, Window};

pub type TenantId = i64;

/// Longest tenant name.
pub const MAX_TENANT_NAME: usize = 64;
/// The priority ceiling of a tenant that has none of its own, unless the server sets
/// another (`--tenant-max-priority`).
pub const DEFAULT_MAX_PRIORITY: i32 = 100;
/// Most groups shared with one tenant.
pub const MAX_SHARED_GROUPS: usize = 100;
/// The largest running limit a tenant may be given.
pub const MAX_TENANT_RUNNING: u32 = 1_000_000;
/// The largest open limit a tenant may be given.
pub const MAX_TENANT_OPEN: u32 = 1_000_000_000;

/// A tenant, as the admin lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TenantInfo {
    pub id: TenantId,
    pub name: String,
    pub created_at: Micros,
    /// Its tokens not revoked.
    pub tokens: u64,
    /// The highest priority its batches and tasks may have; none: the server's.
    #[schema(required = true)]
    pub max_priority: Option<i32>,
    /// Groups outside its namespace its tasks may name.
    pub shared_groups: Vec<String>,
    /// The modules its tasks may run, by name or digest; none: every one.
    #[schema(required = true)]
    pub modules: Option<Vec<String>>,
    /// The origins its batches may be granted (`allow_http`) and post webhooks to, within
    /// the operator's `--allow-http`; none: the operator's.
    #[schema(required = true)]
    pub allow_http: Option<Vec<String>>,
    /// The most of its tasks that may be claimed at once, across its batches and the
    /// nodes; none: no limit.
    #[schema(required = true)]
    pub max_running: Option<u32>,
    /// Its tasks claimed now.
    pub running: u32,
    /// The most of its tasks that may be open (submitted, not ended: waiting, ready,
    /// reserved or running) at once, across its batches; a submission or re-drive past
    /// it is refused whole. None: no limit.
    #[schema(required = true)]
    pub max_open: Option<u32>,
    /// Its tasks open now.
    pub open: u64,
    /// Its share of the slots under saturation, against the other tenants' weights: its
    /// attempts get slot time in that proportion ([`crate::store::fair`]).
    pub weight: u32,
    /// The slot time its attempts have held, in microseconds: from each attempt's start
    /// to its end, as the execution log records them, summed since it was added.
    pub slot_micros: u64,
    /// The CPU time its attempts have used, in microseconds: their wasm and the host calls
    /// they made, not the time they waited, summed since it was added.
    pub cpu_micros: u64,
    /// The memory its attempts have held, in MiB-seconds (each one's size over its run),
    /// summed since it was added.
    pub memory_mib_seconds: f64,
    /// The HTTP body bytes its attempts have sent and received, summed since it was added.
    pub http_bytes: u64,
    /// The most its tasks may ask of each limit; one left out: the operator's.
    pub max_limits: TenantMaxima,
    /// What its attempts may use per period (CPU, memory-time, HTTP bytes); none: no
    /// budget.
    #[schema(required = true)]
    pub budget: Option<Budget>,
    /// What its attempts used in the budget's current window.
    pub budget_used: BudgetUsed,
    /// Its budget is spent: its tasks not started wait until then, when the next window
    /// starts. None: not held.
    #[schema(required = true)]
    pub held_until: Option<Micros>,
}

impl TenantInfo {
    /// Sets its budget fields from its stored `window` and hold, as they stand at `now`.
    pub(crate) fn with_budget(mut self, window: Window, held_until: Micros, now: Micros) -> Self {
        self.budget = window.budget;
        self.budget_used = window.used_at(now).into();
        self.held_until = super::hold::holds(held_until, now).then_some(held_until);
        self
    }
}

/// A change to what a tenant's batches may do; a field left out (`None`) stays.
#[derive(Debug, Clone, Default)]
pub struct TenantChange {
    /// `Some(None)`: the server's ceiling.
    pub max_priority: Option<Option<i32>>,
    pub shared_groups: Option<Vec<String>>,
    /// `Some(None)`: every module.
    pub modules: Option<Option<Vec<String>>>,
    /// Origins as the API checked them; `Some(None)`: the operator's.
    pub allow_http: Option<Option<Vec<String>>>,
    /// `Some(None)`: no limit.
    pub max_running: Option<Option<u32>>,
    /// `Some(None)`: no limit.
    pub max_open: Option<Option<u32>>,
    /// All of them, as the scheduler checked them against the operator's.
    pub max_limits: Option<TenantMaxima>,
    /// `Some(None)`: no budget.
    pub budget: Option<Option<Budget>>,
    /// Its weight in the fair share.
    pub weight: Option<u32>,
    /// The ceiling `max_priority` resolves to (the server's where it sets none): the
    /// tenant's batches and work not started above it drop to it in the same transaction.
    pub ceiling: Option<i32>,
}

/// What a tenant's batches may do, its ceiling resolved against the server's.
#[derive(Debug, Clone)]
pub struct TenantRules {
    pub name: String,
    pub max_priority: i32,
    pub shared_groups: Vec<String>,
    pub modules: Option<Vec<String>>,
    pub allow_http: Option<Vec<String>>,
    pub max_limits: TenantMaxima,
}

impl TenantRules {
    /// `priority` if within the ceiling; otherwise what `field` was refused for.
    pub fn check_priority(&self, field: &str, priority: i32) -> Result<(), String> {
        if priority > self.max_priority {
            return Err(format!(
                "field `{field}` is {priority}, above tenant {}'s ceiling of {}; the admin \
                 sets it (`qhost tenant set {} --max-priority N`)",
                self.name, self.max_priority, self.name
            ));
        }
        Ok(())
    }

    /// `group` if in the tenant's namespace or shared with it.
    pub fn check_group(&self, group: &str) -> Result<(), String> {
        let own = group
            .strip_prefix(&self.name)
            .is_some_and(|rest| rest.starts_with('/'));
        if own || self.shared_groups.iter().any(|g| g == group) {
            return Ok(());
        }
        Err(format!(
            "field `group` is `{group}`, outside tenant {name}'s groups: name it \
             `{name}/{group}`, or ask the admin to share it (`qhost tenant set {name} \
             --share-group {group}`)",
            name = self.name
        ))
    }
}

/// One of a tenant's tokens, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TokenInfo {
    pub id: i64,
    pub tenant: String,
    pub created_at: Micros,
    /// When it was revoked; it opens nothing since.
    #[schema(required = true)]
    pub revoked_at: Option<Micros>,
}

/// What may open a batch besides the admin: the batch's handle (by its hash), or the
/// tenant the batch belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchKey {
    Handle([u8; 32]),
    Tenant(TenantId),
}

impl BatchKey {
    /// Whether a batch whose handle hashes to `handle` and which belongs to `tenant`
    /// opens to this key.
    pub fn opens(&self, handle: &[u8], tenant: Option<TenantId>) -> bool {
        match self {
            BatchKey::Handle(hash) => handle == hash.as_slice(),
            BatchKey::Tenant(id) => tenant == Some(*id),
        }
    }
}

/// A tenant name: 1 to 64 of `a-z`, `0-9`, `-` and `_`, starting with a letter or digit,
/// so that it reads the same in a URL, a group key's namespace and a metric label.
pub fn check_tenant_name(name: &str) -> Result<(), StoreError> {
    let valid = (1..=MAX_TENANT_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    if valid {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "field `name`: `{name}` is not a tenant name: 1 to {MAX_TENANT_NAME} of a-z, 0-9, \
             `-` and `_`, starting with a letter or digit"
        )))
    }
}

/// A tenant's running limit: 1 to [`MAX_TENANT_RUNNING`] (a limit of 0 would hold its
/// work, which pausing its batches does in a way every read shows).
pub fn check_max_running(limit: Option<u32>) -> Result<Option<u32>, StoreError> {
    match limit {
        Some(n) if !(1..=MAX_TENANT_RUNNING).contains(&n) => Err(StoreError::Invalid(format!(
            "field `max_running`: {n} is not a running limit: 1 to {MAX_TENANT_RUNNING}, or \
             null for none (to stop a tenant's work, pause its batches)"
        ))),
        limit => Ok(limit),
    }
}

/// A tenant's open limit: 1 to [`MAX_TENANT_OPEN`].
pub fn check_max_open(limit: Option<u32>) -> Result<Option<u32>, StoreError> {
    match limit {
        Some(n) if !(1..=MAX_TENANT_OPEN).contains(&n) => Err(StoreError::Invalid(format!(
            "field `max_open`: {n} is not an open limit: 1 to {MAX_TENANT_OPEN}, or null \
             for none"
        ))),
        limit => Ok(limit),
    }
}

/// Whether `adds` more tasks fit under tenant `name`'s open limit, `open` open now; the
/// refusal names the limit and what to do. Submissions and re-drives alike.
pub fn check_open(name: &str, max_open: u32, open: u64, adds: u64) -> Result<(), StoreError> {
    if open.saturating_add(adds) <= u64::from(max_open) {
        return Ok(());
    }
    Err(StoreError::Quota(format!(
        "tenant {name} has {open} tasks open (submitted and not ended) and this adds {adds}, \
         past its `max_open` limit of {max_open}; nothing was submitted or run again. Wait for \
         its tasks to end, or have the admin raise the limit (`qhost tenant set {name} \
         --max-open N`)"
    )))
}

/// The groups shared with a tenant, each a group key, at most [`MAX_SHARED_GROUPS`].
pub fn check_shared_groups(groups: Vec<String>) -> Result<Vec<String>, StoreError> {
    let max = crate::scheduler::MAX_GROUP_KEY;
    checked_list("shared_groups", "groups", groups, max, |bad| {
        format!("`{bad}` is not a group key (1 to {max} characters)")
    })
}

/// The modules a tenant may run, by name or digest, at most [`MAX_SHARED_GROUPS`].
pub fn check_modules(modules: Vec<String>) -> Result<Vec<String>, StoreError> {
    let max = crate::scheduler::MAX_NAME;
    checked_list("modules", "modules", modules, max, |bad| {
        format!("`{bad}` is neither a module name nor a digest")
    })
}

/// `items` sorted and each once, if there are at most [`MAX_SHARED_GROUPS`] and each is 1
/// to `max` characters; a refusal names `field`, and `bad` says what a wrong item is not.
fn checked_list(
    field: &str,
    noun: &str,
    mut items: Vec<String>,
    max: usize,
    bad: impl Fn(&str) -> String,
) -> Result<Vec<String>, StoreError> {
    // Counted as given, repeats too, as the API document bounds the list.
    if items.len() > MAX_SHARED_GROUPS {
        return Err(StoreError::Invalid(format!(
            "field `{field}`: {} {noun}, more than the {MAX_SHARED_GROUPS} allowed",
            items.len()
        )));
    }
    items.sort();
    items.dedup();
    match items
        .iter()
        .find(|item| !(1..=max).contains(&item.chars().count()))
    {
        Some(item) => Err(StoreError::Invalid(format!(
            "field `{field}`: {}",
            bad(item)
        ))),
        None => Ok(items),
    }
}

pub(crate) fn tenant_exists(name: &str) -> StoreError {
    StoreError::Conflict(format!(
        "a tenant named `{name}` exists: choose another name, or make it a token \
         (`POST /v1/tenants/{name}/tokens`)"
    ))
}

pub(crate) fn no_tenant(name: &str) -> StoreError {
    StoreError::NotFound {
        what: "tenant",
        id: name.to_owned(),
    }
}

pub(crate) fn no_token(tenant: &str, token: i64) -> StoreError {
    StoreError::NotFound {
        what: "token",
        id: format!("{token} of tenant {tenant}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_the_same_everywhere() {
        for good in ["acme", "a", "team-7_x", &"z".repeat(64)] {
            assert!(check_tenant_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Acme", "-x", "a b", "a/b", "é", &"z".repeat(65)] {
            let err = check_tenant_name(bad).unwrap_err().to_string();
            assert!(err.contains("field `name`"), "{bad}: {err}");
        }
    }
}
