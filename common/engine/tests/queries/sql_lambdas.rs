//! ClickHouse's higher-order array functions, lambda first: arrayMap, arrayFilter, arrayExists,
//! arrayAll, arrayFirst.

use engine::{Bindings, Limits};

async fn first_row(text: &str) -> Result<Vec<serde_json::Value>, String> {
    let backend = common::testing::TestState::embedded().await;
    let limits = Limits {
        memory_bytes: 64 * 1024 * 1024,
        timeout: std::time::Duration::from_secs(30),
    };
    let prepared = engine::prepare(text, &Bindings::default()).map_err(|e| e.to_string())?;
    let session = engine::open_session(&backend.state, 1, "UTC", &prepared, &limits)
        .await
        .map_err(|e| e.to_string())?;
    let output = session
        .execute(&prepared, &limits)
        .await
        .map_err(|e| format!("{e}\n{}", prepared.sql))?;
    Ok(output.results[0].clone())
}

#[tokio::test]
async fn lambdas_map_filter_and_test_arrays() {
    let row = first_row(
        "select arrayMap(x -> x * 2, [1, 2, 3]), arrayFilter(x -> x > 1, [1, 2, 3]), \
         arrayExists(x -> x = 2, [1, 2, 3]), arrayAll(x -> x > 0, [1, 2, 3]), \
         arrayAll(x -> x > 1, [1, 2, 3]), arrayFirst(x -> x > 1, [1, 2, 3]), \
         arrayMap(s -> upper(s), splitByChar(',', 'a,b'))",
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::Value::Array(row),
        serde_json::json!([[2, 4, 6], [2, 3], 1, 1, 0, 2, ["A", "B"]])
    );
}

#[tokio::test]
async fn a_lambda_must_come_first() {
    let error = first_row("select arrayMap([1, 2], x -> x)")
        .await
        .unwrap_err();
    assert!(error.contains("lambda"), "{error}");
}
