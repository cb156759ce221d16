//! Modules: stored by content digest, and kept while a task still needs them.

use super::*;

pub async fn modules_are_content_addressed_and_kept_while_used(store: Arc<dyn Store>) {
    let first = store
        .module_put(module(), Some("echo".into()), Some("v1".into()), T0)
        .await
        .unwrap();
    let again = store
        .module_put(module(), None, None, T0 + 1)
        .await
        .unwrap();
    assert_eq!(first.digest, Digest::of(&module()));
    assert_eq!(again.digest, first.digest);
    assert_eq!(
        again.name.as_deref(),
        Some("echo"),
        "a re-add keeps the name"
    );
    assert_eq!(store.module_list().await.unwrap().len(), 1);
    assert_eq!(store.module_bytes(first.digest).await.unwrap(), module());

    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, vec![task(first.digest, 0, None)], T0)
        .await
        .unwrap();
    let err = store.module_delete(first.digest).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err}");
    let claimed = claim(&store, "n1", 1, T0).await;
    complete(&store, &claimed, Outcome::Succeeded, T0 + 1).await;
    store.module_delete(first.digest).await.unwrap();
    assert!(matches!(
        store.module_bytes(first.digest).await,
        Err(StoreError::NotFound { .. })
    ));
    let unknown = store
        .task_submit(b, vec![task(first.digest, 0, None)], T0)
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("does not exist"), "{unknown}");
}
