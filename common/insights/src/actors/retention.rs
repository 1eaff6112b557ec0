//! The persons of a retention cohort row: those the RetentionQuery counts in that row (see
//! `crate::retention`, whose relations this reads), with `event_count` the number of the row's
//! intervals they count in (the first one included).

use serde_json::Value;

use super::Matched;
use super::source::{InsightActorsQuery, under_insight};
use crate::{Context, Invalid, retention};

pub(super) fn matched(query: &InsightActorsQuery, ctx: &Context) -> Result<Matched, Invalid> {
    let cohort = match &query.interval {
        Some(Value::Number(number)) => number.as_u64(),
        Some(Value::String(text)) => text.parse().ok(),
        _ => None,
    }
    .and_then(|cohort| usize::try_from(cohort).ok())
    .ok_or_else(|| {
        Invalid::new(
            "source.interval",
            "interval (the cohort row, from 0) must be a whole number.",
        )
    })?;
    let (ctes, query) =
        retention::cohort_actors(&query.source, ctx, cohort).map_err(|invalid| {
            if invalid.attr == "interval" {
                Invalid::new("source.interval", invalid.detail)
            } else {
                under_insight(invalid)
            }
        })?;
    Ok(Matched { ctes, query })
}
