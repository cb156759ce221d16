//! PostgreSQL for tests: the server `QHOST_TEST_PG_URL` names, by default the local one at
//! 127.0.0.1:5432 (database `test`); when none answers, a throwaway cluster started with
//! `initdb` and `pg_ctl`; otherwise a failure that says how to provide one. Each test
//! gets a schema of its own, dropped when it ends.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Each named function `fn(Option<&str>)` as two tests: `sqlite::NAME`, given `None`, and
/// `postgres::NAME`, given the URL of a fresh [`TestDb`].
#[macro_export]
macro_rules! on_each_driver {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    super::$name(None)
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() {
                    let runtime = tokio::runtime::Runtime::new().unwrap();
                    let db = runtime.block_on($crate::pg::TestDb::new());
                    super::$name(Some(&db.url))
                }
            )*
        }
    };
}

/// A fresh schema for one test.
pub struct TestDb {
    /// Selects the schema: give it to `--db` or `PostgresStore::connect`.
    pub url: String,
    server: &'static str,
    schema: String,
}

impl TestDb {
    pub async fn new() -> TestDb {
        let server = server();
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let schema = format!(
            "qhost_test_{stamp}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let url = qhost::store::postgres::create_schema(server, &schema)
            .await
            .unwrap_or_else(|e| panic!("creating a test schema on {server}: {e:#}"));
        TestDb {
            url,
            server,
            schema,
        }
    }

    /// A connection of its own to the schema, driven on the caller's runtime: to hold
    /// locks, or change the schema, beside a store.
    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", self.url));
        tokio::spawn(connection);
        client
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let (server, schema) = (self.server, self.schema.clone());
        // Drop runs inside the test's runtime: a thread of its own may block on another.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(qhost::store::postgres::drop_schema(server, &schema))
        })
        .join();
    }
}

/// The server's URL, found once per test process.
pub fn server() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("QHOST_TEST_PG_URL") {
            if let Err(err) = probe(&url) {
                panic!("QHOST_TEST_PG_URL={url} does not answer: {err}");
            }
            return url;
        }
        if probe(DEFAULT_URL).is_ok() {
            return DEFAULT_URL.to_owned();
        }
        match start_cluster() {
            Ok(url) => url,
            Err(err) => panic!(
                "these tests need PostgreSQL. None answers at {DEFAULT_URL}, and no throwaway \
                 cluster could be started ({err}). Set QHOST_TEST_PG_URL to a database the \
                 tests may create schemas in, e.g. \
                 QHOST_TEST_PG_URL=postgres://USER@HOST:5432/DB, or install PostgreSQL's \
                 initdb and pg_ctl."
            ),
        }
    })
}

/// Connects once, off any runtime of the caller's.
fn probe(url: &str) -> Result<(), String> {
    let url = url.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let connect = tokio_postgres::connect(&url, tokio_postgres::NoTls);
            match tokio::time::timeout(std::time::Duration::from_secs(5), connect).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(err)) => Err(err.to_string()),
                Err(_) => Err("no answer within 5 s".to_owned()),
            }
        })
    })
    .join()
    .unwrap()
}

/// Starts a private cluster on a free port, stopped and removed by a watchdog once this
/// process has exited.
fn start_cluster() -> Result<String, String> {
    let initdb = find_tool("initdb").ok_or("initdb was not found")?;
    let pg_ctl = find_tool("pg_ctl").ok_or("pg_ctl was not found")?;
    let dir = tempfile::Builder::new()
        .prefix("qhost-test-pg-")
        .tempdir()
        .map_err(|e| e.to_string())?
        .keep();
    let data = dir.join("data");
    let output = Command::new(&initdb)
        .args(["-U", "postgres", "--auth=trust", "-D"])
        .arg(&data)
        .output()
        .map_err(|e| format!("running initdb: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let options = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
        dir.display()
    );
    let status = Command::new(&pg_ctl)
        .arg("-D")
        .arg(&data)
        .args(["-o", &options, "-l"])
        .arg(dir.join("log"))
        .args(["-w", "start"])
        .status()
        .map_err(|e| format!("running pg_ctl: {e}"))?;
    if !status.success() {
        return Err(format!(
            "pg_ctl start failed; see {}",
            dir.join("log").display()
        ));
    }
    let watchdog = format!(
        "while kill -0 {} 2>/dev/null; do sleep 1; done; \"{}\" -D \"{}\" -m immediate stop; rm -rf \"{}\"",
        std::process::id(),
        pg_ctl.display(),
        data.display(),
        dir.display()
    );
    Command::new("sh")
        .args(["-c", &watchdog])
        .spawn()
        .map_err(|e| format!("starting the cluster's watchdog: {e}"))?;
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    probe(&url)?;
    Ok(url)
}

fn find_tool(name: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>());
    let versioned = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|version| version.path().join("bin"));
    on_path
        .chain(versioned)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}
