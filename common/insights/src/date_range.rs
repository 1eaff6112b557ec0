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
    /// Where an insight's counted events start (PostHog's
    /// `date_from_with_adjusted_start_of_interval`): `from` with `explicitDate`, else the start
    /// of its bucket.
    pub fn counted_from(&self, explicit: bool, interval: Interval, ctx: &Context) -> DateTime<Utc> {
        if explicit {
            self.from
        } else {
            bucket_start(self.from, interval, ctx).with_timezone(&Utc)
        }
    }

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

/// The dialect expression giving the 0-based interval of `column` (a UTC timestamp), counted
/// from `first` (the start of a bucket). Integer arithmetic over truncated values: a local day
/// may be an hour longer or shorter across a DST change, which the half-day shift absorbs.
/// Weeks are whole days from `first` (a week start), which avoids `toStartOfWeek` on zoned
/// times (its Sunday mode adds a day, which fails on an ambiguous local time). Hours and
/// minutes step as elapsed time. Rows before `first` are the caller's to keep out.
pub fn interval_index(
    column: &str,
    interval: Interval,
    first: DateTime<Utc>,
    ctx: &Context,
) -> String {
    let zone = crate::sql_text::string(ctx.timezone.name());
    let local_first = first.with_timezone(&ctx.timezone).naive_local();
    let day_index = format!(
        "intDiv(toUnixTimestamp(toStartOfDay(toTimeZone({column}, {zone}))) - {} + 43200, 86400)",
        first.timestamp()
    );
    match interval {
        Interval::Minute => format!(
            "intDiv(toUnixTimestamp({column}) - {}, 60)",
            first.timestamp()
        ),
        Interval::Hour => format!(
            "intDiv(toUnixTimestamp({column}) - {}, 3600)",
            first.timestamp()
        ),
        Interval::Day => day_index,
        Interval::Week => format!("intDiv({day_index}, 7)"),
        Interval::Month => {
            // toStartOfMonth gives the local date of the month's first day.
            let month = format!("toStartOfMonth(toTimeZone({column}, {zone}))");
            format!(
                "toYear({month}) * 12 + toMonth({month}) - {}",
                i64::from(local_first.year()) * 12 + i64::from(local_first.month())
            )
        }
    }
}

/// `dateRange.explicitDate` (checked by [`resolve`]): when set, bounds are used as given.
pub fn explicit_date(date_range: Option<&Value>) -> bool {
    date_range
        .and_then(|range| range.get("explicitDate"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
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
#[path = "date_range_tests.rs"]
mod tests;
