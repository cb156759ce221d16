//! Schedules: a tick is handled once however many nodes handle it at the same moment,
//! all or nothing; pausing, listing, deleting, and the ticks kept.

use serde_json::json;

use super::*;

fn spec(name: &str) -> ScheduleSpec {
    ScheduleSpec {
        name: name.into(),
        cron: "0 * * * *".into(),
        timezone: "UTC".into(),
        plan: json!({"tasks": [{"module": "echo"}]}),
        overlap: "skip".into(),
        catch_up: "none".into(),
    }
}

fn fire(schedule: i64, cursor: Micros, tick: Micros, batch: Option<TickBatch>) -> Fire {
    Fire {
        schedule,
        cursor: Some(cursor),
        next_due: Some(cursor + 3600 * SECOND),
        tick,
        missed: 0,
        result: if batch.is_some() {
            TickResult::Fired
        } else {
            TickResult::Skipped
        },
        detail: None,
        batch,
        now: T0 + 10,
    }
}

fn tick_batch(module: Digest, name: &str) -> TickBatch {
    TickBatch {
        spec: BatchSpec {
            name: Some(name.into()),
            ..BatchSpec::default()
        },
        handle_hash: rand_hash(),
        tasks: admitted(vec![task(module, 0, None), task(module, 1, None)]),
    }
}

pub async fn a_tick_is_handled_once_however_many_handle_it(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let s = store
        .schedule_create(spec("hourly"), Some(T0), T0)
        .await
        .unwrap();
    assert_eq!((s.next_due, s.paused, s.missed), (Some(T0), false, 0));
    let (due, next) = store.schedule_due(T0).await.unwrap();
    assert_eq!((due.len(), next), (1, None));
    assert!(store.schedule_due(T0 - 1).await.unwrap().0.is_empty());
    assert_eq!(store.schedule_due(T0 - 1).await.unwrap().1, Some(T0));

    // Eight handlers of the same tick at once: one opens its batch.
    let handlers = (0..8).map(|_| {
        let store = store.clone();
        let fire = fire(s.id, T0, T0, Some(tick_batch(m, "hourly@T0")));
        tokio::spawn(async move { store.schedule_fire(fire).await.unwrap() })
    });
    let mut handled = Vec::new();
    for handler in handlers.collect::<Vec<_>>() {
        handled.extend(handler.await.unwrap());
    }
    assert_eq!(handled.len(), 1, "{handled:?}");
    let batch = handled[0].batch.expect("the tick opened a batch");
    let info = store.batch_get(batch).await.unwrap();
    assert_eq!(info.name.as_deref(), Some("hourly@T0"));
    assert_eq!(info.progress.ready + info.progress.waiting, 2);
    let after = store.schedule_get("hourly".into()).await.unwrap();
    assert_eq!(after.next_due, Some(T0 + 3600 * SECOND));
    assert_eq!(after.last_batch, Some(batch));
    let ticks = store.schedule_ticks(s.id, 10).await.unwrap();
    assert_eq!(ticks.len(), 1);
    assert_eq!((ticks[0].due_at, ticks[0].result), (T0, TickResult::Fired));
}

pub async fn a_refused_tick_changes_nothing(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let s = store
        .schedule_create(spec("refused"), Some(T0), T0)
        .await
        .unwrap();
    let mut gone = tick_batch(m, "refused@T0");
    let mut tasks = gone.tasks.into_tasks();
    tasks[0].module = Digest([7; 32]);
    gone.tasks = admitted(tasks);
    let err = store
        .schedule_fire(fire(s.id, T0, T0, Some(gone)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Invalid(_) | StoreError::NotFound { .. }),
        "{err}"
    );
    assert_eq!(
        store.schedule_get("refused".into()).await.unwrap(),
        s,
        "the schedule is as it was"
    );
    assert!(store.schedule_ticks(s.id, 10).await.unwrap().is_empty());
    assert_eq!(
        store.task_counts().await.unwrap().ready,
        0,
        "no batch was opened"
    );

    // The caller records the failure instead, and the schedule moves on.
    let failed = Fire {
        result: TickResult::Failed,
        detail: Some("module gone".into()),
        missed: 2,
        ..fire(s.id, T0, T0, None)
    };
    let tick = store.schedule_fire(failed).await.unwrap().unwrap();
    assert_eq!((tick.result, tick.batch), (TickResult::Failed, None));
    let after = store.schedule_get("refused".into()).await.unwrap();
    assert_eq!(
        (after.next_due, after.missed),
        (Some(T0 + 3600 * SECOND), 2)
    );
}

pub async fn schedules_pause_list_delete_and_keep_their_last_ticks(store: Arc<dyn Store>) {
    setup(&store).await;
    let a = store
        .schedule_create(spec("a"), Some(T0), T0)
        .await
        .unwrap();
    store
        .schedule_create(spec("b"), Some(T0), T0)
        .await
        .unwrap();
    let again = store
        .schedule_create(spec("a"), Some(T0), T0)
        .await
        .unwrap_err();
    assert!(matches!(again, StoreError::Conflict(_)), "{again}");
    let names: Vec<_> = store
        .schedule_list()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["a", "b"]);

    let paused = store
        .schedule_set_paused("a".into(), true, Some(T0))
        .await
        .unwrap();
    assert!(paused.paused);
    let (due, _) = store.schedule_due(T0).await.unwrap();
    assert_eq!(
        due.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    store
        .schedule_set_paused("a".into(), false, Some(T0 + SECOND))
        .await
        .unwrap();
    assert_eq!(store.schedule_due(T0).await.unwrap().1, Some(T0 + SECOND));

    // Skipped ticks, one after another: the last 100 are kept, and out-of-turn ticks too.
    let mut cursor = T0 + SECOND;
    for _ in 0..(TICKS_KEPT + 5) {
        let step = Fire {
            next_due: Some(cursor + SECOND),
            ..fire(a.id, cursor, cursor, None)
        };
        store.schedule_fire(step).await.unwrap().unwrap();
        cursor += SECOND;
    }
    let ticks = store.schedule_ticks(a.id, 1000).await.unwrap();
    assert_eq!(ticks.len() as i64, TICKS_KEPT);
    assert_eq!(ticks[0].due_at, cursor - SECOND, "newest first");
    let stale = store.schedule_fire(fire(a.id, T0, T0, None)).await.unwrap();
    assert_eq!(stale, None, "a tick handled already is not handled again");

    store.schedule_delete("a".into()).await.unwrap();
    assert!(matches!(
        store.schedule_get("a".into()).await.unwrap_err(),
        StoreError::NotFound { .. }
    ));
    assert!(store.schedule_ticks(a.id, 10).await.unwrap().is_empty());
    assert!(store.schedule_delete("a".into()).await.is_err());
}
