//! Wall-clock text and time zones, read one way by the SQL engine and by the insights compiler;
//! and instants written as PostHog's API writes them.

use chrono::{
    DateTime, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, SecondsFormat,
    TimeZone, Utc,
};
use chrono_tz::Tz;

/// DRF's DateTimeField output: UTC with `Z`, microseconds only when there are some.
pub fn iso(at: DateTime<Utc>) -> String {
    if at.timestamp_subsec_nanos() == 0 {
        at.to_rfc3339_opts(SecondsFormat::Secs, true)
    } else {
        at.to_rfc3339_opts(SecondsFormat::Micros, true)
    }
}

/// [`iso`], or null.
pub fn iso_or_null(at: Option<DateTime<Utc>>) -> serde_json::Value {
    at.map_or(serde_json::Value::Null, |at| {
        serde_json::Value::String(iso(at))
    })
}

/// `2026-11-01 10:00:00[.ffffff]`, the same with `T`, without seconds, or a bare date (midnight).
pub fn naive_datetime(text: &str) -> Option<NaiveDateTime> {
    [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ]
    .iter()
    .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
    .or_else(|| {
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .map(|date| date.and_time(NaiveTime::MIN))
    })
}

/// The instant of a wall time in `zone`: the earlier one when the clock goes back, and the time
/// as read with the offset before the change when the clock skips it (02:30 on a spring-forward
/// night in New York is 03:30 EDT, as Python's zoneinfo reads it).
pub fn wall_time(naive: NaiveDateTime, zone: Tz) -> DateTime<Tz> {
    match zone.from_local_datetime(&naive) {
        LocalResult::Single(moment) => moment,
        LocalResult::Ambiguous(earlier, _) => earlier,
        LocalResult::None => {
            let before = zone
                .offset_from_utc_datetime(&(naive - Duration::days(1)))
                .fix()
                .local_minus_utc();
            zone.from_utc_datetime(&(naive - Duration::seconds(before.into())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_and_repeated_wall_times() {
        let new_york: Tz = "America/New_York".parse().unwrap();
        let at = |text| naive_datetime(text).unwrap();
        // Spring forward: 02:30 does not exist; read with EST it is 03:30 EDT.
        assert_eq!(
            wall_time(at("2026-03-08 02:30"), new_york).to_rfc3339(),
            "2026-03-08T03:30:00-04:00"
        );
        // Fall back: 01:30 happens twice; the first (EDT) is taken.
        assert_eq!(
            wall_time(at("2026-11-01T01:30:00"), new_york).to_rfc3339(),
            "2026-11-01T01:30:00-04:00"
        );
        assert_eq!(at("2026-11-01"), at("2026-11-01 00:00:00.000"));
        assert!(naive_datetime("November 1").is_none());
    }
}
