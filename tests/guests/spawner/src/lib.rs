//! `spawner`: a task that submits children as its input says, within its rights or past
//! them (the `task-spawn` world). Input is `COMMAND` or `COMMAND:ARGUMENT`; each returns
//! `ok` with what happened, `spawned <ids>` or `refused: <why>`:
//!
//! | command | what it does |
//! |---|---|
//! | `many:N` | submits N children (`echo`-like: this module, input `ok`), stops at the first refusal |
//! | `priority:P` | submits a child of priority P |
//! | `group:G` | submits a child in group G |
//! | `module:M` | submits a child that runs module M (a name or digest), input `ok` |
//! | `mount:NAME` | submits a child with the mount NAME |
//! | `memory:BYTES` | submits a child with that memory limit |
//! | `after:ID` | submits a child that runs after task ID |
//! | `output:ID` | reads the output of task ID |
//! | `loop` | submits a child that does the same, without end |
//! | `twice` | submits the same key twice: both calls name one child |
//! | `crash` | submits children `a`, `b`, `c`; traps on its first attempt; on its second, suspends; then returns how many children it read |
//! | `sleep:MS` | sleeps MS milliseconds, returns `ok` |
//! | `wait:MS` | submits a child that sleeps MS milliseconds and suspends; then returns `done` |
//! | `fan:N` | submits children `n0`..`n{N-1}` with input `num:I`, and suspends; then returns `sum S of K`, the sum of the K outputs it read |
//! | `num:I` | returns I |
//! | `trickle:N` | submits N children one at a time, 20 ms apart; returns a line `ID MICROS` per child, the wall-clock time just before its submit |
//! | `ok` | returns `ok` |

wit_bindgen::generate!({ path: "../../../wit", world: "qhost:task/task-spawn" });

use qhost::task::graph::inputs;
use qhost::task::spawn::{Child, Mount, output, saved, submit, suspend};

struct Spawner;

fn child(key: &str, input: &str) -> Child {
    Child {
        key: key.into(),
        module: None,
        input: input.as_bytes().to_vec(),
        after: Vec::new(),
        group: None,
        priority: None,
        memory: None,
        timeout_ms: None,
        mounts: Vec::new(),
        max_attempts: None,
    }
}

fn said(result: Result<u64, String>) -> Vec<u8> {
    match result {
        Ok(id) => format!("spawned {id}").into_bytes(),
        Err(why) => format!("refused: {why}").into_bytes(),
    }
}

impl Guest for Spawner {
    fn run(input: Vec<u8>, info: TaskInfo) -> Result<Vec<u8>, String> {
        let input = String::from_utf8(input).map_err(|_| "input is not UTF-8")?;
        let (command, arg) = input.split_once(':').unwrap_or((&input, ""));
        let number = || arg.parse::<u64>().map_err(|e| format!("`{arg}`: {e}"));
        Ok(match command {
            "ok" => b"ok".to_vec(),
            "many" => {
                let mut ids = Vec::new();
                for n in 0..number()? {
                    match submit(&child(&format!("c{n}"), "ok")) {
                        Ok(id) => ids.push(id.to_string()),
                        Err(why) => {
                            return Ok(format!("spawned {}; refused: {why}", ids.len()).into_bytes());
                        }
                    }
                }
                format!("spawned {}", ids.len()).into_bytes()
            }
            "priority" => said(submit(&Child {
                priority: Some(arg.parse().map_err(|_| "a priority")?),
                ..child("p", "ok")
            })),
            "group" => said(submit(&Child {
                group: Some(arg.into()),
                ..child("g", "ok")
            })),
            "module" => said(submit(&Child {
                module: Some(arg.into()),
                ..child("m", "ok")
            })),
            "mount" => said(submit(&Child {
                mounts: vec![Mount {
                    name: arg.into(),
                    writable: false,
                }],
                ..child("m", "ok")
            })),
            "memory" => said(submit(&Child {
                memory: Some(number()?),
                ..child("mem", "ok")
            })),
            "after" => said(submit(&Child {
                after: vec![number()?],
                ..child("a", "ok")
            })),
            "output" => match output(number()?) {
                Ok(out) => format!("output {:?}", out.map(|o| o.len())).into_bytes(),
                Err(why) => format!("refused: {why}").into_bytes(),
            },
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_millis(number()?));
                b"ok".to_vec()
            }
            "wait" => {
                if saved()?.is_some() {
                    return Ok(b"done".to_vec());
                }
                submit(&child("sleeper", &format!("sleep:{arg}")))?;
                suspend(b"")?;
                Vec::new()
            }
            "num" => number()?.to_string().into_bytes(),
            "trickle" => {
                let mut lines = String::new();
                for n in 0..number()? {
                    let at = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_err(|e| e.to_string())?
                        .as_micros();
                    let id = submit(&child(&format!("t{n}"), "ok"))?;
                    lines.push_str(&format!("{id} {at}\n"));
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                lines.into_bytes()
            }
            "fan" => {
                if saved()?.is_some() {
                    let mut sum = 0u64;
                    let ends = inputs()?;
                    for end in &ends {
                        let text = std::str::from_utf8(&end.output).map_err(|_| "not UTF-8")?;
                        sum += text.parse::<u64>().map_err(|e| format!("`{text}`: {e}"))?;
                    }
                    return Ok(format!("sum {sum} of {}", ends.len()).into_bytes());
                }
                for n in 0..number()? {
                    submit(&child(&format!("n{n}"), &format!("num:{n}")))?;
                }
                suspend(b"fanned")?;
                Vec::new()
            }
            "loop" => said(submit(&child("again", "loop"))),
            "twice" => {
                let first = submit(&child("same", "ok"))?;
                let second = submit(&child("same", "ok"))?;
                format!("{first} {second}").into_bytes()
            }
            "crash" => {
                if saved()?.is_some() {
                    return Ok(format!("read {}", inputs()?.len()).into_bytes());
                }
                for key in ["a", "b", "c"] {
                    submit(&child(key, "ok"))?;
                }
                if info.attempt == 1 {
                    core::arch::wasm32::unreachable();
                }
                suspend(b"waiting")?;
                Vec::new()
            }
            other => return Err(format!("unknown command `{other}`")),
        })
    }
}

export!(Spawner);
