//! `sha256`: CPU work. Input `ROUNDS DATA` (or just `DATA` for one round): hashes DATA,
//! then hashes the digest again, ROUNDS times in all, and returns the last digest in hex.

use sha2::{Digest, Sha256};

wit_bindgen::generate!({ path: "../../wit", world: "qhost:task/task" });

struct Hash;

impl Guest for Hash {
    fn run(input: Vec<u8>, _info: TaskInfo) -> Result<Vec<u8>, String> {
        let (rounds, data) = split_rounds(&input);
        if rounds == 0 {
            return Err("ROUNDS must be at least 1".into());
        }
        let mut digest = Sha256::digest(data);
        for _ in 1..rounds {
            digest = Sha256::digest(digest);
        }
        Ok(to_hex(&digest).into_bytes())
    }
}

/// `1000 hello` is 1000 rounds over `hello`; input without a leading number is one round.
fn split_rounds(input: &[u8]) -> (u64, &[u8]) {
    let text = std::str::from_utf8(input).unwrap_or("");
    if let Some((head, rest)) = text.split_once(' ')
        && let Ok(rounds) = head.parse()
    {
        return (rounds, rest.as_bytes());
    }
    (1, input)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

export!(Hash);
