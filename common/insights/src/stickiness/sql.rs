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
        let having = match &self.criteria {
            Some(criteria) => format!(" HAVING count() {} {}", criteria.operator, criteria.value),
            None => String::new(),
        };
        format!(
            "SELECT num_intervals, count(DISTINCT actor_id) AS actors FROM (\
             SELECT actor_id, count() AS num_intervals FROM (\
             SELECT {actor} AS actor_id, {index} AS interval_index FROM events WHERE {conditions} \
             GROUP BY actor_id, interval_index{having}\
             ) GROUP BY actor_id\
             ) GROUP BY num_intervals ORDER BY num_intervals LIMIT {ROW_LIMIT}",
            actor = series.actor
        )
    }
}
