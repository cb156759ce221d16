//! Batches: a handle opens only its own batch, and a tenant only its own batches; tenants'
//! tokens are checked by their secrets' hashes; a released batch leaves nothing behind,
//! and its ids are never given again.

use super::*;

pub async fn handles_open_only_their_batch(store: Arc<dyn Store>) {
    let hash = rand_hash();
    let info = store
        .batch_open(BatchSpec::default(), hash, T0)
        .await
        .unwrap();
    let handle = BatchKey::Handle(hash);
    store.batch_authorize(info.id, handle).await.unwrap();
    assert!(matches!(
        store
            .batch_authorize(info.id, BatchKey::Handle(rand_hash()))
            .await,
        Err(StoreError::Forbidden(_))
    ));
    assert!(matches!(
        store.batch_authorize(info.id + 1000, handle).await,
        Err(StoreError::NotFound { .. })
    ));
}

/// A tenant's batch opens to its tenant and its handle; the admin's and another tenant's
/// do not open to it. A token opens while its secret's hash matches and it is not
/// revoked.
pub async fn tenants_open_only_their_batches(store: Arc<dyn Store>) {
    let a = store.tenant_add("a".into(), T0).await.unwrap();
    let b = store.tenant_add("b".into(), T0).await.unwrap();
    assert!(matches!(
        store.tenant_add("a".into(), T0).await,
        Err(StoreError::Conflict(_))
    ));
    assert!(matches!(
        store.tenant_add("A".into(), T0).await,
        Err(StoreError::Invalid(_))
    ));
    let hash = rand_hash();
    let spec = BatchSpec {
        tenant: Some(a.id),
        ..BatchSpec::default()
    };
    let owned = store.batch_open(spec, hash, T0).await.unwrap();
    let admins = store
        .batch_open(BatchSpec::default(), rand_hash(), T0)
        .await
        .unwrap();
    store
        .batch_authorize(owned.id, BatchKey::Tenant(a.id))
        .await
        .unwrap();
    store
        .batch_authorize(owned.id, BatchKey::Handle(hash))
        .await
        .unwrap();
    for (batch, tenant) in [(owned.id, b.id), (admins.id, a.id)] {
        assert!(matches!(
            store.batch_authorize(batch, BatchKey::Tenant(tenant)).await,
            Err(StoreError::Forbidden(_))
        ));
    }
    assert_eq!(store.batch_tenant(owned.id).await.unwrap(), Some(a.id));
    assert_eq!(store.batch_tenant(admins.id).await.unwrap(), None);

    // What its batches may do: each field changed alone, `Some(None)` back to none.
    let set = |change: TenantChange| store.tenant_set("a".into(), change, now_micros());
    let changed = set(TenantChange {
        max_priority: Some(Some(7)),
        shared_groups: Some(vec!["s2".into(), "s1".into(), "s1".into()]),
        modules: Some(Some(vec!["echo".into()])),
        allow_http: Some(Some(vec!["https://a.example".into()])),
        max_running: Some(Some(3)),
        max_open: Some(Some(40)),
        max_limits: Some(TenantMaxima {
            memory: Some("32MiB".into()),
            ..TenantMaxima::default()
        }),
        budget: Some(Some(
            Budget::parse("cpu=10s,memory=100,http=1MB/1h").unwrap(),
        )),
        weight: Some(5),
        ceiling: Some(7),
    })
    .await
    .unwrap();
    assert_eq!(changed.max_limits.memory.as_deref(), Some("32MiB"));
    assert_eq!(
        (changed.budget, changed.budget_used, changed.held_until),
        (
            Some(Budget {
                period: Duration::from_secs(3600),
                cpu: Some(Duration::from_secs(10)),
                memory_mib_seconds: Some(100),
                http_bytes: Some(1_000_000),
            }),
            BudgetUsed::default(),
            None
        )
    );
    assert_eq!(
        (
            changed.max_priority,
            &changed.shared_groups[..],
            changed.modules.as_deref(),
            changed.max_running,
            changed.max_open,
            changed.weight,
        ),
        (
            Some(7),
            &["s1".to_owned(), "s2".to_owned()][..],
            Some(&["echo".to_owned()][..]),
            Some(3),
            Some(40),
            5,
        )
    );
    let kept = set(TenantChange::default()).await.unwrap();
    assert_eq!(kept, changed, "a change of nothing keeps all");
    let cleared = set(TenantChange {
        max_priority: Some(None),
        modules: Some(None),
        max_running: Some(None),
        max_open: Some(None),
        max_limits: Some(TenantMaxima::default()),
        budget: Some(None),
        ..TenantChange::default()
    })
    .await
    .unwrap();
    assert_eq!(cleared.budget, None);
    assert_eq!(
        changed.allow_http.as_deref(),
        Some(&["https://a.example".to_owned()][..])
    );
    assert_eq!(
        (
            cleared.max_priority,
            &cleared.modules,
            cleared.max_running,
            cleared.max_open
        ),
        (None, &None, None, None)
    );
    assert_eq!(cleared.max_limits, TenantMaxima::default());
    assert_eq!(cleared.allow_http, changed.allow_http, "left out, kept");
    assert_eq!(cleared.shared_groups, ["s1", "s2"]);
    assert_eq!(store.tenant_get(a.id).await.unwrap(), cleared);
    assert!(matches!(
        set(TenantChange {
            shared_groups: Some(vec![String::new()]),
            ..TenantChange::default()
        })
        .await,
        Err(StoreError::Invalid(_))
    ));
    // The list as given is bounded, repeats too.
    assert!(matches!(
        set(TenantChange {
            shared_groups: Some(vec!["s1".into(); MAX_SHARED_GROUPS + 1]),
            ..TenantChange::default()
        })
        .await,
        Err(StoreError::Invalid(_))
    ));
    for limit in [0, MAX_TENANT_RUNNING + 1] {
        let refused = set(TenantChange {
            max_running: Some(Some(limit)),
            ..TenantChange::default()
        })
        .await;
        assert!(
            matches!(&refused, Err(StoreError::Invalid(e)) if e.contains("max_running")),
            "{limit}: {refused:?}"
        );
    }
    for limit in [0, MAX_TENANT_OPEN + 1] {
        let refused = set(TenantChange {
            max_open: Some(Some(limit)),
            ..TenantChange::default()
        })
        .await;
        assert!(
            matches!(&refused, Err(StoreError::Invalid(e)) if e.contains("max_open")),
            "{limit}: {refused:?}"
        );
    }
    assert_eq!(
        store.tenant_get(a.id).await.unwrap(),
        cleared,
        "refused, kept"
    );

    let by_tenant = |tenant| BatchFilter {
        tenant: Some(tenant),
        limit: 10,
        ..BatchFilter::default()
    };
    let listed: Vec<BatchId> = store
        .batch_list(by_tenant(a.id))
        .await
        .unwrap()
        .iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(listed, [owned.id]);
    assert!(store.batch_list(by_tenant(b.id)).await.unwrap().is_empty());

    let secret = rand_hash();
    let token = store.token_add("a".into(), secret, T0).await.unwrap();
    assert_eq!(store.token_check(token.id, secret).await.unwrap(), a.id);
    assert!(matches!(
        store.token_check(token.id, rand_hash()).await,
        Err(StoreError::NotFound { .. })
    ));
    let listed = store.tenant_list().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|t| (&*t.name, t.tokens))
            .collect::<Vec<_>>(),
        [("a", 1), ("b", 0)]
    );
    let revoked = store
        .token_revoke("a".into(), token.id, T0 + 1)
        .await
        .unwrap();
    assert_eq!(revoked.revoked_at, Some(T0 + 1));
    let again = store
        .token_revoke("a".into(), token.id, T0 + 2)
        .await
        .unwrap();
    assert_eq!(again.revoked_at, Some(T0 + 1), "revoked once");
    assert!(matches!(
        store.token_check(token.id, secret).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.token_revoke("b".into(), token.id, T0).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.token_add("nosuch".into(), secret, T0).await,
        Err(StoreError::NotFound { .. })
    ));
}

/// Releasing a batch removes all it owns, and the next batch opened gets a new id: its
/// handle reaches none of the released batch's tasks.
pub async fn a_released_batch_leaves_nothing_to_the_next(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let old = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(old, admitted(vec![task(m, 0, None), task(m, 1, None)]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 1, T0).await;
    complete(&store, &claimed, Outcome::Succeeded, T0 + 1).await;
    assert_eq!(
        store.task_cancel(t[1], T0 + 2).await.unwrap(),
        CancelResult::Cancelled
    );
    store.batch_release(old).await.unwrap();

    let new = batch(&store, BatchSpec::default()).await;
    assert_ne!(
        new, old,
        "a released batch's id was given to the next batch"
    );
    let info = store.batch_get(new).await.unwrap();
    assert_eq!(
        info.progress,
        Progress::default(),
        "the new batch holds tasks"
    );
    assert_eq!(store.batch_open_count(new).await.unwrap(), 0);
    for id in t {
        assert!(
            matches!(store.task_get(id).await, Err(StoreError::NotFound { .. })),
            "task {id} of the released batch is still there"
        );
        assert!(matches!(
            store.task_output(id).await,
            Err(StoreError::NotFound { .. })
        ));
    }
    assert_eq!(store.task_counts().await.unwrap(), Progress::default());
    // The new batch's gate is its own: its first task is ready at once.
    store
        .task_submit(new, admitted(vec![task(m, 5, None)]), T0 + 3)
        .await
        .unwrap();
    assert_eq!(claim(&store, "n1", 1, T0 + 3).await.len(), 1);
}

/// A task id is never given again, even after the newest batch, holding the newest task,
/// was released.
pub async fn ids_are_never_reused(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let first = batch(&store, BatchSpec::default()).await;
    let old = store
        .task_submit(first, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap()[0];
    assert_eq!(store.batch_cancel(first, T0).await.unwrap(), 1);
    store.batch_release(first).await.unwrap();
    let second = batch(&store, BatchSpec::default()).await;
    let new = store
        .task_submit(second, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap()[0];
    assert!(new > old, "task id {new} after the released {old}");
    assert!(
        second > first,
        "batch id {second} after the released {first}"
    );
}
