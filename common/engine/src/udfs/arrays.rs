//! Array functions with ClickHouse's semantics where DataFusion's differ: `arrayElement` (and
//! `arrayFirst` without a match) past the end give the element type's default, not NULL;
//! `arraySlice` takes an offset and a length, either negative.
//!
//! ClickHouse's default is NULL when the element type is Nullable, which for the arrays a query
//! makes (literals, `splitByChar`, `groupArray`, `JSONExtract`) means the array holds a NULL:
//! Arrow's element fields are always nullable, so a row's own elements decide.

use super::{all_constant, answer, to_arrays};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, GenericListArray, Int64Array, MutableArrayData, new_null_array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::strings::window;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    /// `hogql_array_element(array, index[, witness])`: `witness` (default: `array`) is the
    /// array whose NULLs tell a Nullable element type.
    Element,
    /// `hogql_array_slice(array, offset[, length])`.
    Slice,
}

/// This file's UDFs.
pub(super) fn udfs() -> Vec<ScalarUDF> {
    [
        ("hogql_array_element", Op::Element),
        ("hogql_array_slice", Op::Slice),
    ]
    .into_iter()
    .map(|(name, op)| {
        ScalarUDF::new_from_impl(ArrayFunction {
            name,
            op,
            signature: Signature::variadic_any(Volatility::Immutable),
        })
    })
    .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayFunction {
    name: &'static str,
    op: Op,
    signature: Signature,
}

fn element_field(kind: Option<&DataType>, name: &str) -> Result<FieldRef> {
    match kind {
        Some(
            DataType::List(field) | DataType::LargeList(field) | DataType::FixedSizeList(field, _),
        ) => Ok(field.clone()),
        Some(DataType::Null) => Ok(Arc::new(
            datafusion::arrow::datatypes::Field::new_list_field(DataType::Null, true),
        )),
        Some(other) => plan_err!("{name} takes an array, not {other}"),
        None => plan_err!("{name} takes an array"),
    }
}

/// Any list as `List` (one offset type to walk).
fn as_list(array: &ArrayRef) -> Result<ArrayRef> {
    Ok(match array.data_type() {
        DataType::List(_) => array.clone(),
        DataType::LargeList(field) | DataType::FixedSizeList(field, _) => {
            cast(array, &DataType::List(field.clone()))?
        }
        DataType::Null => cast(
            array,
            &DataType::List(Arc::new(
                datafusion::arrow::datatypes::Field::new_list_field(DataType::Null, true),
            )),
        )?,
        other => return exec_err!("not an array: {other}"),
    })
}

impl ScalarUDFImpl for ArrayFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, types: &[DataType]) -> Result<DataType> {
        let field = element_field(types.first(), self.name)?;
        Ok(match self.op {
            Op::Element => field.data_type().clone(),
            Op::Slice => DataType::List(field),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let all_scalar = all_constant(&args.args);
        let arrays = to_arrays(&args.args, rows)?;
        let Some(first) = arrays.first() else {
            return exec_err!("{}: missing the array", self.name);
        };
        let list = as_list(first)?;
        let list = list.as_list::<i32>();
        let integers = |index: usize| -> Result<Option<Int64Array>> {
            arrays
                .get(index)
                .map(|array| {
                    Ok(cast(array, &DataType::Int64)?
                        .as_primitive::<Int64Type>()
                        .clone())
                })
                .transpose()
        };
        let Some(indices) = integers(1)? else {
            return exec_err!("{}: missing the index", self.name);
        };
        let result = match self.op {
            Op::Element => {
                let witness = match arrays.get(2) {
                    Some(witness) => as_list(witness)?,
                    None => first.clone(),
                };
                let witness = as_list(&witness)?;
                element(list, &indices, witness.as_list::<i32>())?
            }
            Op::Slice => slice(list, &indices, integers(2)?.as_ref())?,
        };
        answer(result, all_scalar)
    }
}

/// Whether row `row` of `list` holds a NULL element.
fn holds_null(list: &GenericListArray<i32>, row: usize) -> bool {
    !list.is_null(row) && list.value(row).null_count() > 0
}

fn element(
    list: &GenericListArray<i32>,
    indices: &Int64Array,
    witness: &GenericListArray<i32>,
) -> Result<ArrayRef> {
    let values = list.values();
    let kind = values.data_type().clone();
    let default = match ScalarValue::new_default(&kind) {
        Ok(default) => default.to_array_of_size(1)?,
        Err(_) => new_null_array(&kind, 1),
    };
    let null = new_null_array(&kind, 1);
    let sources = [values.to_data(), default.to_data(), null.to_data()];
    let mut out = MutableArrayData::new(sources.iter().collect(), true, list.len());
    let offsets = list.value_offsets();
    for row in 0..list.len() {
        if list.is_null(row) || indices.is_null(row) {
            out.try_extend(2, 0, 1)?;
            continue;
        }
        let (start, end) = (offsets[row] as i64, offsets[row + 1] as i64);
        let len = end - start;
        let index = indices.value(row);
        let at = match index {
            i if i > 0 && i <= len => Some(start + i - 1),
            i if i < 0 && -i <= len => Some(end + i),
            _ => None,
        };
        match at {
            Some(at) => out.try_extend(0, at as usize, at as usize + 1)?,
            None if row < witness.len() && holds_null(witness, row) => out.try_extend(2, 0, 1)?,
            None => out.try_extend(1, 0, 1)?,
        }
    }
    Ok(datafusion::arrow::array::make_array(out.freeze()))
}

fn slice(
    list: &GenericListArray<i32>,
    offsets_asked: &Int64Array,
    lengths: Option<&Int64Array>,
) -> Result<ArrayRef> {
    let values = list.values();
    let data = values.to_data();
    let mut out = MutableArrayData::new(vec![&data], false, values.len());
    let offsets = list.value_offsets();
    let mut new_offsets = Vec::with_capacity(list.len() + 1);
    new_offsets.push(0i32);
    let mut nulls = Vec::with_capacity(list.len());
    let mut total = 0i32;
    for row in 0..list.len() {
        if list.is_null(row) {
            nulls.push(false);
            new_offsets.push(total);
            continue;
        }
        // A NULL length runs to the end, a NULL offset keeps the whole array (ClickHouse's).
        let length = lengths.and_then(|l| (!l.is_null(row)).then(|| l.value(row)));
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        let (from, to) = if offsets_asked.is_null(row) {
            (0, end - start)
        } else {
            window(end - start, offsets_asked.value(row), length)
        };
        out.try_extend(0, start + from, start + to)?;
        total += (to - from) as i32;
        new_offsets.push(total);
        nulls.push(true);
    }
    let field = match list.data_type() {
        DataType::List(field) => field.clone(),
        other => return exec_err!("arraySlice: not a list: {other}"),
    };
    Ok(Arc::new(GenericListArray::<i32>::try_new(
        field,
        OffsetBuffer::new(new_offsets.into()),
        datafusion::arrow::array::make_array(out.freeze()),
        Some(nulls.into()),
    )?))
}
