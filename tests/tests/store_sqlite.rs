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

/// A module stored before qhost read the `producers` sections (as the migration leaves
/// it) lists no languages, unknown, until it is added again.
#[tokio::test]
async fn a_module_stored_before_languages_were_read_is_unknown_until_added_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qhost.db");
    let bytes = std::fs::read(qhost_tests::guest("echo")).unwrap();
    {
        let store = SqliteStore::open(&path).unwrap();
        store
            .module_put(bytes.clone(), None, None, 1)
            .await
            .unwrap();
    }
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE modules SET languages = NULL, processed_by = NULL",
            [],
        )
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let old = store.module_list().await.unwrap().remove(0);
    assert_eq!((old.languages, old.processed_by), (None, None));
    let again = store.module_put(bytes, None, None, 2).await.unwrap();
    assert_eq!(again.module.languages.unwrap()[0], "Rust");
    let listed = store.module_list().await.unwrap().remove(0);
    assert_eq!(listed.languages.unwrap()[0], "Rust");
    assert_eq!(
        listed.added_at, 1,
        "added again, it keeps when it was first added"
    );
}
