//! The on-disk cache of precompiled components, so that a restart does not recompile.
//!
//! An artifact is keyed by the component's sha256 and the engine's compatibility hash
//! (wasmtime version and every setting that shapes code). Deserializing is loading native
//! code, so an artifact is trusted only if it proves that this cache wrote it for this very
//! component: each file is `tag || artifact`, the tag an HMAC-SHA256 of the component's
//! digest, the compatibility hash and the artifact, under a key of 32 random bytes kept in
//! the cache directory (`key`, readable by its owner only). A file whose tag does not
//! match (another component's artifact renamed, a damaged or foreign file) is ignored and
//! the component compiled again. The directory is created private and refused when others
//! may write to it. Files are written whole (temporary file, fsync, rename).

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::Digest;

/// Bytes of the key and of each artifact's tag.
const KEY_BYTES: usize = 32;
const TAG_BYTES: usize = 32;
/// Names what the tag covers, so that a tag made for anything else never matches.
const TAG_CONTEXT: &[u8] = b"qhost artifact v1\0";

pub(crate) struct ArtifactCache {
    dir: PathBuf,
    key: [u8; KEY_BYTES],
}

impl ArtifactCache {
    pub(crate) fn open(dir: &Path) -> anyhow::Result<Self> {
        create_private_dir(dir).context("the artifact cache")?;
        let key = read_or_create_key(&dir.join("key"))?;
        Ok(ArtifactCache {
            dir: dir.to_owned(),
            key,
        })
    }

    /// The file of `digest`'s artifact, and the engine's compatibility hash.
    fn path(&self, engine: &Engine, digest: &Digest) -> (PathBuf, u64) {
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let compat = hasher.finish();
        let path = self
            .dir
            .join(format!("{}-{compat:016x}.cwasm", digest.to_hex()));
        (path, compat)
    }

    fn mac(&self, digest: &Digest, compat: u64, artifact: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(TAG_CONTEXT);
        mac.update(&digest.0);
        mac.update(&compat.to_le_bytes());
        mac.update(artifact);
        mac
    }

    /// Loads the cached artifact for `digest`, if there is one this cache wrote for it.
    pub(crate) fn load(&self, engine: &Engine, digest: &Digest) -> Option<Component> {
        let (path, compat) = self.path(engine, digest);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
            Err(err) => {
                tracing::warn!(path = %path.display(), "ignoring an unreadable artifact: {err}");
                return None;
            }
        };
        // What is checked is what is loaded: the bytes read once, not the file again.
        let verified = bytes
            .split_at_checked(TAG_BYTES)
            .filter(|(tag, artifact)| self.mac(digest, compat, artifact).verify_slice(tag).is_ok());
        let Some((_, artifact)) = verified else {
            tracing::warn!(
                path = %path.display(),
                "ignoring an artifact this cache did not write for this component"
            );
            return None;
        };
        // SAFETY: the tag proves that this cache serialized these bytes from this very
        // component with an engine of these settings (see `store`), and wasmtime checks
        // again that they match this engine's version and settings.
        match unsafe { Component::deserialize(engine, artifact) } {
            Ok(component) => Some(component),
            Err(err) => {
                tracing::warn!(path = %path.display(), "ignoring unusable artifact: {err:#}");
                None
            }
        }
    }

    /// Writes `component`'s artifact, with its tag, for the next start.
    pub(crate) fn store(&self, digest: &Digest, component: &Component) -> anyhow::Result<()> {
        let artifact = component.serialize().map_err(anyhow::Error::from)?;
        let (path, compat) = self.path(component.engine(), digest);
        let tag = self.mac(digest, compat, &artifact).finalize().into_bytes();
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)
            .with_context(|| format!("creating a temporary file in {}", self.dir.display()))?;
        file.write_all(&tag)?;
        file.write_all(&artifact)?;
        file.as_file().sync_all()?;
        file.persist(&path)
            .with_context(|| format!("writing artifact {}", path.display()))?;
        Ok(())
    }
}

/// Creates `dir` (and its missing parents) readable by its owner only, and refuses a
/// directory that another user owns or may write to: whoever may write in it could put
/// files there that qhost trusts.
pub fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let meta = std::fs::metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mode = meta.permissions().mode() & 0o7777;
    anyhow::ensure!(
        mode & 0o022 == 0,
        "{} may be written by other users (mode {mode:04o}); make it private with \
         `chmod 700 {}`",
        dir.display(),
        dir.display()
    );
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    anyhow::ensure!(
        meta.uid() == me,
        "{} belongs to another user (uid {}, not {me})",
        dir.display(),
        meta.uid()
    );
    Ok(())
}

/// The cache's key: read, or made of fresh random bytes and written (readable by its owner
/// only) on first use.
fn read_or_create_key(path: &Path) -> anyhow::Result<[u8; KEY_BYTES]> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
            anyhow::ensure!(
                mode & 0o077 == 0,
                "the artifact key {} may be read by other users (mode {mode:04o}); delete it \
                 (compiled components are then compiled again) or `chmod 600` it",
                path.display()
            );
            bytes.try_into().map_err(|_| {
                anyhow::anyhow!(
                    "the artifact key {} is not {KEY_BYTES} bytes; delete it (compiled \
                     components are then compiled again)",
                    path.display()
                )
            })
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let mut key = [0u8; KEY_BYTES];
            getrandom::fill(&mut key).map_err(|e| anyhow::anyhow!("random source: {e}"))?;
            let dir = path.parent().expect("the key is in the cache directory");
            // A temporary file is created readable by its owner only.
            let mut file = tempfile::NamedTempFile::new_in(dir)
                .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
            file.write_all(&key)?;
            file.as_file().sync_all()?;
            match file.persist_noclobber(path) {
                Ok(_) => Ok(key),
                // Another process made it first: use theirs.
                Err(err) if err.error.kind() == std::io::ErrorKind::AlreadyExists => {
                    read_or_create_key(path)
                }
                Err(err) => Err(err.error).with_context(|| format!("writing {}", path.display())),
            }
        }
        Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
    }
}
