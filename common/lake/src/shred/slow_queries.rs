//! Keys the query log shows in slow queries, as PostHog picks materialized columns: a key read
//! by queries over [`SLOW_QUERY_MS`] in the last day is shredded (as text: the log does not say
//! what its values look like), when the registry has room.

use std::collections::BTreeMap;

use common::AppState;

use lake_core::LakeError;
use lake_core::query_log;

use super::registry::{self, ColumnType, Origin, Source};

/// A query this slow (milliseconds) names keys worth a column.
pub const SLOW_QUERY_MS: f64 = 1_000.0;

/// Property keys a query's text reads: `properties.key`, `properties['key']`,
/// `person.properties.key`.
pub fn keys_read(text: &str) -> Vec<(Source, String)> {
    let mut keys = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("properties") {
        let before = &rest[..at];
        let source = if before.ends_with("person.") || before.ends_with("person_") {
            Source::PersonProperties
        } else {
            Source::Properties
        };
        let after = &rest[at + "properties".len()..];
        let key = if let Some(dotted) = after.strip_prefix('.') {
            let end = dotted
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                .unwrap_or(dotted.len());
            Some(&dotted[..end])
        } else if let Some(quoted) = after
            .strip_prefix("['")
            .or_else(|| after.strip_prefix("[\""))
        {
            quoted.find(['\'', '"']).map(|end| &quoted[..end])
        } else {
            None
        };
        if let Some(key) = key.filter(|k| registry::shreddable(k)) {
            keys.push((source, key.to_owned()));
        }
        rest = after;
    }
    keys
}

/// Adds the keys of the project's slow queries of the last day to the registry.
pub async fn register(state: &AppState, team_id: i64) -> Result<usize, LakeError> {
    let since = state.clock.now() - chrono::Duration::days(1);
    let records = query_log::since(&state.store, team_id, since).await?;
    let mut counts: BTreeMap<(Source, String), usize> = BTreeMap::new();
    for record in records
        .iter()
        .filter(|r| r.query_duration_ms >= SLOW_QUERY_MS)
    {
        for key in keys_read(&record.query) {
            *counts.entry(key).or_default() += 1;
        }
    }
    if counts.is_empty() {
        return Ok(0);
    }
    let mut ranked: Vec<((Source, String), usize)> = counts.into_iter().collect();
    ranked.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    let candidates: Vec<(Source, String, ColumnType)> = ranked
        .into_iter()
        .map(|((source, key), _)| (source, key, ColumnType::String))
        .collect();
    let before = registry::load(state.store.as_ref(), team_id).await?;
    let after = registry::add_candidates(
        state.store.as_ref(),
        team_id,
        &candidates,
        Origin::SlowQuery,
        state.clock.now(),
    )
    .await?;
    Ok(after
        .active()
        .count()
        .saturating_sub(before.active().count()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_keys_a_query_reads() {
        let keys = keys_read(
            "select properties.$browser, person.properties.email, properties['utm source'], \
             properties['plan'], toFloat(properties.amount) from events",
        );
        assert_eq!(
            keys,
            vec![
                (Source::Properties, "$browser".to_owned()),
                (Source::PersonProperties, "email".to_owned()),
                (Source::Properties, "plan".to_owned()),
                (Source::Properties, "amount".to_owned()),
            ]
        );
    }
}
