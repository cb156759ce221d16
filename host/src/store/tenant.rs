//! Tenants: who, besides the admin, may open batches, and the tokens they do it with.
//! A token is `qht_<id>_<secret>`; a store keeps the sha256 of its secret only, so a
//! token is shown once, when it is made, and a stolen copy of the store opens nothing.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Micros, StoreError};

pub type TenantId = i64;

/// Longest tenant name.
pub const MAX_TENANT_NAME: usize = 64;

/// A tenant, as the admin lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TenantInfo {
    pub id: TenantId,
    pub name: String,
    pub created_at: Micros,
    /// Its tokens not revoked.
    pub tokens: u64,
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
