//! What tenants and batches have used, as `GET /v1/usage` and
//! `GET /v1/batches/{id}/usage` show it: the slot time their attempts held, the CPU time
//! they burned, the memory they held and the HTTP bytes they moved, as the sandbox
//! measured each run.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, Budget, BudgetUsed, Micros, TenantInfo};

/// What a tenant has used since it was added, and what it holds now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TenantUsage {
    pub tenant: String,
    /// Its tasks claimed now, and the most it may have (none: no limit).
    pub running: u32,
    #[schema(required = true)]
    pub max_running: Option<u32>,
    /// Its tasks open now (submitted, not ended), and the most it may have.
    pub open: u64,
    #[schema(required = true)]
    pub max_open: Option<u32>,
    /// Its weight: its share of the slots under saturation, against the other tenants'.
    pub weight: u32,
    /// The slot time its attempts have held, in microseconds.
    pub slot_micros: u64,
    /// The CPU time its attempts have used, in microseconds.
    pub cpu_micros: u64,
    /// The memory its attempts have held, in MiB-seconds.
    pub memory_mib_seconds: f64,
    /// The HTTP body bytes its attempts have sent and received.
    pub http_bytes: u64,
    /// Its budget (none: no budget), what was used in its current window, and when its
    /// tasks may start again if the budget is spent (none: they may now).
    #[schema(required = true)]
    pub budget: Option<Budget>,
    pub budget_used: BudgetUsed,
    #[schema(required = true)]
    pub held_until: Option<Micros>,
}

impl From<TenantInfo> for TenantUsage {
    fn from(t: TenantInfo) -> Self {
        TenantUsage {
            tenant: t.name,
            running: t.running,
            max_running: t.max_running,
            open: t.open,
            max_open: t.max_open,
            weight: t.weight,
            slot_micros: t.slot_micros,
            cpu_micros: t.cpu_micros,
            memory_mib_seconds: t.memory_mib_seconds,
            http_bytes: t.http_bytes,
            budget: t.budget,
            budget_used: t.budget_used,
            held_until: t.held_until,
        }
    }
}

/// What a batch's ended attempts have used, summed over its execution log (an attempt
/// counts once it ended; one lost with its node counts its slot time only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BatchUsage {
    pub batch: BatchId,
    /// Its attempts that ended.
    pub attempts: u64,
    /// The slot time they held, in microseconds.
    pub slot_micros: u64,
    /// The CPU time they used, in microseconds.
    pub cpu_micros: u64,
    /// The memory they held, in MiB-seconds.
    pub memory_mib_seconds: f64,
    /// The HTTP body bytes they sent and received.
    pub http_bytes: u64,
}
