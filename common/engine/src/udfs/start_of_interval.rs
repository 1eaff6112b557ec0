//! `toStartOfInterval(t, INTERVAL n unit[, zone])` and `toStartOfFiveMinutes` and the like, with
//! ClickHouse's arithmetic: seconds and minutes round the unix time down, hours round the hours
//! since the local midnight, days the days since 1970-01-01, weeks count from Monday 1970-01-05,
//! months and years from January 1900. Weeks and longer give dates; shorter units date-times
//! (DateTime, whole seconds) in the value's zone, or the zone given.

use super::intervals::Unit;
use std::sync::Arc;

use chrono::{DateTime, Datelike, Days, NaiveDate, NaiveTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Date32Builder, TimestampSecondBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::best_effort::{local, wall_time};
use super::date_udf::{constant_text, text_argument, udf, zone_of_type};
use super::dates::{date_of, days_of, to_datetime};

pub(super) fn functions(zone: Tz) -> Vec<ScalarUDF> {
    vec![udf(
        "hogql_start_of_interval",
        zone,
        interval_type,
        start_of_interval,
    )]
}

fn unit(text: Option<&str>) -> Result<Unit> {
    let Some(text) = text else {
        return plan_err!("toStartOfInterval: the interval must be a constant");
    };
    match Unit::parse(text) {
        Some(unit) => Ok(unit),
        None => plan_err!("toStartOfInterval: the unit '{text}' is not supported"),
    }
}

fn zone_argument(text: Option<&ScalarValue>, present: bool) -> Result<Option<Tz>> {
    match (constant_text(text), present) {
        (Some(name), _) => name
            .parse()
            .map(Some)
            .map_err(|_| DataFusionError::Plan(format!("Unknown time zone '{name}'"))),
        (None, true) => plan_err!("toStartOfInterval: the time zone must be a string constant"),
        (None, false) => Ok(None),
    }
}

fn interval_type(
    types: &[DataType],
    scalars: &[Option<&ScalarValue>],
    project: Tz,
) -> Result<DataType> {
    let unit = unit(constant_text(scalars.get(2).copied().flatten())).or_else(|error| {
        if scalars.is_empty() {
            Ok(Unit::Second)
        } else {
            Err(error)
        }
    })?;
    let Some(value) = types.first() else {
        return plan_err!("toStartOfInterval expects a date-time and an interval");
    };
    if !matches!(
        value,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) | DataType::Null
    ) {
        return plan_err!("toStartOfInterval takes a date or a date-time, not {value}");
    }
    if matches!(unit, Unit::Week | Unit::Month | Unit::Quarter | Unit::Year) {
        return Ok(DataType::Date32);
    }
    let zone = match zone_argument(scalars.get(3).copied().flatten(), scalars.len() > 3)? {
        Some(zone) => zone,
        None => zone_of_type(value, project),
    };
    Ok(DataType::Timestamp(
        TimeUnit::Second,
        Some(zone.name().into()),
    ))
}

fn start_of_interval(args: &[ColumnarValue], rows: usize, project: Tz) -> Result<ArrayRef> {
    let unit = unit(text_argument(args, 2))?;
    let count = match args.get(1) {
        Some(ColumnarValue::Scalar(scalar)) => match scalar.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(n)) if n > 0 => n,
            _ => return exec_err!("toStartOfInterval: the interval must be a positive constant"),
        },
        _ => return exec_err!("toStartOfInterval: the interval must be a positive constant"),
    };
    let Some(value) = args.first() else {
        return exec_err!("toStartOfInterval expects a date-time and an interval");
    };
    let array = value.to_array(rows)?;
    let explicit = match args.get(3) {
        Some(ColumnarValue::Scalar(scalar)) => zone_argument(Some(scalar), true)?,
        Some(ColumnarValue::Array(_)) => {
            return exec_err!("toStartOfInterval: the time zone must be a string constant");
        }
        None => None,
    };
    let zone = explicit.unwrap_or_else(|| zone_of_type(array.data_type(), project));
    // Instants (UTC seconds) of every row: dates are their midnight in the project's zone.
    let instants = match array.data_type() {
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) => {
            let timestamps = if matches!(array.data_type(), DataType::Timestamp(_, _)) {
                array.clone()
            } else {
                to_datetime(std::slice::from_ref(value), rows, zone)?
            };
            let micros = cast(
                &timestamps,
                &DataType::Timestamp(TimeUnit::Microsecond, None),
            )?;
            let micros = micros.as_primitive::<TimestampMicrosecondType>();
            (0..micros.len())
                .map(|i| (!micros.is_null(i)).then(|| micros.value(i)))
                .collect::<Vec<_>>()
        }
        DataType::Null => vec![None; array.len()],
        other => return exec_err!("toStartOfInterval takes a date or a date-time, not {other}"),
    };
    let out_of_range = || DataFusionError::Execution("toStartOfInterval: date out of range".into());
    if matches!(unit, Unit::Week | Unit::Month | Unit::Quarter | Unit::Year) {
        let mut out = Date32Builder::with_capacity(instants.len());
        for micros in instants {
            let Some(micros) = micros else {
                out.append_null();
                continue;
            };
            let moment = DateTime::<Utc>::from_timestamp_micros(micros).ok_or_else(out_of_range)?;
            let date = local(moment, zone).date();
            out.append_value(start_date(date, unit, count).ok_or_else(out_of_range)?);
        }
        return Ok(Arc::new(out.finish()));
    }
    let mut out = TimestampSecondBuilder::with_capacity(instants.len());
    for micros in instants {
        let Some(micros) = micros else {
            out.append_null();
            continue;
        };
        let seconds = micros.div_euclid(1_000_000);
        let start = match unit {
            Unit::Second => seconds - seconds.rem_euclid(count),
            Unit::Minute => seconds - seconds.rem_euclid(count * 60),
            Unit::Hour | Unit::Day => {
                let moment =
                    DateTime::<Utc>::from_timestamp(seconds, 0).ok_or_else(out_of_range)?;
                let wall = local(moment, zone);
                if unit == Unit::Hour {
                    hour_interval(seconds, wall.date(), count, zone).ok_or_else(out_of_range)?
                } else {
                    let days = i64::from(days_of(wall.date()));
                    let days =
                        i32::try_from(days - days.rem_euclid(count)).map_err(|_| out_of_range())?;
                    let start = date_of(days).and_time(NaiveTime::MIN);
                    wall_time(start, zone).ok_or_else(out_of_range)?.timestamp()
                }
            }
            _ => return exec_err!("toStartOfInterval: unexpected unit"),
        };
        out.append_value(start);
    }
    Ok(Arc::new(out.finish().with_timezone(zone.name())))
}

/// ClickHouse's `toStartOfHourInterval`: the hours since the local midnight rounded down to
/// `count`, with the day's offset change (if any) aligned to and cut off at as ClickHouse does.
fn hour_interval(t: i64, date: NaiveDate, count: i64, zone: Tz) -> Option<i64> {
    let offset = |at: i64| -> Option<i64> {
        let moment = DateTime::<Utc>::from_timestamp(at, 0)?;
        Some(i64::from(
            zone.offset_from_utc_datetime(&moment.naive_utc())
                .fix()
                .local_minus_utc(),
        ))
    };
    let day_start = wall_time(date.and_time(NaiveTime::MIN), zone)?.timestamp();
    let next_start = wall_time(date.succ_opt()?.and_time(NaiveTime::MIN), zone)?.timestamp();
    let (before, after) = (offset(day_start)?, offset(next_start - 1)?);
    let width = count * 3600;
    let mut time = t - day_start;
    if before == after {
        return Some(day_start + time - time.rem_euclid(width));
    }
    // The change happens on a quarter hour: find the first quarter with the new offset.
    let mut change = day_start;
    while change < next_start && offset(change)? == before {
        change += 900;
    }
    let at_change = change - day_start;
    let amount = after - before;
    if time >= at_change {
        time += amount;
        time -= time.rem_euclid(width);
        if time >= at_change {
            time -= amount;
            if time < at_change {
                time = at_change;
            }
        }
    } else {
        time -= time.rem_euclid(width);
    }
    Some(day_start + time)
}

/// The first day of the interval of `count` weeks, months, quarters or years holding `date`.
fn start_date(date: NaiveDate, unit: Unit, count: i64) -> Option<i32> {
    match unit {
        Unit::Week => {
            if count == 1 {
                let back = date.weekday().num_days_from_monday();
                return Some(days_of(date.checked_sub_days(Days::new(back.into()))?));
            }
            let days = i64::from(days_of(date));
            let width = count * 7;
            i32::try_from(4 + (days - 4).div_euclid(width) * width).ok()
        }
        Unit::Month | Unit::Quarter => {
            let width = if unit == Unit::Quarter {
                count * 3
            } else {
                count
            };
            let months = (i64::from(date.year()) - 1900) * 12 + i64::from(date.month0());
            let months = months - months.rem_euclid(width);
            let year = i32::try_from(1900 + months.div_euclid(12)).ok()?;
            let month = u32::try_from(months.rem_euclid(12) + 1).ok()?;
            Some(days_of(NaiveDate::from_ymd_opt(year, month, 1)?))
        }
        Unit::Year => {
            let years = i64::from(date.year()) - 1900;
            let year = i32::try_from(1900 + years - years.rem_euclid(count)).ok()?;
            Some(days_of(NaiveDate::from_ymd_opt(year, 1, 1)?))
        }
        _ => None,
    }
}
