//! RetentionQuery: of the actors who did the target event in an interval (a cohort), how many
//! did the returning event 0, 1, 2, ... intervals later.
//!
//! Followed from PostHog's `posthog/hogql_queries/insights/retention_query_runner.py` and
//! `QueryDateRangeWithIntervals` (`posthog/hogql_queries/utils/query_date_range.py`):
//! - `retentionFilter.period` Hour|Day|Week|Month (default Day); `totalIntervals` is the number
//!   of intervals looked ahead from each cohort (schema default 8 when missing; the runner's
//!   `or DEFAULT_TOTAL_INTERVALS` makes an explicit null or 0 mean 7).
//! - Intervals, in the project time zone: the range ends at the start of the interval after
//!   `date_to` (so the interval holding `date_to` is complete) and starts at `date_from` rounded
//!   down to its interval, or, without `date_from`, `totalIntervals` intervals before the end.
//!   One cohort per interval of that range (`intervals_between`).
//! - Recurring (default): an actor is in the cohort of every interval in which they did the
//!   target event. First time: the actor's first target event ever (node filters applied, no
//!   date bound) must fall inside the range, and its interval is the actor's only cohort.
//! - Interval k = 0 is the whole cohort (the runner always adds `[0]` for a valid start
//!   interval, whether or not the returning event happened then); k > 0 counts the cohort's
//!   actors who did the returning event in interval start + k, for k < totalIntervals and only
//!   within the range (return events are bounded by the range like start events).
//! - `minimumOccurrences` n > 1: a returning interval needs at least n returning events.
//! - `cumulative`: an actor counts in every interval up to the last one they returned in.
//! - Response: one row per cohort `{date, label: "Day 3", values: [{count, label: "Day k"}]}`
//!   with `totalIntervals` values each (zero-filled, also past the end of the range); `date`
//!   is the cohort's start, wall-clock in the project time zone (`date_from + n periods`).
//!   The HogQL runner gives no `people`/`people_url`, so neither do we.
//!
//! Deliberately different: weeks are aligned to the project's `week_start_day` everywhere
//! (PostHog rounds the range's start with the default Sunday mode, which misaligns Monday
//! projects); hours step as elapsed hours. An entity of `type: "actions"` is its action's
//! condition alone (PostHog's `entity_to_expr` ignores such an entity's `properties`). Not
//! supported (400 naming the field): breakdowns, group aggregation. `filterTestAccounts` has no test-account filters
//! to apply here; `meanRetentionCalculation`, `retentionReference`, `display` and similar
//! only shape the frontend's rendering and are accepted as they are.

use chrono::{
    DateTime, Datelike, Duration, Months, NaiveDate, NaiveDateTime, SecondsFormat, Timelike, Utc,
};
use serde_json::{Map, Value, json};

use crate::date_range::{self, Interval};
use crate::{Compiled, Context, Invalid, Table, actions, filters, sql_text};

/// Both the rows the query may return and the cells of the response are capped by this.
const MAX_CELLS: usize = 50_000;
/// PostHog's schema default for a missing `totalIntervals`.
const SCHEMA_TOTAL_INTERVALS: u32 = 8;
/// The runner's fallback when `totalIntervals` is null or 0.
const RUNNER_TOTAL_INTERVALS: u32 = 7;
const DEFAULT_EVENT: &str = "$pageview";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Period {
    Hour,
    Day,
    Week,
    Month,
}

impl Period {
    fn title(self) -> &'static str {
        match self {
            Period::Hour => "Hour",
            Period::Day => "Day",
            Period::Week => "Week",
            Period::Month => "Month",
        }
    }

    fn interval(self) -> Interval {
        match self {
            Period::Hour => Interval::Hour,
            Period::Day => Interval::Day,
            Period::Week => Interval::Week,
            Period::Month => Interval::Month,
        }
    }
}

/// What `retentionFilter` (and the node around it) asks for.
#[derive(Debug, Clone)]
struct Settings {
    period: Period,
    lookahead: u32,
    first_time: bool,
    cumulative: bool,
    minimum_occurrences: u32,
    /// Dialect conditions selecting the target and the returning events.
    target: String,
    returning: String,
    filters: String,
}

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let settings = settings(node, ctx)?;
    let starts = interval_starts(node, settings.period, settings.lookahead, ctx)?;
    let query = build_query(&settings, &starts, ctx);
    let period = settings.period;
    let lookahead = settings.lookahead as usize;
    let cumulative = settings.cumulative;
    let timezone = ctx.timezone;
    Ok(Compiled::new(vec![query], move |tables| {
        let table = tables.into_iter().next().unwrap_or_default();
        let cohorts = starts.cohorts.len();
        let grid = counts_grid(&table, cohorts, lookahead, cumulative)?;
        let dates: Vec<String> = starts
            .cohorts
            .iter()
            .map(|start| {
                start
                    .with_timezone(&timezone)
                    .to_rfc3339_opts(SecondsFormat::Secs, false)
            })
            .collect();
        Ok(response(period, &dates, &grid))
    }))
}

fn settings(node: &Value, ctx: &Context) -> Result<Settings, Invalid> {
    let filter = match node.get("retentionFilter") {
        Some(Value::Object(filter)) => filter,
        Some(Value::Null) | None => {
            return Err(Invalid::new(
                "retentionFilter",
                "retentionFilter is required.",
            ));
        }
        Some(_) => {
            return Err(Invalid::new(
                "retentionFilter",
                "retentionFilter must be an object.",
            ));
        }
    };
    let period = match filter.get("period") {
        None | Some(Value::Null) => Period::Day,
        Some(Value::String(text)) => match text.as_str() {
            "Hour" => Period::Hour,
            "Day" => Period::Day,
            "Week" => Period::Week,
            "Month" => Period::Month,
            _ => return Err(invalid_period(text)),
        },
        Some(other) => return Err(invalid_period(&other.to_string())),
    };
    let lookahead = match filter.get("totalIntervals") {
        None => SCHEMA_TOTAL_INTERVALS,
        Some(Value::Null) => RUNNER_TOTAL_INTERVALS,
        Some(value) => match positive_integer(value) {
            Some(0) => RUNNER_TOTAL_INTERVALS,
            Some(count) if count as usize <= MAX_CELLS => count,
            _ => {
                return Err(Invalid::new(
                    "retentionFilter.totalIntervals",
                    format!("totalIntervals must be an integer from 1 to {MAX_CELLS}."),
                ));
            }
        },
    };
    let first_time = match filter.get("retentionType") {
        None | Some(Value::Null) => false,
        Some(Value::String(text)) if text == "retention_recurring" => false,
        Some(Value::String(text)) if text == "retention_first_time" => true,
        Some(other) => {
            return Err(Invalid::new(
                "retentionFilter.retentionType",
                format!(
                    "Input should be 'retention_recurring' or 'retention_first_time', not {other}."
                ),
            ));
        }
    };
    let cumulative = match filter.get("cumulative") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => {
            return Err(Invalid::new(
                "retentionFilter.cumulative",
                "cumulative must be a boolean.",
            ));
        }
    };
    let minimum_occurrences = match filter.get("minimumOccurrences") {
        None | Some(Value::Null) => 1,
        Some(value) => match positive_integer(value) {
            Some(count) if count >= 1 => count,
            _ => {
                return Err(Invalid::new(
                    "retentionFilter.minimumOccurrences",
                    "minimumOccurrences must be a positive integer.",
                ));
            }
        },
    };
    refuse_unsupported(node)?;
    let target = entity_condition(
        filter.get("targetEntity"),
        "retentionFilter.targetEntity",
        ctx,
    )?;
    let returning = entity_condition(
        filter.get("returningEntity"),
        "retentionFilter.returningEntity",
        ctx,
    )?;
    let filters = filters::node_properties(node, ctx)?;
    Ok(Settings {
        period,
        lookahead,
        first_time,
        cumulative,
        minimum_occurrences,
        target,
        returning,
        filters,
    })
}

fn invalid_period(given: &str) -> Invalid {
    Invalid::new(
        "retentionFilter.period",
        format!("Input should be 'Hour', 'Day', 'Week' or 'Month', not {given}."),
    )
}

/// A JSON integer (or integral float) that is not negative.
fn positive_integer(value: &Value) -> Option<u32> {
    if let Some(number) = value.as_u64() {
        return u32::try_from(number).ok();
    }
    let number = value.as_f64()?;
    (number >= 0.0 && number.fract() == 0.0 && number <= f64::from(u32::MAX))
        .then_some(number as u32)
}

/// Fields PostHog supports that we do not compute: refused rather than silently ignored.
fn refuse_unsupported(node: &Value) -> Result<(), Invalid> {
    if let Some(breakdown) = node.get("breakdownFilter").filter(|b| !b.is_null()) {
        let single = breakdown.get("breakdown").is_some_and(|b| !b.is_null());
        let multiple = breakdown
            .get("breakdowns")
            .and_then(Value::as_array)
            .is_some_and(|list| !list.is_empty());
        if single || multiple {
            return Err(Invalid::new(
                "breakdownFilter",
                "Breakdowns are not supported for retention yet.",
            ));
        }
    }
    if node
        .get("aggregation_group_type_index")
        .is_some_and(|index| !index.is_null())
    {
        return Err(Invalid::new(
            "aggregation_group_type_index",
            "Retention by groups is not supported.",
        ));
    }
    Ok(())
}

/// `targetEntity` / `returningEntity` as a condition on events (PostHog's default entity is
/// `$pageview`; an events entity with a null id means all events).
fn entity_condition(entity: Option<&Value>, attr: &str, ctx: &Context) -> Result<String, Invalid> {
    let entity = match entity {
        None | Some(Value::Null) => {
            return Ok(format!("event = {}", sql_text::string(DEFAULT_EVENT)));
        }
        Some(Value::Object(entity)) => entity,
        Some(_) => return Err(Invalid::new(attr, "The entity must be an object.")),
    };
    match entity.get("type").and_then(Value::as_str) {
        None | Some("events") => {}
        Some("actions") => {
            let action = actions::named(&Value::Object(entity.clone()), ctx, attr)?;
            return actions::condition(action, ctx, attr);
        }
        Some(other) => {
            return Err(Invalid::new(
                format!("{attr}.type"),
                format!("Unknown entity type {other}."),
            ));
        }
    }
    let event = match entity.get("id") {
        None | Some(Value::Null) => "true".to_string(),
        Some(Value::String(name)) => format!("event = {}", sql_text::string(name)),
        Some(_) => {
            return Err(Invalid::new(
                format!("{attr}.id"),
                "An events entity's id is the event name.",
            ));
        }
    };
    let properties =
        filters::expression(entity.get("properties"), ctx, &format!("{attr}.properties"))?;
    Ok(if properties == "true" {
        event
    } else {
        format!("{event} AND ({properties})")
    })
}

/// The cohorts' interval starts and where the last one ends, as instants.
#[derive(Debug, Clone)]
struct IntervalStarts {
    cohorts: Vec<DateTime<Utc>>,
    end: DateTime<Utc>,
}

fn interval_starts(
    node: &Value,
    period: Period,
    lookahead: u32,
    ctx: &Context,
) -> Result<IntervalStarts, Invalid> {
    let date_range = node.get("dateRange").filter(|range| !range.is_null());
    let date_from = date_range
        .and_then(|range| range.get("date_from"))
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty());
    if date_from == Some("all") {
        return Err(Invalid::new(
            "dateRange.date_from",
            "Retention needs a bounded date range: date_from \"all\" is not supported.",
        ));
    }
    let range = match (date_range, date_from) {
        // Without date_from, the range is counted back from date_to; resolving it must not
        // compare date_to with the default date_from (`-7d`), so the start is left open.
        (Some(Value::Object(fields)), None) => {
            let mut fields = fields.clone();
            fields.insert("date_from".into(), Value::String("all".into()));
            date_range::resolve(
                Some(&Value::Object(fields)),
                period.interval(),
                ctx,
                "dateRange",
            )?
        }
        _ => date_range::resolve(date_range, period.interval(), ctx, "dateRange")?,
    };
    // The end: the start of the interval after the one holding `date_to`.
    let end = start_of_interval(step(range.to, period, 1, ctx), period, ctx);
    let first = if date_from.is_some() {
        start_of_interval(range.from, period, ctx)
    } else {
        start_of_interval(step(end, period, -i64::from(lookahead), ctx), period, ctx)
    };
    let mut cohorts = Vec::new();
    let mut start = first;
    while start < end {
        cohorts.push(start);
        if cohorts.len().saturating_mul(lookahead as usize) > MAX_CELLS {
            return Err(Invalid::new(
                "dateRange",
                format!(
                    "The date range holds too many {}s for retention ({} cells at most).",
                    period.title().to_lowercase(),
                    MAX_CELLS
                ),
            ));
        }
        start = step(first, period, cohorts.len() as i64, ctx);
    }
    Ok(IntervalStarts { cohorts, end })
}

/// `instant` rounded down to the start of its interval in the project time zone.
fn start_of_interval(instant: DateTime<Utc>, period: Period, ctx: &Context) -> DateTime<Utc> {
    let local = instant.with_timezone(&ctx.timezone).naive_local();
    let date = local.date();
    let truncated = match period {
        Period::Hour => date
            .and_time(local.time())
            .with_minute(0)
            .and_then(|t| t.with_second(0)),
        Period::Day => date.and_hms_opt(0, 0, 0),
        Period::Week => {
            let back = if ctx.week_start_day == 1 {
                date.weekday().num_days_from_monday()
            } else {
                date.weekday().num_days_from_sunday()
            };
            (date - Duration::days(i64::from(back))).and_hms_opt(0, 0, 0)
        }
        Period::Month => NaiveDate::from_ymd_opt(date.year(), date.month(), 1)
            .and_then(|first| first.and_hms_opt(0, 0, 0)),
    };
    match truncated {
        Some(truncated) => local_instant(truncated.with_nanosecond(0).unwrap_or(truncated), ctx),
        None => instant,
    }
}

/// `start` moved by `count` periods: on the wall clock of the project time zone (as Python's
/// aware datetime arithmetic does), except hours, which step as elapsed time.
fn step(start: DateTime<Utc>, period: Period, count: i64, ctx: &Context) -> DateTime<Utc> {
    let local = start.with_timezone(&ctx.timezone).naive_local();
    let moved = match period {
        Period::Hour => return start + Duration::hours(count),
        Period::Day => local.checked_add_signed(Duration::days(count)),
        Period::Week => local.checked_add_signed(Duration::weeks(count)),
        Period::Month => {
            let months = Months::new(count.unsigned_abs().min(u64::from(u32::MAX)) as u32);
            if count >= 0 {
                local.checked_add_months(months)
            } else {
                local.checked_sub_months(months)
            }
        }
    };
    moved.map_or(start, |moved| local_instant(moved, ctx))
}

/// A wall-clock time of the project's zone as an instant (the earlier one when the clock goes
/// back; just after the gap when it skips forward).
fn local_instant(local: NaiveDateTime, ctx: &Context) -> DateTime<Utc> {
    use chrono::TimeZone;
    let zone = ctx.timezone;
    for shift in 0..3 {
        let candidate = local + Duration::hours(shift);
        if let Some(instant) = zone.from_local_datetime(&candidate).earliest() {
            return instant.with_timezone(&Utc);
        }
    }
    local.and_utc()
}

/// Interval indexes an actor's bitmask holds (bit 63 is the sign bit).
const MASK_INTERVALS: usize = 63;

/// One query. Rows: `(start_interval_index, intervals_from_base, actors)`, each actor counted
/// once per cell (cumulative: once per cohort, at the last interval it returned in).
///
/// Recurring cohorts over at most [`MASK_INTERVALS`] intervals aggregate the events once, into
/// one row per actor with a bitmask of the intervals it started in and one of those it returned
/// in; the cells are then tested bit by bit. First-time cohorts over as many intervals, when one
/// returning event counts, get one row per actor from two aggregations (each with its own
/// filter, so both prune files and row groups): the first target event ever, and the mask of
/// the intervals returned in. Longer ranges join each cohort with the same actor's later
/// intervals.
fn build_query(settings: &Settings, starts: &IntervalStarts, ctx: &Context) -> String {
    let relations = relations(settings, starts, ctx);
    let select = if settings.cumulative {
        "SELECT start_interval_index, intervals_from_base, count() AS actors FROM (\n\
         SELECT actor_id, start_interval_index, max(intervals_from_base) AS intervals_from_base \
         FROM pairs GROUP BY actor_id, start_interval_index)\n\
         GROUP BY start_interval_index, intervals_from_base"
    } else {
        "SELECT start_interval_index, intervals_from_base, count() AS actors FROM pairs\n\
         GROUP BY start_interval_index, intervals_from_base"
    };
    format!("WITH\n{relations}\n{select}\nLIMIT {MAX_CELLS}")
}

/// The relations ending in `pairs (actor_id, start_interval_index, intervals_from_base)`: one
/// row per actor, cohort and interval they count in.
fn relations(settings: &Settings, starts: &IntervalStarts, ctx: &Context) -> String {
    let first = starts.cohorts.first().copied().unwrap_or(starts.end);
    let intervals = starts.cohorts.len();
    if intervals > MASK_INTERVALS {
        joined_pairs(settings, first, starts, ctx)
    } else if !settings.first_time {
        masked_pairs(settings, first, starts, ctx)
    } else if settings.minimum_occurrences == 1 {
        first_time_masked_pairs(settings, first, starts, ctx)
    } else {
        joined_pairs(settings, first, starts, ctx)
    }
}

/// The persons of one cohort row of a retention node (PostHog's `interval` of a retention
/// `InsightActorsQuery`), each with the number of the row's intervals they count in: the
/// common table expressions (without `WITH`) and the query selecting `(actor_id, event_count)`.
pub(crate) fn cohort_actors(
    node: &Value,
    ctx: &Context,
    cohort: usize,
) -> Result<(String, String), Invalid> {
    let settings = settings(node, ctx)?;
    let starts = interval_starts(node, settings.period, settings.lookahead, ctx)?;
    if cohort >= starts.cohorts.len() {
        return Err(Invalid::new(
            "interval",
            format!(
                "The retention has {} cohorts: interval must be below that.",
                starts.cohorts.len()
            ),
        ));
    }
    Ok((
        relations(&settings, &starts, ctx),
        format!(
            "SELECT actor_id, count() AS event_count FROM pairs \
             WHERE start_interval_index = {cohort} GROUP BY actor_id"
        ),
    ))
}

/// The range's first and end instants as SQL literals.
fn range_bounds(first: DateTime<Utc>, starts: &IntervalStarts) -> (String, String) {
    (
        date_range::sql_datetime(first),
        date_range::sql_datetime(starts.end),
    )
}

/// The events of the range that can start or continue a cohort.
fn activity_filter(settings: &Settings, first: DateTime<Utc>, starts: &IntervalStarts) -> String {
    let (from, to) = range_bounds(first, starts);
    let Settings {
        target,
        returning,
        filters,
        ..
    } = settings;
    format!(
        "timestamp >= {from} AND timestamp < {to} AND (({target}) OR ({returning})) AND ({filters})"
    )
}

/// Per actor and interval, whether they did the target event, and the returning one at least
/// `minimum_occurrences` times.
fn actor_intervals(
    settings: &Settings,
    first: DateTime<Utc>,
    starts: &IntervalStarts,
    ctx: &Context,
) -> String {
    let index = date_range::interval_index("timestamp", settings.period.interval(), first, ctx);
    let Settings {
        target,
        returning,
        minimum_occurrences,
        ..
    } = settings;
    let filter = activity_filter(settings, first, starts);
    format!(
        "actor_intervals AS (\n\
         SELECT person_id AS actor_id, {index} AS interval_index, \
         countIf({target}) > 0 AS started, countIf({returning}) >= {minimum_occurrences} AS returned\n\
         FROM events\n\
         WHERE {filter}\n\
         GROUP BY actor_id, interval_index)"
    )
}

/// `pairs (actor_id, start_interval_index, intervals_from_base)` from one bitmask row per actor:
/// cohort `c` when bit `c` of `started` is set, offset `k` when `k` is 0 or bit `c + k` of
/// `returned` is.
fn masked_pairs(
    settings: &Settings,
    first: DateTime<Utc>,
    starts: &IntervalStarts,
    ctx: &Context,
) -> String {
    let bit = |index: &str| format!("bitShiftLeft(1, {index})");
    let actors = if settings.minimum_occurrences == 1 {
        // A returning event is one occurrence: the masks come straight from the events.
        let index = date_range::interval_index("timestamp", settings.period.interval(), first, ctx);
        let Settings {
            target, returning, ..
        } = settings;
        format!(
            "actors AS (\n\
             SELECT person_id AS actor_id, \
             groupBitOr(if({target}, {interval_bit}, 0)) AS started, \
             groupBitOr(if({returning}, {interval_bit}, 0)) AS returned\n\
             FROM events\n\
             WHERE {filter}\n\
             GROUP BY actor_id)",
            interval_bit = bit(&index),
            filter = activity_filter(settings, first, starts),
        )
    } else {
        format!(
            "{intervals},\n\
             actors AS (\n\
             SELECT actor_id, groupBitOr(if(started, {bit}, 0)) AS started, \
             groupBitOr(if(returned, {bit}, 0)) AS returned\n\
             FROM actor_intervals GROUP BY actor_id)",
            intervals = actor_intervals(settings, first, starts, ctx),
            bit = bit("interval_index"),
        )
    };
    let intervals = starts.cohorts.len();
    let lookahead = settings.lookahead;
    format!(
        "{actors},\n\
         pairs AS (\n\
         SELECT actors.actor_id AS actor_id, cohort_grid.cohort AS start_interval_index, \
         offset_grid.k AS intervals_from_base\n\
         FROM actors, (SELECT arrayJoin(range({intervals})) AS cohort) AS cohort_grid, \
         (SELECT arrayJoin(range({lookahead})) AS k) AS offset_grid\n\
         WHERE actors.actor_id IS NOT NULL AND bitTest(actors.started, cohort_grid.cohort) = 1 \
         AND cohort_grid.cohort + offset_grid.k < {intervals} \
         AND (offset_grid.k = 0 OR bitTest(actors.returned, cohort_grid.cohort + offset_grid.k) = 1))"
    )
}

/// First-time `pairs` from one row per actor: when it first did the target event (ever), and the
/// bitmask of the range's intervals it returned in. The cohort is the interval of that first
/// event when it falls in the range; offset `k` counts when it is 0 or bit `cohort + k` is set.
fn first_time_masked_pairs(
    settings: &Settings,
    first: DateTime<Utc>,
    starts: &IntervalStarts,
    ctx: &Context,
) -> String {
    let (from, to) = range_bounds(first, starts);
    let index = date_range::interval_index("timestamp", settings.period.interval(), first, ctx);
    let first_index =
        date_range::interval_index("first_seen", settings.period.interval(), first, ctx);
    let intervals = starts.cohorts.len();
    let Settings {
        target,
        returning,
        filters,
        lookahead,
        ..
    } = settings;
    format!(
        "actors AS (\n\
         SELECT actor_id, min(first_seen) AS first_seen, groupBitOr(returned) AS returned FROM (\n\
         SELECT person_id AS actor_id, min(timestamp) AS first_seen, 0 AS returned FROM events \
         WHERE ({target}) AND ({filters}) GROUP BY actor_id\n\
         UNION ALL\n\
         SELECT person_id AS actor_id, NULL AS first_seen, \
         groupBitOr(bitShiftLeft(1, {index})) AS returned FROM events \
         WHERE timestamp >= {from} AND timestamp < {to} AND ({returning}) AND ({filters}) \
         GROUP BY actor_id)\n\
         GROUP BY actor_id),\n\
         cohorts AS (\n\
         SELECT actor_id, {first_index} AS interval_index, returned FROM actors \
         WHERE actor_id IS NOT NULL AND first_seen >= {from} AND first_seen < {to}),\n\
         pairs AS (\n\
         SELECT cohorts.actor_id AS actor_id, cohorts.interval_index AS start_interval_index, \
         offset_grid.k AS intervals_from_base\n\
         FROM cohorts, (SELECT arrayJoin(range({lookahead})) AS k) AS offset_grid\n\
         WHERE cohorts.interval_index + offset_grid.k < {intervals} \
         AND (offset_grid.k = 0 \
         OR bitTest(cohorts.returned, cohorts.interval_index + offset_grid.k) = 1))"
    )
}

/// `pairs` from each cohort row joined with the same actor's later returning intervals within
/// the lookahead.
fn joined_pairs(
    settings: &Settings,
    first: DateTime<Utc>,
    starts: &IntervalStarts,
    ctx: &Context,
) -> String {
    let (from, to) = range_bounds(first, starts);
    let Settings {
        target,
        filters,
        lookahead,
        ..
    } = settings;
    let cohorts = if settings.first_time {
        // The first target event ever (no date bound) decides the only cohort.
        let first_index =
            date_range::interval_index("first_seen", settings.period.interval(), first, ctx);
        format!(
            "cohorts AS (\n\
             SELECT actor_id, {first_index} AS interval_index FROM (\n\
             SELECT person_id AS actor_id, min(timestamp) AS first_seen FROM events \
             WHERE ({target}) AND ({filters}) GROUP BY actor_id)\n\
             WHERE first_seen >= {from} AND first_seen < {to})"
        )
    } else {
        "cohorts AS (SELECT actor_id, interval_index FROM actor_intervals WHERE started)"
            .to_string()
    };
    format!(
        "{intervals},\n\
         {cohorts},\n\
         pairs AS (\n\
         SELECT cohorts.actor_id AS actor_id, cohorts.interval_index AS start_interval_index, \
         later.interval_index - cohorts.interval_index AS intervals_from_base\n\
         FROM cohorts JOIN actor_intervals AS later ON cohorts.actor_id = later.actor_id\n\
         WHERE later.interval_index >= cohorts.interval_index \
         AND later.interval_index < cohorts.interval_index + {lookahead} \
         AND (later.returned OR later.interval_index = cohorts.interval_index))",
        intervals = actor_intervals(settings, first, starts, ctx),
    )
}

/// A whole number cell of an engine result (numbers may come as floats or text).
pub(crate) fn integer_cell(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64().or_else(|| {
            number
                .as_f64()
                .filter(|f| f.fract() == 0.0)
                .map(|f| f as i64)
        }),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

/// `grid[cohort][k]`: actors of each cohort counted at each interval after it.
fn counts_grid(
    table: &Table,
    cohorts: usize,
    lookahead: usize,
    cumulative: bool,
) -> Result<Vec<Vec<i64>>, Invalid> {
    let mut grid = vec![vec![0i64; lookahead]; cohorts];
    for row in &table.rows {
        let cells: Option<Vec<i64>> = row.iter().take(3).map(integer_cell).collect();
        let Some([start, offset, count]) =
            cells.as_deref().and_then(|c| <[i64; 3]>::try_from(c).ok())
        else {
            return Err(Invalid::new("retentionFilter", "Unexpected retention row."));
        };
        let (Ok(start), Ok(offset)) = (usize::try_from(start), usize::try_from(offset)) else {
            continue;
        };
        if let Some(cell) = grid.get_mut(start).and_then(|row| row.get_mut(offset)) {
            *cell += count;
        }
    }
    if cumulative {
        // Counted at its last returning interval, an actor also counts at every earlier one.
        for row in &mut grid {
            for k in (0..row.len().saturating_sub(1)).rev() {
                row[k] += row[k + 1];
            }
        }
    }
    Ok(grid)
}

fn response(period: Period, dates: &[String], grid: &[Vec<i64>]) -> Value {
    let title = period.title();
    let results: Vec<Value> = dates
        .iter()
        .zip(grid)
        .enumerate()
        .map(|(index, (date, counts))| {
            let values: Vec<Value> = counts
                .iter()
                .enumerate()
                .map(|(k, count)| json!({"count": count, "label": format!("{title} {k}")}))
                .collect();
            let mut result = Map::new();
            result.insert("date".into(), Value::String(date.clone()));
            result.insert("label".into(), Value::String(format!("{title} {index}")));
            result.insert("values".into(), Value::Array(values));
            Value::Object(result)
        })
        .collect();
    json!({ "results": results })
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
