//! funnelVizType: "time_to_convert".
//!
//! As PostHog's `FunnelTimeToConvertUDF` (`funnel_time_to_convert_udf.py`), over the steps view's
//! per-actor outcome (the full funnel, breakdown ignored):
//! - An actor's time is the sum of their step-to-step times from `funnelFromStep` to
//!   `funnelToStep` (`arraySum(arraySlice(timings, from + 1, to - from))`), for actors who reached
//!   `funnelToStep`. Zero times count here (unlike the steps view's averages).
//! - `bin_count`: `binCount` clamped to 1..=90, else `least(60, greatest(1, ceil(cbrt(samples))))`.
//! - `min = floor(min time)`, `max = ceil(max time)`, `width = ceil((max - min) / bin_count)`, or 60
//!   when that is 0. Bin `n` starts at `round(min + n * width)` for `n` in `0..=bin_count` (one
//!   more bin than `bin_count`, as PostHog's `range(0, bin_count + 1)`); a time falls in bin
//!   `floor((time - min) / width)`.
//! - `average_conversion_time`: the plain mean of the times (`arrayAvg`), null without samples;
//!   then the bins are `[[0, 0], [60, 0]]` (min and max 0, one bin, the 60 s fallback width).

use serde_json::{Value, json};

use super::Funnel;
use super::assemble::{count, number, seconds};
use super::sql::actors_query;
use crate::{Compiled, Table};

/// `ceil(cbrt(samples))` clamped to 1..=60, in exact integer arithmetic: 1 plus the number of
/// `k` in 1..=59 with `k³ < samples`.
fn auto_bin_count_sql(samples: &str) -> String {
    let mut terms = vec!["1".to_owned()];
    terms.extend((1..60i64).map(|k| format!("if({samples} > {}, 1, 0)", k * k * k)));
    terms.join(" + ")
}

pub(super) fn compile_time_to_convert(funnel: &Funnel) -> Compiled {
    let mut whole = funnel.clone();
    whole.breakdown = None;
    let actors = actors_query(&whole, false);
    let time: Vec<String> = (funnel.from_step + 1..=funnel.to_step)
        .map(|step| format!("time_{step}"))
        .collect();
    let bins = funnel
        .bin_count
        .map_or_else(|| auto_bin_count_sql("samples"), |count| count.to_string());
    let query = format!(
        "WITH timings AS (SELECT {time} AS timing FROM ({actors}) WHERE reached >= {to}), \
         params AS (SELECT count() AS samples, floor(min(timing)) AS low, ceil(max(timing)) AS high, \
         avg(timing) AS average FROM timings), \
         shape AS (SELECT samples, low, average, {bins} AS bins, \
         if(ceil((high - low) / ({bins})) > 0, ceil((high - low) / ({bins})), 60) AS width FROM params) \
         SELECT floor((timing - shape.low) / shape.width) AS bin, count() AS actors, \
         shape.low AS low, shape.width AS width, shape.bins AS bins, shape.average AS average \
         FROM timings CROSS JOIN shape \
         GROUP BY bin, low, width, bins, average ORDER BY bin LIMIT 100",
        time = time.join(" + "),
        to = funnel.to_step,
    );
    Compiled::new(vec![query], move |tables| {
        let table = tables.into_iter().next().unwrap_or_default();
        Ok(json!({
            "results": assemble_time_to_convert(&table),
            "isUdf": true,
        }))
    })
}

fn assemble_time_to_convert(table: &Table) -> Value {
    let Some(first) = table.rows.first() else {
        return json!({"average_conversion_time": null, "bins": [[0, 0], [60, 0]]});
    };
    let low = number(first.get(2)).unwrap_or(0.0);
    let width = number(first.get(3)).filter(|w| *w > 0.0).unwrap_or(60.0);
    // At most 90 bins (a custom count is clamped to 90, an automatic one to 60).
    let bin_count = count(first.get(4)).clamp(1, 90) as usize;
    let mut counts = vec![0u64; bin_count + 1];
    for row in &table.rows {
        if let Some(bin) = number(row.first()).filter(|bin| *bin >= 0.0)
            && let Some(slot) = counts.get_mut(bin as usize)
        {
            *slot += count(row.get(1));
        }
    }
    let bins: Vec<Value> = counts
        .iter()
        .enumerate()
        .map(|(n, actors)| json!([(low + n as f64 * width).round() as i64, actors]))
        .collect();
    json!({
        "average_conversion_time": seconds(first.get(5)),
        "bins": bins,
    })
}
