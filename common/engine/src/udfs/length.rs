//! `length` of strings and arrays.

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;

use super::argument;

pub(super) fn length(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let array = argument(args, 0, "length")?.to_array(rows)?;
    let array = match array.data_type() {
        DataType::Utf8View | DataType::Null => cast(&array, &DataType::Utf8)?,
        DataType::BinaryView => cast(&array, &DataType::Binary)?,
        DataType::ListView(field) => cast(&array, &DataType::List(field.clone()))?,
        _ => array,
    };
    let lengths = datafusion::arrow::compute::kernels::length::length(&array)?;
    Ok(cast(&lengths, &DataType::UInt64)?)
}
