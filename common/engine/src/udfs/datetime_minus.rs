//! `DateTime - DateTime` as ClickHouse answers it: a number of seconds (Decimal(18, 6) for the
//! DateTime64(6) values events carry, an integer for whole-second date-times), not an interval.
//! An [`ExprPlanner`] sees the operands' types while the SQL is planned and calls
//! `hogql_datetime_minus` for two date-times; any other `-` is left to DataFusion.

use std::sync::Arc;

use chrono_tz::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Builder, Int64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{DFSchema, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{ColumnarValue, Expr, ExprSchemable, ScalarUDF};
use datafusion::sql::sqlparser::ast::BinaryOperator;

use super::date_udf::udf;

pub(super) const NAME: &str = "hogql_datetime_minus";

pub(super) fn function(zone: Tz) -> ScalarUDF {
    udf(NAME, zone, minus_type, minus)
}

fn whole_seconds(types: &[DataType]) -> bool {
    types
        .iter()
        .all(|t| matches!(t, DataType::Timestamp(TimeUnit::Second, _)))
}

fn minus_type(types: &[DataType], _: &[Option<&ScalarValue>], _: Tz) -> Result<DataType> {
    if types.len() != 2
        || !types
            .iter()
            .all(|t| matches!(t, DataType::Timestamp(_, _) | DataType::Null))
    {
        return plan_err!("{NAME} subtracts two date-times");
    }
    Ok(if whole_seconds(types) {
        DataType::Int64
    } else {
        DataType::Decimal128(18, 6)
    })
}

fn minus(args: &[ColumnarValue], rows: usize, _: Tz) -> Result<ArrayRef> {
    let [left, right] = args else {
        return exec_err!("{NAME} subtracts two date-times");
    };
    let (left, right) = (left.to_array(rows)?, right.to_array(rows)?);
    let seconds = whole_seconds(&[left.data_type().clone(), right.data_type().clone()]);
    let micros = |array: &ArrayRef| cast(array, &DataType::Timestamp(TimeUnit::Microsecond, None));
    let (left, right) = (micros(&left)?, micros(&right)?);
    let (left, right) = (
        left.as_primitive::<TimestampMicrosecondType>(),
        right.as_primitive::<TimestampMicrosecondType>(),
    );
    let pairs = (0..left.len()).map(|i| {
        (!left.is_null(i) && !right.is_null(i))
            .then(|| i128::from(left.value(i)) - i128::from(right.value(i)))
    });
    if seconds {
        let mut out = Int64Builder::with_capacity(left.len());
        for difference in pairs {
            out.append_option(difference.and_then(|d| i64::try_from(d / 1_000_000).ok()));
        }
        return Ok(Arc::new(out.finish()));
    }
    let mut out = Decimal128Builder::with_capacity(left.len());
    for difference in pairs {
        out.append_option(difference);
    }
    Ok(Arc::new(out.finish().with_precision_and_scale(18, 6)?))
}

/// Plans `a - b` over two date-times as [`NAME`].
#[derive(Debug)]
pub struct DateTimeMinus {
    function: Arc<ScalarUDF>,
}

impl DateTimeMinus {
    pub fn new(zone: Tz) -> Self {
        DateTimeMinus {
            function: Arc::new(function(zone)),
        }
    }
}

impl ExprPlanner for DateTimeMinus {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        if expr.op != BinaryOperator::Minus {
            return Ok(PlannerResult::Original(expr));
        }
        let timestamp = |e: &Expr| matches!(e.get_type(schema), Ok(DataType::Timestamp(_, _)));
        if !(timestamp(&expr.left) && timestamp(&expr.right)) {
            return Ok(PlannerResult::Original(expr));
        }
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::clone(&self.function), vec![expr.left, expr.right]),
        )))
    }
}
