//! Versions as posthog-python 7.91.1 compares them (`parse_semver` and the tilde, caret and
//! wildcard bounds): `(major, minor, patch)` only, missing parts 0, pre-release and build
//! suffixes dropped. The `semver` crate orders pre-releases and refuses partial versions, so
//! this is written out. Leading zeros (`1.02`), which the SDK leaves to the server, read as the
//! flags service reads them (`1.2`).

use serde_json::Value;

use super::values::value_to_string;

pub type Version = (u64, u64, u64);

/// `parse_semver`: trim, drop leading `v`/`V`, cut at `-` and `+`, then up to three numbers.
pub fn parse(value: &Value) -> Option<Version> {
    let text = value_to_string(value);
    let text = text.trim().trim_start_matches(['v', 'V']);
    let core = text.split('-').next().unwrap_or_default();
    let core = core.split('+').next().unwrap_or_default();
    let mut parts = core.split('.');
    let major = number(parts.next().filter(|part| !part.is_empty())?)?;
    let minor = optional_number(parts.next())?;
    let patch = optional_number(parts.next())?;
    Some((major, minor, patch))
}

fn optional_number(part: Option<&str>) -> Option<u64> {
    match part {
        None | Some("") => Some(0),
        Some(part) => number(part),
    }
}

fn number(part: &str) -> Option<u64> {
    if part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

/// `~1.2.3`: `>=1.2.3 <1.3.0`.
pub fn tilde_bounds(value: &Value) -> Option<(Version, Version)> {
    let (major, minor, patch) = parse(value)?;
    Some(((major, minor, patch), (major, minor.checked_add(1)?, 0)))
}

/// `^1.2.3`: `<2.0.0`; `^0.2.3`: `<0.3.0`; `^0.0.3`: `<0.0.4`.
pub fn caret_bounds(value: &Value) -> Option<(Version, Version)> {
    let lower = parse(value)?;
    let upper = match lower {
        (major, _, _) if major > 0 => (major.checked_add(1)?, 0, 0),
        (0, minor, _) if minor > 0 => (0, minor.checked_add(1)?, 0),
        (_, _, patch) => (0, 0, patch.checked_add(1)?),
    };
    Some((lower, upper))
}

/// `1.*`: `>=1.0.0 <2.0.0`; `1.2.*`: `<1.3.0`; `1.2.3`: `<1.2.4`.
pub fn wildcard_bounds(value: &Value) -> Option<(Version, Version)> {
    let text = value_to_string(value);
    let cleaned = text.trim().trim_start_matches(['v', 'V']).replace('*', "");
    let cleaned = cleaned.trim_end_matches('.');
    let parts: Vec<&str> = cleaned.split('.').filter(|part| !part.is_empty()).collect();
    match parts.as_slice() {
        [] => None,
        [major] => {
            let major = number(major)?;
            Some(((major, 0, 0), (major.checked_add(1)?, 0, 0)))
        }
        [major, minor] => {
            let (major, minor) = (number(major)?, number(minor)?);
            Some(((major, minor, 0), (major, minor.checked_add(1)?, 0)))
        }
        [major, minor, patch, ..] => {
            let (major, minor, patch) = (number(major)?, number(minor)?, number(patch)?);
            Some(((major, minor, patch), (major, minor, patch.checked_add(1)?)))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// posthog-python 7.91.1's `parse_semver` on the same inputs (leading zeros aside).
    #[test]
    fn versions_as_the_sdk_reads_them() {
        let cases = [
            (json!("1.2.3"), Some((1, 2, 3))),
            (json!("v1.2"), Some((1, 2, 0))),
            (json!("V1"), Some((1, 0, 0))),
            (json!("1.2.3-alpha"), Some((1, 2, 3))),
            (json!("1.2.3+b"), Some((1, 2, 3))),
            (json!("1."), Some((1, 0, 0))),
            (json!("1..3"), Some((1, 0, 3))),
            (json!("1.2.3.4"), Some((1, 2, 3))),
            (json!(" v1.2.3 "), Some((1, 2, 3))),
            (json!("vv1.2"), Some((1, 2, 0))),
            (json!(1), Some((1, 0, 0))),
            (json!(1.5), Some((1, 5, 0))),
            (json!("1.02"), Some((1, 2, 0))),
            (json!(""), None),
            (json!("a.b"), None),
            (json!("1.2.x"), None),
            (json!(true), None),
            (json!(null), None),
        ];
        for (value, expected) in cases {
            assert_eq!(parse(&value), expected, "{value}");
        }
    }

    #[test]
    fn ranges_as_the_sdk_bounds_them() {
        assert_eq!(wildcard_bounds(&json!("1.*")), Some(((1, 0, 0), (2, 0, 0))));
        assert_eq!(
            wildcard_bounds(&json!("1.2.*")),
            Some(((1, 2, 0), (1, 3, 0)))
        );
        assert_eq!(
            wildcard_bounds(&json!("1.2.3.*")),
            Some(((1, 2, 3), (1, 2, 4)))
        );
        assert_eq!(
            wildcard_bounds(&json!("1.2.3")),
            Some(((1, 2, 3), (1, 2, 4)))
        );
        assert_eq!(wildcard_bounds(&json!("*")), None);
        assert_eq!(wildcard_bounds(&json!("1.x")), None);
        assert_eq!(caret_bounds(&json!("0.0.3")), Some(((0, 0, 3), (0, 0, 4))));
        assert_eq!(caret_bounds(&json!("0.2.3")), Some(((0, 2, 3), (0, 3, 0))));
        assert_eq!(caret_bounds(&json!("1.2.3")), Some(((1, 2, 3), (2, 0, 0))));
        assert_eq!(tilde_bounds(&json!("1.2")), Some(((1, 2, 0), (1, 3, 0))));
    }
}
