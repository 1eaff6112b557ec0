//! `IN` as PostHog's ClickHouse answers it: lists under `transform_null_in = 1` (never NULL,
//! NULL matches NULL), and `x IN (subquery)` in a select list, where DataFusion, which runs it
//! as a join, cannot.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, Query, Value, VisitMut, VisitorMut};

use crate::limit_by::ReplaceInput;
use crate::{QueryError, template};

pub(super) fn is_null_literal(expr: &Expr) -> bool {
    match expr {
        Expr::Nested(inner) => is_null_literal(inner),
        Expr::Value(value) => matches!(value.value, Value::Null),
        _ => false,
    }
}

/// `x [NOT] IN (a, NULL)` → `[NOT] (coalesce(x IN (a), false) OR x IS NULL)`.
pub(super) fn null_in(expr: &mut Expr) -> Result<(), QueryError> {
    let Expr::InList {
        expr: needle,
        list,
        negated,
    } = expr
    else {
        return Ok(());
    };
    let has_null = list.iter().any(is_null_literal);
    let items: Vec<Expr> = list
        .iter()
        .filter(|i| !is_null_literal(i))
        .cloned()
        .collect();
    let membership = if items.is_empty() {
        Expr::Value(Value::Boolean(false).into())
    } else {
        Expr::InList {
            expr: needle.clone(),
            list: items,
            negated: false,
        }
    };
    let text = match (has_null, *negated) {
        (false, false) => "coalesce(__arg_0, false)",
        (false, true) => "NOT coalesce(__arg_0, false)",
        (true, false) => "(coalesce(__arg_0, false) OR __arg_1 IS NULL)",
        (true, true) => "NOT (coalesce(__arg_0, false) OR __arg_1 IS NULL)",
    };
    *expr = template::expr(text, &[membership, needle.as_ref().clone()])?;
    Ok(())
}

/// `x [NOT] IN (subquery)` outside any nested query → `[NOT] has((SELECT groupArray(v)
/// FROM (subquery) AS __in_values(v)), x)`, in the dialect's own names (the rewrite visits it).
#[derive(Default)]
pub(super) struct InSubqueryValues {
    depth: usize,
}

impl VisitorMut for InSubqueryValues {
    type Break = QueryError;

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<QueryError> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<QueryError> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<QueryError> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        let Expr::InSubquery {
            expr: needle,
            subquery,
            negated,
        } = expr
        else {
            return ControlFlow::Continue(());
        };
        let mut values = match template::query(
            "SELECT groupArray(__in_value) FROM __in_values AS __in_values(__in_value)",
            &[],
        ) {
            Ok(values) => values,
            Err(error) => return ControlFlow::Break(error),
        };
        let _ = VisitMut::visit(
            &mut values,
            &mut ReplaceInput {
                name: "__in_values",
                inner: Some(subquery.as_ref().clone()),
            },
        );
        let text = if *negated {
            "NOT has(__arg_0, __arg_1)"
        } else {
            "has(__arg_0, __arg_1)"
        };
        match template::expr(
            text,
            &[Expr::Subquery(Box::new(values)), needle.as_ref().clone()],
        ) {
            Ok(lookup) => *expr = lookup,
            Err(error) => return ControlFlow::Break(error),
        }
        ControlFlow::Continue(())
    }
}
