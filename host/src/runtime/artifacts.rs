//! The on-disk cache of precompiled components, so that a restart does not recompile.
//!
//! An artifact is keyed by the component's sha256 and the engine's compatibility hash
//! (wasmtime version and every setting that shapes code). Deserializing native code is
//! only safe for artifacts this process family wrote, so the cache lives in a directory of
//! qhost's own, files are written whole (temporary file, fsync, rename) and nothing from
//! outside is ever read as an artifact.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::Digest;

pub(crate) struct ArtifactCache {
    dir: PathBuf,
}

impl ArtifactCache {
    pub(crate) fn open(dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the artifact cache {}", dir.display()))?;
        Ok(ArtifactCache {
            dir: dir.to_owned(),
        })
    }

    fn path(&self, engine: &Engine, digest: &Digest) -> PathBuf {
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        self.dir.join(format!(
            "{}-{:016x}.cwasm",
            digest.to_hex(),
            hasher.finish()
        ))
    }

    /// Loads the cached artifact for `digest`, if there is a usable one.
    pub(crate) fn load(&self, engine: &Engine, digest: &Digest) -> Option<Component> {
        let path = self.path(engine, digest);
        if !path.exists() {
            return None;
        }
        // SAFETY: only files this cache wrote whole (see `store`) are at these paths, and
        // wasmtime checks that the artifact matches this engine's version and settings.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => Some(component),
            Err(err) => {
                tracing::warn!(path = %path.display(), "ignoring unusable artifact: {err:#}");
                None
            }
        }
    }

    /// Writes `component`'s artifact for the next start.
    pub(crate) fn store(&self, digest: &Digest, component: &Component) -> anyhow::Result<()> {
        let bytes = component.serialize().map_err(anyhow::Error::from)?;
        let path = self.path(component.engine(), digest);
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)
            .with_context(|| format!("creating a temporary file in {}", self.dir.display()))?;
        file.write_all(&bytes)?;
        file.as_file().sync_all()?;
        file.persist(&path)
            .with_context(|| format!("writing artifact {}", path.display()))?;
        Ok(())
    }
}
