//! `echo`: returns its input unchanged. The smallest qhost task, and the one the
//! benchmarks run to measure what qhost itself costs per task.

wit_bindgen::generate!({ path: "../../wit", world: "qhost:task/task" });

struct Echo;

impl Guest for Echo {
    fn run(input: Vec<u8>, _info: TaskInfo) -> Result<Vec<u8>, String> {
        Ok(input)
    }
}

export!(Echo);
