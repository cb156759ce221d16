//! `sleep`: sleeps for the number of milliseconds given as input (like a database
//! scheduler's `waitfor delay` task), then returns `slept N ms`.

use std::time::Duration;

use qhost::task::host::log;
use qhost::task::types::Level;

wit_bindgen::generate!({ path: "../../wit", world: "qhost:task/task" });

struct Sleep;

impl Guest for Sleep {
    fn run(input: Vec<u8>, info: TaskInfo) -> Result<Vec<u8>, String> {
        let text = String::from_utf8_lossy(&input);
        let millis: u64 = text.trim().parse().map_err(|_| {
            format!(
                "input must be a number of milliseconds, got `{}`",
                text.trim()
            )
        })?;
        log(
            Level::Info,
            &format!("task {} sleeping {millis} ms", info.id),
        );
        std::thread::sleep(Duration::from_millis(millis));
        Ok(format!("slept {millis} ms").into_bytes())
    }
}

export!(Sleep);
