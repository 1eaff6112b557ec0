//! Exponential backoff, shared by the store's conflict retries and the job runner's retries.

use std::time::Duration;

use rand::Rng;

/// The wait before retry `attempt` (1 for the first), before jitter: `base` doubling each time,
/// at most `cap`; any attempt number is safe.
pub fn ceiling(base: Duration, cap: Duration, attempt: u32) -> Duration {
    base.saturating_mul(1 << attempt.saturating_sub(1).min(20))
        .min(cap)
}

/// Anywhere from nothing to `ceiling` ("full jitter"): writers that collided spread out at once.
pub fn full_jitter(ceiling: Duration) -> Duration {
    rand::thread_rng().gen_range(Duration::ZERO..=ceiling)
}

/// Between half of `ceiling` and all of it ("equal jitter"): retries spread out but never come
/// back at once, which is pointless for work that just failed.
pub fn equal_jitter(ceiling: Duration) -> Duration {
    rand::thread_rng().gen_range(ceiling / 2..=ceiling)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_double_up_to_the_cap() {
        let (base, cap) = (Duration::from_secs(2), Duration::from_secs(900));
        let waits: Vec<u64> = (1..=12).map(|n| ceiling(base, cap, n).as_secs()).collect();
        assert_eq!(&waits[..5], &[2, 4, 8, 16, 32]);
        assert_eq!(waits[11], 900);
        assert_eq!(ceiling(base, cap, 0), base);
        assert_eq!(ceiling(base, cap, u32::MAX), cap);
    }

    #[test]
    fn jitters_stay_in_their_ranges() {
        let top = Duration::from_secs(8);
        for _ in 0..100 {
            assert!(full_jitter(top) <= top);
            let wait = equal_jitter(top);
            assert!(wait >= top / 2 && wait <= top);
        }
        assert_eq!(equal_jitter(Duration::ZERO), Duration::ZERO);
    }
}
