//! `/event_definitions/` and `/property_definitions/`: what ingestion has seen in a project
//! (`common::models::definitions`), listed, searched and deleted as PostHog's viewsets do.

use std::collections::BTreeSet;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use common::error::{ApiError, ApiResult};
use common::models::definitions::{
    self, EventDefinition, PropertyDefinition, PropertyKind, PropertyType,
};
use common::models::{Project, Scope};
use common::pagination::Pagination;
use common::query_params::QueryParams;
use common::{AppState, Authenticated};
use serde::Serialize;
use uuid::Uuid;

const READ: Scope = Scope::read("event_definition");
const WRITE: Scope = Scope::write("event_definition");
const PROPERTY_READ: Scope = Scope::read("property_definition");
const PROPERTY_WRITE: Scope = Scope::write("property_definition");

/// A JSON list of names (`event_names=["a","b"]`, as PostHog's frontend sends it).
fn names(params: &QueryParams, name: &str) -> ApiResult<Option<Vec<String>>> {
    params.json(name, "a JSON list of names, e.g. [\"$pageview\"]")
}

/// PostHog's term search: every space-separated term is in the name, case-insensitively.
fn matches_terms(name: &str, search: Option<&str>) -> bool {
    let Some(search) = search else {
        return true;
    };
    let name = name.to_lowercase();
    search
        .split_whitespace()
        .all(|term| name.contains(&term.to_lowercase()))
}

#[derive(Serialize)]
struct EventDefinitionView {
    id: Uuid,
    name: String,
    created_at: DateTime<Utc>,
    last_seen_at: DateTime<Utc>,
    last_updated_at: DateTime<Utc>,
    /// Events seen since the definition was made.
    volume: u64,
    /// Events whose time is in the last 30 days (PostHog's `volume_30_day`).
    volume_30_day: u64,
    description: Option<String>,
    tags: [String; 0],
    is_action: bool,
    post_to_slack: bool,
    verified: bool,
}

impl EventDefinitionView {
    fn of(definition: EventDefinition, now: DateTime<Utc>) -> Self {
        Self {
            volume_30_day: definition.volume_30_day(now),
            id: definition.id,
            name: definition.name,
            created_at: definition.created_at,
            last_seen_at: definition.last_seen_at,
            last_updated_at: definition.last_seen_at,
            volume: definition.volume,
            description: None,
            tags: [],
            is_action: false,
            post_to_slack: false,
            verified: false,
        }
    }
}

/// `GET /event_definitions/`: `search`, `event_type` (`event`, `event_custom`,
/// `event_posthog`), `ordering` (`name`, `last_seen_at`, `volume`, `volume_30_day`, each
/// with `-` for descending), `limit`/`offset`.
pub async fn list_events(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    params: QueryParams,
    pagination: Pagination,
) -> ApiResult<Response> {
    let project = auth.project(state.store.as_ref(), &project, READ).await?;
    let now = state.clock.now();
    let kind_filter: fn(&str) -> bool = match params.get("event_type") {
        None | Some("event" | "all") => |_| true,
        Some("event_custom") => |name| !name.starts_with('$'),
        Some("event_posthog") => |name| name.starts_with('$'),
        Some(other) => {
            return Err(ApiError::validation(
                "event_type",
                format!(
                    "`{other}` is not an event type: use event, event_custom or event_posthog."
                ),
            ));
        }
    };
    let mut all: Vec<EventDefinition> = definitions::events(state.store.as_ref(), project.id)
        .await?
        .into_iter()
        .filter(|definition| kind_filter(&definition.name))
        .filter(|definition| matches_terms(&definition.name, params.get("search")))
        .collect();
    match params.get("ordering").unwrap_or("name") {
        "name" => {}
        "-name" => all.reverse(),
        "last_seen_at" => all.sort_by_key(|d| d.last_seen_at),
        "-last_seen_at" => all.sort_by_key(|d| std::cmp::Reverse(d.last_seen_at)),
        "volume" => all.sort_by_key(|d| d.volume),
        "-volume" => all.sort_by_key(|d| std::cmp::Reverse(d.volume)),
        "volume_30_day" => all.sort_by_key(|d| d.volume_30_day(now)),
        "-volume_30_day" => all.sort_by_key(|d| std::cmp::Reverse(d.volume_30_day(now))),
        other => {
            return Err(ApiError::validation(
                "ordering",
                format!(
                    "`{other}` is not an ordering: use name, last_seen_at, volume or volume_30_day, with - for descending."
                ),
            ));
        }
    }
    let page: Vec<EventDefinitionView> = pagination
        .window(&all)
        .iter()
        .cloned()
        .map(|definition| EventDefinitionView::of(definition, now))
        .collect();
    Ok(axum::Json(pagination.page_of(all.len(), &page)).into_response())
}

async fn find_event(state: &AppState, project: &Project, id: &str) -> ApiResult<EventDefinition> {
    let id = parse_id(id)?;
    definitions::events(state.store.as_ref(), project.id)
        .await?
        .into_iter()
        .find(|definition| definition.id == id)
        .ok_or_else(ApiError::not_found)
}

fn parse_id(id: &str) -> ApiResult<Uuid> {
    Uuid::try_parse(id).map_err(|_| ApiError::not_found())
}

/// `GET /event_definitions/:id/`.
pub async fn retrieve_event(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = auth.project(state.store.as_ref(), &project, READ).await?;
    let definition = find_event(&state, &project, &id).await?;
    Ok(axum::Json(EventDefinitionView::of(definition, state.clock.now())).into_response())
}

/// `DELETE /event_definitions/:id/`: 204; ingestion makes it again if the event comes back.
pub async fn delete_event(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = auth.project(state.store.as_ref(), &project, WRITE).await?;
    let definition = find_event(&state, &project, &id).await?;
    definitions::delete_event(state.store.as_ref(), project.id, &definition.name).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Serialize)]
struct PropertyDefinitionView {
    id: Uuid,
    name: String,
    is_numerical: bool,
    property_type: Option<PropertyType>,
    /// PostHog's numeric kind: 1 event, 2 person.
    #[serde(rename = "type")]
    kind: u8,
    tags: [String; 0],
    /// Whether one of the `event_names` carried it (null without `event_names`).
    is_seen_on_filtered_events: Option<bool>,
}

impl PropertyDefinitionView {
    fn new(definition: PropertyDefinition, seen: Option<bool>) -> Self {
        Self {
            is_numerical: definition.is_numerical(),
            id: definition.id,
            name: definition.name,
            property_type: definition.property_type,
            kind: match definition.kind {
                PropertyKind::Event => 1,
                PropertyKind::Person => 2,
            },
            tags: [],
            is_seen_on_filtered_events: seen,
        }
    }
}

fn kind_of(params: &QueryParams) -> ApiResult<PropertyKind> {
    match params.get("type") {
        None | Some("event") => Ok(PropertyKind::Event),
        Some("person") => Ok(PropertyKind::Person),
        Some(other) => Err(ApiError::validation(
            "type",
            format!("`{other}` is not a property type here: use event or person."),
        )),
    }
}

/// `GET /property_definitions/`: `type` (`event`, `person`), `search`, `event_names` (JSON
/// list) with `filter_by_event_names`, `is_numerical`, `properties` (comma list),
/// `excluded_properties` (JSON list), `is_feature_flag`, `limit`/`offset`. Ordered as PostHog
/// orders them: seen on the filtered events first, then by name.
pub async fn list_properties(
    State(state): State<AppState>,
    auth: Authenticated,
    Path(project): Path<String>,
    params: QueryParams,
    pagination: Pagination,
) -> ApiResult<Response> {
    let store = state.store.as_ref();
    let project = auth.project(store, &project, PROPERTY_READ).await?;
    let kind = kind_of(&params)?;
    let numerical = params.flag("is_numerical")?;
    let feature_flag = params.flag("is_feature_flag")?;
    let only_seen = params.flag("filter_by_event_names")?.unwrap_or(false);
    let event_names = names(&params, "event_names")?;
    let excluded: BTreeSet<String> = names(&params, "excluded_properties")?
        .unwrap_or_default()
        .into_iter()
        .collect();
    let named: Option<BTreeSet<&str>> = params
        .list("properties")
        .map(|names| names.into_iter().collect());
    let seen_on_events: Option<BTreeSet<String>> = match &event_names {
        Some(names) if kind == PropertyKind::Event => {
            let mut seen = BTreeSet::new();
            for event in names {
                seen.extend(definitions::properties_of_event(store, project.id, event).await?);
            }
            Some(seen)
        }
        _ => None,
    };
    let mut rows: Vec<(bool, PropertyDefinitionView)> = Vec::new();
    for definition in definitions::properties(store, project.id, kind).await? {
        let name = definition.name.as_str();
        let seen = seen_on_events.as_ref().map(|seen| seen.contains(name));
        let keep = matches_terms(name, params.get("search"))
            && !excluded.contains(name)
            && named.as_ref().is_none_or(|named| named.contains(name))
            && numerical.is_none_or(|wanted| {
                definition.is_numerical() == wanted && !matches!(name, "distinct_id" | "timestamp")
            })
            && feature_flag.is_none_or(|wanted| name.starts_with("$feature/") == wanted)
            && (!only_seen || seen == Some(true));
        if keep {
            rows.push((
                seen == Some(true),
                PropertyDefinitionView::new(definition, seen),
            ));
        }
    }
    // Stable: the Store lists by name already.
    rows.sort_by_key(|(seen, _)| !*seen);
    let views: Vec<&PropertyDefinitionView> = rows.iter().map(|(_, view)| view).collect();
    let page: Vec<&PropertyDefinitionView> = pagination.window(&views).to_vec();
    Ok(axum::Json(pagination.page_of(views.len(), &page)).into_response())
}

async fn find_property(
    state: &AppState,
    project: &Project,
    id: &str,
) -> ApiResult<PropertyDefinition> {
    let id = parse_id(id)?;
    for kind in [PropertyKind::Event, PropertyKind::Person] {
        if let Some(found) = definitions::properties(state.store.as_ref(), project.id, kind)
            .await?
            .into_iter()
            .find(|definition| definition.id == id)
        {
            return Ok(found);
        }
    }
    Err(ApiError::not_found())
}

/// `GET /property_definitions/:id/`.
pub async fn retrieve_property(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = auth
        .project(state.store.as_ref(), &project, PROPERTY_READ)
        .await?;
    let definition = find_property(&state, &project, &id).await?;
    Ok(axum::Json(PropertyDefinitionView::new(definition, None)).into_response())
}

/// `DELETE /property_definitions/:id/`: 204.
pub async fn delete_property(
    State(state): State<AppState>,
    auth: Authenticated,
    Path((project, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let project = auth
        .project(state.store.as_ref(), &project, PROPERTY_WRITE)
        .await?;
    let definition = find_property(&state, &project, &id).await?;
    definitions::delete_property(
        state.store.as_ref(),
        project.id,
        definition.kind,
        &definition.name,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
