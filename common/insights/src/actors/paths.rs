//! The persons behind a paths point, as PostHog's `PathsQueryRunner.to_actors_query` finds
//! them from the insight's own steps (see `crate::paths`): `pathDropoffKey` = sessions whose
//! last step is that key; else `pathStartKey` = steps coming from that key and `pathEndKey` =
//! steps that are that key (both: the edge between them); no key = everyone on a path.
//! `event_count` is the matching steps.

use super::Matched;
use super::source::{InsightActorsQuery, under_insight};
use crate::paths::Plan;
use crate::{Context, Invalid, sql_text};

pub(super) fn matched(query: &InsightActorsQuery, ctx: &Context) -> Result<Matched, Invalid> {
    let plan = Plan::parse(&query.source, ctx).map_err(under_insight)?;
    let key = "concat(toString(step), '_', item)";
    let mut conditions = Vec::new();
    if let Some(dropoff) = &plan.point.dropoff_key {
        conditions.push(format!(
            "step = last_step AND {key} = {}",
            sql_text::string(dropoff)
        ));
    } else {
        if let Some(start) = &plan.point.start_key {
            conditions.push(format!(
                "step > 1 AND concat(toString(step - 1), '_', previous_item) = {}",
                sql_text::string(start)
            ));
        }
        if let Some(end) = &plan.point.end_key {
            conditions.push(format!("{key} = {}", sql_text::string(end)));
        }
    }
    // No key: every person on a path, as PostHog's `1=1`.
    let filter = match conditions.is_empty() {
        true => String::new(),
        false => format!(" WHERE {}", conditions.join(" AND ")),
    };
    Ok(Matched {
        ctes: plan.steps_ctes(),
        query: format!(
            "SELECT person_id AS actor_id, count() AS event_count FROM steps{filter} GROUP BY person_id"
        ),
    })
}
