//! Conditions as ClickHouse reads them: a comparison or `isNull(x)` is a UInt8 0/1 there, so
//! HogQL compares it with numbers, adds and sums it; and AND/OR/NOT take numbers and NULL. Done
//! on the rewritten AST, since DataFusion types Boolean and numbers apart before any rule of ours
//! could run.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart,
    UnaryOperator, Value,
};

/// Functions (as rewritten for DataFusion) whose result is a Boolean.
const BOOLEAN_FUNCTIONS: &[&str] = &[
    "starts_with",
    "ends_with",
    "array_has",
    "array_has_all",
    "array_has_any",
    "regexp_like",
    "isnan",
    "hogql_json_has",
    "hogql_bit_test",
];

/// Whether `expr` (already rewritten) is a condition: a Boolean in DataFusion, a UInt8 0/1 in
/// ClickHouse.
fn is_condition(expr: &Expr) -> bool {
    match expr {
        Expr::Nested(inner) => is_condition(inner),
        Expr::BinaryOp { op, .. } => matches!(
            op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
                | BinaryOperator::And
                | BinaryOperator::Or
        ),
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            ..
        }
        | Expr::IsNull(_)
        | Expr::IsNotNull(_)
        | Expr::IsTrue(_)
        | Expr::IsFalse(_)
        | Expr::IsDistinctFrom(..)
        | Expr::IsNotDistinctFrom(..)
        | Expr::InList { .. }
        | Expr::InSubquery { .. }
        | Expr::Between { .. }
        | Expr::Like { .. }
        | Expr::ILike { .. } => true,
        Expr::Function(function) => matches!(
            function.name.0.as_slice(),
            [ObjectNamePart::Identifier(name)] if BOOLEAN_FUNCTIONS.contains(&name.value.as_str())
        ),
        _ => false,
    }
}

fn as_number(expr: &mut Expr) {
    let condition = std::mem::replace(expr, Expr::Value(Value::Null.into()));
    *expr = Expr::Cast {
        kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
        expr: Box::new(Expr::Nested(Box::new(condition))),
        data_type: datafusion::sql::sqlparser::ast::DataType::BigInt(None),
        array: false,
        format: None,
    };
}

/// A condition beside a number (`isNull(x) = 0`, `(a > 1) + (b > 1)`) or summed (`sum(x > 0)`)
/// is the number ClickHouse makes of it, 0 or 1.
pub(super) fn booleans_as_numbers(expr: &mut Expr) {
    match expr {
        Expr::BinaryOp { left, op, right } => {
            let arithmetic = matches!(
                op,
                BinaryOperator::Plus
                    | BinaryOperator::Minus
                    | BinaryOperator::Multiply
                    | BinaryOperator::Divide
                    | BinaryOperator::Modulo
            );
            let comparison = matches!(
                op,
                BinaryOperator::Eq
                    | BinaryOperator::NotEq
                    | BinaryOperator::Lt
                    | BinaryOperator::LtEq
                    | BinaryOperator::Gt
                    | BinaryOperator::GtEq
            );
            let (left_condition, right_condition) = (is_condition(left), is_condition(right));
            if arithmetic || (comparison && left_condition != right_condition) {
                if left_condition {
                    as_number(left);
                }
                if right_condition {
                    as_number(right);
                }
            }
        }
        Expr::Function(function)
            if matches!(
                function.name.0.as_slice(),
                [ObjectNamePart::Identifier(name)]
                    if ["sum", "avg", "sumIf", "avgIf"].contains(&name.value.as_str())
            ) =>
        {
            if let FunctionArguments::List(list) = &mut function.args
                && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) =
                    list.args.first_mut()
                && is_condition(first)
            {
                as_number(first);
            }
        }
        _ => {}
    }
}

/// A literal operand of AND/OR/NOT as the boolean ClickHouse reads it: NULL stays NULL (typed),
/// a number is true when it is not zero.
pub(super) fn as_condition(operand: &mut Expr) {
    let mut literal = &mut *operand;
    while let Expr::Nested(inner) = literal {
        literal = inner.as_mut();
    }
    let Expr::Value(value) = literal else {
        return;
    };
    match &value.value {
        Value::Null => {
            *operand = Expr::Cast {
                kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
                expr: Box::new(Expr::Value(Value::Null.into())),
                data_type: datafusion::sql::sqlparser::ast::DataType::Boolean,
                array: false,
                format: None,
            };
        }
        Value::Number(text, _) => {
            let truth = text.parse::<f64>().is_ok_and(|number| number != 0.0);
            *operand = Expr::Value(Value::Boolean(truth).into());
        }
        _ => {}
    }
}
