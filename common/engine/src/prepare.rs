//! Preparing a query: the text parsed, checked and rewritten into the SQL DataFusion runs, once,
//! so a prepared query keys caches and runs in any session.

use datafusion::sql::sqlparser::ast::Statement;

use crate::bindings::{Bindings, Page, Window};
use crate::rewrite;
use crate::{QueryError, parse, tables};

/// A checked, rewritten query, ready to run (and to key a cache with).
pub struct Prepared {
    /// The query as the user wrote it, normalized (`hogql` in responses).
    pub hogql: String,
    /// What DataFusion runs.
    pub sql: String,
    pub(crate) statement: Statement,
    pub tables: Vec<String>,
    /// The page the result is (its extra row tells `hasMore`), when it is one.
    pub page: Option<Page>,
    /// ClickHouse's defaults where SQL has NULLs (see `clickhouse_defaults`).
    pub(crate) clickhouse_defaults: bool,
}

impl Prepared {
    /// Keeps SQL's NULLs for aggregates over no rows and unmatched join columns: for the
    /// queries we compile from nodes, which are written (and checked against DuckDB) that way.
    pub fn with_sql_nulls(mut self) -> Self {
        self.clickhouse_defaults = false;
        self
    }
}

pub fn prepare(text: &str, bindings: &Bindings) -> Result<Prepared, QueryError> {
    prepare_window(text, bindings, Window::Query)
}

/// [`prepare`], with the top-level LIMIT set by `window` (a caller's page, or the whole result).
pub fn prepare_window(
    text: &str,
    bindings: &Bindings,
    window: Window,
) -> Result<Prepared, QueryError> {
    let parsed = parse::parse(text)?;
    prepare_parsed(parsed, bindings, window)
}

pub(crate) fn prepare_parsed(
    parsed: parse::Parsed,
    bindings: &Bindings,
    window: Window,
) -> Result<Prepared, QueryError> {
    let hogql = parsed.query.to_string().replace('`', "");
    let rewritten = rewrite::rewrite(
        *parsed.query,
        &parsed.placeholders,
        bindings,
        tables::ALL,
        window,
    )?;
    Ok(Prepared {
        hogql,
        sql: rewritten.query.to_string(),
        statement: Statement::Query(Box::new(rewritten.query)),
        tables: rewritten.tables,
        page: rewritten.page,
        clickhouse_defaults: true,
    })
}

/// Whether `text` is exactly one expression of the dialect (so that, put in parentheses inside a
/// compiled query, it cannot reshape that query).
pub fn check_expression(text: &str) -> Result<(), String> {
    use datafusion::sql::sqlparser::ast::SetExpr;
    let parsed = parse::parse(&format!("SELECT ({text})")).map_err(|e| e.to_string())?;
    let query = parsed.query;
    let single = match query.body.as_ref() {
        SetExpr::Select(select) => {
            select.projection.len() == 1
                && select.from.is_empty()
                && select.selection.is_none()
                && select.having.is_none()
                && select.prewhere.is_none()
                && select.distinct.is_none()
                && matches!(&select.group_by, datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
        }
        _ => false,
    };
    if !single
        || query.with.is_some()
        || query.order_by.is_some()
        || query.limit_clause.is_some()
        || !parsed.placeholders.is_empty()
    {
        return Err(format!("`{text}` is not a single expression"));
    }
    Ok(())
}
