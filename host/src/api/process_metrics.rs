//! The process's own metrics, under the names Prometheus client libraries use: resident
//! memory, open file descriptors and threads, read from `/proc/self` at each scrape (on
//! Linux; elsewhere they are left out).

use std::fmt::Write as _;

/// Appends the process metrics to `out`, each one that could be read.
pub fn render(out: &mut String) {
    let metrics: [(&str, &str, Option<u64>); 3] = [
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            resident_bytes(),
        ),
        (
            "process_open_fds",
            "Number of open file descriptors.",
            open_fds(),
        ),
        ("process_threads", "Number of OS threads.", threads()),
    ];
    for (name, help, value) in metrics {
        if let Some(value) = value {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
    }
}

/// The second field of `/proc/self/statm` (pages resident), in bytes.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system setting.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// The entries of `/proc/self/fd`, less the one reading it opens.
fn open_fds() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    Some((entries.count() as u64).saturating_sub(1))
}

/// `Threads:` of `/proc/self/status`.
fn threads() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_process() {
        let mut text = String::new();
        super::render(&mut text);
        let value = |name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in {text}"))
        };
        assert!(value("process_resident_memory_bytes") > 1 << 20);
        let file = std::fs::File::open("/proc/self/status").unwrap();
        let mut again = String::new();
        super::render(&mut again);
        let open: u64 = again
            .lines()
            .find_map(|l| l.strip_prefix("process_open_fds ")?.parse().ok())
            .unwrap();
        assert!(
            open >= 4,
            "stdin, stdout, stderr and the file above: {open}"
        );
        drop(file);
        assert!(value("process_threads") >= 1);
    }
}
