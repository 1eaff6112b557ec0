//! Interval arithmetic: `toInterval*(n)` and `dateAdd`/`dateSub` (also `x ± toInterval*(n)`).

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Builder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::ColumnarValue;

use super::argument;
use super::dates::{date_of, days_of, micros, to_datetime};

/// A unit of `toInterval*`/`dateAdd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
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
    pub(super) fn parse(text: &str) -> Option<Unit> {
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
    pub(super) fn calendar(self) -> bool {
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

pub(super) fn unit_argument(scalar: Option<&ScalarValue>, function: &str) -> Result<Unit> {
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
pub(super) fn interval(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
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
pub(super) fn date_add(
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
