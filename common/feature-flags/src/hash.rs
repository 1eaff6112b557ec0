//! PostHog's bucketing hashes (reference 3.2; posthog-python `_hash`, PostHog's Rust
//! `flag_matching_utils::calculate_hash`): `sha1(prefix + identifier + salt)`, its first 15 hex
//! digits (the top 60 bits) over `0xFFFFFFFFFFFFFFF`, a float in `[0, 1]`.

use sha1::{Digest, Sha1};

/// 15 hex Fs: 2^60 - 1.
pub const LONG_SCALE: f64 = 0xFFF_FFFF_FFFF_FFFF_u64 as f64;

/// The hash of `prefix + identifier + salt`, fed to SHA-1 in pieces so nothing is allocated.
pub fn calculate_hash(prefix: &str, identifier: &str, salt: &str) -> f64 {
    let mut hasher = Sha1::new();
    hasher.update(prefix.as_bytes());
    hasher.update(identifier.as_bytes());
    hasher.update(salt.as_bytes());
    let digest = hasher.finalize();
    let mut top = [0_u8; 8];
    top.copy_from_slice(&digest[..8]);
    // 15 hex digits are the top 60 bits of the first 8 bytes.
    (u64::from_be_bytes(top) >> 4) as f64 / LONG_SCALE
}

/// `"<flag key>."`, the prefix of the rollout and variant hashes (kept per prepared flag).
pub fn flag_prefix(flag_key: &str) -> String {
    format!("{flag_key}.")
}

/// Whether a condition's rollout takes `identifier`: `sha1("<key>.<id>")`.
pub fn rollout_hash(prefix: &str, identifier: &str) -> f64 {
    calculate_hash(prefix, identifier, "")
}

/// Where `identifier` falls in the variant table: `sha1("<key>.<id>variant")`.
pub fn variant_hash(prefix: &str, identifier: &str) -> f64 {
    calculate_hash(prefix, identifier, "variant")
}

/// Holdout membership, independent of the flag: `sha1("holdout-<id>")`.
pub fn holdout_hash(identifier: &str) -> f64 {
    calculate_hash("holdout-", identifier, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < 1e-12,
            "{actual} differs from {expected}"
        );
    }

    /// The worked vectors of reference section 3.2.
    #[test]
    fn reference_vectors() {
        let experiment = flag_prefix("my-experiment");
        close(rollout_hash(&experiment, "user-1"), 0.121436936611);
        close(variant_hash(&experiment, "user-1"), 0.000734366070);
        close(holdout_hash("user-1"), 0.178055992066);
        close(rollout_hash(&experiment, "user-2"), 0.664579166964);
        close(variant_hash(&experiment, "user-2"), 0.418195440713);
        close(holdout_hash("user-2"), 0.928387330790);
        let beta = flag_prefix("beta-feature");
        close(rollout_hash(&beta, "distinct_id_1"), 0.993334458909);
        close(variant_hash(&beta, "distinct_id_1"), 0.819401600958);
        close(holdout_hash("distinct_id_1"), 0.537152227490);
    }

    /// posthog-python 7.91.1's `_hash("simple-flag", "some-distinct-id")` and friends, computed
    /// with the installed SDK; repr round-trips, so the bits must be equal (`.venv/bin/python -c 'from posthog.feature_flags import _hash'`).
    #[test]
    fn python_sdk_vectors() {
        let prefix = flag_prefix("simple-flag");
        assert_eq!(rollout_hash(&prefix, "some-distinct-id"), PY_SIMPLE_ROLLOUT);
        assert_eq!(variant_hash(&prefix, "some-distinct-id"), PY_SIMPLE_VARIANT);
        assert_eq!(holdout_hash("some-distinct-id"), PY_HOLDOUT);
        assert_eq!(rollout_hash(&flag_prefix("ünïcødé"), "ïd-✓"), PY_UNICODE);
    }

    const PY_SIMPLE_ROLLOUT: f64 = 0.477755795905271;
    const PY_SIMPLE_VARIANT: f64 = 0.7770474308392754;
    const PY_HOLDOUT: f64 = 0.251040535935096;
    const PY_UNICODE: f64 = 0.5375832909465287;

    #[test]
    fn hash_is_in_unit_interval_and_stable() {
        let prefix = flag_prefix("k");
        for i in 0..1000 {
            let id = format!("id-{i}");
            let hash = rollout_hash(&prefix, &id);
            assert!((0.0..=1.0).contains(&hash));
            assert_eq!(hash.to_bits(), rollout_hash(&prefix, &id).to_bits());
        }
    }
}
