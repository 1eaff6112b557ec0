//! One scalar function of the dates family as a self-contained `ScalarUDFImpl`: its name, how it
//! types its result (from the argument types and the constant arguments), and how it computes,
//! for a session in the project's time zone. The functions themselves live beside it
//! (`best_effort`, `format_datetime`, `start_of_interval`, `weeks`, `datetime_minus`).

use super::{all_constant, answer};
use std::sync::Arc;

use chrono_tz::Tz;
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// The result type of a call, from its argument types, its constant arguments and the zone.
pub(super) type Typer = fn(&[DataType], &[Option<&ScalarValue>], Tz) -> Result<DataType>;
/// The values of a call: its arguments, the number of rows and the project's zone.
pub(super) type Runner = fn(&[ColumnarValue], usize, Tz) -> Result<ArrayRef>;

#[derive(Debug)]
pub(super) struct DateUdf {
    name: &'static str,
    signature: Signature,
    zone: Tz,
    typer: Typer,
    runner: Runner,
}

/// Two are the same function when they have the same name in the same zone.
impl PartialEq for DateUdf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.zone == other.zone
    }
}

impl Eq for DateUdf {}

impl std::hash::Hash for DateUdf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.zone.name().hash(state);
    }
}

pub(super) fn udf(name: &'static str, zone: Tz, typer: Typer, runner: Runner) -> ScalarUDF {
    ScalarUDF::new_from_impl(DateUdf {
        name,
        signature: Signature::variadic_any(Volatility::Immutable),
        zone,
        typer,
        runner,
    })
}

impl ScalarUDFImpl for DateUdf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        (self.typer)(arg_types, &[], self.zone)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let data_type = (self.typer)(&types, args.scalar_arguments, self.zone)?;
        Ok(Arc::new(Field::new(self.name, data_type, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let all_scalar = all_constant(&args.args);
        let result = (self.runner)(&args.args, args.number_rows, self.zone)?;
        answer(result, all_scalar)
    }
}

/// A constant text argument (a unit, a format, a zone name), if it is one.
pub(super) fn constant_text(value: Option<&ScalarValue>) -> Option<&str> {
    match value {
        Some(
            ScalarValue::Utf8(Some(text))
            | ScalarValue::Utf8View(Some(text))
            | ScalarValue::LargeUtf8(Some(text)),
        ) => Some(text.as_str()),
        _ => None,
    }
}

/// The constant text of argument `index` at run time.
pub(super) fn text_argument(args: &[ColumnarValue], index: usize) -> Option<&str> {
    match args.get(index) {
        Some(ColumnarValue::Scalar(scalar)) => constant_text(Some(scalar)),
        _ => None,
    }
}

/// The zone a date-time value is read in: its type's, else the project's.
pub(super) fn zone_of_type(data_type: &DataType, project: Tz) -> Tz {
    match data_type {
        DataType::Timestamp(_, Some(zone)) => zone.parse().unwrap_or(project),
        DataType::Timestamp(_, None) => chrono_tz::UTC,
        _ => project,
    }
}
