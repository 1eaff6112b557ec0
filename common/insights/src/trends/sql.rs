//! The dialect text of each series query: per bucket (or one total), with the breakdown's top
//! combinations and "other" computed in SQL, or restricted to one cohort of a cohort breakdown.

use chrono::{DateTime, Utc};

use super::{Period, Plan, ROW_LIMIT, Series};
use crate::breakdown::{NULL, OTHER};
use crate::date_range;
use crate::math::Math;
use crate::sql_text;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// `[bucket, (breakdown_value), value]`, one row per bucket (and value).
    BucketRows,
    /// `[(breakdown_value), value_0, ..., value_n]`, one column per bucket.
    WideBuckets,
    /// `[(breakdown_value), value]`.
    Total,
}

impl Plan {
    /// Every query, in the order [`Plan::assemble`] reads their tables.
    pub(super) fn queries(&self) -> Vec<String> {
        let mut queries = Vec::new();
        if self.from_all {
            queries.push("SELECT min(timestamp) AS earliest FROM events LIMIT 1".to_string());
        }
        for period in &self.periods {
            if self.cohort_conditions.is_empty() {
                for series in &self.series {
                    queries.push(self.series_query(series, period, None));
                }
                continue;
            }
            // PostHog's order: every series of the first cohort, then of the next.
            for cohort in 0..self.cohort_conditions.len() {
                for series in &self.series {
                    queries.push(self.series_query(series, period, Some(cohort)));
                }
            }
        }
        queries
    }

    /// The shape of a series query's rows.
    pub(super) fn layout(&self, series: &Series) -> Layout {
        if self.total_value {
            Layout::Total
        } else if matches!(series.math.math, Math::ActiveUsers { .. }) {
            Layout::WideBuckets
        } else {
            Layout::BucketRows
        }
    }

    /// `cohort`: the index of the cohort (of a cohort breakdown) the query is restricted to.
    fn series_query(&self, series: &Series, period: &Period, cohort: Option<usize>) -> String {
        let ctx = &self.ctx;
        let to = date_range::sql_datetime(period.range.to);
        let bucket = self.interval.bucket_sql("timestamp", ctx);
        // (value columns, lower time bound)
        let (values, lower_bound) = match (&series.math.math, self.layout(series)) {
            (Math::ActiveUsers { days }, Layout::WideBuckets) => {
                let buckets = period.buckets.as_deref().unwrap_or_default();
                let windows: Vec<(DateTime<Utc>, DateTime<Utc>)> = buckets
                    .iter()
                    .map(|start| {
                        let end = date_range::next_bucket(*start, self.interval);
                        let window_start = date_range::add_days(end, -days);
                        (window_start.with_timezone(&Utc), end.with_timezone(&Utc))
                    })
                    .collect();
                let columns = windows
                    .iter()
                    .enumerate()
                    .map(|(index, (start, end))| {
                        let condition = format!(
                            "timestamp > {} AND timestamp <= {}",
                            date_range::sql_datetime(*start),
                            date_range::sql_datetime(*end)
                        );
                        format!("{} AS value_{index}", Math::actors_where(&condition))
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let earliest = windows
                    .first()
                    .map(|(start, _)| *start)
                    .unwrap_or(period.range.from);
                (
                    columns,
                    format!("timestamp > {}", date_range::sql_datetime(earliest)),
                )
            }
            (Math::ActiveUsers { days }, _) => {
                // One total: the window ending at the end of the range.
                let end = period.range.to.with_timezone(&ctx.timezone);
                let start = date_range::add_days(end, -days).with_timezone(&Utc);
                let condition = format!("timestamp > {}", date_range::sql_datetime(start));
                (
                    format!("{} AS value", Math::actors_where(&condition)),
                    condition,
                )
            }
            (math, _) => (
                format!("{} AS value", math.aggregate()),
                format!(
                    "timestamp >= {}",
                    date_range::sql_datetime(period.filter_from)
                ),
            ),
        };
        let cohort_condition = cohort
            .and_then(|index| self.cohort_conditions.get(index))
            .map_or("true", String::as_str);
        let conditions = [
            lower_bound.as_str(),
            &format!("timestamp <= {to}"),
            &series.condition,
            &self.node_condition,
            cohort_condition,
        ]
        .into_iter()
        .filter(|condition| *condition != "true")
        .collect::<Vec<_>>()
        .join(" AND ");

        let layout = self.layout(series);
        if let Some(index) = cohort {
            // One cohort: its rows carry its index as the breakdown value, and a cohort without
            // events has none (PostHog gives no result for it).
            return match layout {
                Layout::BucketRows => format!(
                    "SELECT {bucket} AS bucket, '{index}' AS breakdown_value, {values} FROM events WHERE {conditions} GROUP BY bucket, breakdown_value ORDER BY bucket LIMIT {ROW_LIMIT}"
                ),
                Layout::WideBuckets | Layout::Total => format!(
                    "SELECT '{index}' AS breakdown_value, {values} FROM events WHERE {conditions} GROUP BY breakdown_value LIMIT 1"
                ),
            };
        }
        let Some(properties) = self.breakdown.as_ref().and_then(|b| b.properties()) else {
            return match layout {
                Layout::BucketRows => format!(
                    "SELECT {bucket} AS bucket, {values} FROM events WHERE {conditions} GROUP BY bucket ORDER BY bucket LIMIT {ROW_LIMIT}"
                ),
                Layout::WideBuckets | Layout::Total => {
                    format!("SELECT {values} FROM events WHERE {conditions} LIMIT 1")
                }
            };
        };
        let limit = self.breakdown.as_ref().map_or(0, |b| b.limit);
        // A histogram's bins come from the same events (each period's, each series').
        let bins = properties.bins_join(&conditions);

        // The combination's key, and (with several breakdowns) each value as a column, which
        // the ranking orders by: a missing value after the others (not for total values, as
        // PostHog ranks those by their total alone), the total, then the values.
        let elements = properties.trends_values();
        let value = properties.key_sql(&elements);
        let (element_columns, element_group, ordered) = if elements.len() == 1 {
            (
                String::new(),
                String::new(),
                vec!["breakdown_value".to_string()],
            )
        } else {
            let names: Vec<String> = (1..=elements.len())
                .map(|index| format!("breakdown_{index}"))
                .collect();
            (
                elements
                    .iter()
                    .zip(&names)
                    .map(|(element, name)| format!(", {element} AS {name}"))
                    .collect(),
                names.iter().map(|name| format!(", {name}")).collect(),
                names,
            )
        };
        let null = sql_text::string(NULL);
        let has_null = format!(
            "if({}, 1, 0)",
            ordered
                .iter()
                .map(|name| format!("{name} = {null}"))
                .collect::<Vec<_>>()
                .join(" OR ")
        );
        let tie_break: String = ordered.iter().map(|name| format!(", {name} ASC")).collect();
        let aggregate = series.math.math.aggregate();
        let top_values = match layout {
            Layout::BucketRows => format!(
                "SELECT breakdown_value FROM (SELECT breakdown_value, {has_null} AS has_null, sum(value) AS total FROM (SELECT {value} AS breakdown_value{element_columns}, {bucket} AS bucket, {aggregate} AS value FROM events{bins} WHERE {conditions} GROUP BY breakdown_value{element_group}, bucket) GROUP BY breakdown_value{element_group} ORDER BY has_null ASC, total DESC{tie_break} LIMIT {limit})"
            ),
            Layout::WideBuckets => format!(
                "SELECT breakdown_value FROM (SELECT breakdown_value, {has_null} AS has_null, total FROM (SELECT {value} AS breakdown_value{element_columns}, {aggregate} AS total FROM events{bins} WHERE {conditions} GROUP BY breakdown_value{element_group}) ORDER BY has_null ASC, total DESC{tie_break} LIMIT {limit})"
            ),
            Layout::Total => format!(
                "SELECT breakdown_value FROM (SELECT {value} AS breakdown_value{element_columns}, {aggregate} AS total FROM events{bins} WHERE {conditions} GROUP BY breakdown_value{element_group} ORDER BY total DESC{tie_break} LIMIT {limit})"
            ),
        };
        let other = sql_text::string(&properties.encode(&vec![OTHER; elements.len()]));
        let (bucket_column, bucket_group) = match layout {
            Layout::BucketRows => (format!("{bucket} AS bucket, "), "bucket, "),
            Layout::WideBuckets | Layout::Total => (String::new(), ""),
        };
        format!(
            "SELECT * FROM (\
             SELECT {bucket_column}{value} AS breakdown_value, {values} FROM events{bins} WHERE {conditions} AND {value} IN ({top_values}) GROUP BY {bucket_group}breakdown_value \
             UNION ALL \
             SELECT {bucket_column}{other} AS breakdown_value, {values} FROM events{bins} WHERE {conditions} AND {value} NOT IN ({top_values}) GROUP BY {bucket_group}breakdown_value\
             ) LIMIT {ROW_LIMIT}"
        )
    }
}
