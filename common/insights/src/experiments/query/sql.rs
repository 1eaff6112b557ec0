//! The dialect text of an experiment metric (reference 2.8, experiment_stats.md 1.2–1.3).
//!
//! One query, two scans of `events`:
//! - `exposures`: one row per entity (person, or `$group_<i>`) with its variant and first exposure
//!   (and the end of its conversion window), `$multiple` entities dropped in a HAVING;
//! - the metric events, filtered by name, dates and properties in the scan, LEFT JOINed to the
//!   exposures on the entity and the entity's window, and aggregated per entity (exposed entities
//!   without events get 0). Per-variant sums over those per-entity values are the answer.
//!
//! A funnel's exposure is its step 0: every metric event kept is at or after the first exposure
//! and inside the window, so the steps after it are the engine's `aggregateFunnel` over the
//! series alone, plus one. Outlier bounds (mean metrics) read the per-entity values a second
//! time, to take exact quantiles (`percentile_cont`) over all variants pooled.

use chrono::{DateTime, Utc};

use super::settings::{ExposureConfig, ExposureSettings, MultipleVariantHandling};
use crate::date_range::sql_datetime;
use crate::experiments::ExperimentSpec;
use crate::experiments::metric::{
    ExperimentMetric, FunnelOrder, MathType, MetricSource, MetricType,
};
use crate::{Context, Invalid, actions, filters, sql_text};

/// PostHog's funnel window when the metric sets none: 3 years.
pub const DEFAULT_FUNNEL_WINDOW_SECONDS: u64 = 3 * 365 * 86_400;

/// The variant an entity is put in when it saw several and `exclude` is configured.
pub const MULTIPLE: &str = "$multiple";

/// Rows of the answer: one per variant, and there are at most 21 variants plus a holdout.
const ROWS: usize = 1_000;

/// The shape of a metric's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Mean,
    /// `steps` counts the series (the exposure step not included).
    Funnel {
        steps: usize,
    },
    Ratio,
}

/// How one source aggregates per entity.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// Which events count (name and properties).
    pub condition: String,
    /// The per-event value the aggregate reads.
    pub value: String,
    pub aggregate: Aggregate,
    pub multiplier: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Count,
    Sum,
    Avg,
    Min,
    Max,
    Distinct,
    Present,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Mean {
        side: Side,
        /// Quantile levels in (0, 1].
        lower: Option<f64>,
        upper: Option<f64>,
        ignore_zeros: bool,
    },
    Funnel {
        steps: Vec<String>,
        order: FunnelOrder,
    },
    Ratio {
        numerator: Side,
        denominator: Side,
    },
}

/// Everything the query text depends on, read from the experiment and the metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The entity of an event: `person_id` or a group key.
    pub entity: String,
    /// The variant of an exposure event.
    pub variant: String,
    /// Conditions of an exposure event (name, flag, dates, test accounts).
    pub exposure: String,
    /// The variant keys an exposure may have (quoted literals), holdout included.
    pub variant_keys: Vec<String>,
    pub handling: MultipleVariantHandling,
    pub start: DateTime<Utc>,
    /// Exposures and metric events up to here (inclusive): as_of, else end, else now.
    pub until: DateTime<Utc>,
    /// Seconds after the first exposure in which metric events count.
    pub window_seconds: Option<u64>,
    /// Drop entities whose window has not elapsed at `until`.
    pub matured_only: bool,
    pub body: Body,
}

impl Plan {
    pub fn new(
        spec: &ExperimentSpec,
        metric: &ExperimentMetric,
        ctx: &Context,
    ) -> Result<Self, Invalid> {
        let Some(start) = spec.start else {
            return Err(Invalid::new(
                "experiment_id",
                "The experiment has not started yet: it has no results.",
            ));
        };
        let until = spec.as_of.or(spec.end).unwrap_or(ctx.now);
        let settings = ExposureSettings::read(spec.exposure_criteria.as_ref())?;
        let entity = match spec.aggregation_group_type_index {
            Some(index) => sql_text::property(&format!("$group_{index}"), false),
            None => "person_id".to_owned(),
        };
        let flag_property = sql_text::property(&format!("$feature/{}", spec.flag_key), false);
        let default_variant = sql_text::property("$feature_flag_response", false);
        let flag_condition = format!(
            "{} = {}",
            sql_text::property("$feature_flag", false),
            sql_text::string(&spec.flag_key)
        );
        let mut conditions = Vec::new();
        let variant = match &settings.exposure_config {
            None => {
                conditions.push("event = '$feature_flag_called'".to_owned());
                conditions.push(flag_condition);
                default_variant
            }
            Some(ExposureConfig::ExperimentEventExposureConfig { event, properties }) => {
                conditions.push(format!("event = {}", sql_text::string(event)));
                let custom = filters::expression(
                    properties.as_ref(),
                    ctx,
                    "exposure_criteria.exposure_config.properties",
                )?;
                if custom != "true" {
                    conditions.push(custom);
                }
                // `$feature_flag_called` named as a custom event keeps its own variant field.
                if event == "$feature_flag_called" {
                    conditions.push(flag_condition);
                    default_variant
                } else {
                    flag_property
                }
            }
            Some(ExposureConfig::ActionsNode { id }) => {
                let attr = "exposure_criteria.exposure_config";
                let action = actions::named(&serde_json::json!({"id": id}), ctx, attr)?;
                let condition = actions::condition(action, ctx, attr)?;
                if condition != "true" {
                    conditions.push(condition);
                }
                // As for a custom exposure event: the variant is the flag's `$feature/` property.
                flag_property
            }
        };
        conditions.push(format!("timestamp >= {}", sql_datetime(start)));
        conditions.push(format!("timestamp <= {}", sql_datetime(until)));
        let mut keys: Vec<String> = spec
            .variants
            .iter()
            .map(|variant| sql_text::string(&variant.key))
            .collect();
        if let Some(holdout) = spec.holdout_id {
            keys.push(sql_text::string(&format!("holdout-{holdout}")));
        }
        if keys.is_empty() {
            return Err(Invalid::new(
                "experiment_id",
                "The experiment's feature flag has no variants.",
            ));
        }
        if spec.aggregation_group_type_index.is_some() {
            conditions.push(format!("{entity} != ''"));
        }
        if settings.filter_test_accounts() && !spec.test_account_filters.is_empty() {
            let filters = serde_json::Value::Array(spec.test_account_filters.clone());
            let test = filters::expression(Some(&filters), ctx, "test_account_filters")?;
            if test != "true" {
                conditions.push(test);
            }
        }
        let body = body(&metric.metric_type, ctx)?;
        let window_seconds = metric.window_seconds();
        Ok(Self {
            entity,
            variant,
            exposure: conditions.join(" AND "),
            variant_keys: keys,
            handling: settings.handling(),
            start,
            until,
            window_seconds,
            matured_only: spec.only_count_matured_users && window_seconds.is_some(),
            body,
        })
    }

    pub fn kind(&self) -> MetricKind {
        match &self.body {
            Body::Mean { .. } => MetricKind::Mean,
            Body::Funnel { steps, .. } => MetricKind::Funnel { steps: steps.len() },
            Body::Ratio { .. } => MetricKind::Ratio,
        }
    }

    /// The window that limits metric events, if any (funnels always have one).
    fn effective_window(&self) -> Option<u64> {
        match (&self.body, self.window_seconds) {
            (_, Some(seconds)) => Some(seconds),
            (Body::Funnel { .. }, None) => Some(DEFAULT_FUNNEL_WINDOW_SECONDS),
            _ => None,
        }
    }
}

fn body(metric: &MetricType, ctx: &Context) -> Result<Body, Invalid> {
    Ok(match metric {
        MetricType::Mean(mean) => Body::Mean {
            side: side(&mean.source, ctx, "metric.source")?,
            // PostHog stores the bounds as fractions (0.95) and hands them to `quantile` as they are.
            lower: mean.lower_bound_percentile,
            upper: mean.upper_bound_percentile,
            ignore_zeros: mean.ignore_zeros,
        },
        MetricType::Funnel(funnel) => {
            if funnel.funnel_order_type == FunnelOrder::Strict {
                return Err(Invalid::new(
                    "metric.funnel_order_type",
                    "Strict funnels are not supported for experiment metrics: use ordered or unordered.",
                ));
            }
            let steps = funnel
                .series
                .iter()
                .enumerate()
                .map(|(index, step)| condition(step, ctx, &format!("metric.series[{index}]")))
                .collect::<Result<Vec<_>, _>>()?;
            if steps.len() + 1 > 60 {
                return Err(Invalid::new(
                    "metric.series",
                    "A funnel has at most 59 steps.",
                ));
            }
            Body::Funnel {
                steps,
                order: funnel.funnel_order_type,
            }
        }
        MetricType::Ratio(ratio) => Body::Ratio {
            numerator: side(&ratio.numerator, ctx, "metric.numerator")?,
            denominator: side(&ratio.denominator, ctx, "metric.denominator")?,
        },
    })
}

/// The condition of a source's events: its event name (or its action's condition) and its
/// properties.
fn condition(source: &MetricSource, ctx: &Context, attr: &str) -> Result<String, Invalid> {
    let mut parts = Vec::new();
    match source {
        MetricSource::Events(events) => {
            if let Some(event) = &events.event {
                parts.push(format!("event = {}", sql_text::string(event)));
            }
        }
        MetricSource::Actions(source) => {
            let entry = serde_json::json!({"id": source.id});
            let action = actions::named(&entry, ctx, attr)?;
            let condition = actions::condition(action, ctx, attr)?;
            if condition != "true" {
                parts.push(condition);
            }
        }
    }
    for (key, filters) in source.filters() {
        let condition = filters::expression(filters, ctx, &format!("{attr}.{key}"))?;
        if condition != "true" {
            parts.push(condition);
        }
    }
    Ok(if parts.is_empty() {
        "true".to_owned()
    } else {
        format!("({})", parts.join(" AND "))
    })
}

fn side(source: &MetricSource, ctx: &Context, attr: &str) -> Result<Side, Invalid> {
    let condition = condition(source, ctx, attr)?;
    let (math_property, math_property_type, multiplier) = source.math_settings();
    let property_value = || -> Result<String, Invalid> {
        let key = math_property.filter(|key| !key.is_empty()).ok_or_else(|| {
            Invalid::new(
                format!("{attr}.math_property"),
                "This math needs a math_property (the numeric property to aggregate).",
            )
        })?;
        let person = match math_property_type {
            None | Some("event_properties") => false,
            Some("person_properties") => true,
            Some(other) => {
                return Err(Invalid::new(
                    format!("{attr}.math_property_type"),
                    format!("math_property_type {other} is not supported."),
                ));
            }
        };
        Ok(format!("toFloat({})", sql_text::property(key, person)))
    };
    let (value, aggregate) = match source.math() {
        MathType::Total => ("1".to_owned(), Aggregate::Count),
        MathType::Dau => ("1".to_owned(), Aggregate::Present),
        MathType::UniqueSession => ("$session_id".to_owned(), Aggregate::Distinct),
        MathType::Sum => (property_value()?, Aggregate::Sum),
        MathType::Avg => (property_value()?, Aggregate::Avg),
        MathType::Min => (property_value()?, Aggregate::Min),
        MathType::Max => (property_value()?, Aggregate::Max),
        MathType::Hogql | MathType::UniqueGroup => {
            return Err(Invalid::new(
                format!("{attr}.math"),
                "This math is not supported in experiment metrics yet.",
            ));
        }
    };
    Ok(Side {
        condition,
        value,
        aggregate,
        multiplier,
    })
}

impl Side {
    /// The per-entity aggregate of the joined column `column` (NULL where the event is not this
    /// side's), 0 for an entity without events.
    fn aggregate_sql(&self, column: &str) -> String {
        let aggregate = match self.aggregate {
            Aggregate::Count => format!("count({column})"),
            Aggregate::Sum => format!("sum({column})"),
            Aggregate::Avg => format!("avg({column})"),
            Aggregate::Min => format!("min({column})"),
            Aggregate::Max => format!("max({column})"),
            Aggregate::Distinct => format!("countDistinct({column})"),
            Aggregate::Present => format!("max({column})"),
        };
        let value = format!("toFloat(coalesce({aggregate}, 0))");
        match self.multiplier {
            Some(multiplier) if multiplier.is_finite() && multiplier != 1.0 => {
                format!("({value} * {multiplier:?})")
            }
            _ => value,
        }
    }
}

/// The one query of a metric: per variant `n`, `sum`, `sum_squares` and the type's extras.
pub fn metric_query(plan: &Plan, ctx: &Context) -> Result<String, Invalid> {
    let _ = ctx;
    let window = plan.effective_window();
    let exposures = exposures_cte(plan, window);
    // Metric events: one scan, filtered by the events' own conditions before the join.
    let (columns, rows_condition) = match &plan.body {
        Body::Mean { side, .. } => (
            format!("toNullable({}) AS value", side.value),
            side.condition.clone(),
        ),
        Body::Ratio {
            numerator,
            denominator,
        } => (
            format!(
                "toNullable(if({}, {}, NULL)) AS value, toNullable(if({}, {}, NULL)) AS denominator",
                numerator.condition, numerator.value, denominator.condition, denominator.value
            ),
            format!("({} OR {})", numerator.condition, denominator.condition),
        ),
        Body::Funnel { steps, .. } => {
            let mask: Vec<String> = steps
                .iter()
                .enumerate()
                .map(|(index, step)| format!("if({step}, {}, 0)", 1u64 << index))
                .collect();
            let any: Vec<&str> = steps.iter().map(String::as_str).collect();
            (
                format!("{} AS steps", mask.join(" + ")),
                if any.contains(&"true") {
                    "true".to_owned()
                } else {
                    format!("({})", any.join(" OR "))
                },
            )
        }
    };
    let metric_events = format!(
        "SELECT {entity} AS entity, toNullable(timestamp) AS timestamp, {columns} FROM events \
         WHERE {rows_condition} AND timestamp >= {start} AND timestamp <= {until}",
        entity = plan.entity,
        start = sql_datetime(plan.start),
        until = sql_datetime(plan.until),
    );
    let window_condition = if window.is_some() {
        " AND m.timestamp < x.window_end"
    } else {
        ""
    };
    let join = format!(
        "FROM exposures AS x LEFT JOIN ({metric_events}) AS m ON m.entity = x.entity \
         AND m.timestamp >= x.first_exposure{window_condition} GROUP BY x.entity, x.variant"
    );
    let text = match &plan.body {
        Body::Mean {
            side,
            lower,
            upper,
            ignore_zeros,
        } => {
            let per_entity = format!(
                "per_entity AS (SELECT x.variant AS variant, {} AS value {join})",
                side.aggregate_sql("m.value")
            );
            if lower.is_none() && upper.is_none() {
                format!(
                    "WITH {exposures}, {per_entity} \
                     SELECT variant, count() AS n, sum(value) AS sum, sum(value * value) AS sum_squares \
                     FROM per_entity GROUP BY variant ORDER BY variant LIMIT {ROWS}"
                )
            } else {
                // PostHog: `ignore_zeros` leaves zeros out of the upper quantile only; the lower
                // bound (and a `max` upper bound) read every entity's value.
                let lo = match lower {
                    Some(level) => format!("quantile({level:?})(value)"),
                    None => "min(value)".to_owned(),
                };
                let hi = match upper {
                    Some(level) if *ignore_zeros => {
                        format!("quantile({level:?})(if(value != 0, value, NULL))")
                    }
                    Some(level) => format!("quantile({level:?})(value)"),
                    None => "max(value)".to_owned(),
                };
                format!(
                    "WITH {exposures}, {per_entity}, \
                     bounds AS (SELECT {lo} AS lo, {hi} AS hi FROM per_entity), \
                     clamped AS (SELECT per_entity.variant AS variant, \
                     least(greatest(per_entity.value, coalesce(bounds.lo, per_entity.value)), \
                     coalesce(bounds.hi, per_entity.value)) AS value \
                     FROM per_entity CROSS JOIN bounds) \
                     SELECT variant, count() AS n, sum(value) AS sum, sum(value * value) AS sum_squares \
                     FROM clamped GROUP BY variant ORDER BY variant LIMIT {ROWS}"
                )
            }
        }
        Body::Ratio {
            numerator,
            denominator,
        } => format!(
            "WITH {exposures}, \
             per_entity AS (SELECT x.variant AS variant, {} AS value, {} AS denominator {join}) \
             SELECT variant, count() AS n, sum(value) AS sum, sum(value * value) AS sum_squares, \
             sum(denominator) AS denominator_sum, \
             sum(denominator * denominator) AS denominator_sum_squares, \
             sum(value * denominator) AS numerator_denominator_sum_product \
             FROM per_entity GROUP BY variant ORDER BY variant LIMIT {ROWS}",
            numerator.aggregate_sql("m.value"),
            denominator.aggregate_sql("m.denominator"),
        ),
        Body::Funnel { steps, order } => {
            let count = steps.len();
            // The series alone; an entity with no matching event is NULL, i.e. only step 0.
            let reached = format!(
                "1 + coalesce(arrayElement(aggregateFunnel({count}, {window}, {order}, \
                 coalesce(m.timestamp, x.first_exposure), coalesce(m.steps, 0), 0), 1), -1)",
                window = window.unwrap_or(DEFAULT_FUNNEL_WINDOW_SECONDS),
                order = sql_text::string(order.name()),
            );
            let step_counts: String = (1..=count)
                .map(|step| format!(", countIf(reached >= {step}) AS step_{step}"))
                .collect();
            format!(
                "WITH {exposures}, \
                 per_entity AS (SELECT x.variant AS variant, {reached} AS reached {join}) \
                 SELECT variant, count() AS n, countIf(reached >= {count}) AS sum, \
                 countIf(reached >= {count}) AS sum_squares{step_counts} \
                 FROM per_entity GROUP BY variant ORDER BY variant LIMIT {ROWS}"
            )
        }
    };
    Ok(text)
}

/// One row per exposed entity: `entity`, `variant`, `first_exposure` and, with a window,
/// `window_end`.
fn exposures_cte(plan: &Plan, window: Option<u64>) -> String {
    // The inner query reads each property once per event; the outer one aggregates.
    // Outlier bounds are PostHog's quantiles over every exposed entity, `$multiple` ones included
    // (PostHog drops them after its query): then they stay as a variant of their own here, which
    // the assembly leaves out. Otherwise they are dropped at once.
    let pools_multiple = matches!(
        plan.body,
        Body::Mean { lower, upper, .. } if lower.is_some() || upper.is_some()
    );
    let keep_multiple = format!(
        "if(min(exposure_variant) = max(exposure_variant), min(exposure_variant), {})",
        sql_text::string(MULTIPLE)
    );
    let (pick, mut having) = match plan.handling {
        MultipleVariantHandling::Exclude if pools_multiple => (keep_multiple.as_str(), vec![]),
        MultipleVariantHandling::Exclude => (
            "min(exposure_variant)",
            vec!["min(exposure_variant) = max(exposure_variant)".to_owned()],
        ),
        MultipleVariantHandling::FirstSeen => ("argMin(exposure_variant, exposure_time)", vec![]),
    };
    let window_end = match window {
        Some(seconds) => {
            format!(", min(exposure_time) + toIntervalSecond({seconds}) AS window_end")
        }
        None => String::new(),
    };
    if plan.matured_only
        && let Some(seconds) = plan.window_seconds
    {
        having.push(format!(
            "min(exposure_time) + toIntervalSecond({seconds}) <= {}",
            sql_datetime(plan.until)
        ));
    }
    let having = if having.is_empty() {
        String::new()
    } else {
        format!(" HAVING {}", having.join(" AND "))
    };
    format!(
        "exposures AS (SELECT exposure_entity AS entity, {pick} AS variant, \
         min(exposure_time) AS first_exposure{window_end} FROM (\
         SELECT {entity} AS exposure_entity, {variant} AS exposure_variant, timestamp AS exposure_time \
         FROM events WHERE {where_clause}) \
         WHERE exposure_variant IN ({keys}) GROUP BY exposure_entity{having})",
        entity = plan.entity,
        variant = plan.variant,
        where_clause = plan.exposure,
        keys = plan.variant_keys.join(", "),
    )
}
