//! The dialect text of paths: each person's sessions cut, compacted and limited into numbered
//! steps (common table expressions ending in `steps`), then the edges between consecutive steps.

use super::{Plan, SESSION_GAP_SECONDS, Target};
use crate::date_range;
use crate::sql_text;

/// The most edges one answer may hold (the engine's largest LIMIT).
pub(super) const MAX_EDGES: u64 = 50_000;

impl Plan {
    /// The edges query: rows `(source, target, value, average_conversion_time)` (seconds), the
    /// heaviest first.
    pub(super) fn edges_query(&self) -> String {
        let mut having = vec![];
        if let Some(weight) = self.min_edge_weight {
            having.push(format!("count() >= {weight}"));
        }
        if let Some(weight) = self.max_edge_weight {
            having.push(format!("count() <= {weight}"));
        }
        let having = match having.is_empty() {
            true => String::new(),
            false => format!(" HAVING {}", having.join(" AND ")),
        };
        format!(
            "WITH {steps} SELECT concat(toString(step - 1), '_', previous_item) AS source, \
             concat(toString(step), '_', item) AS target, count() AS value, \
             avg(conversion_time) AS average_conversion_time \
             FROM steps WHERE step > 1 GROUP BY source, target{having} \
             ORDER BY value DESC, source ASC, target ASC LIMIT {limit}",
            steps = self.steps_ctes(),
            limit = self.edge_limit,
        )
    }

    /// Common table expressions (without `WITH`) ending in `steps`: one row per kept step of a
    /// session, `(person_id, session, step, item, timestamp, previous_item, conversion_time,
    /// last_step)`, `step` counting from 1, `previous_item` `''` at step 1.
    pub(crate) fn steps_ctes(&self) -> String {
        let excluded = match self.excluded.is_empty() {
            true => String::new(),
            false => format!(
                " WHERE path_item NOT IN ({})",
                self.excluded
                    .iter()
                    .map(|name| sql_text::string(name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let condition = match self.condition.as_str() {
            "true" => String::new(),
            condition => format!(" AND {condition}"),
        };
        let point = |point: Option<&str>| point.map_or("NULL".to_owned(), sql_text::string);
        let (start, end) = match &self.target {
            Target::Neither => (None, None),
            Target::Start(start) => (Some(start.as_str()), None),
            Target::End(end) => (None, Some(end.as_str())),
            Target::Both { start, end } => (Some(start.as_str()), Some(end.as_str())),
        };
        // Sessions, runs, start and end points and the step limit are the engine's
        // `aggregatePaths`, over each person's events at once (as PostHog's runner works on
        // each person's sorted array).
        format!(
            "items AS (SELECT person_id, timestamp, {item} AS cleaned FROM events \
             WHERE timestamp >= {from} AND timestamp <= {to}{condition}), \
             grouped AS (SELECT person_id, timestamp, {grouped} AS path_item FROM items), \
             paths AS (SELECT person_id, aggregatePaths({limit}, {SESSION_GAP_SECONDS}, {start}, {end}, \
             timestamp, path_item) AS path FROM grouped{excluded} GROUP BY person_id), \
             steps AS (SELECT person_id, kept.1 AS session, kept.2 AS step, kept.3 AS item, \
             kept.4 AS timestamp, kept.5 AS previous_item, kept.6 AS conversion_time, \
             kept.7 AS last_step FROM (SELECT person_id, arrayJoin(path) AS kept FROM paths))",
            item = self.item,
            from = date_range::sql_datetime(self.from),
            to = date_range::sql_datetime(self.to),
            grouped = self.grouped_item("cleaned"),
            limit = self.step_limit,
            start = point(start),
            end = point(end),
        )
    }

    /// `column` named by the first grouping it matches, else itself.
    fn grouped_item(&self, column: &str) -> String {
        if self.groupings.is_empty() {
            return column.to_string();
        }
        let arms: Vec<String> = self
            .groupings
            .iter()
            .map(|grouping| {
                format!(
                    "match({column}, {}), {}",
                    sql_text::string(&super::parse::wildcard_regex(grouping)),
                    sql_text::string(grouping)
                )
            })
            .collect();
        format!("multiIf({}, {column})", arms.join(", "))
    }
}
