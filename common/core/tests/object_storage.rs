//! Object storage behaves the same on the local folder and on S3.

use std::sync::Arc;

use common::testing;
use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, path::Path};

async fn backends() -> Vec<(
    &'static str,
    Arc<dyn ObjectStore>,
    Option<tempfile::TempDir>,
)> {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![(
        "local",
        common::objects::local(dir.path()).unwrap(),
        Some(dir),
    )];
    if let Some(s3) = testing::s3_objects() {
        all.push(("s3", s3, None));
    }
    all
}

#[tokio::test]
async fn put_get_list_delete() {
    for (name, objects, _dir) in backends().await {
        let path = Path::from("lake/team_id=1/a.ndjson");
        objects
            .put(&path, PutPayload::from_static(b"{\"a\":1}\n"))
            .await
            .unwrap();
        objects
            .put(
                &Path::from("lake/team_id=2/b.ndjson"),
                PutPayload::from_static(b"b"),
            )
            .await
            .unwrap();
        let bytes = objects.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(&bytes[..], b"{\"a\":1}\n", "{name}");

        let listed: Vec<String> = objects
            .list(Some(&Path::from("lake/team_id=1")))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .unwrap();
        assert_eq!(listed, vec!["lake/team_id=1/a.ndjson"], "{name}");

        objects.delete(&path).await.unwrap();
        assert!(
            matches!(
                objects.get(&path).await,
                Err(object_store::Error::NotFound { .. })
            ),
            "{name}"
        );
    }
}
