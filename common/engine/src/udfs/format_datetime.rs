//! Date-times as text, as ClickHouse writes them: `formatDateTime(t, format)` (its MySQL-style
//! specifiers, in t's zone), `toString` of dates (`2024-03-10`) and date-times
//! (`2024-03-10 15:30:00`, six fraction digits for the DateTime64(6) ones), and `timeZoneOf`.

use std::fmt::Write;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDateTime, Offset, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::date_udf::{constant_text, text_argument, udf, zone_of_type};
use super::dates::date_of;

pub(super) fn functions(zone: Tz) -> Vec<ScalarUDF> {
    vec![
        udf("hogql_format_datetime", zone, format_type, format_datetime),
        udf("hogql_date_string", zone, string_type, date_string),
        udf("hogql_time_zone_of", zone, zone_of_type_check, time_zone_of),
    ]
}

/// Every value of a date or date-time column: its wall time in its zone, and whether it has a
/// time of day and a fraction (DateTime64(6)).
struct Walls {
    values: Vec<Option<(NaiveDateTime, i32)>>,
    dated_only: bool,
    fraction: bool,
}

fn walls(value: &ColumnarValue, rows: usize, project: Tz, function: &str) -> Result<Walls> {
    let array = value.to_array(rows)?;
    match array.data_type() {
        DataType::Date32 | DataType::Date64 => {
            let dates = cast(&array, &DataType::Date32)?;
            let dates = dates.as_primitive::<Date32Type>();
            Ok(Walls {
                values: (0..dates.len())
                    .map(|i| {
                        (!dates.is_null(i))
                            .then(|| (date_of(dates.value(i)).and_time(chrono::NaiveTime::MIN), 0))
                    })
                    .collect(),
                dated_only: true,
                fraction: false,
            })
        }
        DataType::Timestamp(unit, _) => {
            let zone = zone_of_type(array.data_type(), project);
            let fraction = !matches!(unit, TimeUnit::Second);
            let micros = cast(&array, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
            let micros = micros.as_primitive::<TimestampMicrosecondType>();
            Ok(Walls {
                values: (0..micros.len())
                    .map(|i| {
                        if micros.is_null(i) {
                            return None;
                        }
                        let moment = DateTime::<Utc>::from_timestamp_micros(micros.value(i))?;
                        let local = zone.from_utc_datetime(&moment.naive_utc());
                        Some((local.naive_local(), local.offset().fix().local_minus_utc()))
                    })
                    .collect(),
                dated_only: false,
                fraction,
            })
        }
        DataType::Null => Ok(Walls {
            values: vec![None; array.len()],
            dated_only: false,
            fraction: false,
        }),
        other => exec_err!("{function} takes a date or a date-time, not {other}"),
    }
}

fn format_type(types: &[DataType], scalars: &[Option<&ScalarValue>], _: Tz) -> Result<DataType> {
    match types.first() {
        Some(DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) | DataType::Null) => {}
        Some(other) => return plan_err!("formatDateTime takes a date or a date-time, not {other}"),
        None => return plan_err!("formatDateTime expects 2 arguments"),
    }
    if let Some(format) = constant_text(scalars.get(1).copied().flatten()) {
        check_format(
            format,
            matches!(types.first(), Some(DataType::Date32 | DataType::Date64)),
        )?;
    } else if !scalars.is_empty() {
        return plan_err!("formatDateTime: the format must be a string constant");
    }
    Ok(DataType::Utf8)
}

const SUPPORTED: &str = "abcCdDefFgGhHiIjklmMnpQrRsStTuVwWyYz%";

fn check_format(format: &str, date: bool) -> Result<()> {
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        match chars.next() {
            Some('z') if date => {
                return plan_err!("formatDateTime: %z needs a date-time, not a date");
            }
            Some(spec) if SUPPORTED.contains(spec) => {}
            Some(spec) => {
                return plan_err!("formatDateTime: the specifier %{spec} is not supported");
            }
            None => return plan_err!("formatDateTime: the format ends with a lone %"),
        }
    }
    Ok(())
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// `t` written with ClickHouse's specifiers (checked by [`check_format`]).
fn write_format(out: &mut String, format: &str, t: NaiveDateTime, offset: i32) {
    let hour12 = match t.hour() % 12 {
        0 => 12,
        h => h,
    };
    let month = MONTHS[t.month0() as usize];
    let weekday = WEEKDAYS[t.weekday().num_days_from_monday() as usize];
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let _ = match chars.next() {
            Some('a') => write!(out, "{}", &weekday[..3]),
            Some('b') => write!(out, "{}", &month[..3]),
            Some('c') | Some('m') => write!(out, "{:02}", t.month()),
            Some('C') => write!(out, "{:02}", t.year() / 100),
            Some('d') => write!(out, "{:02}", t.day()),
            Some('D') => write!(out, "{:02}/{:02}/{:02}", t.month(), t.day(), t.year() % 100),
            Some('e') => write!(out, "{}", t.day()),
            Some('f') => write!(out, "{:06}", t.nanosecond() / 1000 % 1_000_000),
            Some('F') => write!(out, "{:04}-{:02}-{:02}", t.year(), t.month(), t.day()),
            Some('g') => write!(out, "{:02}", t.iso_week().year() % 100),
            Some('G') => write!(out, "{:04}", t.iso_week().year()),
            Some('h') | Some('I') | Some('l') => write!(out, "{hour12:02}"),
            Some('H') | Some('k') => write!(out, "{:02}", t.hour()),
            Some('i') => write!(out, "{:02}", t.minute()),
            Some('j') => write!(out, "{:03}", t.ordinal()),
            Some('M') => write!(out, "{month}"),
            Some('n') => writeln!(out),
            Some('p') => write!(out, "{}", if t.hour() < 12 { "AM" } else { "PM" }),
            Some('Q') => write!(out, "{}", t.month0() / 3 + 1),
            Some('r') => write!(
                out,
                "{hour12:02}:{:02} {}",
                t.minute(),
                if t.hour() < 12 { "AM" } else { "PM" }
            ),
            Some('R') => write!(out, "{:02}:{:02}", t.hour(), t.minute()),
            Some('s') | Some('S') => write!(out, "{:02}", t.second()),
            Some('t') => write!(out, "\t"),
            Some('T') => write!(out, "{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()),
            Some('u') => write!(out, "{}", t.weekday().number_from_monday()),
            Some('V') => write!(out, "{:02}", t.iso_week().week()),
            Some('w') => write!(out, "{}", t.weekday().num_days_from_sunday()),
            Some('W') => write!(out, "{weekday}"),
            Some('y') => write!(out, "{:02}", t.year() % 100),
            Some('Y') => write!(out, "{:04}", t.year()),
            Some('%') => write!(out, "%"),
            Some('z') => {
                let sign = if offset < 0 { '-' } else { '+' };
                let offset = offset.abs();
                write!(out, "{sign}{:02}{:02}", offset / 3600, offset % 3600 / 60)
            }
            Some(other) => write!(out, "%{other}"),
            None => write!(out, "%"),
        };
    }
}

fn format_datetime(args: &[ColumnarValue], rows: usize, zone: Tz) -> Result<ArrayRef> {
    let Some(value) = args.first() else {
        return exec_err!("formatDateTime expects 2 arguments");
    };
    let Some(format) = text_argument(args, 1) else {
        return exec_err!("formatDateTime: the format must be a string constant");
    };
    let walls = walls(value, rows, zone, "formatDateTime")?;
    check_format(format, walls.dated_only)?;
    Ok(formatted(walls, format))
}

/// `toString`'s date part: dates and date-times become ClickHouse's text, other values pass
/// through unchanged (the caller casts them).
fn string_type(types: &[DataType], _: &[Option<&ScalarValue>], _: Tz) -> Result<DataType> {
    Ok(match types.first() {
        Some(DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)) => DataType::Utf8,
        Some(other) => other.clone(),
        None => return plan_err!("toString expects 1 argument"),
    })
}

fn date_string(args: &[ColumnarValue], rows: usize, zone: Tz) -> Result<ArrayRef> {
    let Some(value) = args.first() else {
        return exec_err!("toString expects 1 argument");
    };
    let array = value.to_array(rows)?;
    if !matches!(
        array.data_type(),
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
    ) {
        return Ok(array);
    }
    let walls = walls(value, rows, zone, "toString")?;
    let format = if walls.dated_only {
        "%F"
    } else if walls.fraction {
        "%F %T.%f"
    } else {
        "%F %T"
    };
    Ok(formatted(walls, format))
}

/// Each wall time written with `format` (ClickHouse's specifiers); NULL stays NULL.
fn formatted(walls: Walls, format: &str) -> ArrayRef {
    let mut out = StringBuilder::with_capacity(walls.values.len(), walls.values.len() * 24);
    let mut text = String::new();
    for value in walls.values {
        match value {
            Some((t, offset)) => {
                text.clear();
                write_format(&mut text, format, t, offset);
                out.append_value(&text);
            }
            None => out.append_null(),
        }
    }
    Arc::new(out.finish())
}

fn zone_of_type_check(types: &[DataType], _: &[Option<&ScalarValue>], _: Tz) -> Result<DataType> {
    match types.first() {
        Some(DataType::Timestamp(_, _) | DataType::Null) => Ok(DataType::Utf8),
        Some(other) => plan_err!("timeZoneOf takes a date-time, not {other}"),
        None => plan_err!("timeZoneOf expects 1 argument"),
    }
}

fn time_zone_of(args: &[ColumnarValue], rows: usize, zone: Tz) -> Result<ArrayRef> {
    let Some(value) = args.first() else {
        return exec_err!("timeZoneOf expects 1 argument");
    };
    let array = value.to_array(rows)?;
    let name = match array.data_type() {
        DataType::Timestamp(_, Some(name)) => match name.parse::<Tz>() {
            Ok(tz) => tz.name().to_owned(),
            // A fixed offset (`+00:00`, what `now()` is typed with) is the project's zone.
            Err(_) if name.as_ref() == "+00:00" || name.as_ref() == "UTC" => "UTC".to_owned(),
            Err(_) => zone.name().to_owned(),
        },
        _ => zone.name().to_owned(),
    };
    let mut out = StringBuilder::with_capacity(array.len(), array.len() * name.len());
    for _ in 0..array.len() {
        out.append_value(&name);
    }
    Ok(Arc::new(out.finish()))
}
