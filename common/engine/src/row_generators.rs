//! What makes rows out of values: the table function `numbers(n)` (bounded) in FROM, and
//! `arrayJoin` (DataFusion's `unnest`), which only a select list can hold.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::*;

use crate::constants::{constant_u64, refuse};
use crate::{QueryError, template};

/// The table function `numbers(n)` / `numbers(start, n)`: a column `number` (UInt64).
pub(super) const NUMBERS: &str = "numbers";
/// Rows `numbers(...)` may give at most.
const MAX_NUMBERS: u64 = 10_000_000;

/// `numbers`' arguments as `(start, end)` (end excluded), refused unless constants within bounds.
pub(super) fn numbers_range(args: &[FunctionArg]) -> Result<(u64, u64), QueryError> {
    let constants = args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => {
                constant_u64(expr, "numbers()'s arguments")
            }
            _ => Err(QueryError::Query("numbers() takes constant numbers".into())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (start, count) = match constants.as_slice() {
        [count] => (0, *count),
        [start, count] => (*start, *count),
        _ => {
            return Err(QueryError::Query(
                "Table function 'numbers' requires 1 or 2 arguments: numbers(n) or numbers(start, n)"
                    .into(),
            ));
        }
    };
    if count > MAX_NUMBERS {
        return Err(QueryError::Query(format!(
            "numbers() gives at most {MAX_NUMBERS} rows"
        )));
    }
    let end = start
        .checked_add(count)
        .filter(|end| *end <= i64::MAX as u64)
        .ok_or_else(|| QueryError::Query("numbers(): the numbers must stay within Int64".into()))?;
    Ok((start, end))
}

/// Each `numbers(...)` in FROM (checked by the rewriter) becomes DataFusion's `range`.
pub(super) struct NumbersTables;

impl VisitorMut for NumbersTables {
    type Break = QueryError;

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<QueryError> {
        let TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        if name.to_string() != NUMBERS {
            return ControlFlow::Continue(());
        }
        let (start, end) = match numbers_range(&args.args) {
            Ok(range) => range,
            Err(error) => return ControlFlow::Break(error),
        };
        let text = format!(
            "SELECT CAST(value AS BIGINT UNSIGNED) AS number FROM range({start}, {end}) AS __numbers"
        );
        let subquery = match template::query(&text, &[]) {
            Ok(subquery) => subquery,
            Err(error) => return ControlFlow::Break(error),
        };
        let alias = alias.take().unwrap_or_else(|| TableAlias {
            explicit: true,
            name: Ident::new(NUMBERS),
            columns: Vec::new(),
            at: None,
        });
        *factor = TableFactor::Derived {
            lateral: false,
            subquery: Box::new(subquery),
            alias: Some(alias),
            sample: None,
        };
        ControlFlow::Continue(())
    }
}

/// `arrayJoin` (DataFusion's `unnest`) makes rows: only a SELECT list can hold it.
pub(super) struct ArrayJoinPlaces;

impl Visitor for ArrayJoinPlaces {
    type Break = QueryError;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<QueryError> {
        let SetExpr::Select(select) = query.body.as_ref() else {
            return ControlFlow::Continue(());
        };
        let mut places: Vec<&Expr> = Vec::new();
        places.extend(select.selection.iter());
        places.extend(select.having.iter());
        if let GroupByExpr::Expressions(keys, _) = &select.group_by {
            places.extend(keys.iter());
        }
        for place in places {
            let mut found = UnnestOutsideSubqueries::default();
            if let ControlFlow::Break(()) = Visit::visit(place, &mut found) {
                return refuse(
                    "arrayJoin is supported in the SELECT list only: filter or group its rows in an outer query",
                );
            }
        }
        ControlFlow::Continue(())
    }
}

/// Breaks on an `unnest` call that is not inside a subquery.
#[derive(Default)]
struct UnnestOutsideSubqueries {
    depth: usize,
}

impl Visitor for UnnestOutsideSubqueries {
    type Break = ();

    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        match expr {
            Expr::Function(function)
                if self.depth == 0 && function.name.to_string().eq_ignore_ascii_case("unnest") =>
            {
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        }
    }
}
