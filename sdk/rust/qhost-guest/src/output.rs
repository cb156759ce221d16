//! What a task function may return as its output: bytes, text, nothing, or (with the
//! `json` feature) a value serialized as JSON.

/// A task's output. Returned inside `Ok` by a `#[task]` function.
pub trait Output {
    /// The output's bytes, or the error the attempt ends with (outcome `guest-error`).
    fn into_output(self) -> Result<Vec<u8>, String>;
}

impl Output for Vec<u8> {
    fn into_output(self) -> Result<Vec<u8>, String> {
        Ok(self)
    }
}

impl Output for &[u8] {
    fn into_output(self) -> Result<Vec<u8>, String> {
        Ok(self.to_vec())
    }
}

impl Output for String {
    fn into_output(self) -> Result<Vec<u8>, String> {
        Ok(self.into_bytes())
    }
}

impl Output for &str {
    fn into_output(self) -> Result<Vec<u8>, String> {
        Ok(self.as_bytes().to_vec())
    }
}

/// No output: the task succeeds with an empty one.
impl Output for () {
    fn into_output(self) -> Result<Vec<u8>, String> {
        Ok(Vec::new())
    }
}
