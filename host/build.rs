//! Tells utoipa, which generates the API's OpenAPI document from the code, what the id
//! and time aliases stand for, so that the document gives their type (`integer`, `int64`)
//! rather than a schema named after it.

fn main() {
    utoipa_config::Config::new()
        .alias_for("TaskId", "i64")
        .alias_for("BatchId", "i64")
        .alias_for("Micros", "i64")
        .write_to_file();
    println!("cargo:rerun-if-changed=build.rs");
}
