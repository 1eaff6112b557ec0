//! ClickHouse's `LIMIT n [OFFSET m] BY keys`: the first n rows (after m) of each key.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, LimitClause, OrderByKind, Query, SelectItem, SetExpr, TableAlias, TableFactor,
    VisitMut, VisitorMut,
};

use crate::constants::{constant_u64, refuse};
use crate::{QueryError, template};

/// `LIMIT n [OFFSET m] BY keys`: the first n rows (after m) of each key, in the query's order.
/// Becomes a window rank over the query's own output, filtered, then ordered as asked.
pub(super) fn limit_by(query: &mut Query) -> ControlFlow<QueryError> {
    let Some(LimitClause::LimitOffset {
        limit,
        offset,
        limit_by,
    }) = &query.limit_clause
    else {
        return ControlFlow::Continue(());
    };
    if limit_by.is_empty() {
        return ControlFlow::Continue(());
    }
    let keep = match limit.as_ref().map(|l| constant_u64(l, "LIMIT BY")) {
        Some(Ok(n)) => n,
        Some(Err(e)) => return ControlFlow::Break(e),
        None => return refuse("LIMIT BY needs a row count"),
    };
    let skip = match offset.as_ref().map(|o| constant_u64(&o.value, "OFFSET")) {
        Some(Ok(n)) => n,
        Some(Err(e)) => return ControlFlow::Break(e),
        None => 0,
    };
    let keys = limit_by.clone();
    let SetExpr::Select(select) = query.body.as_mut() else {
        return refuse("LIMIT BY is supported on a single SELECT");
    };
    // Name every output column, so the keys and the order can refer to them from outside.
    let mut outer_columns = Vec::new();
    let mut by_text = Vec::new();
    for (index, item) in select.projection.iter_mut().enumerate() {
        let inner = format!("__c{index}");
        let (expr, name) = match item {
            SelectItem::UnnamedExpr(expr) => (expr.clone(), expr.to_string().replace('`', "")),
            SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), alias.value.clone()),
            _ => return refuse("LIMIT BY cannot be combined with * in the select list"),
        };
        by_text.push((expr.to_string(), name.clone(), inner.clone()));
        outer_columns.push((inner.clone(), name));
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: Ident::new(inner),
        };
    }
    // Keys and orderings that are not output columns are computed as hidden inner columns.
    let distinct = select.distinct.is_some();
    let mut refer = |expr: &Expr| -> Result<Expr, QueryError> {
        let text = expr.to_string();
        if let Some((_, _, inner)) = by_text
            .iter()
            .find(|(expr_text, name, _)| *expr_text == text || *name == text)
        {
            return Ok(Expr::Identifier(Ident::new(inner.clone())));
        }
        if distinct {
            return Err(QueryError::Query(format!(
                "With SELECT DISTINCT, LIMIT BY can only order and group by selected columns, not {text}"
            )));
        }
        let inner = format!("__h{}", by_text.len());
        select.projection.push(SelectItem::ExprWithAlias {
            expr: expr.clone(),
            alias: Ident::new(inner.clone()),
        });
        by_text.push((text, String::new(), inner.clone()));
        Ok(Expr::Identifier(Ident::new(inner)))
    };
    let mut order: Vec<(Expr, String)> = Vec::new();
    if let Some(order_by) = &query.order_by {
        match &order_by.kind {
            OrderByKind::Expressions(items) => {
                for item in items {
                    let mut options = String::new();
                    if item.options.asc == Some(false) {
                        options.push_str(" DESC");
                    }
                    match item.options.nulls_first {
                        Some(true) => options.push_str(" NULLS FIRST"),
                        Some(false) => options.push_str(" NULLS LAST"),
                        None => {}
                    }
                    match refer(&item.expr) {
                        Ok(expr) => order.push((expr, options)),
                        Err(error) => return ControlFlow::Break(error),
                    }
                }
            }
            OrderByKind::All(_) => return refuse("ORDER BY ALL cannot be combined with LIMIT BY"),
        }
    }
    let mut args = Vec::with_capacity(keys.len() + order.len());
    for key in &keys {
        match refer(key) {
            Ok(expr) => args.push(expr),
            Err(error) => return ControlFlow::Break(error),
        }
    }
    let partition: Vec<String> = (0..args.len())
        .map(|i| format!("{}{i}", template::SLOT))
        .collect();
    let mut ordering = Vec::new();
    for (expr, options) in &order {
        ordering.push(format!("{}{}{options}", template::SLOT, args.len()));
        args.push(expr.clone());
    }
    let window_order = if ordering.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {}", ordering.join(", "))
    };
    let columns: Vec<String> = outer_columns
        .iter()
        .map(|(inner, name)| format!("{inner} AS \"{}\"", name.replace('"', "\"\"")))
        .collect();
    let text = format!(
        "SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY {partition}{window_order}) AS __rank FROM __limit_by_input) AS __limited WHERE __rank > {skip} AND __rank <= {upto}{order}",
        columns = columns.join(", "),
        partition = partition.join(", "),
        upto = skip + keep,
        order = window_order,
    );
    let mut wrapper = match template::query(&text, &args) {
        Ok(wrapper) => wrapper,
        Err(error) => return ControlFlow::Break(error),
    };
    let mut inner = query.clone();
    inner.with = None;
    inner.order_by = None;
    inner.limit_clause = None;
    let _ = VisitMut::visit(
        &mut wrapper,
        &mut ReplaceInput {
            name: "__limit_by_input",
            inner: Some(inner),
        },
    );
    query.body = wrapper.body;
    query.order_by = wrapper.order_by;
    query.limit_clause = None;
    ControlFlow::Continue(())
}

/// Puts `inner` where a template names the table `name`.
pub(super) struct ReplaceInput {
    pub(super) name: &'static str,
    pub(super) inner: Option<Query>,
}

impl VisitorMut for ReplaceInput {
    type Break = ();
    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = factor
            && name.to_string() == self.name
            && let Some(inner) = self.inner.take()
        {
            // The template's own alias (with its column names) when it gives one.
            let alias = alias.take().unwrap_or_else(|| TableAlias {
                explicit: true,
                name: Ident::new(self.name),
                columns: Vec::new(),
                at: None,
            });
            *factor = TableFactor::Derived {
                lateral: false,
                subquery: Box::new(inner),
                alias: Some(alias),
                sample: None,
            };
        }
        ControlFlow::Continue(())
    }
}
