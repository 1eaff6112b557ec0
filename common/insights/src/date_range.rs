//! `dateRange` (absolute or relative bounds, in the project's time zone) and interval buckets.
//!
//! The rules follow PostHog's `QueryDateRange`:
//! - `date_from` defaults to `-7d`; `date_to` defaults to now.
//! - Values are relative (`-7d`, `-24h`, `-1w`, `-1m`, `-1q`, `-1y`, `-30M` minutes, with an
//!   optional `Start`/`End` suffix: `mStart`, `-1mStart`, `dStart`, `yStart`...), `all`, or ISO
//!   dates/datetimes. A value without an offset is read in the project's time zone.
//! - Unless `explicitDate`, `from` rounds down to the start of its day (hour for the `hour`
//!   interval, minute for `minute`) and `to` up to the end of its day; for hour/minute intervals
//!   `to` rounds up to the end of its hour/minute only when it is relative (or missing).
//! - Buckets are interval starts in the project's time zone. Week and month buckets start at
//!   [`bucket_start`] of `from`, which can be before `from` (as PostHog does).
//!
//! Times handed around are `DateTime<Tz>` in the project's zone; local-time arithmetic (days,
//! weeks, months) is done on wall-clock dates so DST days are 23 or 25 hours long.

use chrono::{
    DateTime, Datelike, Duration, Months, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Timelike,
    Utc,
};
use chrono_tz::Tz;
use serde_json::Value;

use crate::{Context, Invalid};

/// A bucket size (`interval` of insights, `period` of retention).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    Minute,
    Hour,
    Day,
    Week,
    Month,
}

/// Resolved bounds, as instants: `from <= timestamp <= to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// The `from` of `date_from: "all"`: callers that need the earliest event (trends buckets) test
/// [`Range::from_all`] and look it up themselves.
const ALL_FROM: DateTime<Utc> = DateTime::UNIX_EPOCH;

/// Bucket lists longer than this are refused (a minute interval over a year, ...).
pub const MAX_BUCKETS: usize = 10_000;

impl Interval {
    /// Parses `minute`/`hour`/`day`/`week`/`month`, case-insensitively (retention's `period`
    /// is spelled `Day`, `Week`...).
    pub fn parse(text: &str) -> Option<Interval> {
        match text.to_ascii_lowercase().as_str() {
            "minute" => Some(Interval::Minute),
            "hour" => Some(Interval::Hour),
            "day" => Some(Interval::Day),
            "week" => Some(Interval::Week),
            "month" => Some(Interval::Month),
            _ => None,
        }
    }

    /// Reads an optional interval field (`interval`, `retentionFilter.period`): missing or null
    /// gives `default`, anything else unknown is an [`Invalid`] naming `attr`.
    pub fn from_field(
        value: Option<&Value>,
        default: Interval,
        attr: &str,
    ) -> Result<Interval, Invalid> {
        match value {
            None | Some(Value::Null) => Ok(default),
            Some(Value::String(text)) => Interval::parse(text).ok_or_else(|| {
                Invalid::new(
                    attr,
                    format!("Unknown interval '{text}': use minute, hour, day, week or month."),
                )
            }),
            Some(_) => Err(Invalid::new(attr, "The interval must be a string.")),
        }
    }

    /// The lower-case name (`day`), as PostHog echoes it.
    pub fn name(self) -> &'static str {
        match self {
            Interval::Minute => "minute",
            Interval::Hour => "hour",
            Interval::Day => "day",
            Interval::Week => "week",
            Interval::Month => "month",
        }
    }

    /// A dialect expression giving the start of the bucket of `timestamp` (a dialect expression
    /// of a UTC timestamp) in the project's time zone. Its values read back with
    /// [`parse_engine_time`] and [`bucket_start`].
    pub fn bucket_sql(self, timestamp: &str, ctx: &Context) -> String {
        let local = format!(
            "toTimeZone({timestamp}, {})",
            crate::sql_text::string(ctx.timezone.name())
        );
        match self {
            Interval::Minute => format!("toStartOfMinute({local})"),
            Interval::Hour => format!("toStartOfHour({local})"),
            Interval::Day => format!("toStartOfDay({local})"),
            // ClickHouse mode 0 starts weeks on Sunday, mode 3 on Monday.
            Interval::Week => {
                let mode = if ctx.week_start_day == 1 { 3 } else { 0 };
                format!("toStartOfWeek({local}, {mode})")
            }
            Interval::Month => format!("toStartOfMonth({local})"),
        }
    }
}

impl Range {
    /// True when `date_from` was `all` (`from` is then the Unix epoch).
    pub fn from_all(&self) -> bool {
        self.from == ALL_FROM
    }

    /// `column >= from AND column <= to` with both bounds as UTC literals.
    pub fn sql_condition(&self, column: &str) -> String {
        format!(
            "{column} >= {} AND {column} <= {}",
            sql_datetime(self.from),
            sql_datetime(self.to)
        )
    }

    /// The starts of every bucket from the one holding `from` through the one holding `to`.
    pub fn buckets(
        &self,
        interval: Interval,
        ctx: &Context,
        attr: &str,
    ) -> Result<Vec<DateTime<Tz>>, Invalid> {
        let mut buckets = Vec::new();
        let mut start = bucket_start(self.from, interval, ctx);
        while start.with_timezone(&Utc) <= self.to {
            if buckets.len() >= MAX_BUCKETS {
                return Err(Invalid::new(
                    attr,
                    format!(
                        "The date range holds more than {MAX_BUCKETS} {} buckets: use a larger interval or a shorter range.",
                        interval.name()
                    ),
                ));
            }
            buckets.push(start);
            start = next_bucket(start, interval);
        }
        Ok(buckets)
    }

    /// The previous period PostHog compares against (`compareFilter.compare`): as long as this
    /// one, ending just before it, aligned to day (hour) boundaries. For `-7d`, `-14d`... (which
    /// include today, so span one more day) it starts a day later, as PostHog does.
    pub fn previous_period(
        &self,
        interval: Interval,
        date_range: Option<&Value>,
        ctx: &Context,
    ) -> Range {
        let tz = ctx.timezone;
        let from = self.from.with_timezone(&tz).naive_local();
        let to = self.to.with_timezone(&tz).naive_local();
        let length = to - from;
        let shifted = from - length;
        if matches!(interval, Interval::Hour | Interval::Minute) {
            let new_from =
                shifted.date().and_time(NaiveTime::MIN) + Duration::hours(from.hour().into());
            let new_to = truncate_naive(new_from + length, Interval::Hour) + Duration::hours(1)
                - Duration::microseconds(1);
            return Range {
                from: common::dates::wall_time(new_from, tz).with_timezone(&Utc),
                to: common::dates::wall_time(new_to, tz).with_timezone(&Utc),
            };
        }
        let mut new_from = shifted.date().and_time(NaiveTime::MIN);
        let whole_weeks_back = text_field(date_range, "date_from")
            .and_then(parse_relative)
            .is_some_and(|relative| {
                relative.unit == 'd' && relative.amount > 0 && relative.amount % 7 == 0
            });
        let relative_to =
            text_field(date_range, "date_to").is_some_and(|text| parse_relative(text).is_some());
        if interval == Interval::Day && whole_weeks_back && !relative_to {
            new_from += Duration::days(1);
        }
        let new_to = end_of_day(new_from + length);
        Range {
            from: common::dates::wall_time(new_from, tz).with_timezone(&Utc),
            to: common::dates::wall_time(new_to, tz).with_timezone(&Utc),
        }
    }

    /// Both bounds moved back by a relative amount (`compareFilter.compare_to`: `-1w`, `-1m`...),
    /// in wall-clock time of the project's zone.
    pub fn shifted_back(&self, amount: &str, ctx: &Context, attr: &str) -> Result<Range, Invalid> {
        let relative = parse_relative(amount)
            .filter(|relative| relative.position.is_none())
            .ok_or_else(|| {
                Invalid::new(
                    attr,
                    format!("'{amount}' is not a relative amount such as -1w, -1m or -1y."),
                )
            })?;
        let tz = ctx.timezone;
        let shift = |instant: DateTime<Utc>| {
            let naive = instant.with_timezone(&tz).naive_local();
            common::dates::wall_time(relative.apply(naive, ctx.week_start_day), tz)
                .with_timezone(&Utc)
        };
        Ok(Range {
            from: shift(self.from),
            to: shift(self.to),
        })
    }
}

/// Resolves a node's `dateRange` (`attr` names it in errors, e.g. `dateRange`).
pub fn resolve(
    date_range: Option<&Value>,
    interval: Interval,
    ctx: &Context,
    attr: &str,
) -> Result<Range, Invalid> {
    let date_range = match date_range {
        None | Some(Value::Null) => None,
        Some(value @ Value::Object(_)) => Some(value),
        Some(_) => return Err(Invalid::new(attr, "dateRange must be an object.")),
    };
    let explicit = match date_range.and_then(|range| range.get("explicitDate")) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => {
            return Err(Invalid::new(
                format!("{attr}.explicitDate"),
                "explicitDate must be a boolean.",
            ));
        }
    };
    let tz = ctx.timezone;
    let now = ctx.now.with_timezone(&tz).naive_local();

    let to_attr = format!("{attr}.date_to");
    let to_text = string_field(date_range, "date_to", &to_attr)?;
    let (mut to, to_is_relative) = match to_text {
        None => (now, true),
        Some(text) => match parse_relative(text) {
            Some(relative) => (relative.apply(now, ctx.week_start_day), true),
            None => (parse_absolute(text, tz, &to_attr)?, false),
        },
    };
    if !explicit {
        to = match interval {
            Interval::Day | Interval::Week | Interval::Month => end_of_day(to),
            Interval::Hour if to_is_relative => {
                truncate_naive(to, Interval::Hour) + Duration::hours(1) - Duration::microseconds(1)
            }
            Interval::Minute if to_is_relative => {
                truncate_naive(to, Interval::Minute) + Duration::minutes(1)
                    - Duration::microseconds(1)
            }
            _ => to,
        };
    }

    let from_attr = format!("{attr}.date_from");
    let from_text = string_field(date_range, "date_from", &from_attr)?;
    let mut from = match from_text {
        Some("all") => {
            return Ok(Range {
                from: ALL_FROM,
                to: common::dates::wall_time(to, tz).with_timezone(&Utc),
            });
        }
        None => now.date().and_time(NaiveTime::MIN) - Duration::days(7),
        Some(text) => match parse_relative(text) {
            Some(relative) => relative.apply(now, ctx.week_start_day),
            None => parse_absolute(text, tz, &from_attr)?,
        },
    };
    if !explicit {
        from = match interval {
            Interval::Minute => truncate_naive(from, Interval::Minute),
            Interval::Hour => truncate_naive(from, Interval::Hour),
            _ => from.date().and_time(NaiveTime::MIN),
        };
    }
    let range = Range {
        from: common::dates::wall_time(from, tz).with_timezone(&Utc),
        to: common::dates::wall_time(to, tz).with_timezone(&Utc),
    };
    if range.from > range.to {
        return Err(Invalid::new(from_attr, "date_from is after date_to."));
    }
    Ok(range)
}

/// The start of the bucket holding `instant`, in the project's time zone.
pub fn bucket_start(instant: DateTime<Utc>, interval: Interval, ctx: &Context) -> DateTime<Tz> {
    let tz = ctx.timezone;
    let local = instant.with_timezone(&tz);
    match interval {
        // Minutes and hours are cut on the instant so both 01:00 of a DST fall-back day stay apart.
        Interval::Minute | Interval::Hour => {
            let naive = truncate_naive(local.naive_local(), interval);
            let offset = chrono::Offset::fix(local.offset()).local_minus_utc();
            let start = naive - Duration::seconds(offset.into());
            tz.from_utc_datetime(&start)
        }
        Interval::Day => common::dates::wall_time(local.date_naive().and_time(NaiveTime::MIN), tz),
        Interval::Week => {
            let date = local.date_naive();
            let days_back = if ctx.week_start_day == 1 {
                date.weekday().num_days_from_monday()
            } else {
                date.weekday().num_days_from_sunday()
            };
            common::dates::wall_time(
                (date - Duration::days(days_back.into())).and_time(NaiveTime::MIN),
                tz,
            )
        }
        Interval::Month => common::dates::wall_time(
            first_of_month(local.date_naive()).and_time(NaiveTime::MIN),
            tz,
        ),
    }
}

/// The start of the bucket after the one starting at `start`.
pub fn next_bucket(start: DateTime<Tz>, interval: Interval) -> DateTime<Tz> {
    let tz = start.timezone();
    match interval {
        Interval::Minute => start + Duration::minutes(1),
        Interval::Hour => start + Duration::hours(1),
        Interval::Day => common::dates::wall_time(
            start.date_naive().and_time(NaiveTime::MIN) + Duration::days(1),
            tz,
        ),
        Interval::Week => common::dates::wall_time(
            start.date_naive().and_time(NaiveTime::MIN) + Duration::days(7),
            tz,
        ),
        Interval::Month => {
            let next = first_of_month(start.date_naive())
                .checked_add_months(Months::new(1))
                .unwrap_or(NaiveDate::MAX);
            common::dates::wall_time(next.and_time(NaiveTime::MIN), tz)
        }
    }
}

/// `moment` moved by whole days of the wall clock (a DST day is 23 or 25 hours long).
pub fn add_days(moment: DateTime<Tz>, days: i64) -> DateTime<Tz> {
    common::dates::wall_time(
        moment.naive_local() + Duration::days(days),
        moment.timezone(),
    )
}

/// A bucket's chart label: `1-Jan-2024`, with ` 13:00` for hour/minute buckets.
pub fn label(bucket: &DateTime<Tz>, interval: Interval) -> String {
    match interval {
        Interval::Minute | Interval::Hour => bucket.format("%-d-%b-%Y %H:%M").to_string(),
        _ => bucket.format("%-d-%b-%Y").to_string(),
    }
}

/// A bucket's `days` entry: `2024-01-01`, or `2024-01-01 13:00:00` for hour/minute buckets.
pub fn day(bucket: &DateTime<Tz>, interval: Interval) -> String {
    match interval {
        Interval::Minute | Interval::Hour => bucket.format("%Y-%m-%d %H:%M:%S").to_string(),
        _ => bucket.format("%Y-%m-%d").to_string(),
    }
}

/// ISO 8601 with the project's offset (`2024-01-01T00:00:00-05:00`), as in `resolved_date_range`.
pub fn iso(instant: DateTime<Utc>, ctx: &Context) -> String {
    let local = instant.with_timezone(&ctx.timezone);
    if local.nanosecond() == 0 {
        local.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
    } else {
        local.format("%Y-%m-%dT%H:%M:%S%.6f%:z").to_string()
    }
}

/// A dialect literal of an instant, marked UTC (the engine reads naive text in the project's
/// time zone): `toDateTime('2024-01-01 05:00:00.000000Z')`.
pub fn sql_datetime(instant: DateTime<Utc>) -> String {
    format!("toDateTime('{}')", instant.format("%Y-%m-%d %H:%M:%S%.6fZ"))
}

/// A time cell of an engine result, as an instant in the project's zone: ISO text with an
/// offset (timestamps), or a date / datetime without one (read as local wall time).
pub fn parse_engine_time(value: &Value, ctx: &Context) -> Option<DateTime<Tz>> {
    let text = value.as_str()?.trim();
    if let Ok(moment) = DateTime::parse_from_rfc3339(text) {
        return Some(moment.with_timezone(&ctx.timezone));
    }
    for format in ["%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f%#z"] {
        if let Ok(moment) = DateTime::parse_from_str(text, format) {
            return Some(moment.with_timezone(&ctx.timezone));
        }
    }
    common::dates::naive_datetime(text).map(|naive| common::dates::wall_time(naive, ctx.timezone))
}

// ---------------------------------------------------------------------------------------------

fn text_field<'a>(date_range: Option<&'a Value>, key: &str) -> Option<&'a str> {
    date_range?.get(key)?.as_str()
}

fn string_field<'a>(
    date_range: Option<&'a Value>,
    key: &str,
    attr: &str,
) -> Result<Option<&'a str>, Invalid> {
    match date_range.and_then(|range| range.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim())),
        Some(_) => Err(Invalid::new(attr, format!("{key} must be a string."))),
    }
}

/// A relative date: `-7d`, `mStart`, `-1yEnd`... (PostHog's `relative_date_parse`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Relative {
    amount: u32,
    unit: char,
    position: Option<Position>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Position {
    Start,
    End,
}

fn parse_relative(text: &str) -> Option<Relative> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (body, position) = if let Some(rest) = body.strip_suffix("Start") {
        (rest, Some(Position::Start))
    } else if let Some(rest) = body.strip_suffix("End") {
        (rest, Some(Position::End))
    } else {
        (body, None)
    };
    let mut chars = body.chars();
    let unit = chars.next_back()?;
    if !matches!(unit, 'h' | 'd' | 'w' | 'm' | 'q' | 'y' | 'M' | 's') {
        return None;
    }
    let digits = chars.as_str();
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let amount = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    Some(Relative {
        amount,
        unit,
        position,
    })
}

impl Relative {
    /// The local wall time this many units before `now`, moved to the start/end of the unit.
    fn apply(self, now: NaiveDateTime, week_start_day: u8) -> NaiveDateTime {
        let amount = i64::from(self.amount);
        let shifted = match self.unit {
            's' => now - Duration::seconds(amount),
            'M' => now - Duration::minutes(amount),
            'h' => now - Duration::hours(amount),
            'd' => now - Duration::days(amount),
            'w' => now - Duration::weeks(amount),
            'm' => subtract_months(now, self.amount),
            'q' => subtract_months(now, self.amount.saturating_mul(3)),
            _ => subtract_months(now, self.amount.saturating_mul(12)),
        };
        let Some(position) = self.position else {
            return shifted;
        };
        let date = shifted.date();
        let start = match self.unit {
            's' | 'M' => truncate_naive(shifted, Interval::Minute),
            'h' => truncate_naive(shifted, Interval::Hour),
            'd' => date.and_time(NaiveTime::MIN),
            'w' => {
                let back = if week_start_day == 1 {
                    date.weekday().num_days_from_monday()
                } else {
                    date.weekday().num_days_from_sunday()
                };
                (date - Duration::days(back.into())).and_time(NaiveTime::MIN)
            }
            'm' => first_of_month(date).and_time(NaiveTime::MIN),
            'q' => {
                let quarter_month = (date.month0() / 3) * 3 + 1;
                NaiveDate::from_ymd_opt(date.year(), quarter_month, 1)
                    .unwrap_or(date)
                    .and_time(NaiveTime::MIN)
            }
            _ => NaiveDate::from_ymd_opt(date.year(), 1, 1)
                .unwrap_or(date)
                .and_time(NaiveTime::MIN),
        };
        match position {
            Position::Start => start,
            Position::End => {
                let next = match self.unit {
                    's' | 'M' => start + Duration::minutes(1),
                    'h' => start + Duration::hours(1),
                    'd' => start + Duration::days(1),
                    'w' => start + Duration::weeks(1),
                    'm' => add_months(start, 1),
                    'q' => add_months(start, 3),
                    _ => add_months(start, 12),
                };
                next - Duration::microseconds(1)
            }
        }
    }
}

/// An ISO date or datetime; without an offset it is a wall time of `tz`.
/// A date or time as PostHog's `relative_date_parse` reads it, as an instant: ISO 8601 (an offset
/// or `Z` is kept, naive text is read in the project's time zone), or relative to now in that zone
/// (`-24h`, `-7d`, `-1m`, `-30M` minutes, `-10s`, with `Start`/`End`: `dStart`, `-1mStart`...).
/// None for anything else, `all` included.
pub fn parse_instant(text: &str, ctx: &Context) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Some(moment) = with_offset(text) {
        return Some(moment.with_timezone(&Utc));
    }
    let naive = match parse_relative(text) {
        Some(relative) => {
            let now = ctx.now.with_timezone(&ctx.timezone).naive_local();
            relative.apply(now, ctx.week_start_day)
        }
        None => common::dates::naive_datetime(text)?,
    };
    Some(common::dates::wall_time(naive, ctx.timezone).with_timezone(&Utc))
}

fn with_offset(text: &str) -> Option<DateTime<chrono::FixedOffset>> {
    DateTime::parse_from_rfc3339(text).ok().or_else(|| {
        [
            "%Y-%m-%d %H:%M:%S%.f%#z",
            "%Y-%m-%dT%H:%M:%S%.f%#z",
            "%Y-%m-%dT%H:%M:%S%.fZ",
        ]
        .iter()
        .find_map(|format| DateTime::parse_from_str(text, format).ok())
    })
}

fn parse_absolute(text: &str, tz: Tz, attr: &str) -> Result<NaiveDateTime, Invalid> {
    if let Some(moment) = with_offset(text) {
        return Ok(moment.with_timezone(&tz).naive_local());
    }
    common::dates::naive_datetime(text).ok_or_else(|| {
        Invalid::new(
            attr,
            format!("'{text}' is neither an ISO date/datetime nor a relative date such as -7d, -1m, mStart or all."),
        )
    })
}

fn truncate_naive(naive: NaiveDateTime, interval: Interval) -> NaiveDateTime {
    let date = naive.date();
    match interval {
        Interval::Minute => {
            date.and_time(NaiveTime::MIN)
                + Duration::minutes(i64::from(naive.hour() * 60 + naive.minute()))
        }
        Interval::Hour => date.and_time(NaiveTime::MIN) + Duration::hours(naive.hour().into()),
        _ => date.and_time(NaiveTime::MIN),
    }
}

fn end_of_day(naive: NaiveDateTime) -> NaiveDateTime {
    naive.date().and_time(NaiveTime::MIN) + Duration::days(1) - Duration::microseconds(1)
}

fn first_of_month(date: NaiveDate) -> NaiveDate {
    date.with_day(1).unwrap_or(date)
}

/// Month arithmetic clamps to the month's last day (Mar 31 - 1 month = Feb 29), like relativedelta.
fn subtract_months(naive: NaiveDateTime, months: u32) -> NaiveDateTime {
    naive
        .date()
        .checked_sub_months(Months::new(months))
        .unwrap_or(NaiveDate::MIN)
        .and_time(naive.time())
}

fn add_months(naive: NaiveDateTime, months: u32) -> NaiveDateTime {
    naive
        .date()
        .checked_add_months(Months::new(months))
        .unwrap_or(NaiveDate::MAX)
        .and_time(naive.time())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context(timezone: Tz, now: &str, week_start_day: u8) -> Context {
        crate::testing::context(timezone, now, week_start_day)
    }

    fn utc(text: &str) -> DateTime<Utc> {
        crate::testing::utc(text)
    }

    fn isos(range: &Range, ctx: &Context) -> (String, String) {
        (iso(range.from, ctx), iso(range.to, ctx))
    }

    #[test]
    fn default_is_last_seven_days_to_end_of_today() {
        let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
        let range = resolve(None, Interval::Day, &ctx, "dateRange").expect("resolves");
        assert_eq!(
            isos(&range, &ctx),
            (
                "2024-03-08T00:00:00+00:00".into(),
                "2024-03-15T23:59:59.999999+00:00".into()
            )
        );
    }

    #[test]
    fn relative_values_in_the_project_zone() {
        // 02:00 UTC on Mar 15 is still Mar 14 in New York.
        let ctx = context(chrono_tz::America::New_York, "2024-03-15T02:00:00Z", 0);
        let cases = [
            ("-7d", "2024-03-07T00:00:00-05:00"),
            ("-1w", "2024-03-07T00:00:00-05:00"),
            ("-1m", "2024-02-14T00:00:00-05:00"),
            ("-1y", "2023-03-14T00:00:00-04:00"),
            ("-90d", "2023-12-15T00:00:00-05:00"),
            ("mStart", "2024-03-01T00:00:00-05:00"),
            ("yStart", "2024-01-01T00:00:00-05:00"),
            ("dStart", "2024-03-14T00:00:00-04:00"),
            ("-1mStart", "2024-02-01T00:00:00-05:00"),
        ];
        for (text, expected) in cases {
            let range = resolve(
                Some(&json!({"date_from": text})),
                Interval::Day,
                &ctx,
                "dateRange",
            )
            .expect("resolves");
            assert_eq!(iso(range.from, &ctx), expected, "{text}");
            assert_eq!(
                iso(range.to, &ctx),
                "2024-03-14T23:59:59.999999-04:00",
                "{text}"
            );
        }
    }

    #[test]
    fn hours_keep_their_hour() {
        let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
        let range = resolve(
            Some(&json!({"date_from": "-24h"})),
            Interval::Hour,
            &ctx,
            "dateRange",
        )
        .expect("resolves");
        assert_eq!(
            isos(&range, &ctx),
            (
                "2024-03-14T10:00:00+00:00".into(),
                "2024-03-15T10:59:59.999999+00:00".into()
            )
        );
        assert_eq!(
            range
                .buckets(Interval::Hour, &ctx, "interval")
                .expect("buckets")
                .len(),
            25
        );
    }

    #[test]
    fn absolute_dates_round_unless_explicit() {
        let ctx = context(chrono_tz::Europe::Paris, "2024-06-01T00:00:00Z", 0);
        let node = json!({"date_from": "2024-01-10T15:00:00", "date_to": "2024-01-12"});
        let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
        assert_eq!(
            isos(&range, &ctx),
            (
                "2024-01-10T00:00:00+01:00".into(),
                "2024-01-12T23:59:59.999999+01:00".into()
            )
        );
        let explicit = json!({"date_from": "2024-01-10T15:00:00", "date_to": "2024-01-12T08:00:00Z", "explicitDate": true});
        let range = resolve(Some(&explicit), Interval::Day, &ctx, "dateRange").expect("resolves");
        assert_eq!(
            isos(&range, &ctx),
            (
                "2024-01-10T15:00:00+01:00".into(),
                "2024-01-12T09:00:00+01:00".into()
            )
        );
    }

    #[test]
    fn malformed_values_name_the_field() {
        let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
        let error = resolve(
            Some(&json!({"date_from": "yesterday"})),
            Interval::Day,
            &ctx,
            "dateRange",
        )
        .expect_err("refused");
        assert_eq!(error.attr, "dateRange.date_from");
        let error = resolve(
            Some(&json!({"date_to": 5})),
            Interval::Day,
            &ctx,
            "dateRange",
        )
        .expect_err("refused");
        assert_eq!(error.attr, "dateRange.date_to");
        let error = resolve(
            Some(&json!({"date_from": "2024-02-01", "date_to": "2024-01-01"})),
            Interval::Day,
            &ctx,
            "dateRange",
        )
        .expect_err("refused");
        assert_eq!(error.attr, "dateRange.date_from");
        assert_eq!(
            Interval::from_field(Some(&json!("fortnight")), Interval::Day, "interval")
                .expect_err("refused")
                .attr,
            "interval"
        );
        assert_eq!(
            Interval::from_field(Some(&json!("Week")), Interval::Day, "x"),
            Ok(Interval::Week)
        );
    }

    #[test]
    fn all_starts_at_the_epoch() {
        let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
        let range = resolve(
            Some(&json!({"date_from": "all"})),
            Interval::Day,
            &ctx,
            "dateRange",
        )
        .expect("resolves");
        assert!(range.from_all());
    }

    #[test]
    fn day_buckets_across_new_york_dst() {
        let ctx = context(chrono_tz::America::New_York, "2024-06-01T00:00:00Z", 0);
        let node = json!({"date_from": "2024-03-09", "date_to": "2024-03-11"});
        let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
        let buckets = range
            .buckets(Interval::Day, &ctx, "interval")
            .expect("buckets");
        let starts: Vec<String> = buckets.iter().map(|b| b.to_rfc3339()).collect();
        assert_eq!(
            starts,
            [
                "2024-03-09T00:00:00-05:00",
                "2024-03-10T00:00:00-05:00",
                "2024-03-11T00:00:00-04:00"
            ]
        );
        // 03:30 UTC on the 11th is the evening of the 10th locally.
        let bucket = bucket_start(utc("2024-03-11T03:30:00Z"), Interval::Day, &ctx);
        assert_eq!(bucket, buckets[1]);
        assert_eq!(day(&bucket, Interval::Day), "2024-03-10");
        assert_eq!(label(&bucket, Interval::Day), "10-Mar-2024");
    }

    #[test]
    fn hour_buckets_across_fall_back_stay_distinct() {
        let ctx = context(chrono_tz::America::New_York, "2024-12-01T00:00:00Z", 0);
        let node = json!({"date_from": "2024-11-03T00:00:00", "date_to": "2024-11-03T03:00:00"});
        let range = resolve(Some(&node), Interval::Hour, &ctx, "dateRange").expect("resolves");
        let buckets = range
            .buckets(Interval::Hour, &ctx, "interval")
            .expect("buckets");
        let days: Vec<String> = buckets.iter().map(|b| day(b, Interval::Hour)).collect();
        // 01:00 happens twice; the absolute date_to (03:00) is not rounded for hours.
        assert_eq!(
            days,
            [
                "2024-11-03 00:00:00",
                "2024-11-03 01:00:00",
                "2024-11-03 01:00:00",
                "2024-11-03 02:00:00",
                "2024-11-03 03:00:00"
            ]
        );
        assert_eq!(label(&buckets[0], Interval::Hour), "3-Nov-2024 00:00");
    }

    #[test]
    fn paris_spring_forward_gap_and_month_buckets() {
        let ctx = context(chrono_tz::Europe::Paris, "2024-06-01T00:00:00Z", 0);
        let node = json!({"date_from": "2024-03-31T02:30:00", "explicitDate": true, "date_to": "2024-04-01"});
        let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
        assert_eq!(iso(range.from, &ctx), "2024-03-31T03:30:00+02:00");
        let node = json!({"date_from": "2024-01-31", "date_to": "2024-04-15"});
        let range = resolve(Some(&node), Interval::Month, &ctx, "dateRange").expect("resolves");
        let starts: Vec<String> = range
            .buckets(Interval::Month, &ctx, "interval")
            .expect("buckets")
            .iter()
            .map(|b| b.to_rfc3339())
            .collect();
        assert_eq!(
            starts,
            [
                "2024-01-01T00:00:00+01:00",
                "2024-02-01T00:00:00+01:00",
                "2024-03-01T00:00:00+01:00",
                "2024-04-01T00:00:00+02:00"
            ]
        );
    }

    #[test]
    fn month_arithmetic_clamps_at_month_end() {
        let ctx = context(Tz::UTC, "2024-03-31T12:00:00Z", 0);
        let range = resolve(
            Some(&json!({"date_from": "-1m"})),
            Interval::Day,
            &ctx,
            "dateRange",
        )
        .expect("resolves");
        assert_eq!(iso(range.from, &ctx), "2024-02-29T00:00:00+00:00");
        let range = resolve(
            Some(&json!({"date_from": "-1mEnd", "date_to": "-1mEnd"})),
            Interval::Day,
            &ctx,
            "dateRange",
        )
        .expect("resolves");
        assert_eq!(iso(range.to, &ctx), "2024-02-29T23:59:59.999999+00:00");
    }

    #[test]
    fn week_buckets_start_on_sunday_or_monday() {
        // 2024-01-10 is a Wednesday.
        for (week_start_day, first) in [(0, "2024-01-07"), (1, "2024-01-08")] {
            let ctx = context(
                chrono_tz::America::New_York,
                "2024-06-01T00:00:00Z",
                week_start_day,
            );
            let node = json!({"date_from": "2024-01-10", "date_to": "2024-01-21"});
            let range = resolve(Some(&node), Interval::Week, &ctx, "dateRange").expect("resolves");
            let buckets = range
                .buckets(Interval::Week, &ctx, "interval")
                .expect("buckets");
            assert_eq!(day(&buckets[0], Interval::Week), first);
            let expected_len = if week_start_day == 0 { 3 } else { 2 };
            assert_eq!(buckets.len(), expected_len, "week start {week_start_day}");
            let sunday = bucket_start(utc("2024-01-14T15:00:00Z"), Interval::Week, &ctx);
            assert_eq!(
                day(&sunday, Interval::Week),
                if week_start_day == 0 {
                    "2024-01-14"
                } else {
                    "2024-01-08"
                }
            );
        }
    }

    #[test]
    fn too_many_buckets_is_refused() {
        let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
        let range = resolve(
            Some(&json!({"date_from": "-2y"})),
            Interval::Minute,
            &ctx,
            "dateRange",
        )
        .expect("resolves");
        assert_eq!(
            range
                .buckets(Interval::Minute, &ctx, "interval")
                .expect_err("refused")
                .attr,
            "interval"
        );
    }

    #[test]
    fn previous_period_has_the_same_length() {
        let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
        let node = json!({"date_from": "2024-01-08", "date_to": "2024-01-14"});
        let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
        let previous = range.previous_period(Interval::Day, Some(&node), &ctx);
        assert_eq!(
            isos(&previous, &ctx),
            (
                "2024-01-01T00:00:00+00:00".into(),
                "2024-01-07T23:59:59.999999+00:00".into()
            )
        );
        // -7d spans 8 days (today included); PostHog starts the previous one a day later.
        let node = json!({"date_from": "-7d"});
        let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
        let previous = range.previous_period(Interval::Day, Some(&node), &ctx);
        assert_eq!(
            isos(&previous, &ctx),
            (
                "2024-03-01T00:00:00+00:00".into(),
                "2024-03-08T23:59:59.999999+00:00".into()
            )
        );
    }

    #[test]
    fn compare_to_shifts_both_bounds() {
        let ctx = context(Tz::UTC, "2024-03-15T10:30:00Z", 0);
        let node = json!({"date_from": "2024-03-01", "date_to": "2024-03-31"});
        let range = resolve(Some(&node), Interval::Day, &ctx, "dateRange").expect("resolves");
        let shifted = range
            .shifted_back("-1m", &ctx, "compareFilter.compare_to")
            .expect("shifts");
        assert_eq!(
            isos(&shifted, &ctx),
            (
                "2024-02-01T00:00:00+00:00".into(),
                "2024-02-29T23:59:59.999999+00:00".into()
            )
        );
        assert_eq!(
            range
                .shifted_back("soon", &ctx, "compareFilter.compare_to")
                .expect_err("refused")
                .attr,
            "compareFilter.compare_to"
        );
    }

    #[test]
    fn engine_times_read_back_in_the_project_zone() {
        let ctx = context(chrono_tz::America::New_York, "2024-06-01T00:00:00Z", 0);
        let from_offset =
            parse_engine_time(&json!("2024-03-10T05:00:00+00:00"), &ctx).expect("parses");
        assert_eq!(from_offset.to_rfc3339(), "2024-03-10T00:00:00-05:00");
        let from_date = parse_engine_time(&json!("2024-03-01"), &ctx).expect("parses");
        assert_eq!(from_date.to_rfc3339(), "2024-03-01T00:00:00-05:00");
        assert!(parse_engine_time(&json!(12), &ctx).is_none());
        assert_eq!(
            sql_datetime(utc("2024-03-10T05:00:00Z")),
            "toDateTime('2024-03-10 05:00:00.000000Z')"
        );
    }
}
