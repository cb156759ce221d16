//! Requests that stay open (`/wait`, `/events`): how many one credential, and all batch
//! handles and tenants together, may hold at once. Past either bound a request is answered `429`,
//! before it waits. The admin's have a bound of their own, outside the handles' total, so
//! that handles holding every long request they may leave the admin room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::auth::Holder;
use super::error::ApiError;
use crate::scheduler::Access;

/// The admin's long requests at once.
pub const ADMIN_LONG_REQUESTS: usize = 256;

/// How many long requests may be open.
#[derive(Debug, Clone, Copy)]
pub struct LongLimits {
    /// Per batch handle.
    pub per_credential: usize,
    /// All batch handles together.
    pub total: usize,
}

impl Default for LongLimits {
    fn default() -> Self {
        LongLimits {
            per_credential: 16,
            total: 2500,
        }
    }
}

#[derive(Default)]
struct Held {
    handles: usize,
    by: HashMap<Holder, usize>,
}

/// The long requests open now.
#[derive(Clone, Default)]
pub struct LongPolls {
    limits: LongLimits,
    held: Arc<Mutex<Held>>,
}

/// One long request, counted until dropped.
pub struct LongPermit {
    held: Arc<Mutex<Held>>,
    holder: Holder,
}

impl LongPolls {
    pub fn new(limits: LongLimits) -> Self {
        LongPolls {
            limits,
            held: Arc::default(),
        }
    }

    /// A permit for a long request of `access`, or `429` past its bound.
    pub fn take(&self, access: &Access) -> Result<LongPermit, ApiError> {
        let holder = Holder::of(access)?;
        let mut held = self.held.lock().expect("long requests lock");
        let mine = held.by.get(&holder).copied().unwrap_or(0);
        let refused = ApiError::too_many;
        match holder {
            Holder::Admin if mine >= ADMIN_LONG_REQUESTS => {
                return Err(refused(format!(
                    "the admin holds {ADMIN_LONG_REQUESTS} waits and event streams already, \
                     the most it may; close one first"
                )));
            }
            Holder::Batch(_) | Holder::Tenant(_) if mine >= self.limits.per_credential => {
                return Err(refused(format!(
                    "this credential holds {} waits and event streams already, the most one \
                     credential may; close one first",
                    self.limits.per_credential
                )));
            }
            Holder::Batch(_) | Holder::Tenant(_) if held.handles >= self.limits.total => {
                return Err(refused(format!(
                    "batch handles and tenants hold {} waits and event streams already, the most the \
                     server takes; try again shortly",
                    self.limits.total
                )));
            }
            Holder::Batch(_) | Holder::Tenant(_) => held.handles += 1,
            Holder::Admin => {}
        }
        *held.by.entry(holder).or_default() += 1;
        Ok(LongPermit {
            held: self.held.clone(),
            holder,
        })
    }
}

impl Drop for LongPermit {
    fn drop(&mut self) {
        let mut held = self.held.lock().expect("long requests lock");
        if self.holder != Holder::Admin {
            held.handles -= 1;
        }
        if let Some(n) = held.by.get_mut(&self.holder) {
            *n -= 1;
            if *n == 0 {
                held.by.remove(&self.holder);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_tenants_are_bounded_each_and_together_and_the_admin_apart() {
        let polls = LongPolls::new(LongLimits {
            per_credential: 2,
            total: 3,
        });
        let handle = |batch: i64| Access::Handle(format!("qhb_{batch}_{}", "0".repeat(64)));
        let a1 = polls.take(&handle(1)).unwrap();
        let _a2 = polls.take(&handle(1)).unwrap();
        let refused = |access: &Access| match polls.take(access) {
            Ok(_) => panic!("let in past its bound"),
            Err(err) => err.detail().to_owned(),
        };
        assert!(refused(&handle(1)).contains("this credential"));
        let _b1 = polls.take(&handle(2)).unwrap();
        assert!(refused(&handle(3)).contains("batch handles and tenants"));
        assert!(refused(&Access::Tenant(7)).contains("batch handles and tenants"));
        let admin: Vec<_> = (0..10)
            .map(|_| polls.take(&Access::Admin).unwrap())
            .collect();
        drop(a1);
        let _t1 = polls.take(&Access::Tenant(7)).unwrap();
        assert!(refused(&handle(3)).contains("batch handles and tenants"));
        drop(admin);
    }
}
