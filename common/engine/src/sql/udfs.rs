//! Our own scalar functions, where DataFusion has no function with ClickHouse's semantics:
//! property access on JSON text, `JSONExtract*`, `dateDiff` (unit boundaries crossed), `length`
//! of strings and arrays, and lenient date parsing (`toDate`/`toDateTime`, NULL on failure).

use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeZone, Utc};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, Date32Builder, Float64Builder, Int64Builder,
    StringArray, StringBuilder, TimestampMicrosecondArray, TimestampMicrosecondBuilder,
    UInt64Builder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use jiter::{Jiter, JiterResult, NumberInt, Peek};

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
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HogqlFunction {
    name: &'static str,
    kind: Kind,
    signature: Signature,
}

/// Every UDF the rewriter may emit.
pub fn all() -> Vec<ScalarUDF> {
    [
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
    ]
    .into_iter()
    .map(|(name, kind)| {
        ScalarUDF::new_from_impl(HogqlFunction {
            name,
            kind,
            signature: Signature::variadic_any(Volatility::Immutable),
        })
    })
    .collect()
}

impl ScalarUDFImpl for HogqlFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Property | Kind::JsonString | Kind::JsonRaw => DataType::Utf8,
            Kind::JsonInt | Kind::DateDiff => DataType::Int64,
            Kind::JsonFloat => DataType::Float64,
            Kind::JsonBool | Kind::JsonHas => DataType::Boolean,
            Kind::JsonLength | Kind::Length | Kind::UniqHash => DataType::UInt64,
            Kind::JsonKeys => DataType::List(Arc::new(
                datafusion::arrow::datatypes::Field::new_list_field(DataType::Utf8, true),
            )),
            Kind::ToDate => DataType::Date32,
            Kind::ToInt => DataType::Int64,
            Kind::ToFloat => DataType::Float64,
            Kind::ToDateTime => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let all_scalar = args
            .args
            .iter()
            .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
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
            Kind::DateDiff => date_diff(&args.args, rows)?,
            Kind::Length => length(&args.args, rows)?,
            Kind::ToDate => to_date(&args.args, rows)?,
            Kind::ToDateTime => to_datetime(&args.args, rows)?,
            Kind::ToInt => lenient_cast(&args.args, rows, DataType::Int64)?,
            Kind::ToFloat => lenient_cast(&args.args, rows, DataType::Float64)?,
            Kind::UniqHash => uniq_hash(&args.args, rows)?,
        };
        if all_scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &result, 0,
            )?))
        } else {
            Ok(ColumnarValue::Array(result))
        }
    }
}

/// A 64-bit hash of the arguments, for `uniq`: counting distinct hashes is exact but for
/// collisions (about one in 10^8 at a million values) and keeps a small fixed-size key per value
/// instead of the value itself, so counting distinct users per day fits in little memory. With
/// one argument, NULL stays NULL (uniq skips it), as with `count(DISTINCT x)`.
fn uniq_hash(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    use datafusion::common::hash_utils::{RandomState, create_hashes};
    // Fixed seeds: partial counts from different partitions must agree on every hash.
    let state = RandomState::with_seed(0x5eed_0001);
    let arrays = args
        .iter()
        .map(|arg| arg.to_array(rows))
        .collect::<Result<Vec<_>>>()?;
    let mut hashes = vec![0; rows];
    create_hashes(&arrays, &state, &mut hashes)?;
    let nulls = match arrays.as_slice() {
        [single] => single.logical_nulls(),
        _ => None,
    };
    Ok(Arc::new(datafusion::arrow::array::UInt64Array::new(
        hashes.into(),
        nulls,
    )))
}

fn argument<'a>(args: &'a [ColumnarValue], index: usize, name: &str) -> Result<&'a ColumnarValue> {
    args.get(index).ok_or_else(|| {
        DataFusionError::Execution(format!("{name}: missing argument {}", index + 1))
    })
}

/// One JSON path step: an object key or a 1-based array index (negative counts from the end).
enum Step {
    Key(String),
    Index(i64),
}

fn path(args: &[ColumnarValue]) -> Result<Vec<Step>> {
    args.iter()
        .map(|arg| match arg {
            ColumnarValue::Scalar(scalar) => match scalar {
                ScalarValue::Utf8(Some(key))
                | ScalarValue::Utf8View(Some(key))
                | ScalarValue::LargeUtf8(Some(key)) => Ok(Step::Key(key.clone())),
                other => match other.cast_to(&DataType::Int64) {
                    Ok(ScalarValue::Int64(Some(index))) => Ok(Step::Index(index)),
                    _ => exec_err!("JSON paths are keys (strings) or indexes (integers)"),
                },
            },
            ColumnarValue::Array(_) => exec_err!("JSON paths must be constants"),
        })
        .collect()
}

fn text_rows(value: &ColumnarValue, rows: usize) -> Result<ArrayRef> {
    let array = value.to_array(rows)?;
    match array.data_type() {
        DataType::Utf8 => Ok(array),
        DataType::Null => Ok(cast(&array, &DataType::Utf8)?),
        _ => Ok(cast(&array, &DataType::Utf8)?),
    }
}

/// Walks to the value at `path`; true when it exists (the jiter then sits before the value).
fn seek(jiter: &mut Jiter, path: &[Step]) -> JiterResult<bool> {
    for step in path {
        let peek = jiter.peek()?;
        match (step, peek) {
            (Step::Key(wanted), Peek::Object) => {
                let mut key = jiter.next_object()?;
                let mut found = false;
                while let Some(current) = key {
                    if current == wanted {
                        found = true;
                        break;
                    }
                    jiter.next_skip()?;
                    key = jiter.next_key()?;
                }
                if !found {
                    return Ok(false);
                }
            }
            (Step::Index(wanted), Peek::Array) => {
                // Count first when indexing from the end.
                let target = if *wanted < 0 {
                    let mut probe = jiter.clone();
                    let mut count = 0i64;
                    let mut next = probe.next_array()?;
                    while let Some(peek) = next {
                        probe.known_skip(peek)?;
                        count += 1;
                        next = probe.array_step()?;
                    }
                    count + wanted
                } else {
                    wanted - 1
                };
                if target < 0 {
                    return Ok(false);
                }
                let mut next = jiter.next_array()?;
                let mut position = 0;
                loop {
                    match next {
                        None => return Ok(false),
                        Some(_) if position == target => break,
                        Some(peek) => {
                            jiter.known_skip(peek)?;
                            position += 1;
                            next = jiter.array_step()?;
                        }
                    }
                }
            }
            _ => return Ok(false),
        }
    }
    Ok(true)
}

fn raw_value<'a>(jiter: &mut Jiter<'_>, text: &'a str) -> JiterResult<&'a str> {
    let peek = jiter.peek()?;
    let start = jiter.current_index();
    jiter.known_skip(peek)?;
    let end = jiter.current_index();
    Ok(text.get(start..end).unwrap_or(""))
}

/// The text a string-valued JSON function gives for one document (borrowed: no copy per row).
fn text_value<'a>(
    kind: Kind,
    jiter: &'a mut Jiter<'_>,
    text: &'a str,
) -> JiterResult<Option<&'a str>> {
    let peek = jiter.peek()?;
    Ok(match (kind, peek) {
        // PostHog's property rules: JSON null and "" are NULL, strings lose their quotes,
        // anything else is its JSON text.
        (Kind::Property, Peek::Null) => None,
        (Kind::Property, Peek::String) => {
            Some(jiter.known_str()?).filter(|value| !value.is_empty())
        }
        (Kind::Property | Kind::JsonRaw, _) => Some(raw_value(jiter, text)?),
        // JSONExtractString: the string, or '' for anything else.
        (_, Peek::String) => Some(jiter.known_str()?),
        _ => Some(""),
    })
}

fn text_values(kind: Kind, input: &StringArray, steps: &[Step]) -> ArrayRef {
    let missing = if kind == Kind::Property {
        None
    } else {
        Some("")
    };
    let mut builder = StringBuilder::with_capacity(input.len(), input.value_data().len() / 4);
    for row in 0..input.len() {
        if input.is_null(row) {
            builder.append_option(missing);
            continue;
        }
        let text = input.value(row);
        let mut jiter = Jiter::new(text.as_bytes());
        match seek(&mut jiter, steps) {
            Ok(true) => match text_value(kind, &mut jiter, text) {
                Ok(value) => builder.append_option(value),
                Err(_) => builder.append_option(missing),
            },
            _ => builder.append_option(missing),
        }
    }
    Arc::new(builder.finish())
}

fn json(kind: Kind, args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let owned = text_rows(argument(args, 0, "JSON")?, rows)?;
    let input = owned.as_string::<i32>();
    let steps = path(&args[1..])?;
    macro_rules! each {
        ($builder:expr, $missing:expr, $extract:expr) => {{
            let mut builder = $builder;
            for row in 0..input.len() {
                if input.is_null(row) {
                    builder.append_option($missing);
                    continue;
                }
                let text = input.value(row);
                let mut jiter = Jiter::new(text.as_bytes());
                let value = match seek(&mut jiter, &steps) {
                    Ok(true) => $extract(&mut jiter, text).unwrap_or($missing),
                    _ => $missing,
                };
                builder.append_option(value);
            }
            Arc::new(builder.finish()) as ArrayRef
        }};
    }
    Ok(match kind {
        Kind::Property | Kind::JsonString | Kind::JsonRaw => text_values(kind, input, &steps),
        Kind::JsonInt => each!(
            Int64Builder::with_capacity(rows),
            Some(0),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<i64>> {
                let peek = jiter.peek()?;
                Ok(Some(match peek {
                    Peek::True => 1,
                    Peek::False => 0,
                    peek if peek.is_num() => match jiter.known_int(peek) {
                        Ok(NumberInt::Int(value)) => value,
                        _ => 0,
                    },
                    _ => 0,
                }))
            }
        ),
        Kind::JsonFloat => each!(
            Float64Builder::with_capacity(rows),
            Some(0.0),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<f64>> {
                let peek = jiter.peek()?;
                Ok(Some(if peek.is_num() {
                    jiter.known_float(peek)?
                } else {
                    0.0
                }))
            }
        ),
        Kind::JsonBool => each!(
            BooleanBuilder::with_capacity(rows),
            Some(false),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<bool>> {
                Ok(Some(jiter.peek()? == Peek::True))
            }
        ),
        Kind::JsonHas => each!(
            BooleanBuilder::with_capacity(rows),
            Some(false),
            |_jiter: &mut Jiter, _text| -> JiterResult<Option<bool>> { Ok(Some(true)) }
        ),
        Kind::JsonLength => each!(
            UInt64Builder::with_capacity(rows),
            Some(0),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<u64>> {
                let mut count = 0;
                match jiter.peek()? {
                    Peek::Array => {
                        let mut next = jiter.next_array()?;
                        while let Some(peek) = next {
                            jiter.known_skip(peek)?;
                            count += 1;
                            next = jiter.array_step()?;
                        }
                    }
                    Peek::Object => {
                        let mut key = jiter.next_object()?.is_some();
                        while key {
                            jiter.next_skip()?;
                            count += 1;
                            key = jiter.next_key()?.is_some();
                        }
                    }
                    _ => {}
                }
                Ok(Some(count))
            }
        ),
        _ => return exec_err!("not a JSON function"),
    })
}

fn timestamps(
    value: &ColumnarValue,
    rows: usize,
) -> Result<(TimestampMicrosecondArray, chrono_tz::Tz)> {
    let array = value.to_array(rows)?;
    let zone = match array.data_type() {
        DataType::Timestamp(_, Some(zone)) => zone.parse().unwrap_or(chrono_tz::UTC),
        _ => chrono_tz::UTC,
    };
    let array = match array.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            to_datetime(std::slice::from_ref(value), rows)?
        }
        _ => array,
    };
    let micros = cast(&array, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
    Ok((micros.as_primitive().clone(), zone))
}

fn date_diff(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let unit = match argument(args, 0, "dateDiff")? {
        ColumnarValue::Scalar(
            ScalarValue::Utf8(Some(unit)) | ScalarValue::Utf8View(Some(unit)),
        ) => unit.to_lowercase(),
        _ => return exec_err!("dateDiff: the unit must be a string constant"),
    };
    let (start, zone) = timestamps(argument(args, 1, "dateDiff")?, rows)?;
    let (end, _) = timestamps(argument(args, 2, "dateDiff")?, rows)?;
    let unit = unit.trim_end_matches('s').to_owned();
    let seconds = |micros: i64| micros.div_euclid(1_000_000);
    let local = |micros: i64| -> NaiveDateTime {
        zone.from_utc_datetime(
            &DateTime::<Utc>::from_timestamp_micros(micros)
                .unwrap_or_default()
                .naive_utc(),
        )
        .naive_local()
    };
    let mut out = Int64Builder::with_capacity(start.len());
    for row in 0..start.len() {
        if start.is_null(row) || end.is_null(row) {
            out.append_null();
            continue;
        }
        let (a, b) = (start.value(row), end.value(row));
        let value = match unit.as_str() {
            "second" => seconds(b) - seconds(a),
            "minute" => seconds(b).div_euclid(60) - seconds(a).div_euclid(60),
            "hour" => seconds(b).div_euclid(3600) - seconds(a).div_euclid(3600),
            "day" => (local(b).date() - local(a).date()).num_days(),
            "week" => {
                let monday =
                    |d: NaiveDate| d - chrono::Days::new(d.weekday().num_days_from_monday() as u64);
                (monday(local(b).date()) - monday(local(a).date())).num_days() / 7
            }
            "month" | "quarter" | "year" => {
                let (x, y) = (local(a), local(b));
                let months = (y.year() as i64 * 12 + y.month0() as i64)
                    - (x.year() as i64 * 12 + x.month0() as i64);
                match unit.as_str() {
                    "month" => months,
                    "quarter" => {
                        (y.year() as i64 * 4 + y.month0() as i64 / 3)
                            - (x.year() as i64 * 4 + x.month0() as i64 / 3)
                    }
                    _ => (y.year() - x.year()) as i64,
                }
            }
            other => return exec_err!("dateDiff: unknown unit '{other}'"),
        };
        out.append_value(value);
    }
    Ok(Arc::new(out.finish()))
}

fn length(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
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

/// Lenient parsing as ClickHouse's `*BestEffortOrNull`: dates, date-times with a space or a
/// `T`, fractions, a zone suffix; anything else is NULL.
fn parse_datetime(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(parsed) = DateTime::parse_from_rfc3339(text) {
        return Some(parsed.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(parsed) = NaiveDateTime::parse_from_str(text, format) {
            return Some(parsed.and_utc());
        }
    }
    for format in ["%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%#z"] {
        if let Ok(parsed) = DateTime::parse_from_str(text, format) {
            return Some(parsed.with_timezone(&Utc));
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|date| date.and_hms_opt(0, 0, 0))
        .map(|moment| moment.and_utc())
}

fn to_datetime(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let array = argument(args, 0, "toDateTime")?.to_array(rows)?;
    let target = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    match array.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            let text = cast(&array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let mut out =
                TimestampMicrosecondBuilder::with_capacity(text.len()).with_timezone("UTC");
            for row in 0..text.len() {
                out.append_option(
                    (!text.is_null(row))
                        .then(|| parse_datetime(text.value(row)))
                        .flatten()
                        .map(|moment| moment.timestamp_micros()),
                );
            }
            Ok(Arc::new(out.finish()))
        }
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64 => {
            let seconds = cast(&array, &DataType::Int64)?;
            let micros = datafusion::arrow::compute::kernels::numeric::mul(
                &seconds,
                &datafusion::arrow::array::Int64Array::new_scalar(1_000_000),
            )?;
            let plain = cast(&micros, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
            Ok(cast(&plain, &target)?)
        }
        _ => Ok(cast(&array, &target)?),
    }
}

fn to_date(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let array = argument(args, 0, "toDate")?.to_array(rows)?;
    match array.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            let text = cast(&array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
            let mut out = Date32Builder::with_capacity(text.len());
            for row in 0..text.len() {
                out.append_option(
                    (!text.is_null(row))
                        .then(|| parse_datetime(text.value(row)))
                        .flatten()
                        .map(|moment| (moment.date_naive() - epoch).num_days() as i32),
                );
            }
            Ok(Arc::new(out.finish()))
        }
        _ => Ok(cast(&array, &DataType::Date32)?),
    }
}

fn json_keys(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    use datafusion::arrow::array::ListBuilder;
    let owned = text_rows(argument(args, 0, "JSONExtractKeys")?, rows)?;
    let input = owned.as_string::<i32>();
    let steps = path(&args[1..])?;
    let mut builder = ListBuilder::new(StringBuilder::new());
    for row in 0..input.len() {
        if !input.is_null(row) {
            let mut jiter = Jiter::new(input.value(row).as_bytes());
            if let Ok(true) = seek(&mut jiter, &steps)
                && let Ok(Peek::Object) = jiter.peek()
            {
                let mut key = jiter.next_object().ok().flatten().map(str::to_owned);
                while let Some(current) = key {
                    builder.values().append_value(&current);
                    if jiter.next_skip().is_err() {
                        break;
                    }
                    key = jiter.next_key().ok().flatten().map(str::to_owned);
                }
            }
        }
        builder.append(true);
    }
    Ok(Arc::new(builder.finish()))
}

/// `toInt`/`toFloat`: NULL when the value does not convert (ClickHouse's accurateCastOrNull).
fn lenient_cast(args: &[ColumnarValue], rows: usize, target: DataType) -> Result<ArrayRef> {
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
