//! The dialect text of the lifecycle query: persons per interval and status.

use super::{Plan, ROW_LIMIT};
use crate::date_range;

/// What `lagInFrame`/`leadInFrame` give at a person's first/last active interval: no interval
/// is numbered so, nor is one next to it.
const NO_INTERVAL: i64 = -2;

impl Plan {
    /// Rows `(period, status, persons)`, `period` numbering the range's intervals from 1 (0 is
    /// the interval before the range, read only to tell `returning` from `resurrecting`).
    pub(super) fn query(&self) -> String {
        let index = |column: &str| {
            date_range::interval_index(column, self.interval, self.activity_from, &self.ctx)
        };
        let from = date_range::sql_datetime(self.activity_from);
        let to = date_range::sql_datetime(self.activity_to);
        let filter = match self.condition.as_str() {
            "true" => String::new(),
            condition => format!(" AND {condition}"),
        };
        let window = "OVER (PARTITION BY activity.person_id ORDER BY activity.period \
                      ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)";
        let last = self.buckets.len();
        // Select aliases are visible in WHERE (as in ClickHouse), so the dormant rows' interval
        // gets a name of its own. A person missing from `persons` gets the column's default (or NULL) as the interval
        // created in: it can only equal interval 0, which is not reported.
        format!(
            "WITH activity AS (\
             SELECT person_id, {event_index} AS period FROM events \
             WHERE timestamp >= {from} AND timestamp < {to}{filter} \
             GROUP BY person_id, period), \
             creations AS (\
             SELECT id, if(created_at >= {from}, {created_index}, {NO_INTERVAL}) AS created_period \
             FROM persons), \
             ordered AS (\
             SELECT activity.person_id AS person_id, activity.period AS period, \
             lagInFrame(activity.period, 1, {NO_INTERVAL}) {window} AS previous_period, \
             leadInFrame(activity.period, 1, {NO_INTERVAL}) {window} AS next_period, \
             creations.created_period AS created_period \
             FROM activity LEFT JOIN creations ON creations.id = activity.person_id), \
             statuses AS (\
             SELECT person_id, period, multiIf(\
             previous_period = {NO_INTERVAL} AND period = created_period, 'new', \
             previous_period = period - 1, 'returning', \
             'resurrecting') AS status FROM ordered \
             UNION ALL \
             SELECT person_id, period + 1 AS dormant_period, 'dormant' AS status FROM ordered \
             WHERE next_period != period + 1) \
             SELECT period, status, count() AS persons FROM statuses \
             WHERE period >= 1 AND period <= {last} \
             GROUP BY period, status ORDER BY period, status LIMIT {ROW_LIMIT}",
            event_index = index("timestamp"),
            created_index = index("created_at"),
        )
    }
}
