//! `GET /surveys/responses_count` (reference 1.9): deduplicated submissions per survey since the
//! project's earliest survey start, as a flat `{survey_id: count}` map.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{
    MAX_ROWS, Params, SurveyQuery, Window, cell, cell_count, deduplicated_sent, where_not_archived,
};
use crate::Table;

/// The query: `sid, responses`, one row per survey with a submission. `surveys: None` counts
/// every survey; the caller answers an empty set (or no start date) with `{}` itself.
pub fn query(since: DateTime<Utc>, surveys: Option<&[Uuid]>, archived: &[Uuid]) -> SurveyQuery {
    let mut params = Params::default();
    let window = Window {
        from: Some(since),
        to: None,
    };
    let sent = deduplicated_sent(&mut params, surveys, &window);
    let kept = where_not_archived(&mut params, "rep_uuid", archived);
    params.finish(format!(
        "SELECT sid, count() AS responses FROM ({sent}){kept} \
         GROUP BY sid ORDER BY sid LIMIT {MAX_ROWS}"
    ))
}

/// `{"<survey id>": n}`; surveys without a submission are absent.
pub fn assemble(table: &Table) -> Value {
    let counts: Map<String, Value> = table
        .rows
        .iter()
        .filter_map(|row| {
            let survey = cell(row, 0).as_str()?;
            let count = cell_count(cell(row, 1));
            (count > 0).then(|| (survey.to_owned(), Value::from(count)))
        })
        .collect();
    Value::Object(counts)
}
