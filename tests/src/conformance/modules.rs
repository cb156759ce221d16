//! Modules: stored by content digest, kept while a task still needs them, named by any
//! number of names (each naming one module), and named in the reads of tasks and attempts.

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
        .task_submit(b, admitted(vec![task(first.digest, 0, None)]), T0)
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
        .task_submit(b, admitted(vec![task(first.digest, 0, None)]), T0)
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("does not exist"), "{unknown}");
}

pub async fn reads_name_the_module_beside_its_digest(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let id = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap()[0];
    let claimed = claim(&store, "n1", 1, T0).await;
    complete(&store, &claimed, Outcome::Succeeded, T0 + SECOND).await;
    let names = |store: Arc<dyn Store>| async move {
        let task = store.task_get(id).await.unwrap();
        let log = store.attempt_list(AttemptFilter::default()).await.unwrap();
        assert_eq!(task.module, m);
        assert_eq!(log[0].1.module, m);
        (task.module_name, log[0].1.module_name.clone())
    };
    let echo = Some("echo".to_owned());
    assert_eq!(names(store.clone()).await, (echo.clone(), echo));
    // The name the module has now, as the module list shows it.
    store
        .module_put(module(), Some("renamed".into()), None, T0 + 2 * SECOND)
        .await
        .unwrap();
    let renamed = Some("renamed".to_owned());
    assert_eq!(names(store.clone()).await, (renamed.clone(), renamed));
    store.module_delete(m).await.unwrap();
    assert_eq!(names(store.clone()).await, (None, None), "deleted: no name");
}

pub async fn a_module_keeps_the_languages_its_producers_sections_name(store: Arc<dyn Store>) {
    // The echo guest is Rust (with wasi-libc's C), built by rustc and made a component
    // by wit-component.
    let added = store.module_put(module(), None, None, T0).await.unwrap();
    let listed = store.module_list().await.unwrap().remove(0);
    for info in [&added.module, &listed] {
        let languages = info.languages.clone().unwrap();
        assert_eq!(
            languages.first().map(String::as_str),
            Some("Rust"),
            "{languages:?}"
        );
        let tools = info.processed_by.clone().unwrap();
        assert!(tools.iter().any(|t| t.starts_with("rustc ")), "{tools:?}");
        assert!(
            tools.iter().any(|t| t.starts_with("wit-component ")),
            "{tools:?}"
        );
    }
    // Bytes that are no component name nothing, which is not unknown.
    let other = store
        .module_put(b"not a component".to_vec(), None, None, T0)
        .await
        .unwrap();
    assert_eq!(other.languages, Some(vec![]));
    assert_eq!(other.processed_by, Some(vec![]));
}

pub async fn reads_give_a_tasks_input_size(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let ids = store
        .task_submit(
            b,
            admitted(vec![TaskSpec::new(m, "twelve bytes"), TaskSpec::new(m, "")]),
            T0,
        )
        .await
        .unwrap();
    assert_eq!(store.task_get(ids[0]).await.unwrap().input_size, 12);
    assert_eq!(store.task_get(ids[1]).await.unwrap().input_size, 0);
    let page = store
        .task_list(TaskFilter {
            batch: Some(b),
            limit: 10,
            now: T0,
            ..TaskFilter::default()
        })
        .await
        .unwrap();
    let mut sizes: Vec<u64> = page.tasks.iter().map(|t| t.input_size).collect();
    sizes.sort();
    assert_eq!(sizes, vec![0, 12], "a list gives them too");
}

pub async fn names_are_aliases_and_move_one_at_a_time(store: Arc<dyn Store>) {
    let first = store
        .module_put(module(), Some("echo".into()), None, T0)
        .await
        .unwrap();
    assert_eq!(first.name_moved_from, None);
    // The same component under a second name: it keeps the first.
    let again = store
        .module_put(module(), Some("echo2".into()), None, T0 + 1)
        .await
        .unwrap();
    assert_eq!(again.digest, first.digest);
    assert_eq!(again.names, ["echo", "echo2"]);
    assert_eq!(
        again.name.as_deref(),
        Some("echo2"),
        "shown by the last given"
    );
    assert_eq!(again.name_moved_from, None, "no other module had it");

    // Another component takes `echo2`: that name alone moves, and the answer says from where.
    let other = store
        .module_put(
            b"another module".to_vec(),
            Some("echo2".into()),
            None,
            T0 + 2,
        )
        .await
        .unwrap();
    assert_eq!(other.name_moved_from, Some(first.digest));
    assert_eq!(other.names, ["echo2"]);
    let names = |store: Arc<dyn Store>, digest: Digest| async move {
        let listed = store.module_list().await.unwrap();
        let module = listed.into_iter().find(|m| m.digest == digest).unwrap();
        (module.name, module.names)
    };
    assert_eq!(
        names(store.clone(), first.digest).await,
        (Some("echo".into()), vec!["echo".to_owned()]),
        "the first keeps `echo`, and is shown by it"
    );

    // A name removed: the module stays, with its other names.
    assert_eq!(
        store.module_unname("echo2".into()).await.unwrap(),
        other.digest
    );
    assert_eq!(names(store.clone(), other.digest).await, (None, vec![]));
    let gone = store.module_unname("echo2".into()).await.unwrap_err();
    assert!(matches!(gone, StoreError::NotFound { .. }), "{gone}");

    // A deleted module's names go with it: given again, they move from no one.
    store.module_delete(first.digest).await.unwrap();
    let back = store
        .module_put(
            b"another module".to_vec(),
            Some("echo".into()),
            None,
            T0 + 3,
        )
        .await
        .unwrap();
    assert_eq!(back.name_moved_from, None);
    assert_eq!(back.names, ["echo"]);
}
