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
use datafusion::arrow::datatypes::{DataType, IntervalUnit, TimeUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
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
    StartOfWeek,
    Interval,
    DateAdd,
    DateSub,
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

/// Every UDF the rewriter may emit, for a session in the project time zone `zone`.
pub fn all(zone: chrono_tz::Tz) -> Vec<ScalarUDF> {
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
        ("hogql_start_of_week", Kind::StartOfWeek),
        ("hogql_interval", Kind::Interval),
        ("hogql_date_add", Kind::DateAdd),
        ("hogql_date_sub", Kind::DateSub),
    ]
    .into_iter()
    .map(|(name, kind)| {
        ScalarUDF::new_from_impl(HogqlFunction {
            name,
            kind,
            signature: Signature::variadic_any(Volatility::Immutable),
            zone: zone.name(),
        })
    })
    .collect()
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
            Kind::JsonKeys => DataType::List(Arc::new(
                datafusion::arrow::datatypes::Field::new_list_field(DataType::Utf8, true),
            )),
            Kind::ToDate | Kind::StartOfWeek => DataType::Date32,
            Kind::ToInt => DataType::Int64,
            Kind::ToFloat => DataType::Float64,
            Kind::ToDateTime => zoned(self.datetime_zone(scalars)?.name()),
            Kind::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
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
        let all_scalar = args
            .args
            .iter()
            .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
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
            Kind::StartOfWeek => start_of_week(&args.args, rows, zone)?,
            Kind::Interval => interval(&args.args, rows)?,
            Kind::DateAdd => date_add(&args.args, rows, zone, 1)?,
            Kind::DateSub => date_add(&args.args, rows, zone, -1)?,
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

/// A quick test that rules a key out without parsing: a key is written `"key"` in JSON text unless
/// escaped, so text without that substring and without any backslash cannot have it. Most rows
/// lack most properties, and two SIMD scans are far cheaper than a parse.
struct KeyProbe {
    quoted: Option<memchr::memmem::Finder<'static>>,
}

impl KeyProbe {
    fn new(steps: &[Step]) -> Self {
        let quoted = match steps.first() {
            Some(Step::Key(key))
                if !key.chars().any(|c| c == '"' || c == '\\' || c.is_control()) =>
            {
                Some(memchr::memmem::Finder::new(format!("\"{key}\"").as_bytes()).into_owned())
            }
            _ => None,
        };
        Self { quoted }
    }

    /// False only when the text surely lacks the first key.
    fn may_have(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        match &self.quoted {
            Some(finder) => finder.find(bytes).is_some() || memchr::memchr(b'\\', bytes).is_some(),
            None => true,
        }
    }
}

fn text_values(kind: Kind, input: &StringArray, steps: &[Step]) -> ArrayRef {
    let missing = if kind == Kind::Property {
        None
    } else {
        Some("")
    };
    let mut builder = StringBuilder::with_capacity(input.len(), input.value_data().len() / 4);
    let probe = KeyProbe::new(steps);
    for row in 0..input.len() {
        if input.is_null(row) {
            builder.append_option(missing);
            continue;
        }
        let text = input.value(row);
        if !probe.may_have(text) {
            builder.append_option(missing);
            continue;
        }
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
    let probe = KeyProbe::new(&steps);
    macro_rules! each {
        ($builder:expr, $missing:expr, $extract:expr) => {{
            let mut builder = $builder;
            for row in 0..input.len() {
                if input.is_null(row) || !probe.may_have(input.value(row)) {
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
    default_zone: chrono_tz::Tz,
) -> Result<(TimestampMicrosecondArray, chrono_tz::Tz)> {
    let array = value.to_array(rows)?;
    let (array, zone) = match array.data_type() {
        DataType::Timestamp(_, Some(zone)) => {
            (array.clone(), zone.parse().unwrap_or(chrono_tz::UTC))
        }
        // Naive date-times are their own wall time.
        DataType::Timestamp(_, None) => (array, chrono_tz::UTC),
        _ => (
            to_datetime(std::slice::from_ref(value), rows, default_zone)?,
            default_zone,
        ),
    };
    Ok((micros(&array)?, zone))
}

/// The raw microseconds (UTC instants, or wall times when naive) of a timestamp array.
fn micros(array: &ArrayRef) -> Result<TimestampMicrosecondArray> {
    let zone = match array.data_type() {
        DataType::Timestamp(_, zone) => zone.clone(),
        _ => None,
    };
    let micros = cast(array, &DataType::Timestamp(TimeUnit::Microsecond, zone))?;
    Ok(micros
        .as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
        .clone()
        .with_timezone_opt(None::<Arc<str>>))
}

fn date_diff(args: &[ColumnarValue], rows: usize, default_zone: chrono_tz::Tz) -> Result<ArrayRef> {
    let unit = match argument(args, 0, "dateDiff")? {
        ColumnarValue::Scalar(
            ScalarValue::Utf8(Some(unit)) | ScalarValue::Utf8View(Some(unit)),
        ) => unit.to_lowercase(),
        _ => return exec_err!("dateDiff: the unit must be a string constant"),
    };
    let (start, zone) = timestamps(argument(args, 1, "dateDiff")?, rows, default_zone)?;
    let (end, _) = timestamps(argument(args, 2, "dateDiff")?, rows, default_zone)?;
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
/// `T`, fractions, a zone suffix; anything else is NULL. Text without an offset is a wall time in
/// `zone` (the project's time zone, as PostHog reads it); `Z` or an offset keeps its own.
fn parse_datetime(text: &str, zone: chrono_tz::Tz) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(parsed) = DateTime::parse_from_rfc3339(text) {
        return Some(parsed.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S%.f%#z",
        "%Y-%m-%d %H:%M:%S%#z",
        "%Y-%m-%dT%H:%M:%S%.f%#z",
        "%Y-%m-%d %H:%M%#z",
        "%Y-%m-%dT%H:%M%#z",
    ] {
        if let Ok(parsed) = DateTime::parse_from_str(text, format) {
            return Some(parsed.with_timezone(&Utc));
        }
    }
    if let Some(naive) = text
        .strip_suffix('Z')
        .or_else(|| text.strip_suffix(" UTC"))
        .and_then(common::dates::naive_datetime)
    {
        return Some(naive.and_utc());
    }
    common::dates::naive_datetime(text)
        .map(|naive| common::dates::wall_time(naive, zone).with_timezone(&Utc))
}

fn to_datetime(args: &[ColumnarValue], rows: usize, zone: chrono_tz::Tz) -> Result<ArrayRef> {
    let array = argument(args, 0, "toDateTime")?.to_array(rows)?;
    let target = zoned(zone.name());
    match array.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            let text = cast(&array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let mut out =
                TimestampMicrosecondBuilder::with_capacity(text.len()).with_timezone(zone.name());
            for row in 0..text.len() {
                out.append_option(
                    (!text.is_null(row))
                        .then(|| parse_datetime(text.value(row), zone))
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
            let plain = plain
                .as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
                .clone()
                .with_timezone(zone.name());
            Ok(Arc::new(plain))
        }
        // A date is its midnight in the zone.
        DataType::Date32 | DataType::Date64 => {
            let dates = cast(&array, &DataType::Date32)?;
            let dates = dates.as_primitive::<datafusion::arrow::datatypes::Date32Type>();
            let mut out =
                TimestampMicrosecondBuilder::with_capacity(dates.len()).with_timezone(zone.name());
            for row in 0..dates.len() {
                out.append_option((!dates.is_null(row)).then(|| {
                    let midnight = date_of(dates.value(row)).and_time(chrono::NaiveTime::MIN);
                    common::dates::wall_time(midnight, zone)
                        .with_timezone(&Utc)
                        .timestamp_micros()
                }));
            }
            Ok(Arc::new(out.finish()))
        }
        _ => Ok(cast(&array, &target)?),
    }
}

fn date_of(days: i32) -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default() + chrono::Duration::days(days as i64)
}

fn days_of(date: NaiveDate) -> i32 {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    (date - epoch).num_days() as i32
}

fn to_date(args: &[ColumnarValue], rows: usize, zone: chrono_tz::Tz) -> Result<ArrayRef> {
    let array = argument(args, 0, "toDate")?.to_array(rows)?;
    match array.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            let text = cast(&array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let mut out = Date32Builder::with_capacity(text.len());
            for row in 0..text.len() {
                out.append_option(
                    (!text.is_null(row))
                        .then(|| parse_datetime(text.value(row), zone))
                        .flatten()
                        .map(|moment| days_of(moment.with_timezone(&zone).date_naive())),
                );
            }
            Ok(Arc::new(out.finish()))
        }
        // Zoned date-times give their local date (Arrow's cast reads them in their zone).
        _ => Ok(cast(&array, &DataType::Date32)?),
    }
}

/// The calendar date of each row: dates as they are, zoned date-times in their zone, naive ones
/// as written, text read as `toDateTime` reads it.
fn local_dates(
    value: &ColumnarValue,
    rows: usize,
    zone: chrono_tz::Tz,
) -> Result<Vec<Option<NaiveDate>>> {
    let array = value.to_array(rows)?;
    let array = match array.data_type() {
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) | DataType::Null => array,
        _ => to_datetime(std::slice::from_ref(value), rows, zone)?,
    };
    let dates = cast(&array, &DataType::Date32)?;
    let dates = dates.as_primitive::<datafusion::arrow::datatypes::Date32Type>();
    Ok((0..dates.len())
        .map(|row| (!dates.is_null(row)).then(|| date_of(dates.value(row))))
        .collect())
}

/// `toStartOfWeek(x, mode)`: the Sunday (even modes) or Monday (odd modes) starting the week of
/// x's calendar date. Works on dates, so a daylight-saving change cannot make it fail.
fn start_of_week(args: &[ColumnarValue], rows: usize, zone: chrono_tz::Tz) -> Result<ArrayRef> {
    let monday = match args.get(1) {
        None => false,
        Some(ColumnarValue::Scalar(mode)) => match mode.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(mode)) => mode.rem_euclid(2) == 1,
            _ => false,
        },
        Some(ColumnarValue::Array(_)) => {
            return exec_err!("toStartOfWeek: the mode must be a constant");
        }
    };
    let dates = local_dates(argument(args, 0, "toStartOfWeek")?, rows, zone)?;
    let mut out = Date32Builder::with_capacity(dates.len());
    for date in dates {
        out.append_option(date.map(|date| {
            let back = if monday {
                date.weekday().num_days_from_monday()
            } else {
                date.weekday().num_days_from_sunday()
            };
            days_of(date) - back as i32
        }));
    }
    Ok(Arc::new(out.finish()))
}

/// A unit of `toInterval*`/`dateAdd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl Unit {
    fn parse(text: &str) -> Option<Unit> {
        let text = text.trim().to_lowercase();
        Some(match text.trim_end_matches('s') {
            "second" => Unit::Second,
            "minute" => Unit::Minute,
            "hour" => Unit::Hour,
            "day" => Unit::Day,
            "week" => Unit::Week,
            "month" => Unit::Month,
            "quarter" => Unit::Quarter,
            "year" => Unit::Year,
            _ => return None,
        })
    }

    /// Days and longer follow the calendar (a day across a DST change is 23 or 25 hours).
    fn calendar(self) -> bool {
        !matches!(self, Unit::Second | Unit::Minute | Unit::Hour)
    }

    /// (months, days, microseconds) of `n` units.
    fn parts(self, n: i64) -> Option<(i64, i64, i64)> {
        Some(match self {
            Unit::Second => (0, 0, n.checked_mul(1_000_000)?),
            Unit::Minute => (0, 0, n.checked_mul(60_000_000)?),
            Unit::Hour => (0, 0, n.checked_mul(3_600_000_000)?),
            Unit::Day => (0, n, 0),
            Unit::Week => (0, n.checked_mul(7)?, 0),
            Unit::Month => (n, 0, 0),
            Unit::Quarter => (n.checked_mul(3)?, 0, 0),
            Unit::Year => (n.checked_mul(12)?, 0, 0),
        })
    }
}

fn unit_argument(scalar: Option<&ScalarValue>, function: &str) -> Result<Unit> {
    match scalar {
        Some(
            ScalarValue::Utf8(Some(text))
            | ScalarValue::Utf8View(Some(text))
            | ScalarValue::LargeUtf8(Some(text)),
        ) => Unit::parse(text)
            .ok_or_else(|| DataFusionError::Plan(format!("{function}: unknown unit '{text}'"))),
        _ => plan_err!("{function}: the unit must be a string constant"),
    }
}

fn unit_column(args: &[ColumnarValue], index: usize, function: &str) -> Result<Unit> {
    match argument(args, index, function)? {
        ColumnarValue::Scalar(scalar) => unit_argument(Some(scalar), function),
        ColumnarValue::Array(_) => exec_err!("{function}: the unit must be a string constant"),
    }
}

/// Whole counts of units (fractions are truncated, as a cast does).
fn counts(value: &ColumnarValue, rows: usize) -> Result<datafusion::arrow::array::Int64Array> {
    let array = value.to_array(rows)?;
    Ok(cast(&array, &DataType::Int64)?.as_primitive().clone())
}

/// `toIntervalDay(n)` and the like, for any integer expression n.
fn interval(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    use datafusion::arrow::array::IntervalMonthDayNanoBuilder;
    use datafusion::arrow::datatypes::IntervalMonthDayNano;
    let unit = unit_column(args, 1, "toInterval")?;
    let n = counts(argument(args, 0, "toInterval")?, rows)?;
    let mut out = IntervalMonthDayNanoBuilder::with_capacity(n.len());
    for row in 0..n.len() {
        if n.is_null(row) {
            out.append_null();
            continue;
        }
        let Some((months, days, micros)) = unit.parts(n.value(row)) else {
            return exec_err!("Interval out of range");
        };
        let (Ok(months), Ok(days), Some(nanos)) = (
            i32::try_from(months),
            i32::try_from(days),
            micros.checked_mul(1000),
        ) else {
            return exec_err!("Interval out of range");
        };
        out.append_value(IntervalMonthDayNano::new(months, days, nanos));
    }
    Ok(Arc::new(out.finish()))
}

fn shift_date(date: NaiveDate, months: i64, days: i64) -> Option<NaiveDate> {
    let date = if months >= 0 {
        date.checked_add_months(chrono::Months::new(u32::try_from(months).ok()?))?
    } else {
        date.checked_sub_months(chrono::Months::new(u32::try_from(-months).ok()?))?
    };
    date.checked_add_signed(chrono::Duration::try_days(days)?)
}

/// `dateAdd`/`dateSub` and `x ± toInterval*(n)`: calendar units move the wall time in x's zone
/// (months clamp to the month's end, as in ClickHouse), shorter units move the instant. Dates
/// stay dates for calendar units.
fn date_add(
    args: &[ColumnarValue],
    rows: usize,
    zone: chrono_tz::Tz,
    sign: i64,
) -> Result<ArrayRef> {
    let unit = unit_column(args, 2, "dateAdd")?;
    let n = counts(argument(args, 1, "dateAdd")?, rows)?;
    let value = argument(args, 0, "dateAdd")?;
    let array = value.to_array(rows)?;
    let out_of_range = || DataFusionError::Execution("dateAdd: date out of range".into());
    let parts = |row: usize| -> Result<Option<(i64, i64, i64)>> {
        if n.is_null(row) {
            return Ok(None);
        }
        let count = n.value(row).checked_mul(sign).ok_or_else(out_of_range)?;
        unit.parts(count).map(Some).ok_or_else(out_of_range)
    };
    if matches!(array.data_type(), DataType::Date32 | DataType::Date64) && unit.calendar() {
        let dates = cast(&array, &DataType::Date32)?;
        let dates = dates.as_primitive::<datafusion::arrow::datatypes::Date32Type>();
        let mut out = Date32Builder::with_capacity(dates.len());
        for row in 0..dates.len() {
            match (dates.is_null(row), parts(row)?) {
                (false, Some((months, days, _))) => out.append_value(days_of(
                    shift_date(date_of(dates.value(row)), months, days).ok_or_else(out_of_range)?,
                )),
                _ => out.append_null(),
            }
        }
        return Ok(Arc::new(out.finish()));
    }
    let (array, tz) = match array.data_type() {
        DataType::Timestamp(_, Some(name)) => {
            let tz: chrono_tz::Tz = name.parse().unwrap_or(chrono_tz::UTC);
            (array.clone(), Some(tz))
        }
        DataType::Timestamp(_, None) => (array, None),
        _ => (
            to_datetime(std::slice::from_ref(value), rows, zone)?,
            Some(zone),
        ),
    };
    let values = micros(&array)?;
    let mut out = TimestampMicrosecondBuilder::with_capacity(values.len());
    for row in 0..values.len() {
        let Some((months, days, micros)) = parts(row)? else {
            out.append_null();
            continue;
        };
        if values.is_null(row) {
            out.append_null();
            continue;
        }
        let mut moment = values.value(row);
        if months != 0 || days != 0 {
            let instant =
                DateTime::<Utc>::from_timestamp_micros(moment).ok_or_else(out_of_range)?;
            let wall = match tz {
                Some(tz) => instant.with_timezone(&tz).naive_local(),
                None => instant.naive_utc(),
            };
            let date = shift_date(wall.date(), months, days).ok_or_else(out_of_range)?;
            let wall = date.and_time(wall.time());
            moment = match tz {
                Some(tz) => common::dates::wall_time(wall, tz).with_timezone(&Utc),
                None => wall.and_utc(),
            }
            .timestamp_micros();
        }
        out.append_value(moment.checked_add(micros).ok_or_else(out_of_range)?);
    }
    let out = out.finish();
    Ok(Arc::new(match tz {
        Some(tz) => out.with_timezone(tz.name()),
        None => out,
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn property(texts: &[Option<&str>], key: &str) -> Vec<Option<String>> {
        let input = StringArray::from(texts.to_vec());
        let output = text_values(Kind::Property, &input, &[Step::Key(key.into())]);
        let output = output.as_string::<i32>();
        (0..output.len())
            .map(|row| (!output.is_null(row)).then(|| output.value(row).to_owned()))
            .collect()
    }

    #[test]
    fn the_key_probe_never_hides_a_key() {
        let texts = [
            Some(r#"{"plan": "pro", "amount": 12}"#),
            Some(r#"{"plan": "pro"}"#),
            // Escaped in the text: the probe must not rule it out.
            Some(r#"{"\u0061mount": 7}"#),
            // The name inside a value is not the key.
            Some(r#"{"note": "amount"}"#),
            None,
        ];
        assert_eq!(
            property(&texts, "amount"),
            [Some("12".into()), None, Some("7".into()), None, None]
        );
        // Keys the probe cannot quote are looked up by parsing.
        assert_eq!(
            property(&[Some(r#"{"a\"b": 1}"#)], "a\"b"),
            [Some("1".into())]
        );
    }
}
