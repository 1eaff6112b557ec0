//! The dialect text of paths: each person's sessions cut, compacted and limited into numbered
//! steps (common table expressions ending in `steps`), then the edges between consecutive steps.

use super::{ELLIPSIS, Plan, SESSION_GAP_SECONDS, Target};
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
        let per_person = "PARTITION BY person_id ORDER BY timestamp ASC, path_item ASC";
        let per_session = "PARTITION BY person_id, session ORDER BY timestamp ASC, path_item ASC";
        let whole = "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING";
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
        // A session starts at a person's first event and after every gap of 30 minutes or more;
        // a run of one item counts once, at its last event (the item after it differs, or is
        // the session's end, taken as '').
        format!(
            "items AS (SELECT person_id, timestamp, {item} AS cleaned FROM events \
             WHERE timestamp >= {from} AND timestamp <= {to}{condition}), \
             grouped AS (SELECT person_id, timestamp, {grouped} AS path_item FROM items), \
             gaps AS (SELECT person_id, timestamp, path_item, \
             if(ifNull(dateDiff('second', lagInFrame(timestamp, 1) OVER ({per_person} {whole}), timestamp), 0) < {SESSION_GAP_SECONDS}, 0, 1) AS new_session \
             FROM grouped{excluded}), \
             sessions AS (SELECT person_id, timestamp, path_item, \
             sum(new_session) OVER ({per_person} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session \
             FROM gaps), \
             compacted AS (SELECT person_id, session, timestamp, path_item, \
             leadInFrame(path_item, 1, '') OVER ({per_session} {whole}) AS next_item FROM sessions), \
             positions AS (SELECT person_id, session, timestamp, path_item, \
             toInt(row_number() OVER ({per_session})) AS position FROM compacted WHERE path_item != next_item), \
             {limited}, \
             steps AS (SELECT person_id, session, step, item, timestamp, \
             lagInFrame(item, 1, '') OVER (PARTITION BY person_id, session ORDER BY step ASC {whole}) AS previous_item, \
             dateDiff('second', lagInFrame(timestamp, 1) OVER (PARTITION BY person_id, session ORDER BY step ASC {whole}), timestamp) AS conversion_time, \
             max(step) OVER (PARTITION BY person_id, session) AS last_step \
             FROM limited WHERE step > 0)",
            item = self.item,
            from = date_range::sql_datetime(self.from),
            to = date_range::sql_datetime(self.to),
            grouped = self.grouped_item("cleaned"),
            limited = self.limited_ctes(),
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

    /// The CTEs ending in `limited (person_id, session, timestamp, item, step)`: the steps kept
    /// of each session (rows with `step` 0 are dropped later).
    fn limited_ctes(&self) -> String {
        let limit = self.step_limit;
        let joined = "FROM positions INNER JOIN marks ON positions.person_id = marks.person_id \
                      AND positions.session = marks.session";
        let columns = "positions.person_id AS person_id, positions.session AS session, \
                       positions.timestamp AS timestamp, positions.path_item AS item";
        // Per session, the first position of `point`, as `column`.
        let first_at = |point: &str, column: &str| {
            format!(
                "SELECT person_id, session, min(position) AS {column} FROM positions \
                 WHERE path_item = {} GROUP BY person_id, session",
                sql_text::string(point)
            )
        };
        match &self.target {
            Target::Neither => format!(
                "limited AS (SELECT person_id, session, timestamp, path_item AS item, position AS step \
                 FROM positions WHERE position <= {limit})"
            ),
            Target::Start(start) => format!(
                "marks AS ({}), limited AS (SELECT {columns}, positions.position - marks.start_at + 1 AS step \
                 {joined} WHERE positions.position >= marks.start_at AND positions.position < marks.start_at + {limit})",
                first_at(start, "start_at")
            ),
            // The last `limit` steps up to the end point.
            Target::End(end) => format!(
                "marks AS ({}), limited AS (SELECT {columns}, \
                 positions.position + {limit} - greatest(marks.end_at, {limit}) AS step \
                 {joined} WHERE positions.position <= marks.end_at AND positions.position > marks.end_at - {limit})",
                first_at(end, "end_at")
            ),
            // From the start point to the first end point at or after it; a longer path keeps
            // its first and last halves around one `...` step (at the time of the step it hides
            // first), as PostHog's `arrayConcat` does.
            Target::Both { start, end } => {
                let half = limit / 2;
                format!(
                    "starts AS ({starts}), \
                     marks AS (SELECT positions.person_id AS person_id, positions.session AS session, \
                     starts.start_at AS start_at, min(positions.position) AS end_at \
                     FROM positions INNER JOIN starts ON positions.person_id = starts.person_id \
                     AND positions.session = starts.session \
                     WHERE positions.path_item = {end} AND positions.position >= starts.start_at \
                     GROUP BY positions.person_id, positions.session, starts.start_at), \
                     cut AS (SELECT {cut_columns}, positions.position - marks.start_at + 1 AS relative, \
                     marks.end_at - marks.start_at + 1 AS length \
                     {joined} WHERE positions.position >= marks.start_at AND positions.position <= marks.end_at), \
                     limited AS (SELECT person_id, session, timestamp, \
                     if(length > {limit} AND relative = {middle}, {ellipsis}, path_item) AS item, \
                     multiIf(length <= {limit}, relative, relative <= {middle}, relative, \
                     relative + {half} > length, relative + {tail_shift} - length, 0) AS step FROM cut)",
                    starts = first_at(start, "start_at"),
                    end = sql_text::string(end),
                    middle = half + 1,
                    tail_shift = 2 * half + 1,
                    ellipsis = sql_text::string(ELLIPSIS),
                    cut_columns = columns.replace("AS item", "AS path_item"),
                )
            }
        }
    }
}
