//! [`Digest`]: the sha256 of a component's bytes, which names a module everywhere in
//! qhost (the store, the API, the artifact cache).

use std::fmt;

use sha2::{Digest as _, Sha256};

/// The sha256 of a component's bytes: its identity everywhere in qhost.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    pub fn of(bytes: &[u8]) -> Self {
        Digest(Sha256::digest(bytes).into())
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn from_hex(text: &str) -> Result<Self, String> {
        let mut digest = [0u8; 32];
        hex::decode_to_slice(text, &mut digest)
            .map_err(|_| format!("`{text}` is not a sha256 digest (64 hex digits)"))?;
        Ok(Digest(digest))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        Digest::from_hex(&text).map_err(serde::de::Error::custom)
    }
}

/// In the API: 64 hex digits (written lowercase, read in either case).
impl utoipa::PartialSchema for Digest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some("^[0-9a-fA-F]{64}$"))
            .description(Some("The sha256 of a component's bytes, in hex"))
            .into()
    }
}

impl utoipa::ToSchema for Digest {}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}
