//! The values an event property takes, for pickers (PostHog's `GET /events/values/?key=`): the
//! ten most frequent of the last seven days, optionally of some events and containing a text.

use chrono::Duration;
use common::models::Project;
use common::{ApiError, ApiResult, AppState};
use engine::Bindings;
use serde_json::{Map, Value, json};

use crate::{Caller, SqlNode, api_error, runner};

/// Values answered, as PostHog's `get_property_values_for_key`.
const VALUES: usize = 10;
const MAX_EVENTS: usize = 50;
const DAYS: i64 = 7;

pub struct Request<'a> {
    pub key: Option<&'a str>,
    /// Only values containing this text, case-insensitively.
    pub value: Option<&'a str>,
    pub event_names: Vec<String>,
}

/// `[{"name": value, "count": events}]`, most frequent first.
pub async fn values(
    state: &AppState,
    project: &Project,
    caller: &Caller,
    request: &Request<'_>,
) -> ApiResult<Vec<Value>> {
    let key = request
        .key
        .filter(|key| !key.is_empty())
        .ok_or_else(|| ApiError::required("key"))?;
    if request.event_names.len() > MAX_EVENTS {
        return Err(ApiError::validation(
            "event_name",
            format!("At most {MAX_EVENTS} events may be given."),
        ));
    }
    let since = (state.clock.now() - Duration::days(DAYS))
        .format("%Y-%m-%d %H:%M:%S%.6fZ")
        .to_string();
    let mut values = Map::new();
    values.insert("key".into(), json!(key));
    values.insert("since".into(), json!(since));
    let mut conditions = vec![
        "timestamp >= toDateTime({since})".to_owned(),
        "JSONHas(properties, {key})".to_owned(),
    ];
    if !request.event_names.is_empty() {
        let mut names = Vec::new();
        for (index, event) in request.event_names.iter().enumerate() {
            values.insert(format!("event_{index}"), json!(event));
            names.push(format!("{{event_{index}}}"));
        }
        conditions.push(format!("event IN ({})", names.join(", ")));
    }
    if let Some(text) = request.value.filter(|text| !text.is_empty()) {
        // `%` and `_` in the text are matched as themselves.
        let escaped = text
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        values.insert("pattern".into(), json!(format!("%{escaped}%")));
        conditions.push("value ILIKE {pattern}".to_owned());
    }
    let node = SqlNode {
        name: Some("property_values".into()),
        ..SqlNode::sql(
            format!(
                "SELECT JSONExtractString(properties, {{key}}) AS value, count() AS events \
                 FROM events WHERE {} GROUP BY value ORDER BY events DESC, value LIMIT {VALUES}",
                conditions.join(" AND ")
            ),
            Bindings {
                values,
                ..Default::default()
            },
        )
    };
    let query_id = uuid::Uuid::now_v7().simple().to_string();
    let response = runner::run_logged(state, project, &query_id, &node, caller)
        .await
        .map_err(|error| api_error(&error))?;
    Ok(response["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| json!({"name": row[0], "count": row[1]}))
        .collect())
}
