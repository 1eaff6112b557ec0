//! Grouping by a property and by functions of the same property plans and runs.

use engine::{Bindings, Limits};

#[tokio::test]
async fn group_by_a_property_and_functions_of_it() {
    let backend = common::testing::TestState::embedded().await;
    let limits = Limits {
        memory_bytes: 64 * 1024 * 1024,
        timeout: std::time::Duration::from_secs(30),
    };
    for text in [
        "select properties.amount a, toInt(properties.amount) i, count() c from events group by a, i order by a",
        "select properties.amount a, toInt(properties.amount) i, toFloat(properties.amount) f, count() c from events where properties.amount in ('1', '2') group by a, i, f order by a",
    ] {
        let prepared = engine::prepare(text, &Bindings::default()).unwrap();
        let session = engine::open_session(&backend.state, 1, "UTC", &prepared, &limits)
            .await
            .unwrap();
        let output = session.execute(&prepared, &limits).await;
        assert!(
            output.is_ok(),
            "{text}: {:?}\n{}",
            output.err(),
            prepared.sql
        );
    }
}
