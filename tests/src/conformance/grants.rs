//! Grants: what a batch was granted when opened is kept with it, and goes with it.

use super::*;

pub async fn a_batch_keeps_its_grant_until_released(store: Arc<dyn Store>) {
    assert_eq!(store.grant_secret_sample().await.unwrap(), None);
    let origins = vec![
        "http://127.0.0.1:*".to_owned(),
        "https://api.example.com".to_owned(),
    ];
    let settings = vec![
        Setting {
            name: "REGION".into(),
            value: "eu".into(),
            secret: false,
        },
        Setting {
            name: "API_KEY".into(),
            value: "c2VhbGVk".into(),
            secret: true,
        },
    ];
    let granted = batch(
        &store,
        BatchSpec {
            allow_http: origins.clone(),
            settings: settings.clone(),
            ..BatchSpec::default()
        },
    )
    .await;
    let other = batch(&store, BatchSpec::default()).await;
    let grant = store.batch_grant(granted).await.unwrap();
    assert_eq!(
        (grant.allow_http, grant.settings),
        (origins, settings.clone())
    );
    assert_eq!(
        store.batch_grant(other).await.unwrap(),
        Grant::default(),
        "a batch granted nothing reads as granted nothing"
    );
    assert_eq!(
        store.grant_secret_sample().await.unwrap().as_ref(),
        Some(&settings[1])
    );
    store.batch_release(granted).await.unwrap();
    assert_eq!(
        store.batch_grant(granted).await.unwrap(),
        Grant::default(),
        "a released batch's grant stayed behind"
    );
    assert_eq!(store.grant_secret_sample().await.unwrap(), None);
}
