//! Modules as the command line names them: by the start of the digest `module ls` shows,
//! by a name with a suggestion when it is mistyped; with the languages they were written in; their names beside their digests in
//! the task view, the event stream and the log; and a refused plan that leaves nothing.

use std::io::{BufRead, BufReader};
use std::process::Output;

use qhost_tests::server::{Server, call};
use serde_json::Value;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the exit code, showing what the command said otherwise.
fn expect_code(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
}

fn add_module(server: &Server, guest: &str, name: Option<&str>) {
    let path = qhost_tests::guest(guest);
    let mut args = vec!["module", "add", path.to_str().unwrap()];
    if let Some(name) = name {
        args.extend(["--name", name]);
    }
    expect_code(&server.run(&args), 0);
}

/// The DIGEST column of `module ls` in the row of a module (found by its name).
fn shown_digest(server: &Server, name: &str) -> String {
    let listed = server.run(&["module", "ls"]);
    expect_code(&listed, 0);
    let table = stdout(&listed);
    table
        .lines()
        .find(|row| row.split_whitespace().nth(1) == Some(name))
        .and_then(|row| row.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {name} in {table}"))
        .to_owned()
}

#[test]
fn the_digest_module_ls_shows_names_the_module() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "echo", Some("echo"));
    add_module(&server, "sleep", None);
    let echo = shown_digest(&server, "echo");
    assert_eq!(echo.len(), 12, "{echo}");

    // Its languages, as the upload read them from the component.
    let table = stdout(&server.run(&["module", "ls"]));
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["DIGEST", "NAMES", "TAG", "BYTES", "LANGUAGES", "ADDED"]
    );
    let row = table.lines().find(|row| row.contains(" echo ")).unwrap();
    assert!(row.contains("  Rust, C11  "), "{table}");

    let output = server.run(&["submit", "--module", &echo, "--input", "hi", "--wait"]);
    expect_code(&output, 0);
    assert_eq!(stdout(&output), "hi\n");

    let short = server.run(&["submit", "--module", &echo[..4], "--input", "hi"]);
    expect_code(&short, 2);
    assert!(
        stderr(&short).contains("too short: give at least 6 hex digits"),
        "{}",
        stderr(&short)
    );

    // The nameless module, by the start of its digest alone.
    let modules: Value =
        serde_json::from_str(&stdout(&server.run(&["module", "ls", "--json"]))).unwrap();
    let sleep = modules
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"].is_null())
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let output = server.run(&["module", "rm", &sleep[..12]]);
    expect_code(&output, 0);
    assert_eq!(stdout(&output), format!("deleted {sleep}\n"));
    let left = stdout(&server.run(&["module", "ls", "--json"]));
    assert!(!left.contains(&sleep), "{left}");
    assert!(server.stop().success());
}

#[test]
fn views_name_the_module_beside_its_digest() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "echo", Some("echo"));
    let digest = {
        let modules: Value =
            serde_json::from_str(&stdout(&server.run(&["module", "ls", "--json"]))).unwrap();
        modules[0]["digest"].as_str().unwrap().to_owned()
    };
    let output = server.run(&["submit", "--module", "echo", "--input", "x", "--json"]);
    expect_code(&output, 0);
    let submitted: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let (task, batch, handle) = (
        submitted["task"].to_string(),
        submitted["batch"].to_string(),
        submitted["handle"].as_str().unwrap().to_owned(),
    );

    // The event stream ends once the task has: its event names the module.
    let mut response = ureq::get(format!("{}/v1/batches/{batch}/events", server.url))
        .header("Authorization", format!("Bearer {handle}"))
        .call()
        .unwrap();
    // The data of the first `task` event (a `started` event may come before it).
    let mut name = String::new();
    let event: Value = BufReader::new(response.body_mut().as_reader())
        .lines()
        .map(Result::unwrap)
        .find_map(|line| {
            if let Some(event) = line.strip_prefix("event: ") {
                name = event.to_owned();
            }
            let data = line.strip_prefix("data: ").filter(|_| name == "task")?;
            serde_json::from_str(data).ok()
        })
        .expect("a task event");
    assert_eq!(
        (event["module"].as_str(), event["module_name"].as_str()),
        (Some(digest.as_str()), Some("echo")),
        "{event}"
    );

    let shown: Value =
        serde_json::from_str(&stdout(&server.run(&["task", "show", &task, "--json"]))).unwrap();
    assert_eq!(shown["module_name"], "echo", "{shown}");
    assert_eq!(shown["log"][0]["module"], digest.as_str(), "{shown}");
    assert_eq!(shown["log"][0]["module_name"], "echo", "{shown}");
    let text = stdout(&server.run(&["task", "show", &task]));
    assert!(
        text.contains(&format!("module    {digest} (echo)")),
        "{text}"
    );

    let (status, page) = call(
        "GET",
        &format!("{}/v1/attempts?task={task}", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(page["attempts"][0]["module_name"], "echo", "{page}");
    let table = stdout(&server.run(&["log", "--task", &task]));
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let column = header.iter().position(|h| *h == "MODULE").expect(&table);
    assert_eq!(row[column], "echo", "{table}");
    assert!(server.stop().success());
}

#[test]
fn a_refused_plan_leaves_no_batch_and_a_mistyped_name_gets_a_suggestion() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "echo", Some("echo"));
    let plan = data.path().join("typo.toml");
    std::fs::write(
        &plan,
        "[[task]]\nmodule = \"echo\"\n[[task]]\nmodule = \"ehco\"\n",
    )
    .unwrap();
    let output = server.run(&["batch", "submit", plan.to_str().unwrap()]);
    expect_code(&output, 2);
    assert!(
        stderr(&output).contains(
            "task 1: field `module`: no module has the digest or name `ehco`; did you mean `echo`?"
        ),
        "{}",
        stderr(&output)
    );
    let alone = server.run(&["submit", "--module", "ECHO"]);
    expect_code(&alone, 2);
    assert!(
        stderr(&alone).contains("did you mean `echo`?"),
        "{}",
        stderr(&alone)
    );

    // The refused plan and task opened nothing: the batch opened next is the first of all.
    let opened: Value =
        serde_json::from_str(&stdout(&server.run(&["batch", "open", "--json"]))).unwrap();
    let next = opened["batch"]["id"].as_i64().unwrap();
    assert_eq!(next, 1, "a refused plan opened a batch");
    for id in 1..next {
        let (status, body) = call(
            "GET",
            &format!("{}/v1/batches/{id}", server.url),
            Some(&server.token),
            None,
        );
        assert_eq!(status, 404, "batch {id} was left behind: {body}");
    }
    assert!(server.stop().success());
}

/// Runs `submit --module MODULE --wait` with input `hi`: its exit code and stdout.
fn submit_by(server: &Server, module: &str) -> (Option<i32>, String) {
    let output = server.run(&["submit", "--module", module, "--input", "hi", "--wait"]);
    (output.status.code(), stdout(&output))
}

#[test]
fn names_are_aliases_and_a_moved_name_says_where_from() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    add_module(&server, "echo", Some("echo"));
    // The same component again under a second name: it keeps the first.
    let again = server.run(&[
        "module",
        "add",
        qhost_tests::guest("echo").to_str().unwrap(),
        "--name",
        "echo2",
    ]);
    expect_code(&again, 0);
    assert!(
        stdout(&again).contains(", named echo, echo2"),
        "{}",
        stdout(&again)
    );
    for name in ["echo", "echo2"] {
        assert_eq!(submit_by(&server, name), (Some(0), "hi\n".into()), "{name}");
    }
    let listed = stdout(&server.run(&["module", "ls"]));
    assert!(listed.contains(" echo, echo2 "), "module ls: {listed}");

    // Another component takes `echo2`: that name alone moves, and the answer says so.
    let (status, echo) = call(
        "GET",
        &format!("{}/v1/modules", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200);
    let echo_digest = echo[0]["digest"].as_str().unwrap().to_owned();
    let moved = server.run(&[
        "module",
        "add",
        qhost_tests::guest("sleep").to_str().unwrap(),
        "--name",
        "echo2",
    ]);
    expect_code(&moved, 0);
    assert!(
        stdout(&moved).contains(&format!(
            "the name echo2 moved here from {echo_digest}, which keeps its other names"
        )),
        "{}",
        stdout(&moved)
    );
    assert_eq!(submit_by(&server, "echo"), (Some(0), "hi\n".into()));
    let (code, _) = submit_by(&server, "echo2");
    assert_ne!(
        code,
        Some(0),
        "echo2 names the sleep guest now, which wants a number"
    );

    // A name removed: the module stays, by its digest.
    let removed = server.run(&["module", "unname", "echo"]);
    expect_code(&removed, 0);
    let gone = server.run(&["submit", "--module", "echo", "--input", "hi"]);
    expect_code(&gone, 2);
    assert!(
        stderr(&gone).contains("no module has the digest or name `echo`"),
        "{}",
        stderr(&gone)
    );
    assert_eq!(submit_by(&server, &echo_digest), (Some(0), "hi\n".into()));
}
