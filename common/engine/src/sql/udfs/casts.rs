//! `toInt`/`toFloat`.

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;

use super::argument;

/// `toInt`/`toFloat`: NULL when the value does not convert (ClickHouse's accurateCastOrNull).
pub(super) fn lenient_cast(
    args: &[ColumnarValue],
    rows: usize,
    target: DataType,
) -> Result<ArrayRef> {
    let array = argument(args, 0, "toInt/toFloat")?.to_array(rows)?;
    let array = match array.data_type() {
        DataType::Utf8View | DataType::LargeUtf8 => cast(&array, &DataType::Utf8)?,
        _ => array,
    };
    let options = datafusion::arrow::compute::CastOptions {
        safe: true,
        ..Default::default()
    };
    Ok(datafusion::arrow::compute::cast_with_options(
        &array, &target, &options,
    )?)
}
