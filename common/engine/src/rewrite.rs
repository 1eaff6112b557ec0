//! AST → AST: what makes the dialect HogQL-compatible and keeps a project inside its own data.
//! Only the project's tables (and the query's own CTEs) may be named; functions come from the
//! allow-list; properties become JSON look-ups; `=`/`!=`/LIKE never return NULL; placeholders
//! are bound as literals; the top-level LIMIT is defaulted and capped.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    AccessExpr, BinaryOperator, Expr, GroupByExpr, Ident, JoinConstraint, JoinOperator,
    ObjectNamePart, OrderByKind, Query, Select, SelectItem, SetExpr, Subscript, TableFactor,
    UnaryOperator, Value, Visit, VisitMut, Visitor, VisitorMut,
};

use crate::QueryError;
use crate::bindings::{Bindings, MAX_LIMIT, Page, Window};
use crate::conditions::{as_condition, booleans_as_numbers};
use crate::constants::refuse;
use crate::functions;
use crate::limit_by::limit_by;
use crate::membership::{InSubqueryValues, is_null_literal, null_in};
use crate::parse::PLACEHOLDER_PREFIX;
use crate::placeholders::{FILTERS, bind, expand_filters};
use crate::row_generators::{ArrayJoinPlaces, NUMBERS, NumbersTables, numbers_range};
use crate::template;
use crate::top_level::{apply_top_level_limit, name_top_level_columns, set_limit};

pub struct Rewritten {
    pub query: Query,
    /// The project tables the query names.
    pub tables: Vec<String>,
    /// The page asked for, when the result is one (no LIMIT given, or a caller's page).
    pub page: Option<Page>,
}

pub fn rewrite(
    mut query: Query,
    placeholders: &[String],
    bindings: &Bindings,
    tables: &[&str],
    window: Window,
) -> Result<Rewritten, QueryError> {
    let mut names = CteNames::default();
    let _ = Visit::visit(&query, &mut names);
    if let Some(bad) = names.names.iter().find(|name| name.starts_with("__")) {
        return Err(QueryError::Query(format!("Reserved name `{bad}`")));
    }
    if placeholders.iter().any(|path| path == FILTERS) {
        expand_filters(&mut query, placeholders, bindings.filters.as_deref())?;
    }
    crate::cohort_expand::expand(&mut query, bindings)?;
    crate::action_expand::expand(&mut query, bindings)?;
    let values = placeholders
        .iter()
        .map(|path| match path.as_str() {
            FILTERS => Ok(Expr::Value(Value::Boolean(true).into())),
            _ => bind(path, bindings),
        })
        .collect::<Result<Vec<_>, _>>()?;
    crate::aliases::inline(&mut query);
    name_top_level_columns(&mut query);
    let mut rewriter = Rewriter {
        tables: tables.iter().map(|t| t.to_string()).collect(),
        ctes: names.names,
        values,
        positive: HashSet::new(),
        used: HashSet::new(),
    };
    if let ControlFlow::Break(error) = VisitMut::visit(&mut query, &mut rewriter) {
        return Err(error);
    }
    if let ControlFlow::Break(error) = VisitMut::visit(&mut query, &mut NumbersTables) {
        return Err(error);
    }
    if let ControlFlow::Break(error) = Visit::visit(&query, &mut ArrayJoinPlaces) {
        return Err(error);
    }
    let page = match window {
        Window::Query => apply_top_level_limit(&mut query)?,
        Window::Page(page) => {
            let page = Page {
                limit: page.limit.min(MAX_LIMIT),
                offset: page.offset,
            };
            set_limit(&mut query, page.limit + 1, page.offset);
            Some(page)
        }
        Window::All { rows } => {
            set_limit(&mut query, rows + 1, 0);
            None
        }
    };
    let mut tables: Vec<String> = rewriter.used.into_iter().collect();
    tables.sort();
    Ok(Rewritten {
        query,
        tables,
        page,
    })
}

#[derive(Default)]
struct CteNames {
    names: HashSet<String>,
}

impl Visitor for CteNames {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.names.insert(cte.alias.name.value.clone());
            }
        }
        ControlFlow::Continue(())
    }
}

struct Rewriter {
    tables: HashSet<String>,
    ctes: HashSet<String>,
    values: Vec<Expr>,
    /// Comparisons whose NULL already means "no row" (top-level conjuncts of WHERE, HAVING, ON):
    /// they stay plain so DataFusion can push them into scans.
    positive: HashSet<usize>,
    used: HashSet<String>,
}

fn address(expr: &Expr) -> usize {
    expr as *const Expr as usize
}

fn collect_conjuncts(expr: &Expr, out: &mut HashSet<usize>) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            collect_conjuncts(left, out);
            collect_conjuncts(right, out);
        }
        Expr::Nested(inner) => collect_conjuncts(inner, out),
        other => {
            out.insert(address(other));
        }
    }
}

impl Rewriter {
    fn mark_positive(&mut self, select: &Select) {
        for expr in [&select.selection, &select.having, &select.prewhere]
            .into_iter()
            .flatten()
        {
            collect_conjuncts(expr, &mut self.positive);
        }
        for table in &select.from {
            for join in &table.joins {
                if let JoinOperator::Join(JoinConstraint::On(on))
                | JoinOperator::Inner(JoinConstraint::On(on)) = &join.join_operator
                {
                    collect_conjuncts(on, &mut self.positive);
                }
            }
        }
    }

    fn mark_set(&mut self, body: &SetExpr) {
        match body {
            SetExpr::Select(select) => self.mark_positive(select),
            SetExpr::SetOperation { left, right, .. } => {
                self.mark_set(left);
                self.mark_set(right);
            }
            _ => {}
        }
    }

    fn check_set(&self, body: &mut SetExpr) -> ControlFlow<QueryError> {
        match body {
            SetExpr::Select(select) => check_select(select),
            SetExpr::Query(_) => ControlFlow::Continue(()),
            SetExpr::SetOperation { left, right, .. } => {
                self.check_set(left)?;
                self.check_set(right)
            }
            SetExpr::Values(_) => ControlFlow::Continue(()),
            _ => refuse("Only SELECT queries are supported"),
        }
    }
}

/// A property access, when `path` is one: [properties, k...], [person, properties, k...],
/// [T, properties, k...], [T, person, properties, k...]; `person.id` is `person_id`.
fn property(path: &[String]) -> Option<Result<Expr, QueryError>> {
    let (qualifier, rest) = match path {
        [first, ..] if first == "properties" || first == "person" => (None, path),
        [table, rest @ ..] => (Some(table.as_str()), rest),
        [] => return None,
    };
    let column = |name: &str| -> Expr {
        match qualifier {
            Some(table) => Expr::CompoundIdentifier(vec![Ident::new(table), Ident::new(name)]),
            None => Expr::Identifier(Ident::new(name)),
        }
    };
    match rest {
        [properties, keys @ ..] if properties == "properties" && !keys.is_empty() => {
            Some(functions::property(column("properties"), keys))
        }
        [person, properties] if person == "person" && properties == "properties" => {
            Some(Ok(column("person_properties")))
        }
        [person, properties, keys @ ..] if person == "person" && properties == "properties" => {
            Some(functions::property(column("person_properties"), keys))
        }
        [person, id] if person == "person" && id == "id" => Some(Ok(column("person_id"))),
        _ => None,
    }
}

fn check_select(select: &mut Select) -> ControlFlow<QueryError> {
    if select.into.is_some() {
        return refuse("SELECT INTO is not supported");
    }
    if !select.lateral_views.is_empty()
        || !select.cluster_by.is_empty()
        || !select.distribute_by.is_empty()
        || !select.sort_by.is_empty()
        || !select.connect_by.is_empty()
    {
        return refuse("This clause is not supported");
    }
    if let GroupByExpr::Expressions(_, modifiers) = &select.group_by
        && !modifiers.is_empty()
    {
        return refuse("GROUP BY modifiers are not supported");
    }
    // DataFusion runs `x IN (subquery)` as a join, which only a filter can be: in the select
    // list it becomes a look-up in the subquery's values, gathered once.
    for item in &mut select.projection {
        let mut values = InSubqueryValues::default();
        if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item
            && let ControlFlow::Break(error) = VisitMut::visit(expr, &mut values)
        {
            return ControlFlow::Break(error);
        }
    }
    // ClickHouse's PREWHERE is a WHERE evaluated earlier: same rows.
    if let Some(prewhere) = select.prewhere.take() {
        select.selection = Some(match select.selection.take() {
            Some(selection) => Expr::BinaryOp {
                left: Box::new(Expr::Nested(Box::new(prewhere))),
                op: BinaryOperator::And,
                right: Box::new(Expr::Nested(Box::new(selection))),
            },
            None => prewhere,
        });
    }
    ControlFlow::Continue(())
}

/// A string literal (`x['key']` reads a key, not an array element).
fn is_text(expr: &Expr) -> bool {
    match expr {
        Expr::Value(value) => matches!(
            value.value,
            Value::SingleQuotedString(_) | Value::DoubleQuotedString(_)
        ),
        Expr::Nested(inner) => is_text(inner),
        _ => false,
    }
}

fn ident_path(expr: &Expr) -> Option<Vec<String>> {
    match expr {
        Expr::Identifier(ident) => Some(vec![ident.value.clone()]),
        Expr::CompoundIdentifier(idents) => Some(idents.iter().map(|i| i.value.clone()).collect()),
        Expr::CompoundFieldAccess { root, access_chain } => {
            let mut path = ident_path(root)?;
            for access in access_chain {
                match access {
                    AccessExpr::Dot(inner) => path.extend(ident_path(inner)?),
                    AccessExpr::Subscript(Subscript::Index {
                        index: Expr::Value(value),
                    }) => match &value.value {
                        Value::SingleQuotedString(key) | Value::DoubleQuotedString(key) => {
                            path.push(key.clone())
                        }
                        _ => return None,
                    },
                    _ => return None,
                }
            }
            Some(path)
        }
        _ => None,
    }
}

fn null_safe(expr: &mut Expr) -> Result<(), QueryError> {
    let taken = std::mem::replace(expr, Expr::Value(Value::Null.into()));
    *expr = match taken {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => Expr::IsNotDistinctFrom(left, right),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::NotEq,
            right,
        } => Expr::IsDistinctFrom(left, right),
        like @ (Expr::Like { .. } | Expr::ILike { .. }) => {
            let negated = matches!(
                &like,
                Expr::Like { negated: true, .. } | Expr::ILike { negated: true, .. }
            );
            // NULL LIKE x is NULL: false for LIKE, true for NOT LIKE.
            let fallback = Expr::Value(Value::Boolean(negated).into());
            template::call("coalesce", &[like, fallback])?
        }
        other => other,
    };
    Ok(())
}

impl VisitorMut for Rewriter {
    type Break = QueryError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<QueryError> {
        if query.settings.is_some() {
            query.settings = None;
        }
        if query.format_clause.is_some() || query.for_clause.is_some() || !query.locks.is_empty() {
            return refuse("FORMAT, FOR and locking clauses are not supported");
        }
        if !query.pipe_operators.is_empty() {
            return refuse("Pipe operators are not supported");
        }
        nulls_last(query);
        limit_by(query)?;
        self.check_set(&mut query.body)?;
        self.mark_set(&query.body);
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<QueryError> {
        match factor {
            TableFactor::Table {
                name,
                args,
                with_hints,
                version,
                partitions,
                json_path,
                sample,
                index_hints,
                ..
            } => {
                let parts: Vec<&ObjectNamePart> = name.0.iter().collect();
                let table = match parts.as_slice() {
                    [ObjectNamePart::Identifier(ident)] => ident.value.clone(),
                    _ => return refuse(format!("Unknown table `{name}`.")),
                };
                if let Some(args) = args {
                    // `numbers(n)`: the one table function, replaced by `range` after the visit.
                    if table == NUMBERS && !self.ctes.contains(&table) {
                        return match numbers_range(&args.args) {
                            Ok(_) => ControlFlow::Continue(()),
                            Err(error) => ControlFlow::Break(error),
                        };
                    }
                    return refuse(format!("Table '{table}' does not accept arguments"));
                }
                if !with_hints.is_empty()
                    || version.is_some()
                    || !partitions.is_empty()
                    || json_path.is_some()
                    || !index_hints.is_empty()
                {
                    return refuse(format!("Unsupported clause on table `{table}`"));
                }
                *sample = None;
                if self.tables.contains(&table) {
                    self.used.insert(table.clone());
                }
                if !(self.tables.contains(&table) || self.ctes.contains(&table)) {
                    let mut known: Vec<&str> = self.tables.iter().map(String::as_str).collect();
                    known.sort();
                    return refuse(format!(
                        "Unknown table `{table}`. Tables you can query: {}.",
                        known.join(", ")
                    ));
                }
                ControlFlow::Continue(())
            }
            TableFactor::Derived { .. } | TableFactor::NestedJoin { .. } => {
                ControlFlow::Continue(())
            }
            _ => refuse("Only tables and subqueries may appear in FROM"),
        }
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<QueryError> {
        if let Expr::Identifier(ident) = expr
            && ident.quote_style.is_none()
            && let Some(index) = ident.value.strip_prefix(PLACEHOLDER_PREFIX)
        {
            let index: usize = index.parse().unwrap_or(usize::MAX);
            return match self.values.get(index) {
                Some(value) => {
                    *expr = value.clone();
                    ControlFlow::Continue(())
                }
                None => refuse("Unresolved placeholder"),
            };
        }
        if matches!(
            expr,
            Expr::CompoundIdentifier(_) | Expr::CompoundFieldAccess { .. }
        ) && let Some(path) = ident_path(expr)
            && let Some(replacement) = property(&path)
        {
            return match replacement {
                Ok(replacement) => {
                    *expr = replacement;
                    ControlFlow::Continue(())
                }
                Err(error) => ControlFlow::Break(error),
            };
        }
        booleans_as_numbers(expr);
        if let Expr::Function(function) = expr
            && let Some(replacement) = crate::in_frame::rewrite(function)
        {
            return match replacement {
                Ok(replacement) => {
                    *expr = replacement;
                    ControlFlow::Continue(())
                }
                Err(error) => ControlFlow::Break(error),
            };
        }
        // `a[i]` on an array: ClickHouse's `arrayElement` (the type's default past the end).
        if let Expr::CompoundFieldAccess { root, access_chain } = expr
            && !access_chain.is_empty()
            && access_chain.iter().all(|access| {
                matches!(access, AccessExpr::Subscript(Subscript::Index { index }) if !is_text(index))
            })
        {
            let mut element = root.as_ref().clone();
            for access in access_chain.iter() {
                if let AccessExpr::Subscript(Subscript::Index { index }) = access {
                    element = match template::call("hogql_array_element", &[element, index.clone()]) {
                        Ok(element) => element,
                        Err(error) => return ControlFlow::Break(error),
                    };
                }
            }
            *expr = element;
            return ControlFlow::Continue(());
        }
        // `substring(s, offset[, length])` is parsed as SQL's SUBSTRING: ClickHouse's, in bytes.
        if let Expr::Substring {
            expr: text,
            substring_from,
            substring_for,
            ..
        } = expr
        {
            let mut args = vec![text.as_ref().clone()];
            args.extend(substring_from.iter().map(|from| from.as_ref().clone()));
            args.extend(substring_for.iter().map(|length| length.as_ref().clone()));
            if args.len() < 2 {
                return refuse("Function 'substring' expects 2 or 3 arguments");
            }
            return match template::call("hogql_substring", &args) {
                Ok(call) => {
                    *expr = call;
                    ControlFlow::Continue(())
                }
                Err(error) => ControlFlow::Break(error),
            };
        }
        // `(a, b)`: a tuple, as `tuple(a, b)`.
        if let Expr::Tuple(items) = expr {
            return match functions::tuple(items.clone(), &[]) {
                Ok(tuple) => {
                    *expr = tuple;
                    ControlFlow::Continue(())
                }
                Err(error) => ControlFlow::Break(error),
            };
        }
        if let Expr::Function(function) = expr {
            match functions::rewrite_call(function) {
                Ok(Some(replacement)) => *expr = replacement,
                Ok(None) => {}
                Err(error) => return ControlFlow::Break(error),
            }
            return ControlFlow::Continue(());
        }
        // `CAST(x AS Int64)`, `x::Float64`: ClickHouse's type names are its `to<Type>` calls.
        if let Expr::Cast {
            expr: value,
            data_type,
            ..
        } = expr
            && let Some(call) = crate::cast_types::clickhouse_cast(value, data_type)
        {
            return match call {
                Ok(call) => {
                    *expr = call;
                    ControlFlow::Continue(())
                }
                Err(error) => ControlFlow::Break(error),
            };
        }
        // Date arithmetic with an interval of one unit: a calendar-aware shift (any count
        // expression; never a failure on a daylight-saving change).
        if let Expr::BinaryOp {
            left,
            op: op @ (BinaryOperator::Plus | BinaryOperator::Minus),
            right,
        } = expr
            && let Some(shifted) =
                functions::date_arithmetic(left, matches!(op, BinaryOperator::Plus), right)
        {
            return match shifted {
                Ok(shifted) => {
                    *expr = shifted;
                    ControlFlow::Continue(())
                }
                Err(error) => ControlFlow::Break(error),
            };
        }
        // ClickHouse's `/` is always a floating-point division.
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Divide,
            ..
        } = expr
        {
            let numerator = std::mem::replace(left.as_mut(), Expr::Value(Value::Null.into()));
            **left = Expr::Cast {
                kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
                expr: Box::new(numerator),
                data_type: datafusion::sql::sqlparser::ast::DataType::Double(
                    datafusion::sql::sqlparser::ast::ExactNumberInfo::None,
                ),
                array: false,
                format: None,
            };
            return ControlFlow::Continue(());
        }
        // ClickHouse's AND/OR/NOT take NULL and numbers (non-zero is true) as operands.
        match expr {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And | BinaryOperator::Or,
                right,
            } => {
                as_condition(left);
                as_condition(right);
            }
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr: operand,
            } => as_condition(operand),
            _ => {}
        }
        // `IN (list)` under PostHog's `transform_null_in = 1`: never NULL, and NULL is a value
        // that NULL in the list matches. A filter conjunct without NULL in its list is left for
        // the pruning that reads it (NULL drops the row there, as false would).
        if let Expr::InList { list, negated, .. } = expr
            && (*negated
                || list.iter().any(is_null_literal)
                || !self.positive.contains(&address(expr)))
            && let Err(error) = null_in(expr)
        {
            return ControlFlow::Break(error);
        }
        // `=` and LIKE in a filter conjunct: NULL already drops the row, as false would.
        // `!=` and NOT LIKE must turn NULL into true, wherever they are.
        let (comparison, keeps_rows_on_null) = match expr {
            Expr::BinaryOp {
                op: BinaryOperator::Eq,
                ..
            } => (true, false),
            Expr::BinaryOp {
                op: BinaryOperator::NotEq,
                ..
            } => (true, true),
            Expr::Like { negated, .. } | Expr::ILike { negated, .. } => (true, *negated),
            _ => (false, false),
        };
        if comparison
            && (keeps_rows_on_null || !self.positive.contains(&address(expr)))
            && let Err(error) = null_safe(expr)
        {
            return ControlFlow::Break(error);
        }
        ControlFlow::Continue(())
    }
}

/// ClickHouse sorts NULLs last in both directions unless told otherwise.
fn nulls_last(query: &mut Query) {
    if let Some(order_by) = &mut query.order_by
        && let OrderByKind::Expressions(items) = &mut order_by.kind
    {
        for item in items {
            if item.options.nulls_first.is_none() {
                item.options.nulls_first = Some(false);
            }
        }
    }
}
