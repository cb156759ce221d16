//! `wordcount`: counts the lines, words and bytes of a text, like `wc`, and returns
//! `{"lines":L,"words":W,"bytes":B}`.
//!
//! Words are maximal runs of bytes that are not ASCII whitespace; lines are counted by
//! their `\n` bytes. Every language's wordcount example follows these rules exactly.

wit_bindgen::generate!({ path: "../../wit", world: "qhost:task/task" });

struct WordCount;

impl Guest for WordCount {
    fn run(input: Vec<u8>, _info: TaskInfo) -> Result<Vec<u8>, String> {
        let lines = input.iter().filter(|&&b| b == b'\n').count();
        let words = input
            .split(|b| b.is_ascii_whitespace())
            .filter(|word| !word.is_empty())
            .count();
        let json = format!(
            r#"{{"lines":{lines},"words":{words},"bytes":{}}}"#,
            input.len()
        );
        Ok(json.into_bytes())
    }
}

export!(WordCount);
