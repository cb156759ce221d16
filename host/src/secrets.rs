//! The key that seals the secret settings granted to batches, so that a read of the
//! database alone does not reveal them.
//!
//! A secret is sealed with ChaCha20-Poly1305 under a 256-bit key, its setting's name bound
//! in as associated data (a sealed value moved to another name does not open). The key is
//! kept beside the database, in the data directory's `secret-key` file (created on first
//! start, readable by its owner only), or given: `--secret-key-file` or
//! `QHOST_SECRET_KEY` (64 hex digits). The nodes of a PostgreSQL cluster need the same key.

use std::fmt;
use std::path::Path;

use anyhow::Context;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

const NONCE_BYTES: usize = 12;

/// A key that seals and opens secrets.
#[derive(Clone)]
pub struct SecretKey(Key);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    /// A key written as 64 hex digits.
    pub fn from_hex(text: &str) -> anyhow::Result<Self> {
        let bytes = hex::decode(text.trim())
            .ok()
            .filter(|b| b.len() == 32)
            .context("a secret key is 64 hex digits (32 bytes)")?;
        Ok(SecretKey(*Key::from_slice(&bytes)))
    }

    /// A new random key.
    pub fn generate() -> anyhow::Result<Self> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("random source: {e}"))?;
        Ok(SecretKey(bytes.into()))
    }

    /// The key in `path` (64 hex digits), created there, readable by its owner only, if
    /// the file does not exist and `create` is set.
    pub fn load(path: &Path, create: bool) -> anyhow::Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_hex(&text).with_context(|| format!("in {}", path.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && create => {
                let key = Self::generate()?;
                crate::private_file::create(path, &hex::encode(key.0))?;
                Ok(key)
            }
            Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Seals the value of the setting `name`: base64 of the nonce and the ciphertext.
    pub fn seal(&self, name: &str, value: &str) -> anyhow::Result<String> {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::fill(&mut nonce).map_err(|e| anyhow::anyhow!("random source: {e}"))?;
        let sealed = ChaCha20Poly1305::new(&self.0)
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: value.as_bytes(),
                    aad: name.as_bytes(),
                },
            )
            .map_err(|_| anyhow::anyhow!("sealing a secret failed"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(base64::engine::general_purpose::STANDARD.encode(out))
    }

    /// Opens what [`SecretKey::seal`] sealed for `name`; fails under another key.
    pub fn open(&self, name: &str, sealed: &str) -> anyhow::Result<String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(sealed)
            .ok()
            .filter(|b| b.len() > NONCE_BYTES)
            .context("a sealed secret is not base64 of a nonce and a ciphertext")?;
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        let plain = ChaCha20Poly1305::new(&self.0)
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: name.as_bytes(),
                },
            )
            .map_err(|_| {
                anyhow::anyhow!(
                    "the secret `{name}` does not open with this server's secret key: it was \
                     sealed under another"
                )
            })?;
        String::from_utf8(plain).context("a secret opened to bytes that are not UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_under_its_key_and_name_only() {
        let key = SecretKey::generate().unwrap();
        let sealed = key.seal("API_KEY", "s3cr3t-value").unwrap();
        assert!(!sealed.contains("s3cr3t"), "{sealed}");
        assert_eq!(key.open("API_KEY", &sealed).unwrap(), "s3cr3t-value");
        assert!(
            key.open("OTHER", &sealed).is_err(),
            "opened under another name"
        );
        let other = SecretKey::generate().unwrap();
        let err = other.open("API_KEY", &sealed).unwrap_err().to_string();
        assert!(err.contains("another"), "{err}");
        assert_ne!(
            key.seal("API_KEY", "s3cr3t-value").unwrap(),
            sealed,
            "nonce reused"
        );
    }

    #[test]
    fn keys_are_64_hex_digits_and_files_are_created_once() {
        assert!(SecretKey::from_hex("abcd").is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret-key");
        assert!(
            SecretKey::load(&path, false).is_err(),
            "no file, none created"
        );
        let made = SecretKey::load(&path, true).unwrap();
        let again = SecretKey::load(&path, true).unwrap();
        let sealed = made.seal("N", "v").unwrap();
        assert_eq!(again.open("N", &sealed).unwrap(), "v");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
