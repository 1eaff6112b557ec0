//! `POST /surveys/:id/summarize_responses` and `/summary_headline` (reference 1.12). With no
//! language model configured (the default) the offline summarizer of `survey_core::summary`
//! writes them; with `ANALYTICS_LLM_URL` set (the `draft_sql` configuration) an
//! OpenAI-compatible model does, and the offline text stands in when it fails. Either is stored
//! on the survey and answered again until `force_refresh`. Both take `survey:read` alone, the
//! scope PostHog lists for them, though they read the survey's responses from events.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use common::error::{ApiError, ApiResult};
use common::store::StoreError;
use common::{AppState, Authenticated};
use query_service::Caller;
use query_service::surveys::ResponseFilters;
use serde::Deserialize;
use serde_json::{Value, json};
use survey_core::model::QuestionSummary;
use survey_core::summary::{self, Answers, provider};
use survey_core::{Question, QuestionType, Survey, archive, repository};

use crate::shared::{Params, READ, load};

/// Responses a question summary reads (newest first): the most one page of responses holds.
const QUESTION_SAMPLE: usize = insights::surveys::responses::MAX_LIMIT;
/// Responses a headline reads, as PostHog samples them.
const HEADLINE_SAMPLE: usize = 100;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryBody {
    #[serde(default)]
    force_refresh: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct SummaryParams {
    question_id: Option<String>,
    question_index: Option<String>,
}

/// An absent (empty) body is `{}`.
fn body_of(bytes: &[u8]) -> ApiResult<SummaryBody> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(SummaryBody::default());
    }
    common::http::parse_json(bytes)
}

pub async fn summarize_responses(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Params(params): Params<SummaryParams>,
    body: Bytes,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let body = body_of(&body)?;
    let stored = load(store, project.id, &id).await?;
    let survey = &stored.survey;
    let question = match (
        params.question_id.as_deref(),
        params.question_index.as_deref(),
    ) {
        (Some(qid), _) if !qid.is_empty() => survey
            .questions
            .iter()
            .find(|q| q.id == qid)
            .ok_or_else(|| ApiError::validation("question_id", "Question not found in survey."))?,
        (_, Some(index)) if !index.is_empty() => index
            .trim()
            .parse::<usize>()
            .ok()
            .and_then(|i| survey.questions.get(i))
            .ok_or_else(|| {
                ApiError::validation("question_index", "Question not found in survey.")
            })?,
        _ => return headline_answer(&state, &auth, &project, stored, body).await,
    };
    let force = body.force_refresh.unwrap_or(false);
    if !force && let Some(cached) = survey.question_summaries.get(&question.id) {
        return Ok(axum::Json(json!({
            "content": cached.content,
            "response_count": cached.response_count,
            "generated_at": cached.generated_at,
            "trace_id": cached.trace_id,
            "cached": true,
        }))
        .into_response());
    }
    let answers = answers(
        &state,
        &auth,
        &project,
        survey,
        QUESTION_SAMPLE,
        Some(&question.id),
    )
    .await?;
    let offline = summary::question(question, &answers);
    let content = if offline.response_count == 0 {
        offline.content.clone()
    } else {
        ask_model(
            &state,
            |model| provider::question_request(model, question, &answers),
            provider::content,
        )
        .await
        .unwrap_or(offline.content.clone())
    };
    let generated = QuestionSummary {
        content,
        response_count: i64::try_from(offline.response_count).unwrap_or(i64::MAX),
        generated_at: state.clock.now(),
        trace_id: Some(uuid::Uuid::new_v4().to_string()),
    };
    if offline.response_count > 0 {
        let question_id = question.id.clone();
        let kept = generated.clone();
        keep(&state, &stored, move |s| {
            s.question_summaries
                .insert(question_id.clone(), kept.clone());
        })
        .await?;
    }
    Ok((
        [(header::CACHE_CONTROL, "max-age=15")],
        axum::Json(json!({
            "content": generated.content,
            "response_count": generated.response_count,
            "generated_at": generated.generated_at,
            "trace_id": generated.trace_id,
            "cached": false,
        })),
    )
        .into_response())
}

pub async fn summary_headline(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let body = body_of(&body)?;
    let stored = load(store, project.id, &id).await?;
    headline_answer(&state, &auth, &project, stored, body).await
}

async fn headline_answer(
    state: &AppState,
    auth: &Authenticated,
    project: &common::models::Project,
    stored: repository::Stored,
    body: SummaryBody,
) -> ApiResult<Response> {
    let survey = &stored.survey;
    if !body.force_refresh.unwrap_or(false)
        && let (Some(headline), Some(count)) =
            (&survey.headline_summary, survey.headline_response_count)
    {
        return Ok(axum::Json(
            json!({"headline": headline, "responses_sampled": count, "has_more": false}),
        )
        .into_response());
    }
    let started = std::time::Instant::now();
    let mut answers = answers(state, auth, project, survey, HEADLINE_SAMPLE + 1, None).await?;
    let has_more = answers.len() > HEADLINE_SAMPLE;
    answers.truncate(HEADLINE_SAMPLE);
    let questions: Vec<Question> = survey
        .questions
        .iter()
        .filter(|q| q.kind != QuestionType::Link)
        .cloned()
        .collect();
    let offline = summary::headline(&questions, &answers);
    let headline = if answers.is_empty() || questions.is_empty() {
        offline
    } else {
        ask_model(
            state,
            |model| provider::headline_request(model, &survey.name, &questions, &answers),
            provider::headline_content,
        )
        .await
        .unwrap_or(offline)
    };
    let sampled = answers.len();
    if sampled > 0 {
        let kept = headline.clone();
        keep(state, &stored, move |s| {
            s.headline_summary = Some(kept.clone());
            s.headline_response_count = Some(i64::try_from(sampled).unwrap_or(i64::MAX));
        })
        .await?;
    }
    let timing = format!(
        "summary;dur={:.1}",
        started.elapsed().as_secs_f64() * 1000.0
    );
    Ok((
        [("server-timing", timing)],
        axum::Json(
            json!({"headline": headline, "responses_sampled": sampled, "has_more": has_more}),
        ),
    )
        .into_response())
}

/// The survey's non-archived responses, newest first (only those answering `question`).
async fn answers(
    state: &AppState,
    auth: &Authenticated,
    project: &common::models::Project,
    survey: &Survey,
    limit: usize,
    question: Option<&str>,
) -> ApiResult<Vec<Answers>> {
    let archived = archive::list(state.store.as_ref(), project.id, survey.id).await?;
    let filters = ResponseFilters {
        question_id: question.map(str::to_owned),
        limit,
        ..Default::default()
    };
    let page = query_service::surveys::responses(
        state,
        project,
        survey,
        &filters,
        &archived,
        &Caller::of(auth),
    )
    .await
    .map_err(|e| query_service::api_error(&e))?;
    Ok(page.answers())
}

/// The model's answer to the request `build` makes, when one is configured and answers.
async fn ask_model(
    state: &AppState,
    build: impl FnOnce(&str) -> Value,
    read: fn(&Value) -> Option<String>,
) -> Option<String> {
    let settings = &state.config.query;
    let base = settings.llm_url.as_ref()?;
    let body = build(&settings.llm_model);
    let url = format!("{}/chat/completions", base.trim_end_matches('/'));
    let mut request = state
        .http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .timeout(std::time::Duration::from_secs(60));
    if let Some(key) = &settings.llm_api_key {
        request = request.bearer_auth(key);
    }
    let outcome = async {
        let response = request.send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()));
        }
        let text = response.text().await.map_err(|e| e.to_string())?;
        let answer: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        read(&answer).ok_or_else(|| "no content in the answer".to_owned())
    }
    .await;
    match outcome {
        Ok(content) => Some(content),
        Err(detail) => {
            tracing::warn!(%detail, "survey summary provider failed; the offline summary answers");
            None
        }
    }
}

/// Stores a summary on the survey (bookkeeping: no activity entry). A survey changed meanwhile
/// keeps its change; the summary is then simply made again next time.
async fn keep(
    state: &AppState,
    stored: &repository::Stored,
    change: impl Fn(&mut Survey),
) -> ApiResult<()> {
    let mut after = stored.survey.clone();
    change(&mut after);
    let op = repository::plan_bookkeeping(stored, &after)?;
    match state.store.transact_write(vec![op]).await {
        Ok(()) | Err(StoreError::ConditionFailed) => Ok(()),
        Err(other) => Err(other.into()),
    }
}
