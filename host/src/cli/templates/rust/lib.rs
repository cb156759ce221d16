//! {{name}}: a qhost task. Its input is a name; its output greets it.

use qhost_guest::{TaskInfo, info};

/// Runs once per attempt, on the task's input. `Err` ends the attempt with outcome
/// `guest-error` (and it is retried while attempts are left); a panic traps.
///
/// JSON in and out: `let request: Request = qhost_guest::json(input)?;` and
/// `Ok(qhost_guest::Json(reply))`, with serde's derive on the types
/// (`serde = { version = "1", features = ["derive"] }` in Cargo.toml).
#[qhost_guest::task]
fn run(input: &[u8], task: &TaskInfo) -> Result<String, String> {
    let name = std::str::from_utf8(input)
        .map_err(|e| format!("the input is not UTF-8 text: {e}"))?
        .trim();
    if name.is_empty() {
        return Err("the input is empty: give a name, such as --input world".into());
    }
    info!("task {} attempt {}: {} bytes", task.id, task.attempt, input.len());
    Ok(format!("Hello, {name}!"))
}
