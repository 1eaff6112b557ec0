use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{Int64Type, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::*;

const SECOND: i64 = 1_000_000;

fn params(limit: usize, start: Option<&str>, end: Option<&str>) -> Params {
    Params {
        step_limit: limit,
        gap_seconds: 1800,
        start: start.map(str::to_owned),
        end: end.map(str::to_owned),
    }
}

/// `(session, step, item, previous item, seconds since it, last step)` of each kept step.
type Row = (i64, i64, String, String, Option<i64>, i64);

/// Each actor's `(session, step, item)` steps.
type ActorSteps = Vec<(i64, Vec<(i64, i64, String)>)>;

fn run(params: &Params, events: &[(i64, &str)]) -> Vec<Row> {
    let mut events: Vec<(i64, &str)> = events
        .iter()
        .map(|&(seconds, item)| (seconds * SECOND, item))
        .collect();
    let mut out = Vec::new();
    evaluate(&mut events, params, &mut out);
    out.iter()
        .map(|step| {
            (
                step.session,
                step.step,
                step.item.to_owned(),
                step.previous_item.to_owned(),
                step.conversion_seconds,
                step.last_step,
            )
        })
        .collect()
}

fn items(rows: &[Row]) -> Vec<(i64, i64, &str)> {
    rows.iter()
        .map(|(session, step, item, ..)| (*session, *step, item.as_str()))
        .collect()
}

#[test]
fn sessions_cut_at_the_gap_and_runs_count_once_at_their_last_event() {
    let events = [
        (100, "/b"),
        (0, "/a"),
        (50, "/a"),
        (160, "/c"),
        // 30 minutes after the last event: a new session.
        (160 + 1800, "/a"),
        (160 + 1800 + 1799, "/d"),
    ];
    let rows = run(&params(5, None, None), &events);
    assert_eq!(
        rows,
        vec![
            (0, 1, "/a".into(), "".into(), None, 3),
            (0, 2, "/b".into(), "/a".into(), Some(50), 3),
            (0, 3, "/c".into(), "/b".into(), Some(60), 3),
            (1, 1, "/a".into(), "".into(), None, 2),
            (1, 2, "/d".into(), "/a".into(), Some(1799), 2),
        ]
    );
}

#[test]
fn equal_times_are_ordered_by_item_and_the_step_limit_keeps_the_first() {
    let events = [(5, "/z"), (5, "/y"), (1, "/x"), (9, "/w")];
    let rows = run(&params(3, None, None), &events);
    assert_eq!(items(&rows), vec![(0, 1, "/x"), (0, 2, "/y"), (0, 3, "/z")]);
}

#[test]
fn gaps_count_whole_seconds_crossed() {
    // 1799.5 s apart, but 1800 whole seconds crossed: two sessions, as dateDiff('second').
    let mut events = vec![(SECOND / 2, "/a"), (1800 * SECOND, "/b")];
    let mut out = Vec::new();
    let params = params(5, None, None);
    evaluate(&mut events, &params, &mut out);
    assert_eq!(
        out.iter().map(|s| (s.session, s.step)).collect::<Vec<_>>(),
        vec![(0, 1), (1, 1)]
    );
}

#[test]
fn a_start_point_starts_sessions_that_reach_it() {
    let events = [
        (0, "/a"),
        (1, "/s"),
        (2, "/b"),
        (3, "/s"),
        (4, "/c"),
        // A session that never reaches /s is dropped.
        (5000, "/a"),
    ];
    let rows = run(&params(3, Some("/s"), None), &events);
    assert_eq!(items(&rows), vec![(0, 1, "/s"), (0, 2, "/b"), (0, 3, "/s")]);
}

#[test]
fn an_end_point_keeps_the_last_steps_up_to_it() {
    let events = [(0, "/a"), (1, "/b"), (2, "/c"), (3, "/e"), (4, "/f")];
    let rows = run(&params(2, None, Some("/e")), &events);
    assert_eq!(items(&rows), vec![(0, 1, "/c"), (0, 2, "/e")]);
    // Nearer the start than the limit: numbered from its own first step.
    let rows = run(&params(5, None, Some("/b")), &events);
    assert_eq!(items(&rows), vec![(0, 1, "/a"), (0, 2, "/b")]);
}

#[test]
fn both_points_keep_halves_around_an_ellipsis() {
    let events: Vec<(i64, String)> = (0..10).map(|i| (i, format!("/{i}"))).collect();
    let events: Vec<(i64, &str)> = events.iter().map(|(t, s)| (*t, s.as_str())).collect();
    // From /1 to /8: 8 steps, limit 5: two, `...` at the third's time, then the last two.
    let rows = run(&params(5, Some("/1"), Some("/8")), &events);
    assert_eq!(
        rows,
        vec![
            (0, 1, "/1".into(), "".into(), None, 5),
            (0, 2, "/2".into(), "/1".into(), Some(1), 5),
            (0, 3, ELLIPSIS.into(), "/2".into(), Some(1), 5),
            (0, 4, "/7".into(), ELLIPSIS.into(), Some(4), 5),
            (0, 5, "/8".into(), "/7".into(), Some(1), 5),
        ]
    );
    // Short enough: all of it; an end point before the start does not count.
    let rows = run(&params(5, Some("/3"), Some("/5")), &events);
    assert_eq!(items(&rows), vec![(0, 1, "/3"), (0, 2, "/4"), (0, 3, "/5")]);
    assert!(run(&params(5, Some("/5"), Some("/3")), &events).is_empty());
}

#[test]
fn an_item_left_empty_ends_with_the_session() {
    // The session's last item is compared with '' (as `leadInFrame(item, 1, '')`).
    let rows = run(&params(5, None, None), &[(0, "/a"), (1, "")]);
    assert_eq!(items(&rows), vec![(0, 1, "/a")]);
}

/// Through DataFusion: three partitions, batches of 4, NULL times and items skipped, the same
/// steps as evaluating each actor's events at once.
#[tokio::test]
async fn grouped_over_partitions_it_gives_each_actors_steps() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("actor", DataType::Int64, false),
        Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("item", DataType::Utf8, true),
    ]));
    let mut actors = Vec::new();
    let mut times = Vec::new();
    let mut items = Vec::new();
    for row in 0..120i64 {
        actors.push(row % 7);
        // Four bursts of events (sessions), some times and items missing.
        times.push((row % 11 != 0).then_some(((row % 30) * 97 + (row / 30) * 4000) * SECOND));
        items.push((row % 13 != 0).then(|| format!("/{}", row % 4)));
    }
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(actors.clone())),
            Arc::new(TimestampMicrosecondArray::from(times.clone()).with_timezone("UTC")),
            Arc::new(StringArray::from(items.clone())),
        ],
    )
    .unwrap();
    let partitions: Vec<Vec<RecordBatch>> = (0..3)
        .map(|part| vec![batch.slice(part * 40, 40)])
        .collect();
    let ctx = SessionContext::new_with_config(
        SessionConfig::new()
            .with_target_partitions(3)
            .with_batch_size(4),
    );
    ctx.register_udaf(aggregate_paths());
    ctx.register_table(
        "events",
        Arc::new(MemTable::try_new(schema, partitions).unwrap()),
    )
    .unwrap();
    let frame = ctx
        .sql(&format!(
            "SELECT actor, {NAME}(3, 1800, NULL, NULL, t, item) AS path FROM events \
             GROUP BY actor ORDER BY actor"
        ))
        .await
        .unwrap();
    let batches = frame.collect().await.unwrap();
    let mut got: ActorSteps = Vec::new();
    for batch in &batches {
        let actor = batch.column(0).as_primitive::<Int64Type>();
        let lists = batch.column(1).as_list::<i32>();
        for row in 0..batch.num_rows() {
            let tuples = lists.value(row);
            let tuples = tuples.as_struct();
            let sessions = tuples.column(0).as_primitive::<Int64Type>();
            let steps = tuples.column(1).as_primitive::<Int64Type>();
            let names = tuples.column(2).as_string::<i32>();
            got.push((
                actor.value(row),
                (0..tuples.len())
                    .map(|i| (sessions.value(i), steps.value(i), names.value(i).to_owned()))
                    .collect(),
            ));
        }
    }
    let expected: ActorSteps = (0..7)
        .map(|actor| {
            let mut events: Vec<(i64, &str)> = (0..120usize)
                .filter(|&row| actors[row] == actor)
                .filter_map(|row| Some((times[row]?, items[row].as_deref()?)))
                .collect();
            let params = params(3, None, None);
            let mut out = Vec::new();
            evaluate(&mut events, &params, &mut out);
            let steps = out
                .iter()
                .map(|step| (step.session, step.step, step.item.to_owned()))
                .collect();
            (actor, steps)
        })
        .collect();
    assert_eq!(got, expected);
    assert!(got.iter().any(|(_, steps)| steps.len() > 3), "{got:?}");
}
