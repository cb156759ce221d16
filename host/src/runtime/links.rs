//! The symbolic links a task may make in a writable mount: only links that point down
//! from where they are.
//!
//! Inside the sandbox cap-std never follows a link out of a mount, but the operator's own
//! programs read those directories too, and a link a task left there to `/etc` or `../..`
//! would lead them out. So `symlink-at` refuses absolute targets and any target with a
//! `..` component. A link that only points down stays inside whatever directory it is in,
//! and so, link by link, inside the mount.

use std::path::{Component, Path};

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::p2::bindings::filesystem::types::{self, Descriptor, ErrorCode, HostDescriptor};

/// The WASI interface whose `symlink-at` this module replaces.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Whether a link to `target` stays below the directory the link is in.
pub fn points_down(target: &str) -> bool {
    Path::new(target)
        .components()
        .all(|part| matches!(part, Component::Normal(_) | Component::CurDir))
}

/// Replaces WASI's `symlink-at` in `linker` (which already holds WASI) by one that
/// refuses links that do not [`points_down`], and makes the others as WASI does.
pub(crate) fn guard_symlinks<T: WasiFilesystemView + 'static>(
    linker: &mut Linker<T>,
) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    linker.instance(FILESYSTEM_TYPES)?.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (dir, target, link): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                if !points_down(&target) {
                    return Ok((Err(ErrorCode::NotPermitted),));
                }
                let mut fs = store.data_mut().filesystem();
                let made = match HostDescriptor::symlink_at(&mut fs, dir, target, link).await {
                    Ok(()) => Ok(()),
                    Err(err) => Err(types::Host::convert_error_code(&mut fs, err)?),
                };
                Ok((made,))
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::points_down;

    #[test]
    fn only_targets_below_the_link_are_allowed() {
        for inside in ["inside.txt", "a/b", "./a", "a/./b"] {
            assert!(points_down(inside), "{inside}");
        }
        for outside in ["/etc/passwd", "../outside", "a/../../outside", "a/..", ".."] {
            assert!(!points_down(outside), "{outside}");
        }
    }
}
