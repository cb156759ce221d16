//! The most a tenant's tasks may ask of each limit a task asks (memory, time, outbound
//! HTTP), within the operator's maxima, and what a task of the tenant that asks none of
//! one gets: the server's default, or the tenant's maximum when that is lower.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::runtime::TaskLimits;
use crate::units::{parse_bytes, parse_duration};

/// The most a tenant's tasks may ask, each written as a task asks it (`"32MiB"`, `"5m"`,
/// a count); one left out: the operator's maximum. Answers leave it out too, as asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantMaxima {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_requests: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_sent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_received: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_timeout: Option<String>,
}

impl TenantMaxima {
    /// `base` with each maximum given here in place of its own; a refusal names the
    /// field (`max_limits.<name>`).
    fn over(&self, base: &TaskLimits) -> Result<TaskLimits, String> {
        let field = |name: &str, e: String| format!("field `max_limits.{name}`: {e}");
        let mut limits = *base;
        let sizes = [
            ("memory", &self.memory, &mut limits.memory),
            ("http_sent", &self.http_sent, &mut limits.http_sent),
            (
                "http_received",
                &self.http_received,
                &mut limits.http_received,
            ),
        ];
        for (name, text, limit) in sizes {
            if let Some(text) = text {
                *limit = parse_bytes(text).map_err(|e| field(name, e))?;
            }
        }
        let times = [
            ("timeout", &self.timeout, &mut limits.timeout),
            ("http_timeout", &self.http_timeout, &mut limits.http_timeout),
        ];
        for (name, text, limit) in times {
            if let Some(text) = text {
                *limit = parse_duration(text).map_err(|e| field(name, e))?;
            }
        }
        if let Some(requests) = self.http_requests {
            limits.http_requests = requests;
        }
        Ok(limits)
    }

    /// Whether each maximum reads, and is within the operator's `maxima`.
    pub fn check(&self, maxima: &TaskLimits) -> Result<(), String> {
        self.over(maxima)?
            .check_within(maxima)
            .map_err(|e| format!("field `max_limits`: {e}, the server's"))
    }

    /// The maxima in force for the tenant's tasks: its own, each within the operator's
    /// `maxima` as they are now (an operator's maximum lowered since wins).
    pub fn within(&self, maxima: &TaskLimits) -> TaskLimits {
        self.over(maxima).unwrap_or(*maxima).at_most(maxima)
    }

    /// What a task of the tenant gets of a limit it does not ask: the server's
    /// `defaults`, or the tenant's maximum where that is lower.
    pub fn defaults(&self, defaults: &TaskLimits, maxima: &TaskLimits) -> TaskLimits {
        defaults.at_most(&self.within(maxima))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn maxima(json: &str) -> TenantMaxima {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_tenants_maxima_lower_the_operators_and_the_defaults_under_them() {
        let operator = TaskLimits::default_maxima();
        let own = maxima(r#"{"memory": "32MiB", "timeout": "1m", "http_requests": 5}"#);
        assert_eq!(own.check(&operator), Ok(()));
        let within = own.within(&operator);
        assert_eq!(within.memory, 32 * 1024 * 1024);
        assert_eq!(within.timeout, Duration::from_secs(60));
        assert_eq!(within.http_requests, 5);
        assert_eq!(
            within.http_received, operator.http_received,
            "left out: the operator's"
        );
        let defaults = own.defaults(&TaskLimits::default(), &operator);
        assert_eq!(
            defaults.memory,
            32 * 1024 * 1024,
            "the default 64 MiB is above it"
        );
        assert_eq!(
            defaults.timeout,
            Duration::from_secs(30),
            "the default 30s is below it"
        );
        assert_eq!(defaults.http_requests, 5);
    }

    #[test]
    fn a_maximum_above_the_operators_or_unreadable_is_refused_by_name() {
        let operator = TaskLimits::default_maxima();
        let above = maxima(r#"{"memory": "8GiB"}"#)
            .check(&operator)
            .unwrap_err();
        assert!(
            above.contains("max_limits") && above.contains("memory"),
            "{above}"
        );
        let unread = maxima(r#"{"timeout": "soon"}"#)
            .check(&operator)
            .unwrap_err();
        assert!(unread.contains("max_limits.timeout"), "{unread}");
        assert!(serde_json::from_str::<TenantMaxima>(r#"{"output": "1MiB"}"#).is_err());
        // An operator's maximum lowered since the tenant's was set wins.
        let mut lowered = operator;
        lowered.memory = 16 * 1024 * 1024;
        assert_eq!(
            maxima(r#"{"memory": "32MiB"}"#).within(&lowered).memory,
            lowered.memory
        );
    }
}
