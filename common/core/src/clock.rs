//! Where time comes from: the system clock in production, a clock tests set by hand, so a test
//! never sleeps to wait for wall-clock time to pass.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Milliseconds since the epoch on the machine's own clock, never a test's: for instants another
/// system states in wall time, such as a Lambda invocation's deadline, which passes in real time
/// whatever the state's clock says.
pub fn wall_clock_ms() -> u64 {
    u64::try_from(SystemClock.now().timestamp_millis()).unwrap_or(0)
}

/// A clock that stands still until told to move.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn at(now: DateTime<Utc>) -> Self {
        Self(Mutex::new(now))
    }

    pub fn advance(&self, by: chrono::Duration) {
        if let Ok(mut now) = self.0.lock() {
            *now += by;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        self.0.lock().map(|now| *now).unwrap_or_else(|_| Utc::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let start = DateTime::parse_from_rfc3339("2026-11-23T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let clock = ManualClock::at(start);
        assert_eq!(clock.now(), start);
        clock.advance(chrono::Duration::hours(2));
        assert_eq!(clock.now(), start + chrono::Duration::hours(2));
    }
}
