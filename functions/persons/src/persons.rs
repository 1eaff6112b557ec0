//! `/api/projects/:id/persons/`: PostHog's `PersonViewSet` over the persons the committer keeps
//! in the Store. Listing walks the project's persons index newest first, filtered in memory, in
//! cursor pages; edits apply `$set`/`$unset` to the stored person at once (PostHog sends itself
//! an event that does the same a moment later).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::activity::Actor;
use common::error::{ApiError, ApiResult};
use common::http::Json;
use common::models::person::{self, Person, PersonView};
use common::models::{Project, Scope};
use common::pagination::absolute_path;
use common::query_params::QueryParams;
use common::{AppState, Authenticated};
use feature_flags::matching::PropertyMatcher;
use feature_flags::model::{PropertyFilter, PropertyKind};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::{activity, deletion};

pub const READ: Scope = Scope::read("person");
pub const WRITE: Scope = Scope::write("person");

const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;
/// Persons one list request examines at most: a filter that matches few of many answers a
/// shorter page with a `next` link rather than walking the whole project in one request.
const EXAMINE_PER_REQUEST: usize = 10_000;
/// PostHog's `bulk_delete` takes this many ids at most.
const MAX_BULK_DELETE: usize = 1000;

/// What `GET /persons/` filters by (PostHog's `PersonFilter` and pagination), read from the
/// query string with a 400 naming the parameter.
struct ListParams {
    limit: usize,
    cursor: Option<String>,
    distinct_id: Option<String>,
    email: Option<String>,
    search: Option<String>,
    uuids: Option<Vec<Uuid>>,
    properties: Vec<PropertyMatcher>,
    /// Kept for the `next` link.
    pairs: Vec<(String, String)>,
}

impl ListParams {
    fn parse(params: &QueryParams) -> ApiResult<Self> {
        let uuids = params
            .list("uuid")
            .map(|parts| {
                parts
                    .into_iter()
                    .map(|part| {
                        Uuid::try_parse(part).map_err(|_| {
                            ApiError::validation(
                                "uuid",
                                format!("`{part}` is not a person's uuid."),
                            )
                        })
                    })
                    .collect::<ApiResult<Vec<_>>>()
            })
            .transpose()?;
        let owned = |name: &str| params.get(name).map(str::to_owned);
        Ok(Self {
            limit: params
                .integer("limit", 1..=MAX_LIMIT)?
                .unwrap_or(DEFAULT_LIMIT),
            cursor: owned("cursor"),
            distinct_id: owned("distinct_id"),
            email: owned("email"),
            search: params.get("search").map(|text| text.trim().to_lowercase()),
            uuids,
            properties: person_filters(params)?,
            pairs: params.without(&["cursor"]),
        })
    }

    /// Whether a person passes every filter but `search` (which needs their distinct ids).
    fn keeps(&self, person: &Person, now: chrono::DateTime<chrono::Utc>) -> bool {
        if let Some(email) = &self.email
            && person.properties.get("email").and_then(Value::as_str) != Some(email.as_str())
        {
            return false;
        }
        self.properties
            .iter()
            .all(|matcher| matcher.matches_in(&person.properties, now))
    }
}

/// `properties=[{key, value, operator, type: "person"}, ...]` (JSON), as PostHog's persons list
/// reads it: person filters only.
fn person_filters(params: &QueryParams) -> ApiResult<Vec<PropertyMatcher>> {
    let filters: Vec<PropertyFilter> = params
        .json("properties", "a JSON list of person property filters")?
        .unwrap_or_default();
    filters
        .iter()
        .enumerate()
        .map(|(index, filter)| {
            if filter.kind != PropertyKind::Person {
                return Err(ApiError::validation(
                    format!("properties[{index}].type"),
                    "Persons are filtered by person properties only (`type: person`).",
                ));
            }
            Ok(PropertyMatcher::new(filter))
        })
        .collect()
}

/// `GET /persons/`: `{results, next, previous}`, newest persons first.
pub async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    query: QueryParams,
    parts: axum::http::request::Parts,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let params = ListParams::parse(&query)?;
    let now = state.clock.now();

    // Filters that name persons outright need no walk.
    let named: Option<Vec<Person>> = if let Some(distinct_id) = &params.distinct_id {
        Some(
            person::person_of(store, project.id, distinct_id)
                .await?
                .into_iter()
                .collect(),
        )
    } else if let Some(uuids) = &params.uuids {
        let mut found = Vec::new();
        for uuid in uuids {
            found.extend(person::load(store, project.id, *uuid).await?);
        }
        Some(found)
    } else {
        None
    };
    let (views, next_cursor) = match named {
        Some(persons) => {
            let kept: Vec<Person> = persons
                .into_iter()
                .filter(|person| params.keeps(person, now))
                .collect();
            let views = PersonView::many(store, project.id, kept).await?;
            let views = views
                .into_iter()
                .filter(|view| matches_search(view, params.search.as_deref()))
                .take(params.limit)
                .collect();
            (views, None)
        }
        None => walk(&state, &project, &params).await?,
    };
    let next = next_cursor.map(|cursor| {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.extend_pairs(&params.pairs);
        query.append_pair("cursor", &cursor);
        format!("{}?{}", absolute_path(&parts), query.finish())
    });
    Ok(axum::Json(json!({"results": views, "next": next, "previous": null})).into_response())
}

/// Walks the persons index from the cursor until a page is full, the examined budget is spent
/// or the index ends; the cursor continues after the last person examined.
async fn walk(
    state: &AppState,
    project: &Project,
    params: &ListParams,
) -> ApiResult<(Vec<PersonView>, Option<String>)> {
    let store = state.store.as_ref();
    let now = state.clock.now();
    let mut views = Vec::new();
    let mut cursor = params.cursor.clone();
    let mut examined = 0;
    loop {
        // Ask for no more than still fit, so the cursor never skips a match.
        let wanted = params.limit - views.len();
        let (persons, next) = person::page(store, project.id, wanted, cursor.take())
            .await
            .map_err(|error| match error {
                common::store::StoreError::InvalidCursor => {
                    ApiError::validation("cursor", "`cursor` is not one this list handed out.")
                }
                other => other.into(),
            })?;
        examined += persons.len();
        let kept: Vec<Person> = persons
            .into_iter()
            .filter(|person| params.keeps(person, now))
            .collect();
        let page = PersonView::many(store, project.id, kept).await?;
        views.extend(
            page.into_iter()
                .filter(|view| matches_search(view, params.search.as_deref())),
        );
        match next {
            None => return Ok((views, None)),
            Some(next) if views.len() >= params.limit || examined >= EXAMINE_PER_REQUEST => {
                return Ok((views, Some(next)));
            }
            Some(next) => cursor = Some(next),
        }
    }
}

/// PostHog's `search`: a distinct id, or text in the person's properties (e-mail, name...),
/// case-insensitively.
fn matches_search(view: &PersonView, search: Option<&str>) -> bool {
    let Some(needle) = search else {
        return true;
    };
    view.distinct_ids
        .iter()
        .any(|id| id.to_lowercase() == needle)
        || view.properties.values().any(|value| match value {
            Value::String(text) => text.to_lowercase().contains(needle),
            _ => false,
        })
}

/// The person an `:id` path names (their uuid), or a 404.
pub async fn load(state: &AppState, project: &Project, id: &str) -> ApiResult<Person> {
    let uuid = Uuid::try_parse(id).map_err(|_| {
        ApiError::validation(
            "id",
            format!(
                "The ID provided does not look like a personID. If you are using a distinctId, \
                 please use /persons?distinct_id={id} instead."
            ),
        )
    })?;
    person::load(state.store.as_ref(), project.id, uuid)
        .await?
        .ok_or_else(|| ApiError::not_found_detail("Person not found."))
}

async fn view(state: &AppState, project: &Project, person: Person) -> ApiResult<Response> {
    let ids = person::distinct_ids(state.store.as_ref(), project.id, person.uuid).await?;
    Ok(axum::Json(PersonView::new(person, ids)).into_response())
}

/// `GET /persons/:id/`.
pub async fn retrieve(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = auth.project(state.store.as_ref(), &project, READ).await?;
    let person = load(&state, &project, &id).await?;
    view(&state, &project, person).await
}

#[derive(Debug, Deserialize)]
pub struct UpdateBody {
    properties: Option<Map<String, Value>>,
}

/// `PATCH|PUT /persons/:id/` with `{"properties": {...}}`: each key is set (`$set`); keys not
/// named keep their values.
pub async fn update(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<UpdateBody>,
) -> ApiResult<Response> {
    let project = auth.project(state.store.as_ref(), &project, WRITE).await?;
    let person = load(&state, &project, &id).await?;
    let Some(set) = body.properties else {
        return Err(ApiError::required("properties"));
    };
    let updated = change(&state, &auth, &project, person.uuid, &set, &[]).await?;
    view(&state, &project, updated).await
}

#[derive(Debug, Deserialize)]
pub struct UpdatePropertyBody {
    key: Option<Value>,
    value: Option<Value>,
}

/// `POST /persons/:id/update_property/` with `{key, value}`: 202, as PostHog answers.
pub async fn update_property(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<UpdatePropertyBody>,
) -> ApiResult<Response> {
    let project = auth.project(state.store.as_ref(), &project, WRITE).await?;
    let person = load(&state, &project, &id).await?;
    let value = match body.value {
        None | Some(Value::Null) => return Err(ApiError::required("value")),
        Some(value) => value,
    };
    let key = match body.key {
        None | Some(Value::Null) => return Err(ApiError::required("key")),
        Some(Value::String(key)) if !key.is_empty() => key,
        Some(_) => {
            return Err(ApiError::validation(
                "key",
                "`key` must be a non-empty string.",
            ));
        }
    };
    let set = Map::from_iter([(key, value)]);
    change(&state, &auth, &project, person.uuid, &set, &[]).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

#[derive(Debug, Deserialize)]
pub struct DeletePropertyBody {
    #[serde(rename = "$unset")]
    unset: Option<Value>,
}

/// `POST /persons/:id/delete_property/` with `{"$unset": key}`: 201 `{"success": true}`.
pub async fn delete_property(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    Json(body): Json<DeletePropertyBody>,
) -> ApiResult<Response> {
    let project = auth.project(state.store.as_ref(), &project, WRITE).await?;
    let person = load(&state, &project, &id).await?;
    let key = match body.unset {
        None | Some(Value::Null) => return Err(ApiError::required("$unset")),
        Some(Value::String(key)) if !key.is_empty() => key,
        Some(_) => {
            return Err(ApiError::validation(
                "$unset",
                "`$unset` must be the name of the property to delete.",
            ));
        }
    };
    change(&state, &auth, &project, person.uuid, &Map::new(), &[key]).await?;
    Ok((StatusCode::CREATED, axum::Json(json!({"success": true}))).into_response())
}

/// Applies `$set` then `$unset` to the person with its activity entry in one transaction:
/// `updated` for a set, PostHog's `delete_property` for an unset.
async fn change(
    state: &AppState,
    auth: &Authenticated,
    project: &Project,
    uuid: Uuid,
    set: &Map<String, Value>,
    unset: &[String],
) -> ApiResult<Person> {
    let actor = Actor::user(&auth.user);
    let at = state.clock.now();
    let kind = match set.is_empty() && !unset.is_empty() {
        true => activity::DELETE_PROPERTY,
        false => common::activity::UPDATED,
    };
    let keys: Vec<&str> = set
        .keys()
        .map(String::as_str)
        .chain(unset.iter().map(String::as_str))
        .collect();
    let log = |before: &Person, after: &Person| {
        let changes = activity::properties_change(before, after, &keys);
        Ok(vec![activity::entry_op(
            after,
            &actor,
            kind,
            Some(changes),
            at,
        )?])
    };
    person::update_properties(state.store.as_ref(), project.id, uuid, set, unset, log)
        .await?
        .ok_or_else(|| ApiError::not_found_detail("Person not found."))
}

/// `DELETE /persons/:id/` (`?delete_events=true` also deletes their events): 202.
pub async fn destroy(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
    params: QueryParams,
) -> ApiResult<Response> {
    let project = auth.project(state.store.as_ref(), &project, WRITE).await?;
    let person = load(&state, &project, &id).await?;
    // PostHog deletes the events when the parameter is there at all; `false`/`0` say no here.
    let delete_events =
        params.has("delete_events") && params.flag("delete_events")?.unwrap_or(true);
    deletion::delete(&state, &auth, &project, person, delete_events).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

#[derive(Debug, Deserialize)]
pub struct BulkDeleteBody {
    #[serde(default)]
    distinct_ids: Option<Vec<String>>,
    #[serde(default)]
    ids: Option<Vec<String>>,
    #[serde(default)]
    delete_events: bool,
}

/// `POST /persons/bulk_delete/` with `distinct_ids` or `ids` (at most 1000): 202.
pub async fn bulk_delete(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    Json(body): Json<BulkDeleteBody>,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, WRITE).await?;
    let mut persons = Vec::new();
    match (
        body.distinct_ids.filter(|ids| !ids.is_empty()),
        body.ids.filter(|ids| !ids.is_empty()),
    ) {
        (Some(distinct_ids), _) => {
            if distinct_ids.len() > MAX_BULK_DELETE {
                return Err(ApiError::validation(
                    "distinct_ids",
                    format!("You can only pass {MAX_BULK_DELETE} distinct_ids in one call"),
                ));
            }
            for distinct_id in &distinct_ids {
                persons.extend(person::person_of(store, project.id, distinct_id).await?);
            }
        }
        (None, Some(ids)) => {
            if ids.len() > MAX_BULK_DELETE {
                return Err(ApiError::validation(
                    "ids",
                    format!("You can only pass {MAX_BULK_DELETE} ids in one call"),
                ));
            }
            for (index, id) in ids.iter().enumerate() {
                let uuid = Uuid::try_parse(id).map_err(|_| {
                    ApiError::validation(
                        format!("ids[{index}]"),
                        format!("`{id}` is not a person's uuid."),
                    )
                })?;
                persons.extend(person::load(store, project.id, uuid).await?);
            }
        }
        (None, None) => {
            return Err(ApiError::bad_request(
                "invalid_input",
                "You need to specify either distinct_ids or ids",
            ));
        }
    }
    // Two distinct ids of one person name them once.
    persons.sort_by_key(|person| person.uuid);
    persons.dedup_by_key(|person| person.uuid);
    for person in persons {
        deletion::delete(&state, &auth, &project, person, body.delete_events).await?;
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

/// Persons `GET /persons/values/` reads at most: the values of a larger project come from the
/// newest this many.
const VALUES_SCAN: usize = 50_000;
/// Values answered, most common first (PostHog's limit).
const VALUES: usize = 10;

/// `GET /persons/values/?key=&value=`: the most common values of a person property, for
/// pickers: `[{"name", "count"}]`; `value` keeps those containing it, case-insensitively.
pub async fn values(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    params: QueryParams,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, READ).await?;
    let key = params.get("key").ok_or_else(|| ApiError::required("key"))?;
    let needle = params.get("value").map(str::to_lowercase);
    let mut counts: std::collections::HashMap<String, (Value, u64)> =
        std::collections::HashMap::new();
    let mut cursor = None;
    let mut examined = 0;
    loop {
        let (persons, next) = person::page(store, project.id, 1000, cursor.take()).await?;
        examined += persons.len();
        for person in persons {
            let Some(value) = person.properties.get(key).filter(|value| !value.is_null()) else {
                continue;
            };
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            if needle
                .as_ref()
                .is_some_and(|needle| !text.to_lowercase().contains(needle))
            {
                continue;
            }
            counts.entry(text).or_insert_with(|| (value.clone(), 0)).1 += 1;
        }
        match next {
            Some(next) if examined < VALUES_SCAN => cursor = Some(next),
            _ => break,
        }
    }
    let mut values: Vec<(String, (Value, u64))> = counts.into_iter().collect();
    values.sort_by(|a, b| b.1.1.cmp(&a.1.1).then_with(|| a.0.cmp(&b.0)));
    let answer: Vec<Value> = values
        .into_iter()
        .take(VALUES)
        .map(|(_, (value, count))| json!({"name": value, "count": count}))
        .collect();
    Ok(axum::Json(answer).into_response())
}
