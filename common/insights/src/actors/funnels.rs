//! The persons behind a funnel step, as PostHog's `funnel_persons` / `funnel_actors` find them:
//! `funnelStep` n > 0 = those who reached at least step n (1-based), n < 0 = those who reached
//! step |n| - 1 but not step |n| (dropped off before it), and with `funnelStepBreakdown` only
//! those of that breakdown combination or cohort. They come from the funnel's own per-actor
//! query ([`crate::funnels::StepPersons`]), so they are the actors the FunnelsQuery counts:
//! steps, order, window, exclusions, `dateRange`, `properties` and breakdown attribution alike.
//! `event_count` is the person's events that are one of the steps.
//!
//! A custom aggregation (`funnelAggregateByHogQL`: its actors are not persons) and a breakdown's
//! "Other" bucket are refused rather than answered differently from the funnel.

use super::Matched;
use super::source::{InsightActorsQuery, under_insight};
use crate::funnels::StepPersons;
use crate::{Context, Invalid};

pub(super) fn matched(query: &InsightActorsQuery, ctx: &Context) -> Result<Matched, Invalid> {
    let funnel = StepPersons::read(&query.source, ctx).map_err(under_insight)?;
    let Some(step) = query.funnel_step.filter(|step| *step != 0) else {
        return Err(Invalid::new(
            "source.funnelStep",
            "funnelStep is required: n for persons who reached step n, -n for those who dropped off before it.",
        ));
    };
    let count = funnel.step_count() as i64;
    if step.abs() > count || step == -1 {
        return Err(Invalid::new(
            "source.funnelStep",
            format!("funnelStep must be from 1 to {count}, or from -2 to -{count}."),
        ));
    }
    Ok(Matched {
        ctes: String::new(),
        query: funnel.query(step, query.funnel_step_breakdown.as_ref())?,
    })
}
