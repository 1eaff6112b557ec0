//! What a caller gives a query besides its text: the values its placeholders name
//! ([`Bindings`]), and how its top-level LIMIT is set ([`Window`]).

use serde_json::Value as Json;

pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 50_000;

/// Values a query's `{placeholders}` may name.
#[derive(Debug, Default, Clone)]
pub struct Bindings {
    /// `{name}` → value (the request's `values`).
    pub values: serde_json::Map<String, Json>,
    /// `{variables.code_name}` → value.
    pub variables: serde_json::Map<String, Json>,
    /// `{filters}` → this boolean expression of the dialect (PostHog's HogQLFilters, compiled by
    /// the caller); `true` when there is none.
    pub filters: Option<String>,
    /// `IN COHORT` operands (`CohortRef::key`) → their membership over `COHORT_SUBJECT`,
    /// compiled by the caller.
    pub cohorts: std::collections::BTreeMap<String, String>,
    /// `matchesAction(...)` operands (`ActionRef::key`) → the action's condition over `events`,
    /// compiled by the caller.
    pub actions: std::collections::BTreeMap<String, String>,
}

/// How the top-level LIMIT is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Window {
    /// The query's own LIMIT (capped at [`MAX_LIMIT`]), else the default page.
    #[default]
    Query,
    /// A caller's page over the query (an endpoint run's `limit` / `offset`), replacing the
    /// query's own LIMIT and OFFSET.
    Page(Page),
    /// The whole result, up to `rows` (one more is asked for, to tell it was cut): what a
    /// materialization stores.
    All { rows: u64 },
}

/// A page of results: one extra row is asked for, to tell `hasMore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: u64,
    pub offset: u64,
}
