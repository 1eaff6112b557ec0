//! Dates and date-times: lenient parsing (`toDate`/`toDateTime`), `dateDiff` (unit boundaries
//! crossed, in the zone), `toStartOfWeek`.

use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeZone, Utc};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Builder, Int64Builder, TimestampMicrosecondArray,
    TimestampMicrosecondBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::ColumnarValue;

use super::{argument, zoned};

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
pub(super) fn micros(array: &ArrayRef) -> Result<TimestampMicrosecondArray> {
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

pub(super) fn date_diff(
    args: &[ColumnarValue],
    rows: usize,
    default_zone: chrono_tz::Tz,
) -> Result<ArrayRef> {
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

/// Lenient parsing as ClickHouse's `parseDateTime64BestEffortOrNull` (what HogQL's
/// `toDateTime` of text is): text without an offset is a wall time in `zone` (the project's time
/// zone, as PostHog reads it); `Z` or an offset keeps its own. Anything else is NULL.
fn parse_datetime(text: &str, zone: chrono_tz::Tz) -> Option<DateTime<Utc>> {
    super::best_effort::best_effort(text, zone)
}

pub(super) fn to_datetime(
    args: &[ColumnarValue],
    rows: usize,
    zone: chrono_tz::Tz,
) -> Result<ArrayRef> {
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
                out.append_option(
                    (!dates.is_null(row))
                        .then(|| {
                            let midnight =
                                date_of(dates.value(row)).and_time(chrono::NaiveTime::MIN);
                            super::best_effort::wall_time(midnight, zone)
                                .map(|moment| moment.timestamp_micros())
                        })
                        .flatten(),
                );
            }
            Ok(Arc::new(out.finish()))
        }
        _ => Ok(cast(&array, &target)?),
    }
}

pub(super) fn date_of(days: i32) -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default() + chrono::Duration::days(days as i64)
}

pub(super) fn days_of(date: NaiveDate) -> i32 {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    (date - epoch).num_days() as i32
}

/// Text is read as `toDateOrNull` reads it (its date part only, whatever the zone).
pub(super) fn to_date(args: &[ColumnarValue], rows: usize, _: chrono_tz::Tz) -> Result<ArrayRef> {
    let array = argument(args, 0, "toDate")?.to_array(rows)?;
    match array.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            let text = cast(&array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let mut out = Date32Builder::with_capacity(text.len());
            for row in 0..text.len() {
                out.append_option(
                    (!text.is_null(row))
                        .then(|| super::best_effort::date_text(text.value(row)))
                        .flatten()
                        .map(days_of),
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
pub(super) fn start_of_week(
    args: &[ColumnarValue],
    rows: usize,
    zone: chrono_tz::Tz,
) -> Result<ArrayRef> {
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
