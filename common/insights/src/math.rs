//! A series' math (`math`, `math_property`, `math_property_type`, `math_hogql`,
//! `math_multiplier`) as a dialect aggregation over `events` (reference 4.3).

use serde_json::Value;

use crate::{Context, Invalid, sql_text};

/// What a series counts per bucket.
#[derive(Debug, Clone, PartialEq)]
pub enum Math {
    /// `total` (the default): events.
    Total,
    /// `dau`: distinct persons.
    UniqueUsers,
    /// `weekly_active` (7) / `monthly_active` (30): distinct persons over the trailing days
    /// ending at each bucket's end; the caller builds the windows.
    ActiveUsers { days: i64 },
    /// `unique_session`: distinct `$session_id`.
    UniqueSessions,
    /// `sum`/`avg`/`min`/`max`/`median`/`p75`... of a numeric property (`value` is the
    /// `toFloat(...)` expression).
    Property { aggregate: String, value: String },
    /// `hogql`: the user's aggregation expression, checked and parenthesised.
    Expression(String),
}

/// A series' math and its multiplier.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesMath {
    pub math: Math,
    pub multiplier: Option<f64>,
}

/// Aggregations a property math names, as dialect function heads.
const PROPERTY_AGGREGATES: &[(&str, &str)] = &[
    ("sum", "sum"),
    ("avg", "avg"),
    ("min", "min"),
    ("max", "max"),
    ("median", "quantile(0.5)"),
    ("p75", "quantile(0.75)"),
    ("p90", "quantile(0.9)"),
    ("p95", "quantile(0.95)"),
    ("p99", "quantile(0.99)"),
];

/// Math types PostHog has that are not computed here (yet).
const UNSUPPORTED: &[&str] = &[
    "unique_group",
    "first_time_for_user",
    "first_matching_event_for_user",
    "avg_count_per_actor",
    "min_count_per_actor",
    "max_count_per_actor",
    "median_count_per_actor",
    "p75_count_per_actor",
    "p90_count_per_actor",
    "p95_count_per_actor",
    "p99_count_per_actor",
];

/// Reads the math fields of a series object; `attr` is the series path (`series[1]`).
pub fn parse(series: &Value, ctx: &Context, attr: &str) -> Result<SeriesMath, Invalid> {
    let math_attr = format!("{attr}.math");
    let name = match series.get("math") {
        None | Some(Value::Null) => "total",
        Some(Value::String(name)) => name.as_str(),
        Some(_) => return Err(Invalid::new(math_attr, "math must be a string.")),
    };
    let math = match name {
        "total" => Math::Total,
        "dau" => Math::UniqueUsers,
        "weekly_active" => Math::ActiveUsers { days: 7 },
        "monthly_active" => Math::ActiveUsers { days: 30 },
        "unique_session" => Math::UniqueSessions,
        "hogql" => {
            let hogql_attr = format!("{attr}.math_hogql");
            let text = match series.get("math_hogql") {
                Some(Value::String(text)) if !text.trim().is_empty() => text,
                _ => {
                    return Err(Invalid::new(
                        hogql_attr,
                        "math hogql needs a math_hogql expression.",
                    ));
                }
            };
            (ctx.check_expression)(text).map_err(|problem| Invalid::new(hogql_attr, problem))?;
            Math::Expression(format!("({text})"))
        }
        _ => {
            if let Some((_, aggregate)) = PROPERTY_AGGREGATES.iter().find(|(math, _)| *math == name)
            {
                Math::Property {
                    aggregate: (*aggregate).to_string(),
                    value: property_value(series, attr, name)?,
                }
            } else if UNSUPPORTED.contains(&name) {
                return Err(Invalid::new(
                    math_attr,
                    format!("math {name} is not supported yet."),
                ));
            } else {
                return Err(Invalid::new(math_attr, format!("Unknown math '{name}'.")));
            }
        }
    };
    let multiplier = match series.get("math_multiplier") {
        None | Some(Value::Null) => None,
        Some(Value::Number(number)) => number.as_f64(),
        Some(_) => {
            return Err(Invalid::new(
                format!("{attr}.math_multiplier"),
                "math_multiplier must be a number.",
            ));
        }
    };
    Ok(SeriesMath { math, multiplier })
}

/// `toFloat(<property>)` of a property math, from `math_property` and `math_property_type`.
fn property_value(series: &Value, attr: &str, math: &str) -> Result<String, Invalid> {
    let key = match series.get("math_property") {
        Some(Value::String(key)) if !key.is_empty() => key,
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err(Invalid::new(
                format!("{attr}.math_property"),
                format!("math {math} needs a math_property (the numeric property to aggregate)."),
            ));
        }
        Some(_) => {
            return Err(Invalid::new(
                format!("{attr}.math_property"),
                "math_property must be a string.",
            ));
        }
    };
    let person = match series.get("math_property_type").and_then(Value::as_str) {
        None | Some("event_properties") => false,
        Some("person_properties") => true,
        Some(other) => {
            return Err(Invalid::new(
                format!("{attr}.math_property_type"),
                format!(
                    "math_property_type {other} is not supported: use event_properties or person_properties."
                ),
            ));
        }
    };
    Ok(format!("toFloat({})", sql_text::property(key, person)))
}

impl Math {
    /// The aggregation per bucket, over `events` rows. For [`Math::ActiveUsers`] this is the
    /// plain distinct count (the windows are the caller's), used to rank breakdown values.
    /// Distinct counts use `uniq` (distinct 64-bit hashes: exact but for collisions, about one in
    /// 10^8 at a million actors), which needs a small fixed-size key per actor where
    /// `count(DISTINCT person_id)` keeps every id, over 1 GiB for a month of daily actives at
    /// 10 million events.
    pub fn aggregate(&self) -> String {
        match self {
            Math::Total => "count()".into(),
            Math::UniqueUsers | Math::ActiveUsers { .. } => "uniq(person_id)".into(),
            Math::UniqueSessions => "uniq($session_id)".into(),
            Math::Property { aggregate, value } => format!("ifNull({aggregate}({value}), 0)"),
            Math::Expression(text) => text.clone(),
        }
    }

    /// Distinct persons among the rows matching `condition` (one active-users window).
    pub fn actors_where(condition: &str) -> String {
        format!("uniq(if({condition}, person_id, NULL))")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> Context {
        crate::testing::context(chrono_tz::UTC, "2026-11-22T10:00:00Z", 0)
    }

    fn parsed(series: Value) -> Result<SeriesMath, Invalid> {
        parse(&series, &context(), "series[1]")
    }

    #[test]
    fn counting_math() {
        assert_eq!(
            parsed(json!({})).expect("total").math.aggregate(),
            "count()"
        );
        assert_eq!(
            parsed(json!({"math": "dau"}))
                .expect("dau")
                .math
                .aggregate(),
            "uniq(person_id)"
        );
        assert_eq!(
            parsed(json!({"math": "monthly_active"})).expect("mau").math,
            Math::ActiveUsers { days: 30 }
        );
    }

    #[test]
    fn property_math_reads_the_property_as_a_number() {
        let math = parsed(json!({"math": "p90", "math_property": "price", "math_multiplier": 2}))
            .expect("p90");
        assert_eq!(
            math.math.aggregate(),
            "ifNull(quantile(0.9)(toFloat(properties['price'])), 0)"
        );
        assert_eq!(math.multiplier, Some(2.0));
        let math = parsed(json!({"math": "sum", "math_property": "age", "math_property_type": "person_properties"}))
            .expect("sum");
        assert_eq!(
            math.math.aggregate(),
            "ifNull(sum(toFloat(person.properties['age'])), 0)"
        );
    }

    #[test]
    fn invalid_math_names_the_field() {
        let attr = |series: Value| parsed(series).expect_err("refused").attr;
        assert_eq!(attr(json!({"math": "sum"})), "series[1].math_property");
        assert_eq!(attr(json!({"math": "bogus"})), "series[1].math");
        assert_eq!(attr(json!({"math": "unique_group"})), "series[1].math");
        assert_eq!(attr(json!({"math": "hogql"})), "series[1].math_hogql");
        assert_eq!(
            attr(json!({"math": "hogql", "math_hogql": "1; select 2"})),
            "series[1].math_hogql"
        );
        assert_eq!(
            attr(
                json!({"math": "avg", "math_property": "x", "math_property_type": "group_properties"})
            ),
            "series[1].math_property_type"
        );
        assert_eq!(
            attr(json!({"math_multiplier": "2"})),
            "series[1].math_multiplier"
        );
    }

    #[test]
    fn hogql_math_is_parenthesised() {
        let math =
            parsed(json!({"math": "hogql", "math_hogql": "sum(toFloat(properties.price)) * 2"}))
                .expect("hogql");
        assert_eq!(
            math.math.aggregate(),
            "(sum(toFloat(properties.price)) * 2)"
        );
    }
}
