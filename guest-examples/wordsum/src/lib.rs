//! `wordsum`: the fan-in of word counts (the `task-graph` world). It runs after any
//! number of `wordcount` tasks (`after` in its submission), reads their outputs through
//! `qhost:task/graph`, and returns their sums as wordcount's JSON, with how many outputs
//! it summed and how many of the tasks it runs after did not succeed:
//! `{"lines":3,"words":12,"bytes":70,"summed":2,"failed":0}`.
//!
//! Submitted with `on_failure = "run"` it runs even when a count failed, and says so in
//! `failed`; with the default (`cancel`) it is cancelled instead. Every language's
//! wordsum example returns the same bytes.

wit_bindgen::generate!({ path: "../../wit", world: "qhost:task/task-graph" });

use qhost::task::graph::{Ended, inputs};

const FIELDS: [&str; 3] = ["lines", "words", "bytes"];

struct WordSum;

impl Guest for WordSum {
    fn run(_input: Vec<u8>, _info: TaskInfo) -> Result<Vec<u8>, String> {
        let mut sums = [0u64; 3];
        let (mut summed, mut failed) = (0, 0);
        for dep in inputs()? {
            if dep.ended != Ended::Succeeded {
                failed += 1;
                continue;
            }
            let text = String::from_utf8(dep.output)
                .map_err(|_| format!("the output of {} is not UTF-8", dep.name))?;
            for (sum, field) in sums.iter_mut().zip(FIELDS) {
                *sum += number(&text, field)
                    .ok_or_else(|| format!("the output of {} has no `{field}`: {text}", dep.name))?;
            }
            summed += 1;
        }
        let [lines, words, bytes] = sums;
        let json = format!(
            r#"{{"lines":{lines},"words":{words},"bytes":{bytes},"summed":{summed},"failed":{failed}}}"#
        );
        Ok(json.into_bytes())
    }
}

/// The whole number after `"field":` in wordcount's JSON.
fn number(json: &str, field: &str) -> Option<u64> {
    let key = format!("\"{field}\":");
    let rest = json[json.find(&key)? + key.len()..].trim_start();
    let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

export!(WordSum);
