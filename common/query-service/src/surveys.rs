//! Surveys' queries over events, run for the surveys family: stats, per-question stats, the
//! responses count and the responses list. The texts and the assembly of their rows are
//! `insights::surveys`; here each text runs through [`runner::run`] like any SQL node, so it
//! gets the project's slot bound, the engine's limits, the cache (keyed by the events table's
//! version, so never stale) and a query log record.

use chrono::{DateTime, Utc};
use common::AppState;
use common::models::Project;
use engine::{Bindings, QueryError};
use insights::Table;
use insights::surveys::{SurveyQuery, count, questions, responses, stats};
use serde_json::Value;
use survey_core::Survey;
use uuid::Uuid;

use crate::runner;
use crate::{Caller, SqlNode};

pub use insights::surveys::Window;
pub use insights::surveys::questions::QuestionStats;
pub use insights::surveys::responses::{Answer, Extra, Response, ResponseFilters, ResponsePage};
pub use insights::surveys::stats::{EventStats, Rates, Stats};

/// One survey's window (reference 1.8): from the later of `requested.from` and its start (its
/// creation when it never started), to the earlier of `requested.to` and its end.
pub fn survey_window(survey: &Survey, requested: &Window) -> Window {
    let start = survey.start_date.unwrap_or(survey.created_at);
    let later = |a: Option<DateTime<Utc>>, b: DateTime<Utc>| Some(a.map_or(b, |a| a.max(b)));
    let earlier = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Window {
        from: later(requested.from, start),
        to: earlier(requested.to, survey.end_date),
    }
}

/// `GET /surveys/:id/stats/`: the stats of `survey` in its window within `requested`, leaving
/// out the submissions in `archived` (pass none unless `exclude_archived`), with
/// `per_question_stats` when `per_question` is set.
pub async fn survey_stats(
    state: &AppState,
    project: &Project,
    survey: &Survey,
    requested: &Window,
    archived: &[Uuid],
    per_question: bool,
    caller: &Caller,
) -> Result<Value, QueryError> {
    let window = survey_window(survey, requested);
    let stats = compute(state, project, &[survey.id], &window, archived, caller).await?;
    let per_question = match per_question {
        true => Some(questions::to_json(
            &question_stats(state, project, survey, &window, archived, caller).await?,
        )),
        false => None,
    };
    Ok(stats.survey_json(survey, per_question))
}

/// `GET /surveys/stats/`: the same over every survey of `surveys` together (the project's
/// non-archived ones), in `window` only; `{"stats": {}, "rates": {...0.0}}` without surveys.
pub async fn global_stats(
    state: &AppState,
    project: &Project,
    surveys: &[&Survey],
    window: &Window,
    caller: &Caller,
) -> Result<Value, QueryError> {
    let ids: Vec<Uuid> = surveys.iter().map(|survey| survey.id).collect();
    if ids.is_empty() {
        return Ok(stats::empty_json());
    }
    Ok(compute(state, project, &ids, window, &[], caller)
        .await?
        .to_json())
}

/// The typed stats of `surveys` in exactly `window` (no survey dates applied).
pub async fn compute(
    state: &AppState,
    project: &Project,
    surveys: &[Uuid],
    window: &Window,
    archived: &[Uuid],
    caller: &Caller,
) -> Result<Stats, QueryError> {
    if surveys.is_empty() {
        return Ok(stats::assemble(&Table::default(), &Table::default()));
    }
    let queries = stats::queries(surveys, window, archived);
    let events = run(state, project, queries.events, "survey_stats", caller).await?;
    let both = run(
        state,
        project,
        queries.dismissed_and_sent,
        "survey_stats_dismissed_and_sent",
        caller,
    )
    .await?;
    Ok(stats::assemble(&events, &both))
}

/// Per-question stats of `survey`'s submissions in exactly `window`.
pub async fn question_stats(
    state: &AppState,
    project: &Project,
    survey: &Survey,
    window: &Window,
    archived: &[Uuid],
    caller: &Caller,
) -> Result<Vec<QuestionStats>, QueryError> {
    let table = match questions::query(survey, window, archived) {
        Some(query) => Some(run(state, project, query, "survey_question_stats", caller).await?),
        None => None,
    };
    Ok(questions::assemble(survey, table.as_ref()))
}

/// `GET /surveys/responses_count/`: submissions per survey since the earliest start date of
/// `surveys` (the project's), counting only the ids in `only` when given, leaving out
/// `archived`. `{}` when no survey has started.
pub async fn responses_count(
    state: &AppState,
    project: &Project,
    surveys: &[&Survey],
    only: Option<&[Uuid]>,
    archived: &[Uuid],
    caller: &Caller,
) -> Result<Value, QueryError> {
    let Some(since) = surveys.iter().filter_map(|survey| survey.start_date).min() else {
        return Ok(Value::Object(Default::default()));
    };
    if only.is_some_and(<[Uuid]>::is_empty) {
        return Ok(Value::Object(Default::default()));
    }
    let query = count::query(since, only, archived);
    let table = run(state, project, query, "survey_responses_count", caller).await?;
    Ok(count::assemble(&table))
}

/// `GET /surveys/:id/responses/`: one page of `survey`'s submissions, newest first, leaving out
/// `archived` (pass none unless `exclude_archived`). Bad filters are `QueryError::Invalid`.
pub async fn responses(
    state: &AppState,
    project: &Project,
    survey: &Survey,
    filters: &ResponseFilters,
    archived: &[Uuid],
    caller: &Caller,
) -> Result<ResponsePage, QueryError> {
    let query =
        responses::query(survey, filters, archived).map_err(|invalid| QueryError::Invalid {
            attr: invalid.attr,
            detail: invalid.detail,
        })?;
    let table = run(state, project, query, "survey_responses", caller).await?;
    Ok(responses::assemble(survey, filters, &table))
}

/// Runs one text with its values as a SQL node and answers its rows.
async fn run(
    state: &AppState,
    project: &Project,
    query: SurveyQuery,
    name: &str,
    caller: &Caller,
) -> Result<Table, QueryError> {
    let node = SqlNode {
        text: query.text,
        name: Some(name.to_owned()),
        bindings: Bindings {
            values: query.values,
            ..Bindings::default()
        },
        ..SqlNode::default()
    };
    let query_id = Uuid::now_v7().to_string();
    let response = runner::run_logged_in_slot(state, project, &query_id, &node, caller).await?;
    let strings = |key: &str| -> Vec<String> {
        response[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let rows = response["results"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|row| row.as_array().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
    Ok(Table {
        columns: strings("columns"),
        types: Vec::new(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|at| at.with_timezone(&Utc))
            .expect("time")
    }

    #[test]
    fn a_survey_window_is_clamped_to_its_dates() {
        let mut survey: Survey = serde_json::from_value(serde_json::json!({
            "id": Uuid::nil(), "team_id": 1, "name": "s", "type": "api",
            "created_at": "2026-01-01T00:00:00Z"}))
        .expect("survey");
        let open = Window::default();
        assert_eq!(
            survey_window(&survey, &open),
            Window {
                from: Some(at("2026-01-01T00:00:00Z")),
                to: None
            }
        );
        survey.start_date = Some(at("2026-01-05T00:00:00Z"));
        survey.end_date = Some(at("2026-01-20T00:00:00Z"));
        let requested = Window {
            from: Some(at("2026-01-02T00:00:00Z")),
            to: Some(at("2026-01-25T00:00:00Z")),
        };
        assert_eq!(
            survey_window(&survey, &requested),
            Window {
                from: Some(at("2026-01-05T00:00:00Z")),
                to: Some(at("2026-01-20T00:00:00Z"))
            }
        );
        let inside = Window {
            from: Some(at("2026-01-10T00:00:00Z")),
            to: Some(at("2026-01-12T00:00:00Z")),
        };
        assert_eq!(survey_window(&survey, &inside), inside);
    }
}
