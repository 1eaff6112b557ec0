//! `timestamp >= D` and `timestamp < D` with a date-valued `D` (`today()`, `yesterday()`, either
//! plus or minus whole days, weeks, months or years) compare the `date` partition column instead
//! (the events view's hidden `__date`).
//! A date compares with a timestamp as its UTC midnight and `date` is the UTC date of
//! `timestamp`, so the rows are the same; but Delta takes a filter on the partition column as
//! exact, so the files outside it are never opened and those inside are not filtered row by row
//! (a count over the last week reads no column at all). Only in UTC projects: elsewhere a date's
//! arithmetic could land off a UTC midnight.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, DateTimeField, Expr, Interval, Query, TableFactor, Value,
};

use crate::shredded::{Scope, call_args, column, each_events_select, unnest};
use crate::tables::DAY_COLUMN;

const TIMESTAMP: &str = "timestamp";

/// Rewrites the day-aligned time bounds of `query`'s SELECTs over the events table alone (for
/// UTC projects only: see above).
pub fn apply(query: &mut Query) {
    each_events_select(query, |select, scope| {
        let single_table = select.from.len() == 1
            && select.from[0].joins.is_empty()
            && matches!(select.from[0].relation, TableFactor::Table { .. });
        if single_table && let Some(selection) = &mut select.selection {
            rewrite_conjuncts(selection, scope);
        }
    });
}

fn rewrite_conjuncts(expr: &mut Expr, scope: &Scope) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            rewrite_conjuncts(left, scope);
            rewrite_conjuncts(right, scope);
        }
        Expr::Nested(inner) => rewrite_conjuncts(inner, scope),
        Expr::BinaryOp { left, op, right } => {
            // `timestamp >= D`, `timestamp < D`, and the same written the other way round.
            let (time, bound) = match op {
                BinaryOperator::GtEq | BinaryOperator::Lt => (left, right),
                BinaryOperator::LtEq | BinaryOperator::Gt => (right, left),
                _ => return,
            };
            if !is_date(bound) {
                return;
            }
            if let Some(qualifier) = scope.resolve(time, TIMESTAMP) {
                **time = column(&qualifier, DAY_COLUMN);
            }
        }
        _ => {}
    }
}

/// `current_date()` (what `today()` and `yesterday()` become), give or take whole days, weeks,
/// months or years: as an interval, or through `hogql_date_add` / `hogql_date_sub` (what the
/// rewrite makes of `x - interval 7 day`), which keep a date a date for these units.
fn is_date(expr: &Expr) -> bool {
    let expr = unnest(expr);
    if let Expr::BinaryOp {
        left,
        op: BinaryOperator::Plus | BinaryOperator::Minus,
        right,
    } = expr
    {
        return is_date(left) && whole_days(right);
    }
    if call_args(expr, "current_date").is_some_and(|args| args.is_empty()) {
        return true;
    }
    let shifted = call_args(expr, "hogql_date_sub").or_else(|| call_args(expr, "hogql_date_add"));
    match shifted.as_deref() {
        Some([date, count, unit]) => {
            is_date(date) && integer(count) && string(unit).is_some_and(day_unit)
        }
        _ => false,
    }
}

fn integer(expr: &Expr) -> bool {
    matches!(unnest(expr), Expr::Value(value)
        if matches!(&value.value, Value::Number(n, _) if n.parse::<i64>().is_ok()))
}

fn string(expr: &Expr) -> Option<&str> {
    match unnest(expr) {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) => Some(text),
            _ => None,
        },
        _ => None,
    }
}

/// Units that move a date by whole days.
fn day_unit(unit: &str) -> bool {
    matches!(
        unit.to_ascii_lowercase().as_str(),
        "day"
            | "days"
            | "week"
            | "weeks"
            | "month"
            | "months"
            | "quarter"
            | "quarters"
            | "year"
            | "years"
    )
}

fn whole_days(expr: &Expr) -> bool {
    let Expr::Interval(Interval {
        value,
        leading_field,
        leading_precision: None,
        last_field: None,
        fractional_seconds_precision: None,
    }) = unnest(expr)
    else {
        return false;
    };
    let Expr::Value(value) = unnest(value) else {
        return false;
    };
    let count = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match (&value.value, leading_field) {
        (Value::Number(number, _), Some(field))
        | (Value::SingleQuotedString(number), Some(field)) => {
            count(number)
                && matches!(
                    field,
                    DateTimeField::Day
                        | DateTimeField::Days
                        | DateTimeField::Week(None)
                        | DateTimeField::Weeks
                        | DateTimeField::Month
                        | DateTimeField::Months
                        | DateTimeField::Year
                        | DateTimeField::Years
                )
        }
        (Value::SingleQuotedString(text), None) => {
            let mut words = text.split_whitespace();
            matches!(
                (words.next(), words.next(), words.next()),
                (Some(number), Some(unit), None) if count(number) && day_unit(unit)
            )
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut statements = Parser::parse_sql(&GenericDialect {}, sql).unwrap();
        let datafusion::sql::sqlparser::ast::Statement::Query(query) = &mut statements[0] else {
            panic!("not a query");
        };
        apply(query);
        crate::shredded::hide_columns(query, [DAY_COLUMN]);
        query.to_string()
    }

    #[test]
    fn day_aligned_bounds_compare_the_date() {
        for (sql, expected) in [
            (
                "select count(*) from events where timestamp >= current_date() - interval 7 day",
                "SELECT count(*) FROM events WHERE \"__date\" >= current_date() - INTERVAL 7 DAY",
            ),
            (
                "select 1 from events e where e.timestamp < (current_date() - INTERVAL '1 day') \
                 and event = 'x' and current_date() <= e.timestamp",
                "SELECT 1 FROM events e WHERE e.\"__date\" < (current_date() - INTERVAL '1 day') \
                 AND event = 'x' AND current_date() <= e.\"__date\"",
            ),
            (
                "select 1 from (select * from events where timestamp >= current_date() + \
                 interval '2 weeks') t",
                "SELECT 1 FROM (SELECT * EXCLUDE (\"__date\") FROM events WHERE \"__date\" >= current_date() + \
                 INTERVAL '2 weeks') t",
            ),
            (
                "select count(*) from events where timestamp >= hogql_date_sub((current_date()), \
                 (7), ('day')) and timestamp < hogql_date_add(current_date(), 1, 'month')",
                "SELECT count(*) FROM events WHERE \"__date\" >= hogql_date_sub((current_date()), \
                 (7), ('day')) AND \"__date\" < hogql_date_add(current_date(), 1, 'month')",
            ),
        ] {
            assert_eq!(rewritten(sql), expected, "{sql}");
        }
    }

    #[test]
    fn other_bounds_keep_the_timestamp() {
        for sql in [
            // Not day-aligned, or not exactly the same rows on dates.
            "SELECT 1 FROM events WHERE timestamp > current_date()",
            "SELECT 1 FROM events WHERE timestamp <= current_date()",
            "SELECT 1 FROM events WHERE timestamp >= now() - INTERVAL 7 DAY",
            "SELECT 1 FROM events WHERE timestamp >= current_date() - INTERVAL 7 HOUR",
            "SELECT 1 FROM events WHERE timestamp >= current_date() - INTERVAL '1.5 day'",
            "SELECT 1 FROM events WHERE timestamp >= hogql_date_sub(current_date(), 7, 'hour')",
            "SELECT 1 FROM events WHERE timestamp >= hogql_date_sub(now(), 7, 'day')",
            "SELECT 1 FROM events WHERE timestamp >= hogql_date_sub(current_date(), x, 'day')",
            "SELECT 1 FROM events WHERE timestamp >= current_date() OR event = 'x'",
            // Another relation could own the column.
            "SELECT 1 FROM events, persons WHERE timestamp >= current_date()",
            "SELECT 1 FROM events AS e JOIN persons AS p ON e.person_id = p.id WHERE e.timestamp >= current_date()",
            "SELECT 1 FROM other WHERE timestamp >= current_date()",
            // A CTE named events is not the table.
            "WITH events AS (SELECT 1 AS timestamp) SELECT 1 FROM events WHERE timestamp >= current_date()",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
