//! What a task may touch: the per-attempt WASI context (deny by default), the operator's
//! named mounts, and the host side of the `qhost:task/host` interface.
//!
//! A fresh context gets no arguments, no environment, no stdin, no sockets and no
//! directories; stdout and stderr go to bounded captures. Besides outbound HTTP, which has
//! its own gate (`http_gate.rs`), the one capability a task can be granted is a directory
//! mount the operator defined by name, read-only unless the operator allowed writes. Paths
//! inside a mount are resolved by cap-std, so `..` and symbolic links never lead outside
//! it, and the links a task makes point only down (`links.rs`).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::qhost::task::{host, types};
use super::capture::{LogCapture, OutputCapture};
use super::http_gate::HttpGate;
use super::limits::MemoryLimiter;
use super::outcome::LogLevel;

/// A directory the operator offers to tasks under a name (`NAME=DIR[:ro|:rw]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub name: String,
    pub dir: PathBuf,
    /// Whether tasks may be granted write access at all.
    pub writable: bool,
}

impl FromStr for Mount {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let (name, rest) = spec
            .split_once('=')
            .ok_or_else(|| format!("mount `{spec}` is not of the form NAME=DIR[:ro|:rw]"))?;
        check_mount_name(name)?;
        let (dir, writable) = match rest.rsplit_once(':') {
            Some((dir, "ro")) => (dir, false),
            Some((dir, "rw")) => (dir, true),
            _ => (rest, false),
        };
        if dir.is_empty() {
            return Err(format!("mount `{spec}` names no directory"));
        }
        Ok(Mount {
            name: name.to_owned(),
            dir: PathBuf::from(dir),
            writable,
        })
    }
}

impl fmt::Display for Mount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = if self.writable { "rw" } else { "ro" };
        write!(f, "{}={}:{mode}", self.name, self.dir.display())
    }
}

/// Mount names are also the guest path (`/NAME`): keep them plain.
pub fn check_mount_name(name: &str) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || name.len() > 64 || !name.chars().all(plain) {
        return Err(format!(
            "mount name `{name}` must be 1 to 64 letters, digits, `-` or `_`"
        ));
    }
    Ok(())
}

/// A task's request to use one of the operator's mounts, seen by the guest at `/NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MountGrant {
    /// One of the server's mounts.
    pub name: String,
    /// Whether the task may write to it: only to a mount the server gave as writable.
    #[serde(default)]
    pub writable: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MountError {
    /// Names no other mount: a tenant learns nothing of the operator's.
    #[error("no mount is named `{name}`; ask the operator which mounts tasks may use")]
    Unknown { name: String },
    #[error("mount `{name}` is read-only; the operator did not allow tasks to write to it")]
    ReadOnly { name: String },
}

/// Checks `grants` against the operator's `mounts`.
pub fn check_grants(mounts: &[Mount], grants: &[MountGrant]) -> Result<(), MountError> {
    for grant in grants {
        let mount = find_mount(mounts, &grant.name)?;
        if grant.writable && !mount.writable {
            return Err(MountError::ReadOnly {
                name: grant.name.clone(),
            });
        }
    }
    Ok(())
}

fn find_mount<'a>(mounts: &'a [Mount], name: &str) -> Result<&'a Mount, MountError> {
    mounts
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| MountError::Unknown {
            name: name.to_owned(),
        })
}

/// Builds the WASI context of one attempt: nothing but captured stdout and stderr and the
/// granted mounts.
pub(crate) fn wasi_context(
    mounts: &[Mount],
    grants: &[MountGrant],
    stdout: &OutputCapture,
    stderr: &OutputCapture,
) -> anyhow::Result<WasiCtx> {
    check_grants(mounts, grants)?;
    let mut builder = WasiCtxBuilder::new();
    builder
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    for grant in grants {
        let mount = find_mount(mounts, &grant.name)?;
        let perms = if grant.writable {
            FsPerms::ReadWrite
        } else {
            FsPerms::ReadOnly
        };
        builder
            .preopened_dir(&mount.dir, format!("/{}", mount.name), perms)
            .map_err(anyhow::Error::from)
            .map_err(|e| e.context(format!("opening mount `{mount}`")))?;
    }
    Ok(builder.build())
}

/// Everything one attempt's `Store` holds.
pub(crate) struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) log: LogCapture,
    pub(crate) http: WasiHttpCtx,
    /// Decides which outbound HTTP requests go out, and keeps their ledger.
    pub(crate) gate: HttpGate,
    /// What `wasi:config/store` answers: the settings its batch was granted.
    pub(crate) config: wasmtime_wasi_config::WasiConfigVariables,
    /// Where `qhost:task/graph` reads the tasks it runs after.
    pub(crate) inputs: Option<super::Inputs>,
    /// Where `qhost:task/spawn` submits children; none outside a batch.
    pub(crate) children: Option<std::sync::Arc<dyn super::Children>>,
    /// The state `suspend` saved: the attempt ends suspended if `run` returns `ok`.
    pub(crate) suspended: Option<Vec<u8>>,
    /// The wait the task asked through `retry-after`, its last call's, within `max_defer`.
    pub(crate) retry_after: Option<Duration>,
    /// The longest wait `retry-after` may ask.
    pub(crate) max_defer: Duration,
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.gate,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for HostState {}

impl host::Host for HostState {
    fn log(&mut self, level: types::Level, message: String) {
        let level = match level {
            types::Level::Trace => LogLevel::Trace,
            types::Level::Debug => LogLevel::Debug,
            types::Level::Info => LogLevel::Info,
            types::Level::Warn => LogLevel::Warn,
            types::Level::Error => LogLevel::Error,
        };
        self.log.push(level, message);
    }

    fn retry_after(&mut self, seconds: u32) {
        self.retry_after = Some(Duration::from_secs(seconds.into()).min(self.max_defer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mount_specs() {
        let ro: Mount = "data=/srv/data".parse().unwrap();
        assert_eq!((ro.name.as_str(), ro.writable), ("data", false));
        let rw: Mount = "out=/tmp/out:rw".parse().unwrap();
        assert_eq!((rw.dir, rw.writable), (PathBuf::from("/tmp/out"), true));
        assert!(
            "../x=/tmp"
                .parse::<Mount>()
                .unwrap_err()
                .contains("mount name")
        );
        assert!("data".parse::<Mount>().unwrap_err().contains("NAME=DIR"));
    }

    #[test]
    fn grants_must_name_a_mount_and_respect_its_mode() {
        let mounts = vec!["data=/srv/data:ro".parse::<Mount>().unwrap()];
        let write = MountGrant {
            name: "data".into(),
            writable: true,
        };
        assert!(matches!(
            check_grants(&mounts, &[write]),
            Err(MountError::ReadOnly { .. })
        ));
        let other = MountGrant {
            name: "etc".into(),
            writable: false,
        };
        let err = check_grants(&mounts, &[other]).unwrap_err();
        assert!(
            err.to_string().contains("no mount is named `etc`")
                && !err.to_string().contains("data"),
            "names only the mount asked for: {err}"
        );
    }
}
