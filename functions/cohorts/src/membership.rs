//! Who is in a cohort: a static cohort's members added and removed by person id (PostHog's
//! `add_persons_to_static_cohort` / `remove_person_from_static_cohort`, their messages), and the
//! stored members of any cohort (`persons`: a dynamic one's as of its last calculation).

use std::collections::BTreeSet;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use cohort_core::repository::{self, SCOPE, found};
use cohort_core::{Cohort, members};
use common::activity::{Actor, Record};
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::http::item_id;
use common::models::person::{self, PersonView};
use common::pagination::Pagination;
use common::{AppState, Authenticated};
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::shared::{PERSON_READ, READ, WRITE};

/// PostHog's `DEFAULT_COHORT_INSERT_BATCH_SIZE`: most persons one request may add.
const MAX_ADD: usize = 1000;
/// Person reads in flight at once.
const CONCURRENT_READS: usize = 16;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddBody {
    #[serde(default)]
    person_ids: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoveBody {
    #[serde(default)]
    person_id: Option<Value>,
}

/// `PATCH /cohorts/:id/add_persons_to_static_cohort/` with `{"person_ids": [uuid, ...]}`: the
/// ids that name persons of the project are added (others are skipped, as PostHog does); 400
/// when none does.
pub async fn add_persons(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<AddBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let cohort = found(store, project.id, item_id(&id)?, false).await?.cohort;
    if !cohort.is_static {
        return Err(invalid("Can only add users to static cohorts"));
    }
    let Some(Value::Array(raw)) = body.person_ids else {
        return Err(invalid("person_ids must be a list"));
    };
    if raw.is_empty() {
        return Err(invalid("person_ids cannot be empty"));
    }
    if raw.len() > MAX_ADD {
        return Err(invalid("List size exceeds limit"));
    }
    let asked: BTreeSet<Uuid> = raw
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|s| s.parse::<Uuid>().ok())
        .collect();
    let found: Vec<Uuid> = stream::iter(asked)
        .map(|uuid| async move {
            Ok::<_, ApiError>(person::load(store, project.id, uuid).await?.map(|_| uuid))
        })
        .buffered(CONCURRENT_READS)
        .try_filter_map(|found| async move { Ok(found) })
        .try_collect()
        .await?;
    if found.is_empty() {
        return Err(invalid("No valid users to add to cohort"));
    }
    let count = members::add(store, project.id, cohort.id, &found).await?;
    set_count(&state, &cohort, count).await?;
    let ids: Vec<String> = found.iter().map(Uuid::to_string).collect();
    log(&state, &auth, &cohort, "persons_added_manually", json!(ids)).await?;
    Ok(axum::Json(json!({"success": true})).into_response())
}

/// `PATCH /cohorts/:id/remove_person_from_static_cohort/` with `{"person_id": uuid}`; removing
/// a person who is not a member succeeds (PostHog: idempotent).
pub async fn remove_person(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<RemoveBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let cohort = found(store, project.id, item_id(&id)?, false).await?.cohort;
    if !cohort.is_static {
        return Err(invalid("Can only remove users from static cohorts"));
    }
    let raw = match body.person_id {
        None | Some(Value::Null) => return Err(invalid("person_id is required")),
        Some(Value::String(raw)) if raw.is_empty() => {
            return Err(invalid("person_id is required"));
        }
        Some(Value::String(raw)) => raw,
        Some(_) => return Err(invalid("person_id must be a string")),
    };
    let uuid = raw
        .parse::<Uuid>()
        .map_err(|_| invalid("person_id must be a valid UUID"))?;
    if person::load(store, project.id, uuid).await?.is_none() {
        return Err(ApiError::not_found_detail(
            "Person with this UUID does not exist in the cohort's team",
        ));
    }
    members::remove(store, project.id, cohort.id, uuid).await?;
    let count = members::list(store, project.id, cohort.id).await?.len();
    set_count(&state, &cohort, count).await?;
    log(
        &state,
        &auth,
        &cohort,
        "person_removed_manually",
        json!([uuid]),
    )
    .await?;
    Ok(axum::Json(json!({"success": true})).into_response())
}

/// `GET /cohorts/:id/persons/`: the stored members, in id order, paged with `limit`/`offset`:
/// `{results: [{id, name, distinct_ids, properties, created_at, uuid}], next, previous}`.
pub async fn persons(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    pagination: Pagination,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    auth.require(PERSON_READ)?;
    let cohort = found(store, project.id, item_id(&id)?, false).await?.cohort;
    let uuids = members::list(store, project.id, cohort.id).await?;
    let on_page = uuids
        .iter()
        .skip(pagination.offset)
        .take(pagination.limit)
        .copied();
    let mut found = Vec::new();
    let loaded: Vec<(Uuid, Option<person::Person>)> = stream::iter(on_page)
        .map(|uuid| async move {
            Ok::<_, ApiError>((uuid, person::load(store, project.id, uuid).await?))
        })
        .buffered(CONCURRENT_READS)
        .try_collect()
        .await?;
    for person in loaded.iter().filter_map(|(_, person)| person.clone()) {
        found.push(person);
    }
    let mut views = PersonView::many(store, project.id, found)
        .await?
        .into_iter();
    // In member order; a member whose person is gone (merged, deleted) shows as PostHog's
    // missing person: its id alone.
    let rows: Vec<Value> = loaded
        .iter()
        .map(|(uuid, loaded)| match loaded {
            Some(_) => views.next().map(|view| json!(view)).unwrap_or(Value::Null),
            None => json!({"id": uuid, "name": null, "distinct_ids": [], "properties": {},
                "created_at": null, "uuid": uuid}),
        })
        .collect();
    let mut page = pagination.page(&uuids);
    if let Some(object) = page.as_object_mut() {
        object.remove("count"); // PostHog's persons page has links only
        object.insert("results".into(), Value::Array(rows));
    }
    Ok(axum::Json(page).into_response())
}

fn invalid(detail: &str) -> ApiError {
    ApiError::bad_request("invalid_input", detail)
}

/// The member count on the cohort (bookkeeping: no activity entry of its own).
async fn set_count(state: &AppState, cohort: &Cohort, count: usize) -> ApiResult<()> {
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    repository::update_bookkeeping(state.store.as_ref(), cohort.team_id, cohort.id, |mut c| {
        c.count = Some(count);
        Ok(c)
    })
    .await?;
    Ok(())
}

/// PostHog's `persons_added_manually` / `person_removed_manually` entries, naming the persons.
async fn log(
    state: &AppState,
    auth: &Authenticated,
    cohort: &Cohort,
    activity: &str,
    persons: Value,
) -> ApiResult<()> {
    let before = json!({});
    let after = json!({ "persons": persons });
    let op = Record {
        team_id: cohort.team_id,
        actor: Actor::user(&auth.user),
        activity,
        scope: SCOPE,
        item_id: cohort.id.to_string(),
        name: Some(cohort.name.clone()),
        before: Some(&before),
        after: &after,
        ignored_fields: &[],
        at: state.clock.now(),
    }
    .put_op()?;
    state.store.transact_write(vec![op]).await?;
    Ok(())
}
