//! The top level of a query: its columns named as ClickHouse names them, and its LIMIT
//! defaulted and capped (or set to a caller's page).

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, LimitClause, ObjectNamePart, Query, SelectItem, SetExpr, Value,
};

use crate::QueryError;
use crate::bindings::{DEFAULT_LIMIT, MAX_LIMIT, Page};
use crate::constants::constant_u64;

/// Unaliased top-level columns are named by their HogQL text (`count()`, `properties.$browser`).
/// A top-level `count()` column is a UInt64, as in ClickHouse (one cast per output row; inside
/// expressions counts stay signed, so `count() - 1` cannot underflow).
pub(crate) fn name_top_level_columns(query: &mut Query) {
    // A set operation's columns are its first SELECT's: named as they are written, so reading
    // a property from a column or from the JSON cannot change a name.
    if let SetExpr::SetOperation { left, .. } = query.body.as_mut() {
        let mut first = left.as_mut();
        while let SetExpr::SetOperation { left, .. } = first {
            first = left.as_mut();
        }
        if let SetExpr::Select(select) = first {
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(expr) = item
                    && !matches!(expr, Expr::Identifier(_))
                {
                    let alias = Ident::with_quote('"', expr.to_string().replace('`', ""));
                    *item = SelectItem::ExprWithAlias {
                        expr: expr.clone(),
                        alias,
                    };
                }
            }
        }
    }
    if let SetExpr::Select(select) = query.body.as_mut() {
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(expr) = item
                && !matches!(expr, Expr::Identifier(_))
            {
                let name = expr.to_string().replace('`', "");
                let alias = Ident::with_quote('"', name);
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias,
                };
            }
            if let SelectItem::ExprWithAlias { expr, .. } = item
                && is_count(expr)
            {
                let count = std::mem::replace(expr, Expr::Value(Value::Null.into()));
                *expr = Expr::Cast {
                    kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
                    expr: Box::new(count),
                    data_type: datafusion::sql::sqlparser::ast::DataType::BigIntUnsigned(None),
                    array: false,
                    format: None,
                };
            }
        }
    }
}

/// A plain `count()`/`count(x)`/`count(DISTINCT x)` call (not a window).
fn is_count(expr: &Expr) -> bool {
    match expr {
        Expr::Nested(inner) => is_count(inner),
        Expr::Function(function) => {
            function.over.is_none()
                && matches!(function.name.0.as_slice(),
                    [ObjectNamePart::Identifier(ident)] if ident.value.eq_ignore_ascii_case("count"))
        }
        _ => false,
    }
}

/// The query's top-level LIMIT and OFFSET become `limit` and `offset` (a LIMIT BY stays).
pub(crate) fn set_limit(query: &mut Query, limit: u64, offset: u64) {
    let limit_by = match query.limit_clause.take() {
        Some(LimitClause::LimitOffset { limit_by, .. }) => limit_by,
        _ => Vec::new(),
    };
    query.limit_clause = Some(LimitClause::LimitOffset {
        limit: Some(number(limit)),
        offset: (offset > 0).then(|| datafusion::sql::sqlparser::ast::Offset {
            value: number(offset),
            rows: datafusion::sql::sqlparser::ast::OffsetRows::None,
        }),
        limit_by,
    });
}

pub(crate) fn apply_top_level_limit(query: &mut Query) -> Result<Option<Page>, QueryError> {
    match &mut query.limit_clause {
        None => {
            query.limit_clause = Some(LimitClause::LimitOffset {
                limit: Some(number(DEFAULT_LIMIT + 1)),
                offset: None,
                limit_by: Vec::new(),
            });
            Ok(Some(Page {
                limit: DEFAULT_LIMIT,
                offset: 0,
            }))
        }
        Some(LimitClause::LimitOffset { limit, .. }) => {
            if let Some(expr) = limit {
                let value = constant_u64(expr, "LIMIT")?;
                *expr = number(value.min(MAX_LIMIT));
            } else {
                *limit = Some(number(MAX_LIMIT));
            }
            Ok(None)
        }
        Some(LimitClause::OffsetCommaLimit { limit, .. }) => {
            let value = constant_u64(limit, "LIMIT")?;
            *limit = number(value.min(MAX_LIMIT));
            Ok(None)
        }
    }
}

fn number(value: u64) -> Expr {
    Expr::Value(Value::Number(value.to_string(), false).into())
}
