//! Unit tests of `funnel.rs`.

use datafusion::arrow::datatypes::Float64Type;

use super::*;

const SECOND: i64 = 1_000_000;

fn at(seconds: i64, step: usize) -> Event {
    Event {
        micros: seconds * SECOND,
        steps: 1 << step,
        exclusions: 0,
    }
}

fn excluded_at(seconds: i64, mask: u64) -> Event {
    Event {
        micros: seconds * SECOND,
        steps: 0,
        exclusions: mask,
    }
}

fn other(seconds: i64) -> Event {
    Event {
        micros: seconds * SECOND,
        steps: 0,
        exclusions: 0,
    }
}

fn run(order: Order, steps: usize, window: i64, events: &[Event]) -> Option<(usize, Vec<f64>)> {
    let mut events = events.to_vec();
    evaluate(
        &mut events,
        Params {
            steps,
            window_micros: window * SECOND,
            order,
        },
    )
    .map(|outcome| (outcome.reached, outcome.conversion_seconds))
}

#[test]
fn ordered_counts_the_window_edge_inclusively() {
    let edge = [at(0, 0), at(60, 1)];
    assert_eq!(run(Order::Ordered, 2, 60, &edge), Some((1, vec![60.0])));
    let past = [at(0, 0), at(61, 1)];
    assert_eq!(run(Order::Ordered, 2, 60, &past), Some((0, vec![])));
    let micro_past = [
        at(0, 0),
        Event {
            micros: 60 * SECOND + 1,
            ..at(0, 1)
        },
    ];
    assert_eq!(run(Order::Ordered, 2, 60, &micro_past), Some((0, vec![])));
}

#[test]
fn ordered_takes_the_latest_start_and_ignores_out_of_order_steps() {
    // Step 1 before any step 0 does not count; the later step 0 restarts the clock.
    let events = [at(0, 1), at(10, 0), at(20, 0), at(25, 1), at(40, 2)];
    assert_eq!(
        run(Order::Ordered, 3, 100, &events),
        Some((2, vec![5.0, 15.0]))
    );
    // Never did step 0: not in the funnel.
    assert_eq!(run(Order::Ordered, 2, 100, &[at(5, 1)]), None);
}

#[test]
fn repeated_steps_keep_the_first_completion() {
    let events = [at(0, 0), at(10, 1), at(30, 1), at(50, 2)];
    assert_eq!(
        run(Order::Ordered, 3, 100, &events),
        Some((2, vec![10.0, 40.0]))
    );
}

#[test]
fn same_instant_steps_count_in_order() {
    let events = [at(5, 1), at(5, 0)];
    assert_eq!(run(Order::Ordered, 2, 10, &events), Some((1, vec![0.0])));
}

#[test]
fn one_event_matching_two_steps_advances_once() {
    let both = Event {
        micros: 0,
        steps: 0b11,
        exclusions: 0,
    };
    assert_eq!(run(Order::Ordered, 2, 10, &[both]), Some((0, vec![])));
    let later = Event {
        micros: 3 * SECOND,
        ..both
    };
    assert_eq!(
        run(Order::Ordered, 2, 10, &[both, later]),
        Some((1, vec![3.0]))
    );
}

#[test]
fn strict_breaks_on_any_other_event() {
    let broken = [at(0, 0), other(5), at(10, 1)];
    assert_eq!(run(Order::Strict, 2, 100, &broken), Some((0, vec![])));
    assert_eq!(run(Order::Ordered, 2, 100, &broken), Some((1, vec![10.0])));
    let retried = [at(0, 0), other(5), at(10, 0), at(12, 1)];
    assert_eq!(run(Order::Strict, 2, 100, &retried), Some((1, vec![2.0])));
}

#[test]
fn exclusion_inside_the_attempt_drops_the_actor() {
    // Exclusion between steps 0 and 1 (mask bit 0).
    let dropped = [at(0, 0), excluded_at(5, 0b1), at(10, 1)];
    assert_eq!(run(Order::Ordered, 2, 100, &dropped), None);
    // After the attempt converted, it no longer matters.
    let after = [at(0, 0), at(10, 1), excluded_at(15, 0b1)];
    assert_eq!(run(Order::Ordered, 2, 100, &after), Some((1, vec![10.0])));
    // Outside the attempt's window, neither.
    let late = [at(0, 0), excluded_at(150, 0b1)];
    assert_eq!(run(Order::Ordered, 2, 100, &late), Some((0, vec![])));
    // A clean attempt later reaching as far wins.
    let retried = [
        at(0, 0),
        excluded_at(5, 0b1),
        at(10, 1),
        at(200, 0),
        at(230, 1),
    ];
    assert_eq!(run(Order::Ordered, 2, 100, &retried), Some((1, vec![30.0])));
    // An exclusion for a later stretch does not touch an attempt still at step 0.
    let other_stretch = [at(0, 0), excluded_at(5, 0b10), at(10, 1)];
    assert_eq!(
        run(Order::Ordered, 3, 100, &other_stretch),
        Some((1, vec![10.0]))
    );
}

fn no_start(mut event: Event) -> Event {
    event.steps |= NO_START;
    event
}

#[test]
fn flagged_events_do_not_open_attempts() {
    // The later step 0 cannot restart the clock: the attempt from 0 s is measured.
    let events = [at(0, 0), no_start(at(50, 0)), at(60, 1)];
    assert_eq!(run(Order::Ordered, 2, 100, &events), Some((1, vec![60.0])));
    // Its step 1 still counts for an attempt another event opened.
    let both = Event {
        micros: 10 * SECOND,
        steps: 0b11 | NO_START,
        exclusions: 0,
    };
    assert_eq!(
        run(Order::Ordered, 2, 100, &[at(0, 0), both]),
        Some((1, vec![10.0]))
    );
    // Only flagged step 0 events: not in the funnel.
    assert_eq!(
        run(Order::Ordered, 2, 100, &[no_start(at(0, 0)), at(5, 1)]),
        None
    );
    assert_eq!(
        run(Order::Strict, 2, 100, &[no_start(at(0, 0)), at(5, 1)]),
        None
    );
    // Unordered: a flagged event is never an attempt's first event, yet can be claimed.
    let unordered = [no_start(at(0, 1)), at(10, 0), no_start(at(20, 1))];
    assert_eq!(
        run(Order::Unordered, 2, 100, &unordered),
        Some((1, vec![10.0]))
    );
    assert_eq!(
        run(
            Order::Unordered,
            2,
            100,
            &[no_start(at(0, 1)), no_start(at(10, 0))]
        ),
        None
    );
}

#[test]
fn unordered_counts_steps_in_any_order() {
    let events = [at(0, 2), at(10, 0), at(30, 1)];
    assert_eq!(
        run(Order::Unordered, 3, 100, &events),
        Some((2, vec![10.0, 20.0]))
    );
    assert_eq!(run(Order::Unordered, 3, 29, &events), Some((1, vec![10.0])));
    // The window is inclusive here too.
    assert_eq!(
        run(Order::Unordered, 3, 30, &events),
        Some((2, vec![10.0, 20.0]))
    );
    let dropped = [at(0, 1), excluded_at(5, 0b11), at(10, 0)];
    assert_eq!(run(Order::Unordered, 2, 100, &dropped), None);
}

/// Skipped partial aggregation (funnel queries, see `open_session`): rows turned into
/// states one by one and merged give what aggregating the rows does.
#[test]
fn rows_passed_through_as_states_merge_to_the_same_outcome() {
    let params = Params {
        steps: 3,
        window_micros: 100 * SECOND,
        order: Order::Ordered,
    };
    let new = || FunnelGroups::new(params);
    let constant = |value: i64| Arc::new(Int64Array::from(vec![value; 6])) as ArrayRef;
    let micros = Arc::new(Int64Array::from(vec![
        0,
        10 * SECOND,
        5 * SECOND,
        30 * SECOND,
        20 * SECOND,
        40 * SECOND,
    ])) as ArrayRef;
    let steps = Arc::new(Int64Array::from(vec![1, 1, 2, 4, 0, 2])) as ArrayRef;
    let exclusions = constant(0);
    let values = vec![
        constant(3),
        constant(100),
        constant(0),
        micros,
        steps,
        exclusions,
    ];
    // Actors 0 and 1, interleaved; the fifth row is no step at all.
    let groups = [0, 1, 0, 0, 1, 1];
    let filter = BooleanArray::from(vec![true, true, true, true, true, false]);

    let mut direct = new();
    direct
        .update_batch(&values, &groups, Some(&filter), 2)
        .unwrap();
    let mut merged = new();
    let states = merged.convert_to_state(&values, Some(&filter)).unwrap();
    assert_eq!(states[0].len(), 6, "one state row per input row");
    merged.merge_batch(&states, &groups, 2).unwrap();
    assert_eq!(merged.rows, direct.rows);
    let outcome = |mut groups: FunnelGroups| {
        let array = groups.evaluate(EmitTo::All).unwrap();
        let lists = array.as_list::<i32>();
        (0..lists.len())
            .map(|row| {
                lists.is_valid(row).then(|| {
                    let values = lists.value(row);
                    values
                        .as_primitive::<Float64Type>()
                        .iter()
                        .collect::<Vec<_>>()
                })
            })
            .collect::<Vec<_>>()
    };
    let expected = outcome(direct);
    // Actor 0 goes 0 s → 5 s → 30 s; actor 1 only entered (its last row is filtered out).
    assert_eq!(
        expected,
        vec![
            Some(vec![Some(2.0), Some(5.0), Some(25.0)]),
            Some(vec![Some(0.0), None, None]),
        ]
    );
    assert_eq!(outcome(merged), expected);
}
