//! Properties read from JSON text at query time: the engine's own extractor (`hogql_prop`,
//! `hogql_json_float`, jiter along a constant path) against `datafusion-functions-json`'s
//! `json_get_str` / `json_get_float` (also jiter), on the same rows, through the same
//! DataFusion plan. Run: `cargo bench -p engine --bench json_extract`.
//!
//! The engine keeps whichever is faster; this bench is why (the issue-18 note has the figures).

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};
use tokio::runtime::Runtime;

// The allocator the binaries use: the system one's fresh pages for every output buffer would
// weigh on whichever side allocates more.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ROWS: usize = 1_000_000;
const BATCH_ROWS: usize = 8_192;

const BROWSERS: [&str; 5] = ["Chrome", "Safari", "Firefox", "Mobile Safari", "Opera"];
const SOURCES: [&str; 4] = ["google", "newsletter", "twitter", "direct"];

/// Properties shaped like a web SDK's: a dozen keys, the wanted ones early and late.
fn properties(row: usize) -> String {
    serde_json::json!({
        "$browser": BROWSERS[row % BROWSERS.len()],
        "$current_url": format!("https://example.com/docs/page-{}", row % 97),
        "$device_type": if row.is_multiple_of(3) { "Mobile" } else { "Desktop" },
        "$host": "example.com",
        "$lib": "web",
        "$lib_version": "1.200.0",
        "$os": "Android",
        "$pathname": format!("/docs/page-{}", row % 97),
        "$screen_width": 390 + row % 7,
        "$session_id": format!("00000000-{:04x}-5111-0000-00005e551017", row % 65_536),
        "revenue": (row % 1_000) as f64 / 4.0 + 0.25,
        "utm_source": SOURCES[row % SOURCES.len()],
    })
    .to_string()
}

fn context(runtime: &Runtime) -> SessionContext {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "properties",
        DataType::Utf8,
        false,
    )]));
    let batches: Vec<RecordBatch> = (0..ROWS)
        .step_by(BATCH_ROWS)
        .map(|start| {
            let mut text = StringBuilder::new();
            for row in start..(start + BATCH_ROWS).min(ROWS) {
                text.append_value(properties(row));
            }
            RecordBatch::try_new(schema.clone(), vec![Arc::new(text.finish())])
        })
        .collect::<Result<_, _>>()
        .expect("batches match their schema");
    // One partition per core, as the engine's sessions run.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let partitions: Vec<Vec<RecordBatch>> = (0..cores)
        .map(|core| batches.iter().skip(core).step_by(cores).cloned().collect())
        .collect();
    let mut ctx =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(cores));
    ctx.register_table(
        "events",
        Arc::new(MemTable::try_new(schema, partitions).expect("partitions match the schema")),
    )
    .expect("a fresh context takes the table");
    for udf in engine::hogql_functions(chrono_tz::UTC) {
        ctx.register_udf(udf);
    }
    datafusion_functions_json::register_all(&mut ctx).expect("the JSON functions register");
    // Both sides give the same answers on these rows (strings and numbers only).
    for [ours, theirs] in QUERIES.iter().map(|(_, ours, theirs)| [ours, theirs]) {
        let answer = |sql: &str| {
            runtime.block_on(async {
                let batches = ctx.sql(sql).await?.collect().await?;
                datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                    .map(|table| table.to_string())
                    .map_err(Into::into)
            })
        };
        let (ours, theirs): (datafusion::error::Result<String>, _) = (answer(ours), answer(theirs));
        assert_eq!(ours.expect("ours runs"), theirs.expect("theirs runs"));
    }
    ctx
}

/// (name, the engine's extractor, datafusion-functions-json), same answers.
const QUERIES: [(&str, &str, &str); 3] = [
    (
        "string_first_key_group_by",
        "select hogql_prop(properties, '$browser') as k, count(*) as c from events group by k order by k",
        "select json_get_str(properties, '$browser') as k, count(*) as c from events group by k order by k",
    ),
    (
        "string_last_key_group_by",
        "select hogql_prop(properties, 'utm_source') as k, count(*) as c from events group by k order by k",
        "select json_get_str(properties, 'utm_source') as k, count(*) as c from events group by k order by k",
    ),
    (
        "float_sum",
        "select sum(hogql_json_float(properties, 'revenue')) as s from events",
        "select sum(json_get_float(properties, 'revenue')) as s from events",
    ),
];

fn extract(c: &mut Criterion) {
    let runtime = Runtime::new().expect("a tokio runtime");
    let ctx = context(&runtime);
    let mut group = c.benchmark_group("json_extract");
    group.sample_size(10);
    for (name, ours, theirs) in QUERIES {
        for (side, sql) in [("engine", ours), ("datafusion_functions_json", theirs)] {
            group.bench_function(format!("{name}/{side}"), |b| {
                b.iter(|| {
                    runtime
                        .block_on(async { ctx.sql(sql).await?.collect().await })
                        .expect("the query runs")
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, extract);
criterion_main!(benches);
