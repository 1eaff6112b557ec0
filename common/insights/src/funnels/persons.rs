//! The persons of one funnel step, for an actors query (PostHog's `funnelStep` and
//! `funnelStepBreakdown`): read from the funnel's own per-actor query ([`super::sql`]), so they
//! are exactly the actors the FunnelsQuery counts at that step, exclusions and breakdown
//! attribution included.
//!
//! - `funnelStep` n > 0: the actors who reached step n (1-based) or further; n < 0: those who
//!   reached step |n| - 1 and no further (dropped off before step |n|).
//! - `funnelStepBreakdown`: a property breakdown's combination as the funnel shows it (a value,
//!   or the list of values; `''` for a missing one), or a cohort breakdown's id (0 or `"all"`:
//!   every person). The "Other" bucket is refused.
//! - `event_count`: the actor's events that are one of the steps.

use serde_json::Value;

use super::sql::actors_query;
use super::{Funnel, OTHER, parse};
use crate::breakdown::{By, CohortChoice};
use crate::{Context, Invalid, sql_text};

/// A funnel read for the persons of its steps.
pub(crate) struct StepPersons {
    funnel: Funnel,
}

impl StepPersons {
    /// Reads the FunnelsQuery `node` as the funnel itself does (errors name the node's fields).
    pub(crate) fn read(node: &Value, ctx: &Context) -> Result<StepPersons, Invalid> {
        let funnel = parse::parse(node, ctx)?;
        if funnel.actor != "person_id" {
            return Err(Invalid::new(
                "funnelsFilter.funnelAggregateByHogQL",
                "Persons of a funnel with a custom aggregation are not supported.",
            ));
        }
        Ok(StepPersons { funnel })
    }

    pub(crate) fn step_count(&self) -> usize {
        self.funnel.steps.len()
    }

    /// `(actor_id, event_count)` of the actors at `step` (checked by the caller: 1..=n or
    /// -2..=-n) and, when given, of the breakdown value `breakdown` (errors name
    /// `source.funnelStepBreakdown`).
    pub(crate) fn query(&self, step: i64, breakdown: Option<&Value>) -> Result<String, Invalid> {
        const ATTR: &str = "source.funnelStepBreakdown";
        let mut conditions = vec![if step > 0 {
            format!("reached >= {}", step - 1)
        } else {
            format!("reached = {}", -step - 2)
        }];
        if let Some(value) = breakdown.filter(|value| !value.is_null()) {
            let Some(funnel_breakdown) = &self.funnel.breakdown else {
                return Err(Invalid::new(
                    ATTR,
                    "funnelStepBreakdown needs the funnel's breakdownFilter.",
                ));
            };
            match &funnel_breakdown.by.by {
                By::Properties(properties) => {
                    let values = properties.point_values(value, ATTR)?;
                    if values == [OTHER] {
                        return Err(Invalid::new(
                            ATTR,
                            "Persons of the breakdown's Other bucket are not supported: pick a value.",
                        ));
                    }
                    conditions.push(format!(
                        "breakdown = {}",
                        sql_text::string(&properties.encode(&values))
                    ));
                }
                By::Cohorts(cohorts) => {
                    let cohort = CohortChoice::find(cohorts, value).ok_or_else(|| {
                        Invalid::new(
                            ATTR,
                            "funnelStepBreakdown must be one of the funnel's breakdown cohorts (an id, or 0 for all users).",
                        )
                    })?;
                    // The condition the funnel itself computed for that cohort.
                    let condition = cohorts
                        .iter()
                        .position(|known| known == cohort)
                        .and_then(|index| funnel_breakdown.cohort_conditions.get(index))
                        .map_or("true", String::as_str);
                    if condition != "true" {
                        conditions.push(condition.to_string());
                    }
                }
            }
        }
        Ok(format!(
            "SELECT actor AS actor_id, event_count FROM ({}) WHERE {}",
            actors_query(&self.funnel, true),
            conditions.join(" AND ")
        ))
    }
}
