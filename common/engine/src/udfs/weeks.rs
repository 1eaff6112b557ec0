//! Week numbers as ClickHouse counts them: `toWeek(d, mode)` (MySQL's modes 0-9), `toISOWeek`
//! (mode 3) and `toISOYear`, on the calendar date of the value (in its zone).

use std::sync::Arc;

use chrono::{Datelike, NaiveDate};
use chrono_tz::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt8Builder, UInt16Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::date_udf::udf;
use super::dates::{date_of, to_datetime};

pub(super) fn functions(zone: Tz) -> Vec<ScalarUDF> {
    vec![
        udf("hogql_week", zone, week_type, week),
        udf("hogql_iso_year", zone, iso_year_type, iso_year),
    ]
}

fn check(types: &[DataType], function: &str) -> Result<()> {
    match types.first() {
        Some(DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) | DataType::Null) => {
            Ok(())
        }
        Some(other) => plan_err!("{function} takes a date or a date-time, not {other}"),
        None => plan_err!("{function} expects a date"),
    }
}

fn week_type(types: &[DataType], _: &[Option<&ScalarValue>], _: Tz) -> Result<DataType> {
    check(types, "toWeek")?;
    Ok(DataType::UInt8)
}

fn iso_year_type(types: &[DataType], _: &[Option<&ScalarValue>], _: Tz) -> Result<DataType> {
    check(types, "toISOYear")?;
    Ok(DataType::UInt16)
}

/// The calendar date of each row (date-times in their zone).
fn dates(value: &ColumnarValue, rows: usize, zone: Tz) -> Result<Vec<Option<NaiveDate>>> {
    let array = value.to_array(rows)?;
    let array = match array.data_type() {
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) | DataType::Null => array,
        _ => to_datetime(std::slice::from_ref(value), rows, zone)?,
    };
    let dates = cast(&array, &DataType::Date32)?;
    let dates = dates.as_primitive::<Date32Type>();
    Ok((0..dates.len())
        .map(|i| (!dates.is_null(i)).then(|| date_of(dates.value(i))))
        .collect())
}

fn week(args: &[ColumnarValue], rows: usize, zone: Tz) -> Result<ArrayRef> {
    let mode = match args.get(1) {
        None => 0,
        Some(ColumnarValue::Scalar(scalar)) => match scalar.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(mode)) => (mode.rem_euclid(16)) as u8,
            _ => 0,
        },
        Some(ColumnarValue::Array(_)) => return exec_err!("toWeek: the mode must be a constant"),
    };
    let Some(value) = args.first() else {
        return exec_err!("toWeek expects a date");
    };
    let mut out = UInt8Builder::with_capacity(rows);
    for date in dates(value, rows, zone)? {
        out.append_option(date.map(|date| year_week(date, mode).1 as u8));
    }
    Ok(Arc::new(out.finish()))
}

fn iso_year(args: &[ColumnarValue], rows: usize, zone: Tz) -> Result<ArrayRef> {
    let Some(value) = args.first() else {
        return exec_err!("toISOYear expects a date");
    };
    let mut out = UInt16Builder::with_capacity(rows);
    for date in dates(value, rows, zone)? {
        out.append_option(date.map(|date| date.iso_week().year() as u16));
    }
    Ok(Arc::new(out.finish()))
}

const MONDAY_FIRST: u8 = 1;
const YEAR: u8 = 2;
const FIRST_WEEKDAY: u8 = 4;
const NEWYEAR_DAY: u8 = 8;

fn days_in_year(year: i32) -> i64 {
    if NaiveDate::from_ymd_opt(year, 2, 29).is_some() {
        366
    } else {
        365
    }
}

fn day_number(date: NaiveDate) -> i64 {
    i64::from(date.num_days_from_ce())
}

/// ClickHouse's `toYearWeek(date, mode)` (MySQL's `calc_week`).
fn year_week(date: NaiveDate, mode: u8) -> (i32, i64) {
    let newyear_day = mode & NEWYEAR_DAY != 0;
    let mut mode = mode & 7;
    if mode & MONDAY_FIRST == 0 {
        mode ^= FIRST_WEEKDAY;
    }
    let monday_first = mode & MONDAY_FIRST != 0;
    let mut week_year = mode & YEAR != 0;
    let first_weekday = mode & FIRST_WEEKDAY != 0;
    let weekday_of = |d: NaiveDate| -> i64 {
        if monday_first {
            i64::from(d.weekday().num_days_from_monday())
        } else {
            i64::from(d.weekday().num_days_from_sunday())
        }
    };
    if newyear_day {
        // Week 1 holds January 1st (ClickHouse's `toYearWeekOfNewyearMode`).
        let shift = if monday_first { 0 } else { 1 };
        let dow = |d: NaiveDate| i64::from(d.weekday().number_from_monday());
        let year = (date + chrono::Days::new(shift))
            .weekday()
            .number_from_monday();
        let year = (date + chrono::Days::new(7 - u64::from(year))).year();
        let Some(first) = NaiveDate::from_ymd_opt(year, 1, 1) else {
            return (year, 0);
        };
        let start = |d: NaiveDate| {
            if monday_first {
                day_number(d) - dow(d) + 1
            } else if dow(d) != 7 {
                day_number(d) - dow(d)
            } else {
                day_number(d)
            }
        };
        return (year, (start(date) - start(first)) / 7 + 1);
    }
    let mut year = date.year();
    let daynr = day_number(date);
    let Some(january) = NaiveDate::from_ymd_opt(year, 1, 1) else {
        return (year, 0);
    };
    let mut first_daynr = day_number(january);
    let mut weekday = weekday_of(january);
    if date.month() == 1 && i64::from(date.day()) <= 7 - weekday {
        if !week_year && ((first_weekday && weekday != 0) || (!first_weekday && weekday >= 4)) {
            return (year, 0);
        }
        week_year = true;
        year -= 1;
        let days = days_in_year(year);
        first_daynr -= days;
        weekday = (weekday + 53 * 7 - days).rem_euclid(7);
    }
    let days = if (first_weekday && weekday != 0) || (!first_weekday && weekday >= 4) {
        daynr - (first_daynr + (7 - weekday))
    } else {
        daynr - (first_daynr - weekday)
    };
    if week_year && days >= 52 * 7 {
        let weekday = (weekday + days_in_year(year)).rem_euclid(7);
        if (!first_weekday && weekday < 4) || (first_weekday && weekday == 0) {
            return (year + 1, 1);
        }
    }
    (year, days / 7 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_weeks_are_mode_3() {
        for (y, m, d) in [(2024, 12, 30), (2024, 1, 1), (2021, 1, 3), (2020, 12, 31)] {
            let date = NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default();
            assert_eq!(
                year_week(date, 3).1,
                i64::from(date.iso_week().week()),
                "{date}"
            );
        }
    }
}
