//! The dialect text of each series query: per bucket (or one total), with the breakdown's top
//! values and "other" computed in SQL.

use chrono::{DateTime, Utc};

use super::{BREAKDOWN_OTHER, Period, Plan, ROW_LIMIT, Series};
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
            for series in &self.series {
                queries.push(self.series_query(series, period));
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

    fn series_query(&self, series: &Series, period: &Period) -> String {
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
        let conditions = [
            lower_bound.as_str(),
            &format!("timestamp <= {to}"),
            &series.condition,
            &self.node_condition,
        ]
        .into_iter()
        .filter(|condition| *condition != "true")
        .collect::<Vec<_>>()
        .join(" AND ");

        let layout = self.layout(series);
        let Some(breakdown) = &self.breakdown else {
            return match layout {
                Layout::BucketRows => format!(
                    "SELECT {bucket} AS bucket, {values} FROM events WHERE {conditions} GROUP BY bucket ORDER BY bucket LIMIT {ROW_LIMIT}"
                ),
                Layout::WideBuckets | Layout::Total => {
                    format!("SELECT {values} FROM events WHERE {conditions} LIMIT 1")
                }
            };
        };

        let value = &breakdown.value;
        let limit = breakdown.limit;
        let top_values = match layout {
            Layout::BucketRows => format!(
                "SELECT breakdown_value FROM (SELECT {value} AS breakdown_value, {bucket} AS bucket, {} AS value FROM events WHERE {conditions} GROUP BY breakdown_value, bucket) GROUP BY breakdown_value ORDER BY sum(value) DESC, breakdown_value ASC LIMIT {limit}",
                series.math.math.aggregate()
            ),
            Layout::WideBuckets | Layout::Total => format!(
                "SELECT {value} AS breakdown_value FROM events WHERE {conditions} GROUP BY breakdown_value ORDER BY {} DESC, breakdown_value ASC LIMIT {limit}",
                series.math.math.aggregate()
            ),
        };
        let other = sql_text::string(BREAKDOWN_OTHER);
        let (bucket_column, bucket_group) = match layout {
            Layout::BucketRows => (format!("{bucket} AS bucket, "), "bucket, "),
            Layout::WideBuckets | Layout::Total => (String::new(), ""),
        };
        format!(
            "SELECT * FROM (\
             SELECT {bucket_column}{value} AS breakdown_value, {values} FROM events WHERE {conditions} AND {value} IN ({top_values}) GROUP BY {bucket_group}breakdown_value \
             UNION ALL \
             SELECT {bucket_column}{other} AS breakdown_value, {values} FROM events WHERE {conditions} AND {value} NOT IN ({top_values}) GROUP BY {bucket_group}breakdown_value\
             ) LIMIT {ROW_LIMIT}"
        )
    }
}
