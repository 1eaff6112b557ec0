//! `round(x[, n])` as ClickHouse: a float is scaled by 10^n, rounded half to even, scaled back
//! (`round(2.5)` is 2, `round(0.125, 2)` is 0.12); an integer with n < 0 rounds half away from
//! zero (`round(1250, -2)` is 1300); the value keeps its type. NULL in, NULL out.

use super::{all_constant, answer};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Decimal128Type, Float32Type, Float64Type, Int64Type,
};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::convert::{Target, wrapped};

/// A float rounded to `digits` places as ClickHouse computes it.
fn round_float(value: f64, digits: i64) -> f64 {
    let digits = digits.clamp(-400, 400) as i32;
    if digits >= 0 {
        let scale = 10f64.powi(digits);
        (value * scale).round_ties_even() / scale
    } else {
        let scale = 10f64.powi(-digits);
        (value / scale).round_ties_even() * scale
    }
}

/// An integer (an unscaled decimal too) rounded to a multiple of 10^-digits, ties away from zero.
fn round_integer(value: i128, digits: i64) -> i128 {
    if digits >= 0 {
        return value;
    }
    let Some(unit) = 10i128.checked_pow((-digits).min(38) as u32) else {
        return 0;
    };
    let rest = value % unit;
    let down = value - rest;
    if rest.abs() * 2 >= unit {
        down + unit * rest.signum()
    } else {
        down
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Round {
    signature: Signature,
}

fn rounds(kind: &DataType) -> bool {
    kind.is_integer()
        || matches!(
            kind,
            DataType::Null | DataType::Float32 | DataType::Float64 | DataType::Decimal128(_, _)
        )
}

fn each<T: ArrowPrimitiveType>(
    array: &dyn Array,
    digits: &[Option<i64>],
    f: impl Fn(T::Native, i64) -> T::Native,
) -> PrimitiveArray<T> {
    let values = array.as_primitive::<T>();
    values
        .iter()
        .zip(digits)
        .map(|(value, digits)| Some(f(value?, (*digits)?)))
        .collect()
}

impl ScalarUDFImpl for Round {
    fn name(&self) -> &str {
        "hogql_round"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [value] | [value, _] if !rounds(value) => plan_err!("round does not take {value}"),
            [_, digits] if !digits.is_integer() && *digits != DataType::Null => {
                plan_err!("round: the number of decimal places must be an integer, not {digits}")
            }
            [DataType::Null, ..] => Ok(DataType::Float64),
            [value] | [value, _] => Ok(value.clone()),
            _ => plan_err!("round expects 1 or 2 arguments"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = all_constant(&args.args);
        let Some(value) = args.args.first() else {
            return exec_err!("round expects 1 or 2 arguments");
        };
        let value = value.to_array(rows)?;
        let digits: Vec<Option<i64>> = match args.args.get(1) {
            None => vec![Some(0); rows],
            Some(digits) => cast(&digits.to_array(rows)?, &DataType::Int64)?
                .as_primitive::<Int64Type>()
                .iter()
                .collect(),
        };
        let result: ArrayRef = match value.data_type() {
            DataType::Null => cast(&value, &DataType::Float64)?,
            DataType::Float64 => Arc::new(each::<Float64Type>(&value, &digits, round_float)),
            DataType::Float32 => Arc::new(each::<Float32Type>(&value, &digits, |v, d| {
                round_float(f64::from(v), d) as f32
            })),
            DataType::Decimal128(precision, scale) => {
                let scale = *scale;
                Arc::new(
                    each::<Decimal128Type>(&value, &digits, |v, d| {
                        round_integer(v, d - i64::from(scale))
                    })
                    .with_precision_and_scale(*precision, scale)?,
                )
            }
            kind if kind.is_integer() => {
                let Some(target) = Target::integer(kind) else {
                    return exec_err!("round does not take {kind}");
                };
                let wide = cast(&value, &DataType::Decimal128(38, 0))?;
                let rounded = each::<Decimal128Type>(&wide, &digits, round_integer);
                // Back to the integer type, wrapping as ClickHouse's arithmetic does.
                wrapped(rounded.iter().collect(), target)?
            }
            other => return exec_err!("round does not take {other}"),
        };
        answer(result, scalar)
    }
}

pub(super) fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(Round {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ClickHouse's answers (chDB).
    #[test]
    fn floats_round_half_to_even_after_scaling() {
        assert_eq!(round_float(2.5, 0), 2.0);
        assert_eq!(round_float(3.5, 0), 4.0);
        assert_eq!(round_float(-2.5, 0), -2.0);
        assert_eq!(round_float(0.125, 2), 0.12);
        assert_eq!(round_float(2.675, 2), 2.68);
        assert_eq!(round_float(1.015, 2), 1.01);
        assert_eq!(round_float(1234.5678, -2), 1200.0);
    }

    #[test]
    fn integers_round_half_away_from_zero() {
        assert_eq!(round_integer(1250, -2), 1300);
        assert_eq!(round_integer(-1250, -2), -1300);
        assert_eq!(round_integer(1249, -2), 1200);
        assert_eq!(round_integer(5, 0), 5);
        assert_eq!(round_integer(5, -40), 0);
    }
}
