//! Small checks the rewriters share: a clause's value read as a constant, and refusing a query
//! from inside a visitor.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, Value};

use crate::QueryError;

pub(crate) fn constant_u64(expr: &Expr, clause: &str) -> Result<u64, QueryError> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(text, _) => text
                .parse()
                .map_err(|_| QueryError::Query(format!("{clause} must be a non-negative integer"))),
            _ => Err(QueryError::Query(format!(
                "{clause} must be a non-negative integer"
            ))),
        },
        Expr::Nested(inner) => constant_u64(inner, clause),
        _ => Err(QueryError::Query(format!("{clause} must be a constant"))),
    }
}

pub(crate) fn refuse<T>(message: impl Into<String>) -> ControlFlow<QueryError, T> {
    ControlFlow::Break(QueryError::Query(message.into()))
}
