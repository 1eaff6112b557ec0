//! `toInt`/`toFloat`: PostHog translates them to ClickHouse's `accurateCastOrNull(x, 'Int64')`
//! and `accurateCastOrNull(x, 'Float64')` (see `convert`).

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;

use super::argument;
use super::convert::accurate_or_null;

/// `toInt`/`toFloat`: NULL when the value does not convert exactly (text that is not a clean
/// number, a float with a fraction, a value out of Int64's range).
pub(super) fn lenient_cast(
    args: &[ColumnarValue],
    rows: usize,
    target: DataType,
) -> Result<ArrayRef> {
    let array = argument(args, 0, "toInt/toFloat")?.to_array(rows)?;
    accurate_or_null(array.as_ref(), target == DataType::Float64)
}
