//! Dates as posthog-python 7.91.1 reads them for `is_date_before`/`is_date_after`
//! (`parse_datetime`, `relative_date_parse_for_feature_flag_matching`), with PostHog's flags
//! service's extra readings where the SDK gives up (numbers as unix timestamps).

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use serde_json::Value;

/// A filter's date, parsed once; relative dates are resolved against the clock when matched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DateFilter {
    Absolute(DateTime<Utc>),
    /// A bare year: that year on the day the filter is matched (the SDK's reading).
    Year(i32),
    Relative {
        number: u32,
        unit: RelativeUnit,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelativeUnit {
    Hours,
    Days,
    Weeks,
    Months,
    Years,
}

impl DateFilter {
    /// `_parse_date_filter`: a relative date (`-7d`, `3m`), else an ISO date; None when neither
    /// (the SDK then defers to the server, and the server never matches).
    pub fn parse(value: &Value) -> Option<Self> {
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        if let Some((number, unit)) = parse_relative(&text) {
            // The SDK refuses 10,000 units and more, then the ISO reading fails too.
            return (number < 10_000).then_some(Self::Relative { number, unit });
        }
        if let Some(year) = bare_year(&text) {
            return Some(Self::Year(year));
        }
        parse_dated(&text).map(Self::Absolute)
    }

    /// The instant this filter means at `now`.
    pub fn resolve(self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Self::Absolute(at) => Some(at),
            Self::Year(year) => on_year(year, now),
            Self::Relative { number, unit } => match unit {
                RelativeUnit::Hours => now.checked_sub_signed(Duration::hours(number.into())),
                RelativeUnit::Days => now.checked_sub_signed(Duration::days(number.into())),
                RelativeUnit::Weeks => now.checked_sub_signed(Duration::weeks(number.into())),
                RelativeUnit::Months => subtract_months(now, number),
                RelativeUnit::Years => subtract_years(now, number),
            },
        }
    }
}

/// `^-?(?P<number>[0-9]+)(?P<interval>[a-z])$` with a known interval letter.
fn parse_relative(text: &str) -> Option<(u32, RelativeUnit)> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (digits, letter) = body.split_at(body.len().checked_sub(1)?);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let unit = match letter {
        "h" => RelativeUnit::Hours,
        "d" => RelativeUnit::Days,
        "w" => RelativeUnit::Weeks,
        "m" => RelativeUnit::Months,
        "y" => RelativeUnit::Years,
        _ => return None,
    };
    // Too many digits for u32 is far past the 10,000 cap: keep it refused.
    Some((digits.parse::<u32>().unwrap_or(u32::MAX), unit))
}

/// `_subtract_months`: one month at a time, clamping the day at every step, so March 31 minus
/// two months is January 28.
fn subtract_months(at: DateTime<Utc>, months: u32) -> Option<DateTime<Utc>> {
    let current = i64::from(at.year()) * 12 + i64::from(at.month0());
    let target = current - i64::from(months);
    let year = i32::try_from(target.div_euclid(12)).ok()?;
    let month = u32::try_from(target.rem_euclid(12)).ok()? + 1;
    if !(1..=9999).contains(&year) {
        return None;
    }
    let mut day = at.day();
    let mut index = current - 1;
    while index >= target && day > 28 {
        let step_year = i32::try_from(index.div_euclid(12)).ok()?;
        let step_month = u32::try_from(index.rem_euclid(12)).ok()? + 1;
        day = day.min(days_in_month(step_year, step_month)?);
        index -= 1;
    }
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    Some(Utc.from_utc_datetime(&date.and_time(at.time())))
}

/// `_subtract_years`: February 29 becomes the 28th.
fn subtract_years(at: DateTime<Utc>, years: u32) -> Option<DateTime<Utc>> {
    let year = at.year() - i32::try_from(years).ok()?;
    if !(1..=9999).contains(&year) {
        return None;
    }
    let day = if years > 0 && at.month() == 2 && at.day() == 29 {
        28
    } else {
        at.day()
    };
    let date = NaiveDate::from_ymd_opt(year, at.month(), day)?;
    Some(Utc.from_utc_datetime(&date.and_time(at.time())))
}

fn days_in_month(year: i32, month: u32) -> Option<u32> {
    let first = NaiveDate::from_ymd_opt(year, month, 1)?;
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)?
    };
    u32::try_from((next - first).num_days()).ok()
}

/// A person's date property: the SDK's reading of a string first; where the SDK gives up, the
/// flags service's (a number, or a numeric string, as unix seconds; a relative date).
pub fn parse_property(value: &Value, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    match value {
        Value::String(text) => parse_datetime(text, now)
            .or_else(|| text.trim().parse::<f64>().ok().and_then(from_timestamp))
            .or_else(|| {
                let (number, unit) = parse_relative(text)?;
                DateFilter::Relative { number, unit }.resolve(now)
            }),
        Value::Number(number) => number.as_f64().and_then(from_timestamp),
        _ => None,
    }
}

fn from_timestamp(seconds: f64) -> Option<DateTime<Utc>> {
    if !seconds.is_finite() {
        return None;
    }
    let whole = seconds.floor();
    let nanos = ((seconds - whole) * 1e9).round().min(999_999_999.0) as u32;
    DateTime::from_timestamp(whole as i64, nanos)
}

/// The SDK's `parse_datetime`: `Z` and ` UTC` mean +00:00, a bare year is that year on today's
/// month and day, then Python 3.11's `datetime.fromisoformat`. Naive times are UTC.
pub fn parse_datetime(value: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    match bare_year(value) {
        Some(year) => on_year(year, now),
        None => parse_dated(value),
    }
}

fn bare_year(value: &str) -> Option<i32> {
    let text = value.trim();
    (text.len() == 4 && text.bytes().all(|byte| byte.is_ascii_digit()))
        .then(|| text.parse::<i32>().ok())
        .flatten()
}

/// Midnight of `year` on `now`'s month and day (None on February 29 of a common year).
fn on_year(year: i32, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let date = NaiveDate::from_ymd_opt(year, now.month(), now.day())?;
    Some(Utc.from_utc_datetime(&date.and_time(NaiveTime::MIN)))
}

/// [`parse_datetime`] of a text that is not a bare year.
fn parse_dated(value: &str) -> Option<DateTime<Utc>> {
    let text = value.trim();
    let (text, utc_suffix) = if let Some(rest) = text.strip_suffix('Z') {
        (rest, true)
    } else if text.len() >= 4
        && text.is_char_boundary(text.len() - 4)
        && text[text.len() - 4..].eq_ignore_ascii_case(" utc")
    {
        (&text[..text.len() - 4], true)
    } else {
        (text, false)
    };
    // `re.sub(r" ([+-]\d{2}:\d{2})$", r"\1", text)`: a space before the offset is dropped.
    let joined;
    let text = match spaced_offset_at(text) {
        Some(at) => {
            joined = format!("{}{}", &text[..at], &text[at + 1..]);
            joined.as_str()
        }
        None => text,
    };
    let (naive, offset) = parse_iso(text)?;
    let offset_seconds = match (utc_suffix, offset) {
        // "...+01:00Z" is not ISO.
        (true, Some(_)) => return None,
        (true, None) => 0,
        (false, offset) => offset.unwrap_or(0),
    };
    let utc = naive.checked_sub_signed(Duration::seconds(offset_seconds.into()))?;
    Some(Utc.from_utc_datetime(&utc))
}

/// Where ` +HH:MM` starts at the end of `text`.
fn spaced_offset_at(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let at = bytes.len().checked_sub(7)?;
    let tail = &bytes[at..];
    let shaped = tail[0] == b' '
        && matches!(tail[1], b'+' | b'-')
        && tail[2].is_ascii_digit()
        && tail[3].is_ascii_digit()
        && tail[4] == b':'
        && tail[5].is_ascii_digit()
        && tail[6].is_ascii_digit();
    shaped.then_some(at)
}

/// `fromisoformat` for the shapes that occur: `YYYY-MM-DD` or `YYYYMMDD`, then optionally any
/// one separator and `HH[:MM[:SS[.ffffff]]]`, then optionally `+HH[:MM]`/`+HHMM`.
fn parse_iso(text: &str) -> Option<(NaiveDateTime, Option<i32>)> {
    let bytes = text.as_bytes();
    let (date, rest) = if bytes.len() >= 10 && bytes[4] == b'-' && bytes[7] == b'-' {
        (
            NaiveDate::from_ymd_opt(
                digits(&bytes[0..4])?,
                digits(&bytes[5..7])?,
                digits(&bytes[8..10])?,
            )?,
            &text[10..],
        )
    } else if bytes.len() >= 8 && bytes[..8].iter().all(u8::is_ascii_digit) {
        (
            NaiveDate::from_ymd_opt(
                digits(&bytes[0..4])?,
                digits(&bytes[4..6])?,
                digits(&bytes[6..8])?,
            )?,
            &text[8..],
        )
    } else {
        return None;
    };
    if rest.is_empty() {
        return Some((date.and_time(NaiveTime::MIN), None));
    }
    // Any single character separates date and time.
    let separator_len = rest.chars().next()?.len_utf8();
    let rest = &rest[separator_len..];
    let (time, offset) = parse_time(rest)?;
    Some((date.and_time(time), offset))
}

fn parse_time(text: &str) -> Option<(NaiveTime, Option<i32>)> {
    let bytes = text.as_bytes();
    let offset_at = bytes
        .iter()
        .position(|byte| *byte == b'+' || *byte == b'-')
        .unwrap_or(bytes.len());
    let (clock, offset) = (&text[..offset_at], &text[offset_at..]);
    let clock_bytes = clock.as_bytes();
    let hour = digits(clock_bytes.get(0..2)?)?;
    let mut minute = 0;
    let mut second = 0;
    let mut micros = 0;
    let mut at = 2;
    if clock_bytes.get(at) == Some(&b':') {
        minute = digits(clock_bytes.get(at + 1..at + 3)?)?;
        at += 3;
        if clock_bytes.get(at) == Some(&b':') {
            second = digits(clock_bytes.get(at + 1..at + 3)?)?;
            at += 3;
            if matches!(clock_bytes.get(at), Some(b'.' | b',')) {
                let fraction = &clock_bytes[at + 1..];
                if fraction.is_empty() || !fraction.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                // Python keeps microseconds and drops the digits after them.
                let mut padded = [b'0'; 6];
                for (slot, digit) in padded.iter_mut().zip(fraction) {
                    *slot = *digit;
                }
                micros = digits(&padded)?;
                at = clock_bytes.len();
            }
        }
    }
    if at != clock_bytes.len() {
        return None;
    }
    let time = NaiveTime::from_hms_micro_opt(hour, minute, second, micros)?;
    let offset = if offset.is_empty() {
        None
    } else {
        Some(parse_offset(offset)?)
    };
    Some((time, offset))
}

/// `+HH`, `+HH:MM`, `+HHMM` (and `-`), in seconds east of UTC.
fn parse_offset(text: &str) -> Option<i32> {
    let bytes = text.as_bytes();
    let sign = match bytes.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let hours: i32 = digits(bytes.get(1..3)?)?;
    let minutes: i32 = match bytes.len() {
        3 => 0,
        5 => digits(&bytes[3..5])?,
        6 if bytes[3] == b':' => digits(&bytes[4..6])?,
        _ => return None,
    };
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60))
}

fn digits<T: std::str::FromStr>(bytes: &[u8]) -> Option<T> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|at| at.with_timezone(&Utc))
            .unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    /// The readings posthog-python 7.91.1's `parse_datetime` gives (Python 3.11), naive as UTC.
    #[test]
    fn iso_dates_as_the_sdk_reads_them() {
        let now = utc("2026-11-24T12:00:00Z");
        let cases = [
            ("2024-01-15", "2024-01-15T00:00:00Z"),
            ("2024-01-15T10:00", "2024-01-15T10:00:00Z"),
            ("2024-01-15 10:00:00.123456", "2024-01-15T10:00:00.123456Z"),
            ("2024-01-15T10:00:00+05:30", "2024-01-15T04:30:00Z"),
            ("2024-01-15T10:00:00+0530", "2024-01-15T04:30:00Z"),
            ("20240115", "2024-01-15T00:00:00Z"),
            ("2024-01-15T10", "2024-01-15T10:00:00Z"),
            ("2024-01-15x10:00", "2024-01-15T10:00:00Z"),
            ("2024-01-15T10:00:00.1Z", "2024-01-15T10:00:00.1Z"),
            ("2024-01-15 10:00:00 UTC", "2024-01-15T10:00:00Z"),
            ("2024-01-15T10:00:00 +02:00", "2024-01-15T08:00:00Z"),
            ("2024-01-15T10:00:00.1234567", "2024-01-15T10:00:00.123456Z"),
            ("2024-01-15T10:00:00-00:00", "2024-01-15T10:00:00Z"),
            ("2024-01-15T10:00:00+05", "2024-01-15T05:00:00Z"),
            ("2024-01-15T10:00:00,5", "2024-01-15T10:00:00.5Z"),
            ("  2024-01-15  ", "2024-01-15T00:00:00Z"),
            ("2024", "2024-11-24T00:00:00Z"),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_datetime(text, now), Some(utc(expected)), "{text}");
        }
        for refused in [
            "2024-1-5",
            "2024-01-15T25:00",
            "yesterday",
            "",
            "2024-02-30",
            "15/01/2024",
        ] {
            assert_eq!(parse_datetime(refused, now), None, "{refused}");
        }
    }

    #[test]
    fn relative_dates() {
        let now = utc("2024-03-31T10:00:00Z");
        let resolve = |text: &str| DateFilter::parse(&json!(text)).and_then(|f| f.resolve(now));
        assert_eq!(resolve("-7d"), Some(utc("2024-03-24T10:00:00Z")));
        assert_eq!(resolve("7d"), Some(utc("2024-03-24T10:00:00Z")));
        assert_eq!(resolve("-3h"), Some(utc("2024-03-31T07:00:00Z")));
        assert_eq!(resolve("-2w"), Some(utc("2024-03-17T10:00:00Z")));
        // Clamped through February (29 days in 2024), then kept in January.
        assert_eq!(resolve("-2m"), Some(utc("2024-01-29T10:00:00Z")));
        assert_eq!(resolve("-1m"), Some(utc("2024-02-29T10:00:00Z")));
        assert_eq!(resolve("-1y"), Some(utc("2023-03-31T10:00:00Z")));
        assert_eq!(DateFilter::parse(&json!("-10000d")), None);
        assert_eq!(DateFilter::parse(&json!("-1x")), None);
        let leap = utc("2024-02-29T00:00:00Z");
        assert_eq!(subtract_years(leap, 1), Some(utc("2023-02-28T00:00:00Z")));
    }

    #[test]
    fn properties_fall_back_to_timestamps() {
        let now = utc("2024-03-31T10:00:00Z");
        assert_eq!(
            parse_property(&json!(0), now),
            Some(utc("1970-01-01T00:00:00Z"))
        );
        assert_eq!(
            parse_property(&json!("1700000000"), now),
            Some(utc("2023-11-14T22:13:20Z"))
        );
        assert_eq!(
            parse_property(&json!("2024-01-01"), now),
            Some(utc("2024-01-01T00:00:00Z"))
        );
        assert_eq!(parse_property(&json!(true), now), None);
        assert_eq!(parse_property(&json!("garbage"), now), None);
    }
}
