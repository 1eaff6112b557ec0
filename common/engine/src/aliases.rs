//! ClickHouse lets a SELECT name its own aliases anywhere in it (`count() AS n, n * 2`, or
//! `properties.$browser AS b ... WHERE b = 'x'`, an alias winning over a column of the same
//! name); DataFusion resolves them only in GROUP BY, HAVING and ORDER BY. This pass writes the
//! aliased expression where an alias is named in the select list and in WHERE.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Query, Select, SelectItem, SetExpr, VisitMut, VisitorMut,
};

/// Inlines aliases in every SELECT of the query, subqueries included (each in its own scope).
pub fn inline(query: &mut Query) {
    let _ = VisitMut::visit(query, &mut EveryQuery);
}

struct EveryQuery;

impl VisitorMut for EveryQuery {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        in_body(query.body.as_mut());
        ControlFlow::Continue(())
    }
}

fn in_body(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => in_select(select),
        SetExpr::SetOperation { left, right, .. } => {
            in_body(left);
            in_body(right);
        }
        // Nested queries are visited as queries of their own.
        _ => {}
    }
}

/// How deep aliases may name aliases (`a AS x, x + 1 AS y, y * 2 AS z`).
const MAX_DEPTH: usize = 4;

fn in_select(select: &mut Select) {
    let mut aliases: HashMap<String, Expr> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { expr, alias } => Some((alias.value.clone(), expr.clone())),
            _ => None,
        })
        .collect();
    if aliases.is_empty() {
        return;
    }
    // Resolve aliases that name other aliases first. An alias's own expression means the column
    // it may shadow (`a + 1 AS a`); a cycle stops at MAX_DEPTH and fails to plan, as in ClickHouse.
    for _ in 0..MAX_DEPTH {
        let before = aliases.clone();
        for (name, expr) in aliases.iter_mut() {
            substitute(expr, &before, Some(name.as_str()));
        }
        if aliases == before {
            break;
        }
    }
    for item in &mut select.projection {
        match item {
            SelectItem::ExprWithAlias { expr, alias } => {
                if let Some(resolved) = aliases.get(&alias.value) {
                    *expr = resolved.clone();
                }
            }
            SelectItem::UnnamedExpr(expr) => substitute(expr, &aliases, None),
            _ => {}
        }
    }
    for condition in [&mut select.selection, &mut select.prewhere]
        .into_iter()
        .flatten()
    {
        substitute(condition, &aliases, None);
    }
}

fn substitute(expr: &mut Expr, aliases: &HashMap<String, Expr>, own: Option<&str>) {
    let _ = VisitMut::visit(
        expr,
        &mut Replace {
            aliases,
            own,
            depth: 0,
        },
    );
}

struct Replace<'a> {
    aliases: &'a HashMap<String, Expr>,
    own: Option<&'a str>,
    /// Inside a subquery: another scope, left alone.
    depth: usize,
}

impl VisitorMut for Replace<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    // After the children: the expression put in is not visited again (no alias loops).
    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.depth == 0
            && let Expr::Identifier(ident) = expr
            && Some(ident.value.as_str()) != self.own
            && let Some(aliased) = self.aliases.get(&ident.value)
        {
            *expr = Expr::Nested(Box::new(aliased.clone()));
        }
        ControlFlow::Continue(())
    }
}
