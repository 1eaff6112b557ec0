//! The oracle of `bench surveys`: the stats route's two queries (reference 1.8) written in
//! DuckDB SQL over a view `events` of the same Parquet files, the answer PostHog's formulas make
//! of their rows, and whether our route's answer is that one.
//!
//! Both sides become the same comparable form: per event `[kind, total_count, unique_persons,
//! first_seen_us, last_seen_us, unique_persons_only_seen, total_count_only_seen]`, then
//! `["rates", response, dismissal, unique response, unique dismissal]`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::data::{DISMISSED, SENT, SHOWN};

/// The names of the two DuckDB queries, in the order the route runs them.
pub(super) const EVENTS_QUERY: &str = "stats_per_event";
pub(super) const BOTH_QUERY: &str = "stats_dismissed_and_sent";

/// One row per event of interest (`kind, person, ts`) in the window: shown and dismissed as they
/// are, `survey sent` deduplicated per submission (`$survey_submission_id`, else the uuid) to its
/// latest event's person and time.
fn activity(survey: Uuid, from: DateTime<Utc>, to: DateTime<Utc>) -> String {
    let at = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Micros, true);
    let kept = format!(
        "json_extract_string(properties, '$.\"$survey_id\"') = '{survey}' \
         and timestamp >= timestamptz '{from}' and timestamp <= timestamptz '{to}'",
        from = at(from),
        to = at(to),
    );
    format!(
        "seen as (select event as kind, person_id as person, timestamp as ts from events \
           where event in ('{SHOWN}', '{DISMISSED}') and {kept}), \
         sent as (select '{SENT}' as kind, arg_max(person_id, timestamp) as person, \
           max(timestamp) as ts from events where event = '{SENT}' and {kept} \
           group by coalesce(nullif(json_extract_string(properties, \
             '$.\"$survey_submission_id\"'), ''), uuid)), \
         activity as (select * from seen union all select * from sent)"
    )
}

/// Query 1 (per event counts and first/last times) and query 2 (persons who both dismissed and
/// answered), as `(name, sql)`.
pub(super) fn duckdb_queries(
    survey: Uuid,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<(&'static str, String)> {
    let activity = activity(survey, from, to);
    vec![
        (
            EVENTS_QUERY,
            format!(
                "with {activity} \
                 select kind, count(*) as total, count(distinct person) as persons, \
                   epoch_us(min(ts)) as first_us, epoch_us(max(ts)) as last_us \
                 from activity group by kind order by kind"
            ),
        ),
        (
            BOTH_QUERY,
            format!(
                "with {activity} \
                 select count(*) as persons from (select person from activity \
                   where person is not null group by person \
                   having count(*) filter (where kind = '{DISMISSED}') > 0 \
                     and count(*) filter (where kind = '{SENT}') > 0)"
            ),
        ),
    ]
}

/// Counts and times of one event, before the adjustments.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    total: u64,
    persons: u64,
    first_us: Option<i64>,
    last_us: Option<i64>,
}

/// `round(part / whole * 100, 2)`, 0 when `whole` is.
fn rate(part: u64, whole: u64) -> f64 {
    match whole {
        0 => 0.0,
        whole => (part as f64 / whole as f64 * 10_000.0).round() / 100.0,
    }
}

/// The comparable answer PostHog's formulas (reference 1.8) make of DuckDB's rows: `per_event`
/// (query 1's `kind, total, persons, first_us, last_us`) and `both` (query 2's one count).
pub(super) fn expected(per_event: &Value, both: &Value) -> Value {
    let rows = per_event.as_array().map(Vec::as_slice).unwrap_or_default();
    let counts = |kind: &str| {
        rows.iter()
            .filter_map(Value::as_array)
            .find(|row| row.first().and_then(Value::as_str) == Some(kind))
            .map(|row| Counts {
                total: row.get(1).and_then(Value::as_u64).unwrap_or(0),
                persons: row.get(2).and_then(Value::as_u64).unwrap_or(0),
                first_us: row.get(3).and_then(Value::as_i64),
                last_us: row.get(4).and_then(Value::as_i64),
            })
            .unwrap_or_default()
    };
    let both = both[0][0].as_u64().unwrap_or(0);
    let (shown, mut dismissed, sent) = (counts(SHOWN), counts(DISMISSED), counts(SENT));
    dismissed.persons = dismissed.persons.saturating_sub(both);
    let only_persons = shown
        .persons
        .saturating_sub(dismissed.persons)
        .saturating_sub(sent.persons);
    let only_total = shown
        .total
        .saturating_sub(dismissed.total)
        .saturating_sub(sent.total);
    let row = |kind: &str, c: Counts, only: (u64, u64)| {
        json!([
            kind, c.total, c.persons, c.first_us, c.last_us, only.0, only.1
        ])
    };
    json!([
        row(SHOWN, shown, (only_persons, only_total)),
        row(DISMISSED, dismissed, (0, 0)),
        row(SENT, sent, (0, 0)),
        [
            "rates",
            rate(sent.total, shown.total),
            rate(dismissed.total, shown.total),
            rate(sent.persons, shown.persons),
            rate(dismissed.persons, shown.persons),
        ],
    ])
}

/// Our route's answer in the comparable form.
pub(super) fn ours(body: &Value) -> Value {
    let micros = |value: &Value| {
        value
            .as_str()
            .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
            .map(|at| at.timestamp_micros())
    };
    let row = |kind: &str| {
        let stats = &body["stats"][kind];
        json!([
            kind,
            stats["total_count"],
            stats["unique_persons"],
            micros(&stats["first_seen"]),
            micros(&stats["last_seen"]),
            stats["unique_persons_only_seen"],
            stats["total_count_only_seen"],
        ])
    };
    let rates = &body["rates"];
    json!([
        row(SHOWN),
        row(DISMISSED),
        row(SENT),
        [
            "rates",
            rates["response_rate"],
            rates["dismissal_rate"],
            rates["unique_users_response_rate"],
            rates["unique_users_dismissal_rate"],
        ],
    ])
}

/// Whether both comparable answers are the same: counts and times exactly, rates to a hundredth
/// (both round to two decimals, perhaps on different sides of a tie).
pub(super) fn agree(ours: &Value, theirs: &Value) -> bool {
    let (Some(ours), Some(theirs)) = (ours.as_array(), theirs.as_array()) else {
        return false;
    };
    ours.len() == theirs.len()
        && ours.iter().zip(theirs).all(|(a, b)| {
            let rates = a[0] == "rates";
            let (Some(a), Some(b)) = (a.as_array(), b.as_array()) else {
                return false;
            };
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| match (x.as_f64(), y.as_f64()) {
                        (Some(x), Some(y)) if rates => (x - y).abs() <= 0.0100001,
                        (Some(_), Some(_)) => x.as_i64() == y.as_i64() && x.as_u64() == y.as_u64(),
                        _ => x == y,
                    })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duckdb_rows_become_posthogs_answer_and_match_ours() {
        let per_event = json!([
            [DISMISSED, 30, 20, 1_000_000, 5_000_000],
            [SENT, 50, 40, 2_000_000, 6_000_000],
            [SHOWN, 100, 70, 500_000, 7_000_000],
        ]);
        let expected = expected(&per_event, &json!([[5]]));
        assert_eq!(
            expected[1],
            json!([DISMISSED, 30, 15, 1_000_000, 5_000_000, 0, 0])
        );
        assert_eq!(
            expected[0],
            json!([SHOWN, 100, 70, 500_000, 7_000_000, 15, 20])
        );
        assert_eq!(expected[3], json!(["rates", 50.0, 30.0, 57.14, 21.43]));
        let event = |total, persons, first: &str, last: &str, only: (u64, u64)| {
            json!({"total_count": total, "unique_persons": persons, "first_seen": first,
                   "last_seen": last, "unique_persons_only_seen": only.0,
                   "total_count_only_seen": only.1})
        };
        let body = json!({
            "stats": {
                SHOWN: event(100, 70, "1970-01-01T00:00:00.500Z", "1970-01-01T00:00:07Z", (15, 20)),
                DISMISSED: event(30, 15, "1970-01-01T00:00:01Z", "1970-01-01T00:00:05Z", (0, 0)),
                SENT: event(50, 40, "1970-01-01T00:00:02Z", "1970-01-01T00:00:06Z", (0, 0)),
            },
            "rates": {"response_rate": 50.0, "dismissal_rate": 30.0,
                      "unique_users_response_rate": 57.14, "unique_users_dismissal_rate": 21.43},
        });
        assert!(agree(&ours(&body), &expected));
        let mut off = body.clone();
        off["stats"][SENT]["total_count"] = json!(51);
        assert!(!agree(&ours(&off), &expected));
    }

    #[test]
    fn nothing_shown_is_all_zeros_and_nulls() {
        let expected = expected(&json!([]), &json!([[0]]));
        assert_eq!(expected[0], json!([SHOWN, 0, 0, null, null, 0, 0]));
        assert_eq!(expected[3], json!(["rates", 0.0, 0.0, 0.0, 0.0]));
    }

    #[test]
    fn the_sql_names_the_survey_and_the_window() {
        let from = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let queries = duckdb_queries(Uuid::nil(), from, from);
        assert_eq!(queries.len(), 2);
        for (_, sql) in &queries {
            assert!(sql.contains(&Uuid::nil().to_string()));
            assert!(sql.contains("2027-01-15T08:00:00.000000Z"));
        }
    }
}
