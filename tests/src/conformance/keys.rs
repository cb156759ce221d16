//! Requests done once: a batch opened with its tasks in one transaction leaves nothing when
//! a task is refused; a request repeated under its idempotency key gets the first answer,
//! another request under it is refused; a batch keeps a bounded number of keys, which go
//! with it.

use super::*;

/// The stores take the handle's hash from the caller: any function of the id and secret.
fn hash(id: BatchId, secret: &[u8; 32]) -> [u8; 32] {
    let mut hash = *secret;
    hash[..8].copy_from_slice(&id.to_le_bytes());
    hash
}

fn new_batch(tasks: Vec<TaskSpec>, key: Option<RequestKey>) -> NewBatch {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).unwrap();
    NewBatch {
        spec: BatchSpec::default(),
        tasks: admitted(tasks),
        handle: NewHandle { secret, hash },
        key,
    }
}

fn key(name: u8, body: u8) -> RequestKey {
    RequestKey {
        key_hash: [name; 32],
        body_hash: [body; 32],
        sealed: Some(vec![name, body]),
    }
}

fn first<T>(answer: Answer<T>) -> T {
    match answer {
        Answer::First(value) => value,
        Answer::Repeat { .. } => panic!("a first request was answered as a repeat"),
    }
}

pub async fn an_opening_with_a_refused_task_leaves_nothing(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let before = batch(&store, BatchSpec::default()).await;
    let unknown = Digest([9; 32]);
    let refused = store
        .batch_create(
            new_batch(vec![task(m, 0, None), task(unknown, 0, None)], None),
            T0,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, StoreError::Invalid(e) if e.contains("task 1")),
        "{refused}"
    );
    assert!(matches!(
        store.batch_get(before + 1).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.task_counts().await.unwrap(), Progress::default());

    let created = first(
        store
            .batch_create(
                new_batch(vec![task(m, 0, None), task(m, 1, None)], None),
                T0,
            )
            .await
            .unwrap(),
    );
    assert_eq!(created.tasks.len(), 2);
    assert_eq!(
        (created.batch.progress.ready, created.batch.progress.waiting),
        (1, 1)
    );
}

/// The handle's hash is set in the same transaction: the batch opens with it.
pub async fn an_opened_batch_has_its_handle(store: Arc<dyn Store>) {
    let new = new_batch(Vec::new(), None);
    let secret = new.handle.secret;
    let created = first(store.batch_create(new, T0).await.unwrap());
    let id = created.batch.id;
    store
        .batch_authorize(id, BatchKey::Handle(hash(id, &secret)))
        .await
        .unwrap();
    assert!(matches!(
        store.batch_authorize(id, BatchKey::Handle(secret)).await,
        Err(StoreError::Forbidden(_))
    ));
}

pub async fn a_repeated_request_gets_the_first_answer(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let created = first(
        store
            .batch_create(new_batch(vec![task(m, 0, None)], Some(key(1, 1))), T0)
            .await
            .unwrap(),
    );
    match store
        .batch_create(new_batch(vec![task(m, 0, None)], Some(key(1, 1))), T0 + 1)
        .await
        .unwrap()
    {
        Answer::Repeat { answer, sealed } => {
            assert_eq!(
                (answer.batch.id, answer.tasks.clone()),
                (created.batch.id, created.tasks.clone())
            );
            assert_eq!(sealed, Some(vec![1, 1]), "what was sealed with the first");
        }
        Answer::First(_) => panic!("a repeat opened another batch"),
    }
    let other = store
        .batch_create(new_batch(vec![task(m, 0, None)], Some(key(1, 2))), T0 + 2)
        .await
        .unwrap_err();
    assert!(matches!(other, StoreError::Conflict(_)), "{other}");

    let b = created.batch.id;
    let ids = first(
        store
            .task_submit_keyed(b, admitted(vec![task(m, 0, None)]), key(2, 1), T0 + 3)
            .await
            .unwrap(),
    );
    match store
        .task_submit_keyed(b, admitted(vec![task(m, 0, None)]), key(2, 1), T0 + 4)
        .await
        .unwrap()
    {
        Answer::Repeat { answer, .. } => assert_eq!(answer, ids),
        Answer::First(_) => panic!("a repeat submitted again"),
    }
    assert!(matches!(
        store
            .task_submit_keyed(b, admitted(vec![task(m, 0, None)]), key(2, 2), T0 + 5)
            .await,
        Err(StoreError::Conflict(_))
    ));
    // A submission's key belongs to its batch.
    let elsewhere = batch(&store, BatchSpec::default()).await;
    first(
        store
            .task_submit_keyed(
                elsewhere,
                admitted(vec![task(m, 0, None)]),
                key(2, 1),
                T0 + 6,
            )
            .await
            .unwrap(),
    );
    assert_eq!(
        store.batch_get(b).await.unwrap().progress.total(),
        2,
        "the opening's task and one submission's"
    );
}

/// A batch keeps a bounded number of keys; they go when it is released, or pruned once
/// it has nothing open.
pub async fn keys_are_bounded_per_batch_and_go_with_the_batch(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let submit = |n: u64| {
        let store = store.clone();
        async move {
            let mut key = key(0, 0);
            key.key_hash[..8].copy_from_slice(&n.to_le_bytes());
            store
                .task_submit_keyed(b, admitted(vec![task(m, 0, None)]), key, T0)
                .await
        }
    };
    for n in 0..MAX_KEYS_PER_BATCH {
        submit(n).await.unwrap();
    }
    let refused = submit(MAX_KEYS_PER_BATCH).await.unwrap_err();
    assert!(
        matches!(&refused, StoreError::Conflict(e) if e.contains("idempotency keys")),
        "{refused}"
    );
    assert!(
        matches!(submit(7).await.unwrap(), Answer::Repeat { .. }),
        "a kept key still answers"
    );

    let opened = first(
        store
            .batch_create(new_batch(Vec::new(), Some(key(3, 1))), T0)
            .await
            .unwrap(),
    );
    store.batch_release(opened.batch.id).await.unwrap();
    let again = first(
        store
            .batch_create(new_batch(Vec::new(), Some(key(3, 1))), T0 + 1)
            .await
            .unwrap(),
    );
    assert_ne!(
        again.batch.id, opened.batch.id,
        "the key went with its batch"
    );

    // Pruned once past the retention, its batch having nothing open.
    store.prune(T0 + 2, 10_000).await.unwrap();
    assert!(matches!(
        store
            .batch_create(new_batch(Vec::new(), Some(key(3, 1))), T0 + 3)
            .await
            .unwrap(),
        Answer::First(_)
    ));
    assert!(
        matches!(submit(7).await.unwrap(), Answer::Repeat { .. }),
        "the keys of a batch with open tasks stay"
    );
}
