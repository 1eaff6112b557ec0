//! The dialect text of each series query: actors per number of active intervals.

use super::{Period, Plan, ROW_LIMIT, Series};
use crate::date_range;

impl Plan {
    /// Every query, in the order [`Plan::assemble`] reads their tables: per series, its
    /// current period then (when comparing) its previous one.
    pub(super) fn queries(&self) -> Vec<String> {
        self.series
            .iter()
            .flat_map(|series| {
                self.periods
                    .iter()
                    .map(move |period| self.series_query(series, period))
            })
            .collect()
    }

    /// Rows `(num_intervals, actors)`: how many actors were active in exactly that many
    /// intervals of the period.
    fn series_query(&self, series: &Series, period: &Period) -> String {
        let index = date_range::interval_index(
            "timestamp",
            self.interval,
            period.first_interval,
            &self.ctx,
        );
        let conditions = [
            format!(
                "timestamp >= {}",
                date_range::sql_datetime(period.counted_from)
            ),
            format!("timestamp <= {}", date_range::sql_datetime(period.range.to)),
            series.events.condition.clone(),
            self.node_condition.clone(),
        ]
        .into_iter()
        .filter(|condition| condition != "true")
        .collect::<Vec<_>>()
        .join(" AND ");
        // An actor's intervals: without criteria, the distinct intervals of its events, counted
        // in one grouping by actor (a set of interval numbers each); criteria count each
        // interval's events, so they group by actor and interval first (millions of groups over
        // a month of a large project's days).
        let per_actor = match &self.criteria {
            None => format!(
                "SELECT {actor} AS actor_id, uniqExact({distinct}) AS num_intervals \
                 FROM events WHERE {conditions} GROUP BY actor_id",
                actor = series.actor,
                distinct = self.distinct_interval(&index),
            ),
            Some(criteria) => format!(
                "SELECT actor_id, count() AS num_intervals FROM (\
                 SELECT {actor} AS actor_id, {index} AS interval_index FROM events WHERE {conditions} \
                 GROUP BY actor_id, interval_index HAVING count() {operator} {value}\
                 ) GROUP BY actor_id",
                actor = series.actor,
                operator = criteria.operator,
                value = criteria.value,
            ),
        };
        format!(
            "SELECT num_intervals, count(DISTINCT actor_id) AS actors FROM ({per_actor}) \
             GROUP BY num_intervals ORDER BY num_intervals LIMIT {ROW_LIMIT}"
        )
    }

    /// What tells an actor's intervals apart: an interval's start names it as well as its number
    /// and costs one truncation per event instead of an epoch, a subtraction and a division.
    /// Weeks are counted from the period's first day, not the calendar's, so they keep the number.
    fn distinct_interval(&self, index: &str) -> String {
        match self.interval {
            date_range::Interval::Week => index.to_string(),
            interval => interval.bucket_sql("timestamp", &self.ctx),
        }
    }
}
