//! Breakdowns (`breakdownFilter`), read once for every insight that has them (trends, funnels
//! and the actors behind their points): the typed filter as PostHog's schema has it, the model it
//! becomes and the dialect text of each breakdown's value.
//!
//! - A property breakdown is one property (`breakdown` with `breakdown_type` event, person or
//!   hogql) or up to [`MAX_BREAKDOWNS`] of them: PostHog's multiple breakdowns
//!   (`breakdowns: [{property, type, normalize_url}]`, types mixed), or, in funnels, `breakdown`
//!   given as a list of property names. Their values are lists, one value per breakdown.
//! - A cohort breakdown (`breakdown_type: cohort`, `breakdown` a cohort id, `"all"` or a list of
//!   those) is one result per cohort, its members by the cohort's own SQL
//!   ([`crate::cohorts::membership`]); `"all"` (or 0) is every person. An id that is not a cohort
//!   of the project is a 400 naming `breakdownFilter.breakdown`.
//! - Values, as PostHog computes them: in trends a missing or empty value is
//!   [`NULL`] (`ifNull(nullIf(toString(x), ''), '$$_posthog_breakdown_null_$$')`), in funnels
//!   `''`; `normalize_url` (`breakdown_normalize_url` for a single breakdown) cuts trailing `/`,
//!   `?` and `#`, `'/'` when nothing is left.
//! - Several values are one key in SQL: each value's byte length, `:`, the value, concatenated
//!   (`5:Chrome3:mac`), so a combination is grouped, ranked and compared as one string;
//!   [`Properties::decode`] splits it again. One value is its own key.
//! - `breakdown_limit` (25, at most [`MAX_LIMIT`]) keeps the top combinations; the rest are
//!   "other" ([`OTHER`] in trends, `Other` in funnels). Cohort breakdowns have no "other".
//! - `breakdown_path_cleaning` rewrites every property breakdown's value with the project's
//!   path cleaning rules (each regex replaced by its alias, in order), before `normalize_url`.
//! - Histogram bins (trends only: `breakdown_histogram_bin_count`, or `histogram_bin_count` on
//!   an entry of `breakdowns`) put an event or person property's number in one of that many
//!   equal bins between the least and the greatest value of the series' events in range, shown
//!   as `[low,high]` (the last bin's high 0.01 past the greatest value); no number, or one in no
//!   bin, is [`NULL`].
//!
//! Not supported (a 400 naming the field): histogram bins in funnels or of hogql expressions,
//! group, session and other breakdown types, cohorts inside `breakdowns`.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Number, Value, json};

use crate::cohorts::{self, EVENTS_PERSON_COLUMN};
use crate::paths::CleaningRule;
use crate::{Context, Invalid, series, sql_text};

/// The value of everything past the top `breakdown_limit` combinations, in trends.
pub const OTHER: &str = "$$_posthog_breakdown_other_$$";
/// A missing or empty value, in trends.
pub const NULL: &str = "$$_posthog_breakdown_null_$$";
pub const DEFAULT_LIMIT: u64 = 25;
pub const MAX_LIMIT: u64 = 1_000;
/// PostHog's schema allows three breakdowns (`max_length=3`).
pub const MAX_BREAKDOWNS: usize = 3;
/// Most histogram bins of one breakdown.
pub const MAX_BINS: u64 = 1_000;
/// Most cohorts one breakdown may name (each is a query of its own in trends).
pub const MAX_COHORTS: usize = 50;
/// The display name of the cohort of every person.
pub const ALL_USERS: &str = "all users";

const FILTER: &str = "breakdownFilter";
static ALL: CohortChoice = CohortChoice::All;
const BREAKDOWN_ATTR: &str = "breakdownFilter.breakdown";
const BREAKDOWNS_ATTR: &str = "breakdownFilter.breakdowns";

/// `BreakdownFilter`, as PostHog's schema has it (`extra="forbid"`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilterSpec {
    #[serde(default)]
    breakdown: Option<Field>,
    #[serde(default)]
    breakdown_type: Option<String>,
    #[serde(default)]
    breakdown_limit: Option<u64>,
    #[serde(default)]
    breakdown_normalize_url: Option<bool>,
    #[serde(default)]
    breakdowns: Option<Vec<EntrySpec>>,
    #[serde(default, rename = "breakdown_group_type_index")]
    _group_type_index: Option<IgnoredAny>,
    #[serde(default)]
    breakdown_histogram_bin_count: Option<i64>,
    #[serde(default)]
    breakdown_hide_other_aggregation: Option<bool>,
    #[serde(default)]
    breakdown_path_cleaning: Option<bool>,
}

/// One entry of `breakdowns` (PostHog's `Breakdown`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntrySpec {
    property: Scalar,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    normalize_url: Option<bool>,
    #[serde(default)]
    histogram_bin_count: Option<i64>,
    /// Only meaningful for group breakdowns, which are refused.
    #[serde(default, rename = "group_type_index")]
    _group_type_index: Option<IgnoredAny>,
}

/// `breakdown`: a property name or cohort id, or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Field {
    One(Scalar),
    Many(Vec<Scalar>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Text(String),
    Number(Number),
}

/// Which insight reads the filter: they differ where PostHog's runners do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insight {
    /// `breakdowns` wins over `breakdown`; `breakdown` is one property (or cohorts).
    Trends,
    /// `breakdown` wins (PostHog's funnels read only it) and may list up to three property
    /// names of one type; `breakdowns` is read when it is absent.
    Funnels,
}

/// A node's breakdown.
#[derive(Debug, Clone, PartialEq)]
pub struct Breakdown {
    pub by: By,
    /// `breakdown_limit`: the top combinations kept (property breakdowns).
    pub limit: u64,
    /// `breakdown_hide_other_aggregation`: the "other" result is left out (trends).
    pub hide_other: bool,
    /// The field the breakdown was read from (`breakdownFilter.breakdown` or `...breakdowns`).
    pub attr: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub enum By {
    Properties(Properties),
    Cohorts(Vec<CohortChoice>),
}

/// One or more properties.
#[derive(Debug, Clone, PartialEq)]
pub struct Properties {
    pub items: Vec<Property>,
    /// Values are shown as lists (`breakdowns`, or `breakdown` given as a list), as PostHog
    /// shows multiple breakdowns; otherwise as the one value.
    pub listed: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    pub kind: PropertyKind,
    /// The property name, or the hogql expression.
    pub key: String,
    pub normalize_url: bool,
    /// The project's path cleaning rules the value goes through (`breakdown_path_cleaning`).
    pub cleaning: Vec<CleaningRule>,
    /// Histogram bins (trends): the value is the bin of the property's number.
    pub bins: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropertyKind {
    Event,
    Person,
    Hogql,
}

/// One cohort of a cohort breakdown.
#[derive(Debug, Clone, PartialEq)]
pub enum CohortChoice {
    /// `"all"`: every person.
    All,
    Cohort {
        id: i64,
        name: String,
        /// The field naming it, for errors from its definition.
        attr: String,
    },
}

/// What every breakdown of a filter is read with.
#[derive(Clone, Copy)]
struct Reading<'a> {
    insight: Insight,
    /// `breakdown_path_cleaning`.
    path_cleaning: bool,
    ctx: &'a Context,
}

/// Reads `node.breakdownFilter`; `None` when it names no breakdown.
pub fn parse(node: &Value, insight: Insight, ctx: &Context) -> Result<Option<Breakdown>, Invalid> {
    let spec: FilterSpec = series::settings(node, FILTER)?;
    let limit = match spec.breakdown_limit {
        None => DEFAULT_LIMIT,
        Some(limit) if (1..=MAX_LIMIT).contains(&limit) => limit,
        Some(_) => {
            return Err(Invalid::new(
                "breakdownFilter.breakdown_limit",
                format!("breakdown_limit must be a whole number from 1 to {MAX_LIMIT}."),
            ));
        }
    };
    let reading = Reading {
        insight,
        path_cleaning: spec.breakdown_path_cleaning == Some(true),
        ctx,
    };
    let entries = spec.breakdowns.as_deref().unwrap_or_default();
    let single_given = match &spec.breakdown {
        None => false,
        Some(Field::Many(items)) => !items.is_empty(),
        Some(Field::One(_)) => true,
    };
    let use_entries = !entries.is_empty() && (insight == Insight::Trends || !single_given);
    let (by, attr) = if use_entries {
        (
            By::Properties(parse_entries(entries, reading)?),
            BREAKDOWNS_ATTR,
        )
    } else {
        let Some(field) = spec.breakdown.as_ref().filter(|_| single_given) else {
            return Ok(None);
        };
        (parse_single(field, &spec, reading)?, BREAKDOWN_ATTR)
    };
    Ok(Some(Breakdown {
        by,
        limit,
        hide_other: spec.breakdown_hide_other_aggregation.unwrap_or(false),
        attr,
    }))
}

fn parse_entries(entries: &[EntrySpec], reading: Reading) -> Result<Properties, Invalid> {
    if entries.len() > MAX_BREAKDOWNS {
        return Err(Invalid::new(
            BREAKDOWNS_ATTR,
            format!(
                "At most {MAX_BREAKDOWNS} breakdowns can be used at once, not {}.",
                entries.len()
            ),
        ));
    }
    let items = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let attr = format!("{BREAKDOWNS_ATTR}[{index}]");
            let kind = property_kind(entry.kind.as_deref(), &format!("{attr}.type"), true)?;
            let bins = bin_count(
                entry.histogram_bin_count,
                kind,
                reading.insight,
                &format!("{attr}.histogram_bin_count"),
            )?;
            let Scalar::Text(key) = &entry.property else {
                return Err(Invalid::new(
                    format!("{attr}.property"),
                    "A breakdown's property must be a property name (or a hogql expression).",
                ));
            };
            property(
                kind,
                key,
                entry.normalize_url.unwrap_or(false),
                bins,
                &format!("{attr}.property"),
                reading,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Properties {
        items,
        listed: true,
    })
}

fn parse_single(field: &Field, spec: &FilterSpec, reading: Reading) -> Result<By, Invalid> {
    const BINS_ATTR: &str = "breakdownFilter.breakdown_histogram_bin_count";
    let is_cohort = spec.breakdown_type.as_deref() == Some("cohort");
    if is_cohort && spec.breakdown_histogram_bin_count.is_some() {
        return Err(Invalid::new(
            BINS_ATTR,
            "Histogram bins need an event or person property breakdown, not cohorts.",
        ));
    }
    if is_cohort {
        return parse_cohorts(field, reading.ctx).map(By::Cohorts);
    }
    let kind = property_kind(
        spec.breakdown_type.as_deref(),
        "breakdownFilter.breakdown_type",
        false,
    )?;
    let bins = bin_count(
        spec.breakdown_histogram_bin_count,
        kind,
        reading.insight,
        BINS_ATTR,
    )?;
    let normalize_url = spec.breakdown_normalize_url.unwrap_or(false);
    let not_a_name = |attr: String| {
        Invalid::new(
            attr,
            "The breakdown must be a property name (or a hogql expression).",
        )
    };
    match field {
        Field::One(Scalar::Text(key)) => Ok(By::Properties(Properties {
            items: vec![property(
                kind,
                key,
                normalize_url,
                bins,
                BREAKDOWN_ATTR,
                reading,
            )?],
            listed: false,
        })),
        Field::One(Scalar::Number(_)) => Err(not_a_name(BREAKDOWN_ATTR.into())),
        Field::Many(keys) if reading.insight == Insight::Funnels => {
            if keys.len() > MAX_BREAKDOWNS {
                return Err(Invalid::new(
                    BREAKDOWN_ATTR,
                    format!(
                        "At most {MAX_BREAKDOWNS} properties can be broken down by at once, not {}.",
                        keys.len()
                    ),
                ));
            }
            let items = keys
                .iter()
                .enumerate()
                .map(|(index, key)| {
                    let attr = format!("{BREAKDOWN_ATTR}[{index}]");
                    match key {
                        Scalar::Text(key) => {
                            property(kind, key, normalize_url, None, &attr, reading)
                        }
                        Scalar::Number(_) => Err(not_a_name(attr)),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(By::Properties(Properties {
                items,
                listed: true,
            }))
        }
        Field::Many(_) => Err(Invalid::new(
            BREAKDOWN_ATTR,
            "A list of breakdowns goes in breakdownFilter.breakdowns ([{\"property\": ..., \"type\": ...}]); breakdown lists only cohorts.",
        )),
    }
}

/// A histogram's bin count, where PostHog bins: trends, over an event or person property
/// (its funnels read no bin count, and a hogql breakdown's text has no least or greatest number).
fn bin_count(
    count: Option<i64>,
    kind: PropertyKind,
    insight: Insight,
    attr: &str,
) -> Result<Option<u64>, Invalid> {
    let Some(count) = count else {
        return Ok(None);
    };
    if insight == Insight::Funnels {
        return Err(Invalid::new(
            attr,
            "Histogram breakdowns are not supported in funnels: break down by the property's values.",
        ));
    }
    if kind == PropertyKind::Hogql {
        return Err(Invalid::new(
            attr,
            "Histogram bins need an event or person property, not a hogql expression.",
        ));
    }
    match u64::try_from(count) {
        Ok(count) if (1..=MAX_BINS).contains(&count) => Ok(Some(count)),
        _ => Err(Invalid::new(
            attr,
            format!("The histogram bin count must be a whole number from 1 to {MAX_BINS}."),
        )),
    }
}

fn property_kind(kind: Option<&str>, attr: &str, in_list: bool) -> Result<PropertyKind, Invalid> {
    match kind.unwrap_or("event") {
        "event" => Ok(PropertyKind::Event),
        "person" => Ok(PropertyKind::Person),
        "hogql" => Ok(PropertyKind::Hogql),
        "cohort" if in_list => Err(Invalid::new(
            attr,
            "Cohorts are broken down with breakdown_type \"cohort\" and breakdown (cohort ids), not in breakdowns.",
        )),
        other => Err(Invalid::new(
            attr,
            format!(
                "breakdown type {other} is not supported: use event, person, hogql{}.",
                if in_list { "" } else { " or cohort" }
            ),
        )),
    }
}

fn property(
    kind: PropertyKind,
    key: &str,
    normalize_url: bool,
    bins: Option<u64>,
    attr: &str,
    reading: Reading,
) -> Result<Property, Invalid> {
    if key.is_empty() {
        return Err(Invalid::new(
            attr,
            "The breakdown property must not be empty.",
        ));
    }
    if kind == PropertyKind::Hogql {
        (reading.ctx.check_expression)(key).map_err(|problem| Invalid::new(attr, problem))?;
    }
    // A bin is a number: PostHog neither cleans nor normalizes it.
    let text_value = bins.is_none();
    Ok(Property {
        kind,
        key: key.to_string(),
        // PostHog leaves a hogql breakdown's value as the expression gives it.
        normalize_url: normalize_url && kind != PropertyKind::Hogql && text_value,
        cleaning: match reading.path_cleaning && text_value {
            true => reading.ctx.path_cleaning_rules.to_vec(),
            false => Vec::new(),
        },
        bins,
    })
}

fn parse_cohorts(field: &Field, ctx: &Context) -> Result<Vec<CohortChoice>, Invalid> {
    let (values, listed): (Vec<&Scalar>, bool) = match field {
        Field::One(value) => (vec![value], false),
        Field::Many(values) => (values.iter().collect(), true),
    };
    if values.len() > MAX_COHORTS {
        return Err(Invalid::new(
            BREAKDOWN_ATTR,
            format!(
                "At most {MAX_COHORTS} cohorts can be broken down by at once, not {}.",
                values.len()
            ),
        ));
    }
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            let attr = if listed {
                format!("{BREAKDOWN_ATTR}[{index}]")
            } else {
                BREAKDOWN_ATTR.to_string()
            };
            let Some(id) = cohort_id(value) else {
                return Err(Invalid::new(
                    attr,
                    "A cohort breakdown names cohort ids or \"all\".",
                ));
            };
            cohort_choice(id, ctx, attr)
        })
        .collect()
}

/// `Some(0)` for `"all"` (PostHog's `ALL_USERS_COHORT_ID`), else the id.
fn cohort_id(value: &Scalar) -> Option<i64> {
    match value {
        Scalar::Text(text) if text == "all" => Some(0),
        Scalar::Text(text) => text.trim().parse().ok(),
        Scalar::Number(number) => number.as_i64(),
    }
}

fn cohort_choice(id: i64, ctx: &Context, attr: String) -> Result<CohortChoice, Invalid> {
    if id == 0 {
        return Ok(CohortChoice::All);
    }
    let spec = ctx
        .cohorts
        .get(&id)
        .filter(|spec| !spec.cohort.deleted)
        .ok_or_else(|| Invalid::new(&attr, format!("Cohort with id {id} does not exist")))?;
    Ok(CohortChoice::Cohort {
        id,
        name: spec.cohort.name.clone(),
        attr,
    })
}

/// The cohort ids a `breakdownFilter` object names (`breakdown_type: cohort`), `"all"` left out:
/// what [`crate::cohorts::referenced`] adds for breakdowns.
pub(crate) fn cohort_ids(filter: &serde_json::Map<String, Value>) -> Vec<i64> {
    if filter.get("breakdown_type").and_then(Value::as_str) != Some("cohort") {
        return Vec::new();
    }
    let one = |value: &Value| {
        Scalar::deserialize(value)
            .ok()
            .and_then(|scalar| cohort_id(&scalar))
            .filter(|id| *id != 0)
    };
    match filter.get("breakdown") {
        Some(Value::Array(items)) => items.iter().filter_map(one).collect(),
        Some(value) => one(value).into_iter().collect(),
        None => Vec::new(),
    }
}

impl Breakdown {
    pub fn properties(&self) -> Option<&Properties> {
        match &self.by {
            By::Properties(properties) => Some(properties),
            By::Cohorts(_) => None,
        }
    }

    pub fn cohorts(&self) -> Option<&[CohortChoice]> {
        match &self.by {
            By::Cohorts(cohorts) => Some(cohorts),
            By::Properties(_) => None,
        }
    }
}

mod values;

#[cfg(test)]
pub(crate) mod tests;
