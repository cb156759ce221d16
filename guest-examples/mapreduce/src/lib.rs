//! `mapreduce`: word frequencies by map-reduce over children (the `task-spawn` world).
//!
//! Submitted with a text, a task is the reducer: on its first run it submits one child
//! per non-empty line (the mappers, this same module, on input `map:<line>`, key
//! `part-<n>`), saves how many it submitted and suspends, giving its slot back. Once
//! every mapper has ended it runs again: it reads their outputs through
//! `qhost:task/graph`, merges them and returns `word count` lines, most frequent first
//! (ties by word), ending with `parts N`. A mapper returns its line's `word count` lines.
//!
//! A reducer that crashes mid-fan-out runs again and submits the same keys: it gets the
//! children it submitted before, not new ones. A mapper that failed is reported as
//! `failed N` instead of being merged.

wit_bindgen::generate!({ path: "../../wit", world: "qhost:task/task-spawn" });

use std::collections::BTreeMap;

use qhost::task::graph::{Ended, inputs};
use qhost::task::spawn::{Child, saved, submit, suspend};

const MAP: &str = "map:";

struct MapReduce;

impl Guest for MapReduce {
    fn run(input: Vec<u8>, _info: TaskInfo) -> Result<Vec<u8>, String> {
        let text = String::from_utf8(input).map_err(|_| "the input is not UTF-8".to_string())?;
        if let Some(line) = text.strip_prefix(MAP) {
            return Ok(render(&count(line)));
        }
        match saved()? {
            None => fan_out(&text),
            Some(state) => merge(&state),
        }
    }
}

/// Submits one mapper per non-empty line, then suspends until they end.
fn fan_out(text: &str) -> Result<Vec<u8>, String> {
    let mut parts = 0u32;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        submit(&Child {
            key: format!("part-{parts}"),
            module: None,
            input: format!("{MAP}{line}").into_bytes(),
            after: Vec::new(),
            group: None,
            priority: None,
            memory: None,
            timeout_ms: None,
            mounts: Vec::new(),
            max_attempts: None,
        })?;
        parts += 1;
    }
    suspend(&parts.to_le_bytes())?;
    Ok(Vec::new())
}

/// Merges the mappers' counts, once they have ended.
fn merge(state: &[u8]) -> Result<Vec<u8>, String> {
    let parts = u32::from_le_bytes(state.try_into().map_err(|_| "a state of 4 bytes")?);
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    let mut failed = 0;
    for part in inputs()? {
        if part.ended != Ended::Succeeded {
            failed += 1;
            continue;
        }
        let lines = String::from_utf8(part.output).map_err(|_| "a mapper's output is not UTF-8")?;
        for line in lines.lines() {
            let (word, n) = line
                .rsplit_once(' ')
                .ok_or("a mapper's line is `word count`")?;
            *total.entry(word.to_owned()).or_default() +=
                n.parse::<u64>().map_err(|e| e.to_string())?;
        }
    }
    let mut out = render(&total);
    out.extend(format!("parts {parts}\n").into_bytes());
    if failed > 0 {
        out.extend(format!("failed {failed}\n").into_bytes());
    }
    Ok(out)
}

/// The words of `line`, lower-cased, with their counts.
fn count(line: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for word in line
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *counts.entry(word.to_lowercase()).or_default() += 1;
    }
    counts
}

/// `word count` lines, most frequent first, ties by word.
fn render(counts: &BTreeMap<String, u64>) -> Vec<u8> {
    let mut sorted: Vec<(&String, &u64)> = counts.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    sorted
        .iter()
        .map(|(w, n)| format!("{w} {n}\n"))
        .collect::<String>()
        .into_bytes()
}

export!(MapReduce);
