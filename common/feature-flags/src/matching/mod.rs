//! Property conditions (posthog-python 7.91.1's `match_property`), compiled once per definition.
//!
//! Where the SDK answers, we answer the same. Where the SDK cannot (it raises
//! `InconclusiveMatchError` and asks the server), we answer as PostHog's flags service does
//! (`rust/feature-flags/src/properties/property_matching.rs`, `match_property` with
//! `partial_props = false`): a property the subject lacks does not match, except for the
//! negative operators `is_not`, `not_icontains`, `not_regex` and `is_not_set`, which do; a filter
//! value that cannot be read (bad regex, number, date or version) never matches.

mod dates;
mod semver;
pub(crate) mod values;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use regex::{Regex, RegexBuilder};
use serde_json::{Map, Value};

use crate::model::{Operator, PropertyFilter};
use dates::DateFilter;
use values::{is_truthy, is_truthy_or_falsy, parse_numeric, value_to_string};

/// The `property_matching_version` our local-evaluation definitions advertise. posthog-python
/// reads a missing value as 1, and only 2 switches `exact`/`is_not` to plain string equality;
/// PostHog's flags service compares booleans by truthiness (`"TRUE"` equals `true`), which is
/// version 1, so 1 keeps SDK-local answers equal to ours.
pub const PROPERTY_MATCHING_VERSION: u8 = 1;

/// Compiled regexes are capped so a hostile pattern cannot take memory or time.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// One person or group property condition made ready to match many times.
#[derive(Debug, Clone)]
pub struct PropertyMatcher {
    key: String,
    test: Test,
}

#[derive(Debug, Clone)]
enum Test {
    Exact {
        expected: Expected,
        negated: bool,
    },
    Icontains {
        needle: String,
        negated: bool,
    },
    /// None: the pattern does not compile, and then neither `regex` nor `not_regex` matches.
    Regex {
        regex: Option<Regex>,
        negated: bool,
    },
    /// None: the filter value is not a number.
    Numeric {
        comparison: Comparison,
        threshold: Option<f64>,
    },
    IsSet,
    IsNotSet,
    Date {
        comparison: DateComparison,
        filter: Option<DateFilter>,
    },
    Semver {
        comparison: Comparison,
        version: Option<semver::Version>,
    },
    /// `semver_tilde`, `semver_caret`, `semver_wildcard`: `lower <= v < upper`.
    SemverRange {
        bounds: Option<(semver::Version, semver::Version)>,
    },
    /// Operators that make no sense on a property (`in`, `flag_evaluates_to`).
    Never,
}

#[derive(Debug, Clone)]
enum Expected {
    /// Version 1: a boolean-like filter (`true`, `"False"`, `[]`, lists of those) compares
    /// truthiness.
    Truthy(bool),
    /// Lowercased string forms; a list matches any of them.
    AnyOf(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Eq,
    Neq,
    Gt,
    Gte,
    Lt,
    Lte,
}

impl Comparison {
    fn holds<T: PartialOrd>(self, left: T, right: T) -> bool {
        match self {
            Self::Eq => left == right,
            Self::Neq => left != right,
            Self::Gt => left > right,
            Self::Gte => left >= right,
            Self::Lt => left < right,
            Self::Lte => left <= right,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DateComparison {
    Before,
    After,
    /// Not in the SDK (it defers); the flags service compares instants for equality.
    Exact,
}

impl PropertyMatcher {
    pub fn new(filter: &PropertyFilter) -> Self {
        let value = &filter.value;
        let test = match filter.operator {
            Operator::Exact => Test::Exact {
                expected: Expected::new(value),
                negated: false,
            },
            Operator::IsNot => Test::Exact {
                expected: Expected::new(value),
                negated: true,
            },
            Operator::Icontains | Operator::NotIcontains => Test::Icontains {
                needle: value_to_string(value).to_ascii_lowercase(),
                negated: filter.operator == Operator::NotIcontains,
            },
            Operator::Regex | Operator::NotRegex => Test::Regex {
                regex: compile_regex(&value_to_string(value)),
                negated: filter.operator == Operator::NotRegex,
            },
            Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte => Test::Numeric {
                comparison: match filter.operator {
                    Operator::Gt => Comparison::Gt,
                    Operator::Gte => Comparison::Gte,
                    Operator::Lt => Comparison::Lt,
                    _ => Comparison::Lte,
                },
                threshold: parse_numeric(value),
            },
            Operator::IsSet => Test::IsSet,
            Operator::IsNotSet => Test::IsNotSet,
            Operator::IsDateBefore | Operator::IsDateAfter | Operator::IsDateExact => Test::Date {
                comparison: match filter.operator {
                    Operator::IsDateBefore => DateComparison::Before,
                    Operator::IsDateAfter => DateComparison::After,
                    _ => DateComparison::Exact,
                },
                filter: DateFilter::parse(value),
            },
            Operator::SemverEq
            | Operator::SemverNeq
            | Operator::SemverGt
            | Operator::SemverGte
            | Operator::SemverLt
            | Operator::SemverLte => Test::Semver {
                comparison: match filter.operator {
                    Operator::SemverEq => Comparison::Eq,
                    Operator::SemverNeq => Comparison::Neq,
                    Operator::SemverGt => Comparison::Gt,
                    Operator::SemverGte => Comparison::Gte,
                    Operator::SemverLt => Comparison::Lt,
                    _ => Comparison::Lte,
                },
                version: semver::parse(value),
            },
            Operator::SemverTilde => Test::SemverRange {
                bounds: semver::tilde_bounds(value),
            },
            Operator::SemverCaret => Test::SemverRange {
                bounds: semver::caret_bounds(value),
            },
            Operator::SemverWildcard => Test::SemverRange {
                bounds: semver::wildcard_bounds(value),
            },
            Operator::In | Operator::NotIn | Operator::FlagEvaluatesTo => Test::Never,
        };
        Self {
            key: filter.key.clone(),
            test,
        }
    }

    /// The property this condition reads.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether `properties` satisfy this condition.
    pub fn matches_in(&self, properties: &Map<String, Value>, now: DateTime<Utc>) -> bool {
        self.matches(properties.get(&self.key), now)
    }

    /// Whether the property's value (None: the subject does not have it) satisfies this condition.
    /// Relative dates (`-7d`) are read at `now`.
    pub fn matches(&self, value: Option<&Value>, now: DateTime<Utc>) -> bool {
        let Some(value) = value else {
            return matches!(
                self.test,
                Test::IsNotSet
                    | Test::Exact { negated: true, .. }
                    | Test::Icontains { negated: true, .. }
                    | Test::Regex { negated: true, .. }
            );
        };
        match &self.test {
            Test::Exact { expected, negated } => expected.matches(value) != *negated,
            Test::Icontains { needle, negated } => {
                let haystack = value_to_string(value);
                contains_ascii_case_insensitive(&haystack, needle) != *negated
            }
            Test::Regex { regex, negated } => match regex {
                Some(regex) => regex.is_match(&value_to_string(value)) != *negated,
                None => false,
            },
            Test::Numeric {
                comparison,
                threshold,
            } => match (parse_numeric(value), threshold) {
                (Some(actual), Some(threshold)) => comparison.holds(actual, *threshold),
                _ => false,
            },
            Test::IsSet => true,
            Test::IsNotSet => false,
            Test::Date { comparison, filter } => {
                let (Some(actual), Some(expected)) = (
                    dates::parse_property(value, now),
                    filter.and_then(|filter| filter.resolve(now)),
                ) else {
                    return false;
                };
                match comparison {
                    DateComparison::Before => actual < expected,
                    DateComparison::After => actual > expected,
                    DateComparison::Exact => actual == expected,
                }
            }
            Test::Semver {
                comparison,
                version,
            } => match (not_null(value).and_then(semver::parse), version) {
                (Some(actual), Some(expected)) => comparison.holds(actual, *expected),
                _ => false,
            },
            Test::SemverRange { bounds } => match (not_null(value).and_then(semver::parse), bounds)
            {
                (Some(actual), Some((lower, upper))) => *lower <= actual && actual < *upper,
                _ => false,
            },
            Test::Never => false,
        }
    }
}

/// The SDK's `_is_unmatchable_null`: a null never satisfies a date or version condition.
fn not_null(value: &Value) -> Option<&Value> {
    (!value.is_null()).then_some(value)
}

impl Expected {
    fn new(value: &Value) -> Self {
        if PROPERTY_MATCHING_VERSION != 2 && is_truthy_or_falsy(value) {
            return Self::Truthy(is_truthy(value));
        }
        match value {
            Value::Array(items) => Self::AnyOf(
                items
                    .iter()
                    .map(|item| value_to_string(item).to_lowercase())
                    .collect(),
            ),
            other => Self::AnyOf(vec![value_to_string(other).to_lowercase()]),
        }
    }

    fn matches(&self, actual: &Value) -> bool {
        match self {
            Self::Truthy(expected) => is_truthy(actual) == *expected,
            Self::AnyOf(candidates) => {
                let actual = value_to_string(actual);
                let actual = lowercase(&actual);
                candidates.iter().any(|candidate| *candidate == actual)
            }
        }
    }
}

/// Python's `str.lower()`, without allocating for text that is already lowercase ASCII.
fn lowercase(text: &str) -> Cow<'_, str> {
    if text
        .bytes()
        .any(|byte| !byte.is_ascii() || byte.is_ascii_uppercase())
    {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// `needle` (already ASCII-lowercased) within `haystack` ignoring ASCII case, as the SDK's
/// `_ascii_lower` comparison does.
fn contains_ascii_case_insensitive(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    let (haystack, needle) = (haystack.as_bytes(), needle.as_bytes());
    haystack
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle))
}

/// A pattern the `regex` crate cannot compile (look-around, back-references, too big) is None.
fn compile_regex(pattern: &str) -> Option<Regex> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .ok()
}

/// Matches one filter against `properties` without keeping the compiled form (for callers
/// that check a condition once; flags go through [`PropertyMatcher`] kept in `PreparedFlags`).
pub fn match_property(
    filter: &PropertyFilter,
    properties: &Map<String, Value>,
    now: DateTime<Utc>,
) -> bool {
    PropertyMatcher::new(filter).matches_in(properties, now)
}
