//! `markdown`: renders its input, CommonMark with the common extensions (tables,
//! footnotes, strikethrough, task lists), to HTML with pulldown-cmark. A task that
//! allocates as real work does, which the benchmarks compare with the same rendering run
//! natively.

wit_bindgen::generate!({ path: "../../wit", world: "qhost:task/task" });

use pulldown_cmark::{Options, Parser, html};

struct Markdown;

impl Guest for Markdown {
    fn run(input: Vec<u8>, _info: TaskInfo) -> Result<Vec<u8>, String> {
        let text = String::from_utf8(input).map_err(|e| format!("input is not UTF-8: {e}"))?;
        let mut out = String::with_capacity(text.len() * 3 / 2);
        html::push_html(&mut out, Parser::new_ext(&text, options()));
        Ok(out.into_bytes())
    }
}

/// The extensions GitHub-flavoured Markdown has; the benchmark renders with the same.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
}

export!(Markdown);
