//! Our own scalar functions, where DataFusion has no function with ClickHouse's semantics:
//! property access on JSON text, `JSONExtract*`, `dateDiff` (unit boundaries crossed), `length`
//! of strings and arrays, and lenient date parsing (`toDate`/`toDateTime`, NULL on failure).
//!
//! One `HogqlFunction` per name ([`all`]) types its result and calls the family's code: `json`
//! (properties, `JSONExtract*`, `JSONExtractKeys`), `dates` (parsing, `dateDiff`,
//! `toStartOfWeek`), `intervals` (`toInterval*`, `dateAdd`/`dateSub`), `casts` (`toInt`,
//! `toFloat`), `length` and `uniq` (the hash `uniq` counts, the key the exact distinct counts count).

mod arrays;
mod best_effort;
mod bits;
mod casts;
mod convert;
mod date_udf;
mod dates;
mod datetime_minus;
mod format_datetime;
mod hashes;
mod int_div;
mod intervals;
pub(crate) mod json;
mod json_typed;
mod length;
mod round;
mod start_of_interval;
mod strings;
mod to_string;
mod type_name;
mod uniq;
mod uuids;
mod weeks;

pub use datetime_minus::DateTimeMinus;

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, IntervalUnit, TimeUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use bits::{Bits, bits};
use casts::lenient_cast;
use dates::{date_diff, start_of_week, to_date, to_datetime};
use intervals::{date_add, interval, unit_argument};
use json::{json, json_keys};
use length::length;
use uniq::{uniq_hash, uniq_key};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Property,
    JsonString,
    JsonInt,
    JsonFloat,
    JsonBool,
    JsonRaw,
    JsonHas,
    JsonLength,
    JsonKeys,
    DateDiff,
    Length,
    ToDate,
    ToDateTime,
    ToInt,
    ToFloat,
    UniqHash,
    UniqKey,
    StartOfWeek,
    Interval,
    DateAdd,
    DateSub,
    Integer,
    Bits(Bits),
}

impl Kind {
    /// Reads JSON text: properties and the `JSONExtract*`-likes. Exhaustive, so a new kind has
    /// to say whether a query using it pays for parsing JSON.
    fn reads_json(self) -> bool {
        match self {
            Kind::Property
            | Kind::JsonString
            | Kind::JsonInt
            | Kind::JsonFloat
            | Kind::JsonBool
            | Kind::JsonRaw
            | Kind::JsonHas
            | Kind::JsonLength
            | Kind::JsonKeys => true,
            Kind::DateDiff
            | Kind::Length
            | Kind::ToDate
            | Kind::ToDateTime
            | Kind::ToInt
            | Kind::ToFloat
            | Kind::UniqHash
            | Kind::UniqKey
            | Kind::StartOfWeek
            | Kind::Interval
            | Kind::DateAdd
            | Kind::DateSub
            | Kind::Integer
            | Kind::Bits(_) => false,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HogqlFunction {
    name: &'static str,
    kind: Kind,
    signature: Signature,
    /// The project's time zone (IANA name): naive date-time text is read in it, and the
    /// date-times these functions make are typed in it.
    zone: &'static str,
}

/// Every UDF's name and what it computes.
const FUNCTIONS: [(&str, Kind); 25] = [
    ("hogql_prop", Kind::Property),
    ("hogql_json_string", Kind::JsonString),
    ("hogql_json_int", Kind::JsonInt),
    ("hogql_json_float", Kind::JsonFloat),
    ("hogql_json_bool", Kind::JsonBool),
    ("hogql_json_raw", Kind::JsonRaw),
    ("hogql_json_has", Kind::JsonHas),
    ("hogql_json_length", Kind::JsonLength),
    ("hogql_json_keys", Kind::JsonKeys),
    ("hogql_date_diff", Kind::DateDiff),
    ("hogql_length", Kind::Length),
    ("hogql_to_date", Kind::ToDate),
    ("hogql_to_datetime", Kind::ToDateTime),
    ("hogql_to_int", Kind::ToInt),
    ("hogql_to_float", Kind::ToFloat),
    ("hogql_uniq_hash", Kind::UniqHash),
    ("hogql_uniq_key", Kind::UniqKey),
    ("hogql_start_of_week", Kind::StartOfWeek),
    ("hogql_interval", Kind::Interval),
    ("hogql_date_add", Kind::DateAdd),
    ("hogql_date_sub", Kind::DateSub),
    ("hogql_integer", Kind::Integer),
    ("hogql_bit_shift_left", Kind::Bits(Bits::ShiftLeft)),
    ("hogql_bit_shift_right", Kind::Bits(Bits::ShiftRight)),
    ("hogql_bit_test", Kind::Bits(Bits::Test)),
];

/// Whether the function named `name` reads JSON text (properties and `JSONExtract*`-likes).
pub fn reads_json(name: &str) -> bool {
    FUNCTIONS
        .iter()
        .any(|(function, kind)| *function == name && kind.reads_json())
        || json_typed::defines(name)
}

/// Every UDF the rewriter may emit, for a session in the project time zone `zone`.
/// Whether every argument is a constant (the answer is then one too).
pub(super) fn all_constant(args: &[ColumnarValue]) -> bool {
    args.iter()
        .all(|arg| matches!(arg, ColumnarValue::Scalar(_)))
}

/// Every argument as an array of `rows` values.
pub(super) fn to_arrays(
    args: &[ColumnarValue],
    rows: usize,
) -> Result<Vec<datafusion::arrow::array::ArrayRef>> {
    args.iter().map(|arg| arg.to_array(rows)).collect()
}

/// A function's answer: one value when every argument was a constant.
pub(super) fn answer(
    result: datafusion::arrow::array::ArrayRef,
    constant: bool,
) -> Result<ColumnarValue> {
    if constant {
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            &result, 0,
        )?))
    } else {
        Ok(ColumnarValue::Array(result))
    }
}

pub fn all(zone: chrono_tz::Tz) -> Vec<ScalarUDF> {
    let mut all: Vec<ScalarUDF> = FUNCTIONS
        .into_iter()
        .map(|(name, kind)| {
            ScalarUDF::new_from_impl(HogqlFunction {
                name,
                kind,
                signature: Signature::variadic_any(Volatility::Immutable),
                zone: zone.name(),
            })
        })
        .collect();
    // Dates and times, each a self-contained UDF.
    all.extend(best_effort::functions(zone));
    all.extend(format_datetime::functions(zone));
    all.extend(start_of_interval::functions(zone));
    all.extend(weeks::functions(zone));
    all.push(datetime_minus::function(zone));
    // Strings, JSON and arrays with ClickHouse's semantics, each file its own UDFs.
    all.extend(strings::udfs());
    all.extend(json_typed::udfs());
    all.extend(arrays::udfs());
    // Conversions, numbers and hashes, each a self-contained UDF.
    all.push(convert::udf());
    all.push(to_string::udf());
    all.push(type_name::udf(zone));
    all.push(round::udf());
    all.push(int_div::udf());
    all.extend(hashes::udfs());
    all.extend(uuids::udfs(zone));
    all
}

impl HogqlFunction {
    /// The zone `toDateTime` reads naive text in and types its result with: its constant second
    /// argument, or the project's.
    fn datetime_zone(&self, scalars: &[Option<&ScalarValue>]) -> Result<chrono_tz::Tz> {
        match scalars.get(1) {
            None => Ok(self.tz()),
            Some(Some(
                ScalarValue::Utf8(Some(name))
                | ScalarValue::Utf8View(Some(name))
                | ScalarValue::LargeUtf8(Some(name)),
            )) => name
                .parse()
                .map_err(|_| DataFusionError::Plan(format!("Unknown time zone '{name}'"))),
            Some(_) => plan_err!("toDateTime: the time zone must be a string constant"),
        }
    }

    fn tz(&self) -> chrono_tz::Tz {
        self.zone.parse().unwrap_or(chrono_tz::UTC)
    }

    fn data_type(&self, types: &[DataType], scalars: &[Option<&ScalarValue>]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Property | Kind::JsonString | Kind::JsonRaw => DataType::Utf8,
            Kind::JsonInt | Kind::DateDiff => DataType::Int64,
            Kind::JsonFloat => DataType::Float64,
            Kind::JsonBool | Kind::JsonHas => DataType::Boolean,
            Kind::JsonLength | Kind::Length | Kind::UniqHash => DataType::UInt64,
            Kind::UniqKey => DataType::FixedSizeBinary(uniq::KEY_BYTES),
            Kind::JsonKeys => DataType::List(Arc::new(
                datafusion::arrow::datatypes::Field::new_list_field(DataType::Utf8, true),
            )),
            Kind::ToDate | Kind::StartOfWeek => DataType::Date32,
            Kind::ToInt => DataType::Int64,
            Kind::ToFloat => DataType::Float64,
            Kind::ToDateTime => zoned(self.datetime_zone(scalars)?.name()),
            Kind::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
            // ClickHouse's bit functions refuse floats; DataFusion would truncate them.
            Kind::Integer => {
                let function = match scalars.get(1).copied().flatten() {
                    Some(ScalarValue::Utf8(Some(name))) => name.as_str(),
                    _ => "this function",
                };
                integers(function, &types[..types.len().min(1)])?;
                types.first().cloned().unwrap_or(DataType::Null)
            }
            Kind::Bits(operation) => {
                integers(operation.dialect_name(), types)?;
                DataType::Int64
            }
            Kind::DateAdd | Kind::DateSub => {
                let unit = unit_argument(scalars.get(2).copied().flatten(), self.name)?;
                match types.first() {
                    Some(DataType::Date32 | DataType::Date64) if unit.calendar() => {
                        DataType::Date32
                    }
                    Some(DataType::Timestamp(_, zone)) => {
                        DataType::Timestamp(TimeUnit::Microsecond, zone.clone())
                    }
                    Some(DataType::Interval(_) | DataType::Duration(_)) => {
                        return plan_err!("Cannot add an interval to an interval");
                    }
                    _ => zoned(self.zone),
                }
            }
        })
    }
}

/// Refuses any type but integers (and NULL) for `function`'s arguments.
fn integers(function: &str, types: &[DataType]) -> Result<()> {
    match types
        .iter()
        .find(|t| !t.is_integer() && **t != DataType::Null)
    {
        Some(found) => plan_err!("{function} takes integers, not {found}"),
        None if types.is_empty() => plan_err!("{function} takes integers, not nothing"),
        None => Ok(()),
    }
}

fn zoned(zone: &str) -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(zone.into()))
}

impl ScalarUDFImpl for HogqlFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.data_type(arg_types, &[])
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let data_type = self.data_type(&types, args.scalar_arguments)?;
        Ok(Arc::new(datafusion::arrow::datatypes::Field::new(
            self.name, data_type, true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let all_scalar = all_constant(&args.args);
        let zone = self.tz();
        let result = match self.kind {
            Kind::Property
            | Kind::JsonString
            | Kind::JsonInt
            | Kind::JsonFloat
            | Kind::JsonBool
            | Kind::JsonRaw
            | Kind::JsonHas
            | Kind::JsonLength => json(self.kind, &args.args, rows)?,
            Kind::JsonKeys => json_keys(&args.args, rows)?,
            Kind::DateDiff => date_diff(&args.args, rows, zone)?,
            Kind::Length => length(&args.args, rows)?,
            Kind::ToDate => to_date(&args.args, rows, zone)?,
            Kind::ToDateTime => {
                let zone = match args.args.get(1) {
                    Some(ColumnarValue::Scalar(scalar)) => {
                        self.datetime_zone(&[None, Some(scalar)])?
                    }
                    Some(ColumnarValue::Array(_)) => {
                        return exec_err!("toDateTime: the time zone must be a string constant");
                    }
                    None => zone,
                };
                to_datetime(&args.args[..1.min(args.args.len())], rows, zone)?
            }
            Kind::ToInt => lenient_cast(&args.args, rows, DataType::Int64)?,
            Kind::ToFloat => lenient_cast(&args.args, rows, DataType::Float64)?,
            Kind::UniqHash => uniq_hash(&args.args, rows)?,
            Kind::UniqKey => uniq_key(&args.args, rows)?,
            Kind::StartOfWeek => start_of_week(&args.args, rows, zone)?,
            Kind::Interval => interval(&args.args, rows)?,
            Kind::DateAdd => date_add(&args.args, rows, zone, 1)?,
            Kind::DateSub => date_add(&args.args, rows, zone, -1)?,
            // Typing checked the argument; its values pass as they are.
            Kind::Integer => return Ok(argument(&args.args, 0, self.name)?.clone()),
            Kind::Bits(operation) => bits(operation, &args.args, rows, self.name)?,
        };
        answer(result, all_scalar)
    }
}

fn argument<'a>(args: &'a [ColumnarValue], index: usize, name: &str) -> Result<&'a ColumnarValue> {
    args.get(index).ok_or_else(|| {
        DataFusionError::Execution(format!("{name}: missing argument {}", index + 1))
    })
}
