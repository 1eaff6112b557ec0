//! Reading date-times from text as ClickHouse does: `parseDateTimeBestEffort` (ISO 8601,
//! RFC 2822, `2024/03/10 15:30`, `10/03/2024`, `10 March 2024 15:30`, `March 10, 2024`, unix
//! seconds, `20240310`), the looser `YYYY-MM-DD` reading of `toDateOrNull` (day overflow rolls
//! into the next month, a month past 12 is 1970-01-01), wall times in a zone (a time skipped by a
//! daylight-saving change is read with the offset after it, a repeated one is the first), and
//! `parseDateTime(text, format)` with ClickHouse's MySQL-style format.

use chrono::{
    DateTime, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Utc,
};
use chrono_tz::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, TimestampSecondBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::date_udf::{constant_text, text_argument, udf};

pub(super) fn functions(zone: Tz) -> Vec<ScalarUDF> {
    vec![udf("hogql_parse_datetime", zone, parse_type, parse)]
}

fn zone_argument(scalar: Option<&ScalarValue>, project: Tz) -> Result<Tz> {
    match constant_text(scalar) {
        Some(name) => name
            .parse()
            .map_err(|_| DataFusionError::Plan(format!("Unknown time zone '{name}'"))),
        None if scalar.is_none() => Ok(project),
        None => plan_err!("parseDateTime: the time zone must be a string constant"),
    }
}

fn parse_type(
    types: &[DataType],
    scalars: &[Option<&ScalarValue>],
    project: Tz,
) -> Result<DataType> {
    if types.len() < 2 {
        return plan_err!("parseDateTime expects a text and a format");
    }
    if !scalars.is_empty() && constant_text(scalars.get(1).copied().flatten()).is_none() {
        return plan_err!("parseDateTime: the format must be a string constant");
    }
    let zone = zone_argument(scalars.get(2).copied().flatten(), project)?;
    Ok(DataType::Timestamp(
        TimeUnit::Second,
        Some(zone.name().into()),
    ))
}

fn parse(args: &[ColumnarValue], rows: usize, project: Tz) -> Result<ArrayRef> {
    let Some(format) = text_argument(args, 1) else {
        return exec_err!("parseDateTime: the format must be a string constant");
    };
    let zone = match args.get(2) {
        Some(ColumnarValue::Scalar(scalar)) => zone_argument(Some(scalar), project)?,
        Some(ColumnarValue::Array(_)) => {
            return exec_err!("parseDateTime: the time zone must be a string constant");
        }
        None => project,
    };
    let Some(value) = args.first() else {
        return exec_err!("parseDateTime expects a text and a format");
    };
    let text = cast(&value.to_array(rows)?, &DataType::Utf8)?;
    let text = text.as_string::<i32>();
    let mut out = TimestampSecondBuilder::with_capacity(text.len());
    for i in 0..text.len() {
        out.append_option(
            (!text.is_null(i))
                .then(|| parse_with_format(text.value(i), format, zone))
                .flatten()
                .map(|moment| moment.timestamp()),
        );
    }
    Ok(std::sync::Arc::new(out.finish().with_timezone(zone.name())))
}

/// The instant of a wall time in `zone`, as ClickHouse reads it: the first of a repeated time,
/// and a skipped time read with the offset in force after the change.
pub(super) fn wall_time(naive: NaiveDateTime, zone: Tz) -> Option<DateTime<Utc>> {
    match zone.from_local_datetime(&naive) {
        LocalResult::Single(moment) => Some(moment.with_timezone(&Utc)),
        LocalResult::Ambiguous(earlier, _) => Some(earlier.with_timezone(&Utc)),
        LocalResult::None => {
            let after = zone
                .offset_from_utc_datetime(&(naive + Duration::days(1)))
                .fix()
                .local_minus_utc();
            naive
                .checked_sub_signed(Duration::seconds(after.into()))
                .map(|utc| utc.and_utc())
        }
    }
}

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Number(&'a str),
    Word(&'a str),
    Sign(char),
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Token::Number(&text[start..i]));
        } else if c.is_ascii_alphabetic() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                i += 1;
            }
            out.push(Token::Word(&text[start..i]));
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else {
            // Multi-byte characters are never part of a date: one sign for the whole character.
            let ch = text[i..].chars().next().unwrap_or('?');
            out.push(Token::Sign(ch));
            i += ch.len_utf8();
        }
    }
    out
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// A month's number from its English name or its first three letters.
fn month_name(word: &str) -> Option<u32> {
    let word = word.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| word.len() >= 3 && (m.starts_with(&word) && (word.len() == 3 || *m == word)))
        .map(|i| i as u32 + 1)
}

fn weekday_name(word: &str) -> bool {
    let word = word.to_ascii_lowercase();
    WEEKDAYS
        .iter()
        .any(|d| word.len() >= 3 && (d.starts_with(&word) && (word.len() == 3 || *d == word)))
}

#[derive(Default)]
struct Parts {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
    hour: Option<u32>,
    minute: u32,
    second: u32,
    micros: u32,
    pm: Option<bool>,
    /// Seconds east of UTC, when the text says.
    offset: Option<i32>,
}

fn number(text: &str) -> Option<u32> {
    text.parse().ok()
}

/// The micros of a fraction's digits (`5` → 500000, `1234567` → 123456).
fn fraction(digits: &str) -> u32 {
    let mut value = 0u32;
    for (i, d) in digits.bytes().take(6).enumerate() {
        value += u32::from(d - b'0') * 10u32.pow(5 - i as u32);
    }
    value
}

/// `parseDateTimeBestEffort`: the instant `text` names, a wall time in `zone` when it gives no
/// offset. None when ClickHouse reads no date from it; text naming no year (`10 Mar`,
/// `15:30`) is also None here, where ClickHouse would take the current year.
pub(super) fn best_effort(text: &str, zone: Tz) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if let Some(moment) = digits_only(text, zone) {
        return moment;
    }
    let tokens = tokens(text);
    let mut parts = Parts::default();
    let mut i = 0;
    let at = |i: usize| tokens.get(i);
    let is_sign =
        |t: Option<&Token>, set: &[char]| matches!(t, Some(Token::Sign(c)) if set.contains(c));
    while i < tokens.len() {
        match &tokens[i] {
            Token::Number(n) => {
                // A time: hh:mm[:ss[.frac]].
                if n.len() <= 2 && is_sign(at(i + 1), &[':']) && parts.hour.is_none() {
                    let Some(Token::Number(m)) = at(i + 2) else {
                        return None;
                    };
                    parts.hour = Some(number(n)?);
                    parts.minute = number(m)?;
                    i += 3;
                    if is_sign(at(i), &[':'])
                        && let Some(Token::Number(s)) = at(i + 1)
                    {
                        parts.second = number(s)?;
                        i += 2;
                        if is_sign(at(i), &['.', ','])
                            && let Some(Token::Number(f)) = at(i + 1)
                        {
                            parts.micros = fraction(f);
                            i += 2;
                        }
                    }
                    continue;
                }
                // A date starting with its year: yyyy-mm-dd, yyyy/mm/dd, yyyy.mm.dd, yyyy-mm.
                if n.len() == 4 && parts.year.is_none() {
                    parts.year = Some(number(n)? as i32);
                    i += 1;
                    if parts.month.is_none() && is_sign(at(i), &['-', '/', '.']) {
                        let separator = at(i);
                        match at(i + 1) {
                            Some(Token::Number(m)) if m.len() <= 2 => {
                                parts.month = Some(number(m)?)
                            }
                            Some(Token::Word(m)) => parts.month = Some(month_name(m)?),
                            _ => return None,
                        }
                        i += 2;
                        if at(i) == separator
                            && let Some(Token::Number(d)) = at(i + 1)
                            && d.len() <= 2
                        {
                            parts.day = Some(number(d)?);
                            i += 2;
                        }
                        if parts.day.is_none() {
                            parts.day = Some(1);
                        }
                    }
                    continue;
                }
                // dd/mm/yyyy, dd-mm-yyyy, dd.mm.yyyy (mm/dd/yyyy when the second part is past 12).
                if n.len() <= 2 && parts.day.is_none() && is_sign(at(i + 1), &['-', '/', '.']) {
                    let separator = at(i + 1);
                    let first = number(n)?;
                    let second = match at(i + 2) {
                        Some(Token::Number(m)) if m.len() <= 2 => number(m)?,
                        Some(Token::Word(m)) => month_name(m)?,
                        _ => return None,
                    };
                    let Some(Token::Number(y)) = at(i + 4) else {
                        return None;
                    };
                    if at(i + 3) != separator {
                        return None;
                    }
                    let (day, month) = if second > 12 {
                        (second, first)
                    } else {
                        (first, second)
                    };
                    parts.day = Some(day);
                    parts.month = Some(month);
                    parts.year = Some(year_of(y)?);
                    i += 5;
                    continue;
                }
                // A day before or after a month's name, or a year after them.
                if n.len() <= 2 && parts.day.is_none() {
                    parts.day = Some(number(n)?);
                    i += 1;
                    continue;
                }
                if n.len() <= 2 && parts.year.is_none() && parts.month.is_some() {
                    parts.year = Some(year_of(n)?);
                    i += 1;
                    continue;
                }
                return None;
            }
            Token::Word(w) => {
                let lower = w.to_ascii_lowercase();
                let skipped = weekday_name(w) || (lower == "t" && parts.hour.is_none());
                if let Some(month) = month_name(w)
                    && parts.month.is_none()
                {
                    parts.month = Some(month);
                } else if skipped {
                    // Weekday names and the `T` between a date and its time say nothing more.
                } else if lower == "am" || lower == "pm" {
                    parts.pm = Some(lower == "pm");
                } else if lower == "z" || lower == "utc" || lower == "gmt" {
                    parts.offset = Some(0);
                } else {
                    return None;
                }
                i += 1;
            }
            Token::Sign(',') => i += 1,
            Token::Sign(sign @ ('+' | '-')) if parts.hour.is_some() => {
                let Some(Token::Number(h)) = at(i + 1) else {
                    return None;
                };
                let (hours, mut minutes) = match h.len() {
                    1 | 2 => (number(h)?, 0),
                    4 => (number(&h[..2])?, number(&h[2..])?),
                    _ => return None,
                };
                i += 2;
                if h.len() <= 2
                    && is_sign(at(i), &[':'])
                    && let Some(Token::Number(m)) = at(i + 1)
                {
                    minutes = number(m)?;
                    i += 2;
                }
                let seconds = (hours * 3600 + minutes * 60) as i32;
                parts.offset = Some(if *sign == '-' { -seconds } else { seconds });
            }
            _ => return None,
        }
    }
    assemble(parts, zone)
}

fn year_of(text: &str) -> Option<i32> {
    match text.len() {
        4 => text.parse().ok(),
        2 => text
            .parse::<i32>()
            .ok()
            .map(|y| if y < 70 { 2000 + y } else { 1900 + y }),
        _ => None,
    }
}

fn assemble(parts: Parts, zone: Tz) -> Option<DateTime<Utc>> {
    let date = NaiveDate::from_ymd_opt(
        parts.year?,
        parts.month.unwrap_or(1),
        parts.day.unwrap_or(1),
    )?;
    let mut hour = parts.hour.unwrap_or(0);
    match parts.pm {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    if parts.minute > 59 || parts.second > 60 || hour > 99 {
        return None;
    }
    // ClickHouse adds the hours as they are: 25:00 is 01:00 the next day.
    let local = date.and_time(NaiveTime::MIN)
        + Duration::hours(hour.into())
        + Duration::minutes(parts.minute.into())
        + Duration::seconds(parts.second.into())
        + Duration::microseconds(parts.micros.into());
    match parts.offset {
        Some(offset) => Some((local - Duration::seconds(offset.into())).and_utc()),
        None => wall_time(local, zone),
    }
}

/// Text of digits alone: unix seconds (up to 10 digits), or `YYYY`, `YYYYMM`, `YYYYMMDD`,
/// `YYYYMMDDhhmmss`. None when the text is not only digits.
fn digits_only(text: &str, zone: Tz) -> Option<Option<DateTime<Utc>>> {
    let (whole, fraction_digits) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Some(digits) = fraction_digits
        && (digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let n = |range: std::ops::Range<usize>| whole.get(range).and_then(number);
    let calendar = |year: u32, month: u32, day: u32, h: u32, m: u32, s: u32| {
        let date = NaiveDate::from_ymd_opt(year as i32, month, day)?;
        wall_time(date.and_hms_opt(h, m, s)?, zone)
    };
    Some(match (whole.len(), fraction_digits) {
        (4, None) => calendar(n(0..4)?, 1, 1, 0, 0, 0),
        (6, None) => calendar(n(0..4)?, n(4..6)?, 1, 0, 0, 0),
        (8, None) => calendar(n(0..4)?, n(4..6)?, n(6..8)?, 0, 0, 0),
        (14, None) => calendar(
            n(0..4)?,
            n(4..6)?,
            n(6..8)?,
            n(8..10)?,
            n(10..12)?,
            n(12..14)?,
        ),
        (len, _) if len <= 10 => {
            let seconds: i64 = whole.parse().ok()?;
            let micros = fraction_digits.map(fraction).unwrap_or(0);
            DateTime::<Utc>::from_timestamp(seconds, micros * 1000)
        }
        _ => None,
    })
}

/// `toDateOrNull(text)`: `YYYY-MM-DD` read loosely as ClickHouse does (any separator, one- or
/// two-digit month and day, a time after it ignored). A day past the month's end rolls into the
/// next month (`2024-02-30` is 2024-03-01); a month past 12 or a day past 31 is 1970-01-01.
pub(super) fn date_text(text: &str) -> Option<NaiveDate> {
    let bytes = text.trim().as_bytes();
    let digits = |from: usize, max: usize| -> (u32, usize) {
        let mut value = 0u32;
        let mut i = from;
        while i < bytes.len() && i - from < max && bytes[i].is_ascii_digit() {
            value = value * 10 + u32::from(bytes[i] - b'0');
            i += 1;
        }
        (value, i - from)
    };
    let (year, len) = digits(0, 4);
    if len != 4 {
        return None;
    }
    let mut i = 4;
    if i >= bytes.len() || bytes[i].is_ascii_digit() {
        // `YYYYMMDD`.
        let (month, m) = digits(4, 2);
        let (day, d) = digits(6, 2);
        if m != 2 || d != 2 || bytes.len() != 8 {
            return None;
        }
        return day_number(year as i32, month, day);
    }
    i += 1;
    let (month, m) = digits(i, 2);
    if m == 0 {
        return None;
    }
    i += m;
    if i >= bytes.len() || bytes[i].is_ascii_digit() {
        return None;
    }
    i += 1;
    let (day, d) = digits(i, 2);
    if d == 0 {
        return None;
    }
    i += d;
    // The date ends the text, or a space does (a time may follow it; `2024-03-10T...` is NULL).
    if i < bytes.len() && bytes[i] != b' ' {
        return None;
    }
    day_number(year as i32, month, day)
}

/// ClickHouse's `makeDayNum`: the month's first day plus the days, 1970-01-01 when out of range.
fn day_number(year: i32, month: u32, day: u32) -> Option<NaiveDate> {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || !(1970..=2149).contains(&year) {
        return Some(epoch);
    }
    NaiveDate::from_ymd_opt(year, month, 1)?.checked_add_signed(Duration::days(i64::from(day) - 1))
}

/// `parseDateTime(text, format)` (HogQL: `parseDateTimeOrNull`): ClickHouse's MySQL-style
/// specifiers; fields the format does not give are 1970-01-01 00:00:00's; NULL unless the whole
/// text matches. The wall time is read in `zone`.
pub(super) fn parse_with_format(text: &str, format: &str, zone: Tz) -> Option<DateTime<Utc>> {
    let mut year = 1970i32;
    let (mut month, mut day, mut hour, mut minute, mut second) = (1u32, 1u32, 0u32, 0u32, 0u32);
    let mut micros = 0u32;
    let mut day_of_year: Option<u32> = None;
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    let mut rest = text;
    let mut spec = format.chars();
    let take_digits = |rest: &mut &str, min: usize, max: usize| -> Option<u32> {
        let len = rest
            .bytes()
            .take(max)
            .take_while(|b| b.is_ascii_digit())
            .count();
        if len < min {
            return None;
        }
        let value = rest[..len].parse().ok()?;
        *rest = &rest[len..];
        Some(value)
    };
    let take_word = |rest: &mut &str, names: &[&str], full: bool| -> Option<u32> {
        for (i, name) in names.iter().enumerate() {
            let candidate = if full { name } else { &name[..3] };
            if rest.len() >= candidate.len()
                && rest.is_char_boundary(candidate.len())
                && rest[..candidate.len()].eq_ignore_ascii_case(candidate)
            {
                *rest = &rest[candidate.len()..];
                return Some(i as u32);
            }
        }
        None
    };
    while let Some(c) = spec.next() {
        if c != '%' {
            rest = rest.strip_prefix(c)?;
            continue;
        }
        match spec.next()? {
            'Y' => year = take_digits(&mut rest, 4, 4)? as i32,
            'y' => year = 2000 + take_digits(&mut rest, 2, 2)? as i32,
            'C' => year = take_digits(&mut rest, 2, 2)? as i32 * 100 + year % 100,
            'm' => month = take_digits(&mut rest, 2, 2)?,
            'c' => month = take_digits(&mut rest, 1, 2)?,
            'M' | 'B' => month = take_word(&mut rest, &MONTHS, true)? + 1,
            'b' | 'h' => month = take_word(&mut rest, &MONTHS, false)? + 1,
            'd' => day = take_digits(&mut rest, 2, 2)?,
            'e' => {
                rest = rest.trim_start_matches(' ');
                day = take_digits(&mut rest, 1, 2)?
            }
            'j' => day_of_year = Some(take_digits(&mut rest, 3, 3)?),
            'a' => {
                take_word(&mut rest, &WEEKDAYS, false)?;
            }
            'W' => {
                take_word(&mut rest, &WEEKDAYS, true)?;
            }
            'H' => hour = take_digits(&mut rest, 2, 2)?,
            'k' => {
                rest = rest.trim_start_matches(' ');
                hour = take_digits(&mut rest, 1, 2)?
            }
            'I' | 'l' => hour = take_digits(&mut rest, 2, 2)?,
            'i' => minute = take_digits(&mut rest, 2, 2)?,
            's' | 'S' => second = take_digits(&mut rest, 2, 2)?,
            'f' => {
                let len = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
                if len == 0 {
                    return None;
                }
                micros = fraction(&rest[..len]);
                rest = &rest[len..];
            }
            'p' => {
                pm = Some(take_word(&mut rest, &["AM", "PM"], true)? == 1);
            }
            'F' => {
                year = take_digits(&mut rest, 4, 4)? as i32;
                rest = rest.strip_prefix('-')?;
                month = take_digits(&mut rest, 2, 2)?;
                rest = rest.strip_prefix('-')?;
                day = take_digits(&mut rest, 2, 2)?;
            }
            'T' => {
                hour = take_digits(&mut rest, 2, 2)?;
                rest = rest.strip_prefix(':')?;
                minute = take_digits(&mut rest, 2, 2)?;
                rest = rest.strip_prefix(':')?;
                second = take_digits(&mut rest, 2, 2)?;
            }
            'R' => {
                hour = take_digits(&mut rest, 2, 2)?;
                rest = rest.strip_prefix(':')?;
                minute = take_digits(&mut rest, 2, 2)?;
            }
            'z' => {
                let sign = if rest.starts_with('-') { -1 } else { 1 };
                rest = rest.strip_prefix(['+', '-'])?;
                let hours = take_digits(&mut rest, 2, 2)?;
                rest = rest.strip_prefix(':').unwrap_or(rest);
                let minutes = take_digits(&mut rest, 2, 2)?;
                offset = Some(sign * (hours * 3600 + minutes * 60) as i32);
            }
            'n' => rest = rest.strip_prefix('\n')?,
            't' => rest = rest.strip_prefix('\t')?,
            '%' => rest = rest.strip_prefix('%')?,
            _ => return None,
        }
    }
    if !rest.is_empty() {
        return None;
    }
    match pm {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    let date = match day_of_year {
        Some(n) => NaiveDate::from_yo_opt(year, n)?,
        None => NaiveDate::from_ymd_opt(year, month, day)?,
    };
    let local = date.and_time(NaiveTime::from_hms_micro_opt(hour, minute, second, micros)?);
    match offset {
        Some(offset) => Some((local - Duration::seconds(offset.into())).and_utc()),
        None => wall_time(local, zone),
    }
}

/// The wall time of `moment` in `zone`.
pub(super) fn local(moment: DateTime<Utc>, zone: Tz) -> NaiveDateTime {
    moment.with_timezone(&zone).naive_local()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<String> {
        best_effort(text, chrono_tz::UTC).map(|t| t.format("%Y-%m-%d %H:%M:%S%.f").to_string())
    }

    #[test]
    fn reads_what_clickhouse_reads() {
        for (text, expected) in [
            ("1710084600", "2024-03-10 15:30:00"),
            ("171008460", "1975-06-03 06:21:00"),
            ("20240310", "2024-03-10 00:00:00"),
            ("202403", "2024-03-01 00:00:00"),
            ("20240310153000", "2024-03-10 15:30:00"),
            ("2024/03/10 15:30:00", "2024-03-10 15:30:00"),
            ("10/03/2024", "2024-03-10 00:00:00"),
            ("03/10/2024 15:30", "2024-10-03 15:30:00"),
            ("12/31/2024", "2024-12-31 00:00:00"),
            ("10.03.2024", "2024-03-10 00:00:00"),
            ("10-Mar-2024", "2024-03-10 00:00:00"),
            ("Sun, 10 Mar 2024 15:30:00 GMT", "2024-03-10 15:30:00"),
            ("Sun, 10 Mar 2024 15:30:00 +0100", "2024-03-10 14:30:00"),
            ("10 March 2024 15:30", "2024-03-10 15:30:00"),
            ("March 10, 2024", "2024-03-10 00:00:00"),
            ("Mar 10 2024 3:30 PM", "2024-03-10 15:30:00"),
            ("2024-03-10 3:30pm", "2024-03-10 15:30:00"),
            ("2024-03-10T15:30:00.123Z", "2024-03-10 15:30:00.123"),
            ("2024-03-10 15:30:00+0530", "2024-03-10 10:00:00"),
            ("2024-03-10 15:30:00 -05", "2024-03-10 20:30:00"),
            ("2024-03", "2024-03-01 00:00:00"),
            ("2024", "2024-01-01 00:00:00"),
            ("2024-03-10 25:00:00", "2024-03-11 01:00:00"),
            ("Sunday 10 March 2024", "2024-03-10 00:00:00"),
        ] {
            assert_eq!(read(text).as_deref(), Some(expected), "{text}");
        }
        for text in ["", "abc", "2024-02-30", "2024-03-10 15:30:00 EST", "Zoë"] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    #[test]
    fn dates_roll_over_as_clickhouse_does() {
        let read = |text| date_text(text).map(|d| d.to_string());
        assert_eq!(read("2024-02-30").as_deref(), Some("2024-03-01"));
        assert_eq!(read("2024-13-01").as_deref(), Some("1970-01-01"));
        assert_eq!(read("2024-3-1").as_deref(), Some("2024-03-01"));
        assert_eq!(read("2024-03-10 12:00:00").as_deref(), Some("2024-03-10"));
        assert_eq!(read("abc"), None);
    }
}
