//! JSON in and out, by serde: [`json`] reads the input as a value of a type, [`Json`]
//! writes one as the output.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Output;

/// Reads the input as JSON of type `T`. The error says where the input went wrong and
/// what was expected (`?` in a task function makes it the attempt's error):
/// `the input is not the JSON this task takes: missing field `name` at line 1 column 2`.
pub fn json<T: DeserializeOwned>(input: &[u8]) -> Result<T, String> {
    serde_json::from_slice(input)
        .map_err(|e| format!("the input is not the JSON this task takes: {e}"))
}

/// An output serialized as JSON: `Ok(Json(counts))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> Output for Json<T> {
    fn into_output(self) -> Result<Vec<u8>, String> {
        serde_json::to_vec(&self.0)
            .map_err(|e| format!("the output could not be written as JSON: {e}"))
    }
}
