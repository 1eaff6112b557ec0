//! ActorsQuery: persons, one row each, with the columns `select` names, as PostHog's
//! `posthog/hogql_queries/actors_query_runner.py` answers it. With `source` an
//! `InsightActorsQuery`, the persons are those behind one point of an insight (a trends day, a
//! funnel step reached or dropped off before, a lifecycle status, a stickiness count, a paths
//! edge); without, every person of the project.
//!
//! - `select` defaults to PostHog's `["person", "id", "person.$delete"]`; a column is one of
//!   `person`/`actor` (the person object `{id, distinct_ids, properties, created_at,
//!   is_identified}`), `id`, `person.$delete` (always 1), `created_at`, `is_identified`,
//!   `event_count` (the person's events behind the point; only with a source) or
//!   `properties.<key>`.
//! - `orderBy` is a list of `"<column> [ASC|DESC]"`; `person` orders by the email property, as
//!   PostHog does. Without it, `created_at DESC` when selected, else the first column ascending.
//! - `properties` (person filters) and `search` (in email, name, id and distinct ids) narrow the
//!   persons; `limit` (100) and `offset` page them, `hasMore` says whether more follow.
//! - `distinct_ids` are the distinct ids the person's events carry (the engine's `persons` has
//!   none of its own), each once, identified ids before anonymous (uuid-shaped) ones.
//!
//! [`compile`] reads the node (`parse`), finds the persons of the point (`source` and one file
//! per insight kind), writes the query (`sql`) and shapes its rows (`assemble`).

mod assemble;
mod funnels;
mod lifecycle;
mod parse;
mod paths;
mod retention;
mod source;
mod sql;
mod stickiness;
#[cfg(test)]
mod tests;
mod trends;

use serde_json::Value;

use crate::{Compiled, Context, Invalid};

/// PostHog's default page.
const DEFAULT_LIMIT: u64 = 100;
/// The most rows one page may hold (the engine's largest LIMIT).
const MAX_LIMIT: u64 = 50_000;

pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let request = parse::Request::parse(node, ctx)?;
    let matched = match node.get("source") {
        None | Some(Value::Null) => None,
        Some(source) => Some(source::matched(source, ctx)?),
    };
    let query = request.query(matched.as_ref())?;
    Ok(Compiled::new(vec![query], move |tables| {
        Ok(request.assemble(tables))
    }))
}

/// The persons of one insight point: `query` selects `(actor_id, event_count)` and may read
/// the common table expressions `ctes` (without `WITH`; empty when none).
pub(crate) struct Matched {
    pub ctes: String,
    pub query: String,
}

/// One column of `select`.
#[derive(Debug, Clone, PartialEq)]
enum Column {
    /// `person` or `actor`: the person object.
    Person,
    Id,
    /// `person.$delete`: PostHog's constant 1.
    Delete,
    CreatedAt,
    IsIdentified,
    EventCount,
    /// `properties.<key>` (or `person.properties.<key>`).
    Property(String),
}
