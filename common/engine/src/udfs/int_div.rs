//! `intDiv(a, b)` as ClickHouse: integers divide exactly, truncating toward zero (no detour
//! through floats, which lose digits past 2^53); a float operand divides as floats, then
//! truncates to Int64. Dividing by zero, or the smallest Int64 by -1, is ClickHouse's error,
//! a 400 here. NULL in, NULL out.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Float64Type};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::convert::{Target, wrapped};

fn divide_integers(a: i128, b: i128) -> Result<i128> {
    if b == 0 {
        return exec_err!("Division by zero (intDiv)");
    }
    if a == i128::from(i64::MIN) && b == -1 {
        return exec_err!("Division of the smallest signed number by minus one (intDiv)");
    }
    Ok(a / b)
}

fn divide_floats(a: f64, b: f64) -> Result<i128> {
    if b == 0.0 {
        return exec_err!("Division by zero (intDiv)");
    }
    let quotient = (a / b).trunc();
    if !quotient.is_finite() || quotient.abs() >= 2f64.powi(63) {
        return exec_err!("intDiv: the quotient {quotient} is not an Int64");
    }
    Ok(quotient as i128)
}

fn divides(kind: &DataType) -> bool {
    kind.is_integer()
        || matches!(
            kind,
            DataType::Null
                | DataType::Float32
                | DataType::Float64
                | DataType::Decimal128(_, _)
                | DataType::Boolean
        )
}

/// UInt64 when both are unsigned integers, else Int64.
fn result_type(a: &DataType, b: &DataType) -> DataType {
    if a.is_unsigned_integer() && b.is_unsigned_integer() {
        DataType::UInt64
    } else {
        DataType::Int64
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct IntDiv {
    signature: Signature,
}

impl ScalarUDFImpl for IntDiv {
    fn name(&self) -> &str {
        "hogql_int_div"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [a, b] if divides(a) && divides(b) => Ok(result_type(a, b)),
            [a, b] => plan_err!("intDiv takes numbers, not {a} and {b}"),
            _ => plan_err!("intDiv expects 2 arguments"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let [a, b] = args.args.as_slice() else {
            return exec_err!("intDiv expects 2 arguments");
        };
        let scalar = matches!((a, b), (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)));
        let (a, b) = (a.to_array(rows)?, b.to_array(rows)?);
        let integers = |kind: &DataType| kind.is_integer() || *kind == DataType::Boolean;
        let quotients: Vec<Option<i128>> = if integers(a.data_type()) && integers(b.data_type()) {
            let exact = DataType::Decimal128(38, 0);
            let (a, b) = (cast(&a, &exact)?, cast(&b, &exact)?);
            a.as_primitive::<Decimal128Type>()
                .iter()
                .zip(b.as_primitive::<Decimal128Type>().iter())
                .map(|(a, b)| match (a, b) {
                    (Some(a), Some(b)) => divide_integers(a, b).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?
        } else {
            let (a, b) = (cast(&a, &DataType::Float64)?, cast(&b, &DataType::Float64)?);
            a.as_primitive::<Float64Type>()
                .iter()
                .zip(b.as_primitive::<Float64Type>().iter())
                .map(|(a, b)| match (a, b) {
                    (Some(a), Some(b)) => divide_floats(a, b).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?
        };
        let target = match result_type(a.data_type(), b.data_type()) {
            DataType::UInt64 => Target::Int(64, false),
            _ => Target::Int(64, true),
        };
        let result: ArrayRef = wrapped(quotients, target)?;
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &result, 0,
            )?))
        } else {
            Ok(ColumnarValue::Array(Arc::clone(&result)))
        }
    }
}

pub(super) fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(IntDiv {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ClickHouse's answers (chDB).
    #[test]
    fn quotients_truncate_toward_zero() {
        assert_eq!(divide_integers(7, 2).ok(), Some(3));
        assert_eq!(divide_integers(-7, 2).ok(), Some(-3));
        assert_eq!(divide_integers(7, -2).ok(), Some(-3));
        assert_eq!(
            divide_integers(9_007_199_254_740_993, 1).ok(),
            Some(9_007_199_254_740_993)
        );
        assert!(divide_integers(1, 0).is_err());
        assert!(divide_integers(i128::from(i64::MIN), -1).is_err());
        assert_eq!(divide_floats(7.9, 2.0).ok(), Some(3));
        assert_eq!(divide_floats(-7.9, 2.0).ok(), Some(-3));
        assert!(divide_floats(1.0, 0.0).is_err());
    }
}
