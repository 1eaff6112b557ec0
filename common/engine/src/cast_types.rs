//! `CAST(x AS Int64)` and `x::Float64` with ClickHouse's type names: ClickHouse computes a
//! cast as the `to<Type>` function of that type, so each becomes that function's call
//! (`CAST(x AS UInt8)` is `toUInt8(x)`, `CAST(x AS String)` is `toString(x)`). SQL's own names
//! (BIGINT, DOUBLE, VARCHAR...) mean in ClickHouse what they mean in DataFusion and pass as they
//! are; a ClickHouse type we do not have is refused by name.

use datafusion::sql::sqlparser::ast::{DataType, ExactNumberInfo, Expr, Value};

use crate::{QueryError, functions, template};

/// The HogQL call a cast to `data_type` is, when it is a ClickHouse type name; None when
/// DataFusion reads the type as ClickHouse does.
pub(super) fn clickhouse_cast(
    value: &Expr,
    data_type: &DataType,
) -> Option<Result<Expr, QueryError>> {
    let call = |name: &str, extra: Vec<Expr>| -> Result<Expr, QueryError> {
        let mut args = vec![value.clone()];
        args.extend(extra);
        let mut expr = template::call(name, &args)?;
        if let Expr::Function(function) = &mut expr
            && let Some(rewritten) = functions::rewrite_call(function)?
        {
            expr = rewritten;
        }
        Ok(expr)
    };
    let number = |n: u64| Expr::Value(Value::Number(n.to_string(), false).into());
    Some(match data_type {
        DataType::Nullable(inner) | DataType::LowCardinality(inner) => {
            return Some(clickhouse_cast(value, inner).unwrap_or_else(|| {
                Ok(Expr::Cast {
                    kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
                    expr: Box::new(value.clone()),
                    data_type: (**inner).clone(),
                    array: false,
                    format: None,
                })
            }));
        }
        // DataFusion reads `Int8` as PostgreSQL's 8-byte integer; ClickHouse's is one byte.
        DataType::Int8(_) => call("toInt8", vec![]),
        DataType::Int16 => call("toInt16", vec![]),
        DataType::Int32 => call("toInt32", vec![]),
        DataType::Int64 => call("toInt64", vec![]),
        DataType::UInt8 => call("toUInt8", vec![]),
        DataType::UInt16 => call("toUInt16", vec![]),
        DataType::UInt32 => call("toUInt32", vec![]),
        DataType::UInt64 => call("toUInt64", vec![]),
        DataType::Float32 => call("toFloat32", vec![]),
        DataType::Float64 => call("toFloat64", vec![]),
        DataType::String(_) => call("toString", vec![]),
        DataType::Uuid => call("toUUID", vec![]),
        DataType::Datetime(_) => call("toDateTime", vec![]),
        DataType::Datetime64(precision, zone) => {
            let mut extra = vec![number(*precision)];
            if let Some(zone) = zone {
                extra.push(functions::string_literal(zone));
            }
            call("toDateTime64", extra)
        }
        DataType::Decimal(ExactNumberInfo::PrecisionAndScale(precision, scale)) => {
            let name = match precision {
                0..=9 => "toDecimal32",
                10..=18 => "toDecimal64",
                _ => {
                    return Some(Err(QueryError::Query(format!(
                        "CAST to {data_type} is not supported: decimals hold at most 18 digits here"
                    ))));
                }
            };
            call(name, vec![number((*scale).max(0) as u64)])
        }
        DataType::Int128
        | DataType::Int256
        | DataType::UInt128
        | DataType::UInt256
        | DataType::Date32
        | DataType::FixedString(_)
        | DataType::Map(_, _)
        | DataType::Tuple(_)
        | DataType::Nested(_) => Err(QueryError::Query(format!(
            "CAST to {data_type} is not supported"
        ))),
        _ => return None,
    })
}
