//! The store conformance suite on the SQLite driver, each case on a fresh database file.

use std::sync::Arc;

use qhost::store::Store;
use qhost::store::sqlite::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_passes_the_conformance_suite() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    qhost_tests::conformance::run_all(&move || {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let path = dir.path().join(format!("case-{n}.db"));
        Box::pin(async move { Arc::new(SqliteStore::open(&path).unwrap()) as Arc<dyn Store> })
    })
    .await;
}

#[test]
fn a_second_process_cannot_open_the_same_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qhost.db");
    let _first = SqliteStore::open(&path).unwrap();
    let second = SqliteStore::open(&path).err().expect("the file is in use");
    assert!(
        format!("{second:#}").contains("is another qhost using it?"),
        "{second:#}"
    );
}
