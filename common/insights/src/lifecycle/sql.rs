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
        // Each active interval is read once: `arrayJoin` gives it a second row (shift 1, its
        // next interval, `dormant`) when the person is not active in the next one. (A UNION
        // ALL of two reads of `ordered` computed the grouping and the window twice.) A person
        // missing from `persons` gets the column's default (or NULL) as the interval created
        // in: it can only equal interval 0, which is not reported.
        format!(
            "WITH activity AS (\
             SELECT person_id, {event_index} AS period FROM events \
             WHERE timestamp >= {from} AND timestamp < {to}{filter} \
             GROUP BY person_id, period), \
             creations AS (\
             SELECT id, if(created_at >= {from}, {created_index}, {NO_INTERVAL}) AS created_period \
             FROM persons), \
             ordered AS (\
             SELECT activity.period AS period, \
             lagInFrame(activity.period, 1, {NO_INTERVAL}) {window} AS previous_period, \
             leadInFrame(activity.period, 1, {NO_INTERVAL}) {window} AS next_period, \
             creations.created_period AS created_period \
             FROM activity LEFT JOIN creations ON creations.id = activity.person_id), \
             shifted AS (\
             SELECT period, previous_period, created_period, \
             arrayJoin(if(next_period != period + 1, [0, 1], [0])) AS shift FROM ordered), \
             statuses AS (\
             SELECT period + shift AS status_period, if(shift = 1, 'dormant', multiIf(\
             previous_period = {NO_INTERVAL} AND period = created_period, 'new', \
             previous_period = period - 1, 'returning', \
             'resurrecting')) AS status FROM shifted) \
             SELECT status_period AS period, status, count() AS persons FROM statuses \
             WHERE status_period >= 1 AND status_period <= {last} \
             GROUP BY status_period, status ORDER BY status_period, status LIMIT {ROW_LIMIT}",
            event_index = index("timestamp"),
            created_index = index("created_at"),
        )
    }
}
