//! A guard over the driver's sources: every statement goes through a connection's
//! statement cache (`prepare_cached`, or the `Cached` calls that use it: `cached.rs`).
//! Given its text instead, the client prepares it
//! anew on every call, a round trip of its own before the statement runs: on one node's
//! submit → start path such calls cost a tenth of the time (3.02 against 2.68 ms at the
//! median, measured).

/// Files whose statements run once per connection or per process (the schema's
/// migrations and the store's opening), and this one.
const ONCE: [&str; 3] = ["schema.rs", "mod.rs", "prepared.rs"];

/// The calls that run a statement, and the texts that name one directly.
const CALLS: [&str; 4] = [".query(", ".query_one(", ".query_opt(", ".execute("];
const TEXTS: [&str; 3] = ["\"", "include_str!", "r#\""];

/// Each call in `source` whose first argument is a statement's text, by line.
fn uncached(source: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for call in CALLS {
        for (at, _) in source.match_indices(call) {
            let argument = source[at + call.len()..].trim_start();
            if TEXTS.iter().any(|text| argument.starts_with(text)) {
                found.push(source[..at].lines().count());
            }
        }
    }
    found.sort_unstable();
    found
}

#[test]
fn every_statement_is_prepared_once_per_connection() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/store/postgres");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the driver's sources") {
        let path = entry.expect("a source file").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".rs") || ONCE.contains(&name.as_str()) {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a source file");
        found.extend(
            uncached(&source)
                .into_iter()
                .map(|line| format!("{name}:{line}")),
        );
    }
    assert!(
        found.is_empty(),
        "statements given as text, prepared at every call (use prepare_cached): {found:?}"
    );
}

#[test]
fn a_statement_given_as_text_is_found() {
    let source = "let a = tx.query(&stmt, &[]);\nlet b = tx\n    .execute(\n  \"DELETE\", &[]);";
    assert_eq!(uncached(source), [3]);
    assert_eq!(uncached("tx.query_opt(include_str!(\"x.sql\"), &[])"), [1]);
}
