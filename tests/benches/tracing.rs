//! What traces cost the drain: `qhost bench` (release build, 100,000 `echo` tasks, 2
//! slots, SQLite) run with traces off and with traces sent to an OTLP receiver on this
//! machine (in this process, on its own threads, decoding each batch of spans as a
//! collector would), alternating, three rounds. Prints each run's rate, the spans the
//! receiver got, and the slowdown: one less the median rate with traces on over the
//! median with traces off:
//!
//!     cargo build --release && cargo bench -p qhost-tests --bench tracing
//!
//! The figure is printed as `figure: drain-traced-slowdown = <value> %`, the line
//! `benches/targets.toml` reads. Run it with RUST_BACKTRACE unset.

use std::process::Command;

use qhost_tests::otlp_receiver::OtlpReceiver;

const TASKS: usize = 100_000;
const ROUNDS: usize = 3;

/// Runs one drain; returns its rate in tasks a second.
fn drain(endpoint: Option<&str>) -> f64 {
    let mut command = Command::new(qhost_tests::qhost_binary());
    command
        .args(["bench", "--tasks", &TASKS.to_string(), "--workers", "2"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    if let Some(endpoint) = endpoint {
        command.args(["--otlp-endpoint", endpoint]);
    }
    let output = command.output().expect("running qhost bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "qhost bench failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .find_map(|line| {
            line.strip_prefix("drained ")?
                .split(": ")
                .nth(1)?
                .strip_suffix(" tasks/s")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no drain rate in {stdout}"))
}

fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let receiver = OtlpReceiver::start_keeping(false);
    let endpoint = receiver.endpoint();
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        let rate = drain(None);
        println!("round {round}: traces off: {rate:.0} tasks/s");
        off.push(rate);
        let (before, _) = receiver.counts();
        let rate = drain(Some(&endpoint));
        let (after, requests) = receiver.counts();
        println!(
            "round {round}: traces on:  {rate:.0} tasks/s ({} spans received, {requests} \
             export requests so far; {TASKS} attempts)",
            after - before
        );
        on.push(rate);
    }
    let (on, off) = (median(on), median(off));
    println!("median: traces off {off:.0} tasks/s, on {on:.0} tasks/s");
    let slowdown = 100.0 * (1.0 - on / off);
    println!("figure: drain-traced-slowdown = {slowdown:.1} %");
}
