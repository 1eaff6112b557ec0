//! `ExperimentQuery` compiled to the dialect: exposures per entity, metric values per entity
//! after exposure, per-variant sums; assembled with `experiment_stats` into PostHog's
//! `ExperimentQueryResponse`.

use serde_json::Value;

use crate::{Compiled, Context, Invalid};

/// Compiles an `ExperimentQuery` node; the experiment comes from [`Context::experiment`].
pub fn compile(node: &Value, ctx: &Context) -> Result<Compiled, Invalid> {
    let _ = (node, ctx);
    Err(Invalid::new("kind", "ExperimentQuery is not compiled yet."))
}
