//! The store conformance suite on the SQLite driver, each case on a fresh database file.

use std::sync::Arc;

use qhost::store::Store;
use qhost::store::sqlite::SqliteStore;

qhost_tests::conformance_tests!(fresh_store);

/// A store on a new file, in a directory removed when the test ends.
async fn fresh_store() -> (Arc<dyn Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("qhost.db")).unwrap();
    (Arc::new(store), dir)
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
