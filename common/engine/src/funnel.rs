//! `aggregateFunnel(steps, window_seconds, order, timestamp, step_mask, exclusion_mask)`: the
//! per-actor funnel aggregate (PostHog runs the same computation as its `aggregate_funnel` UDF).
//!
//! - `steps` (constant, 1..=62): how many steps the funnel has.
//! - `window_seconds` (constant): the conversion window. A step counts when it happens at most
//!   this long after the attempt's first step (inclusive: exactly at the edge counts, one
//!   microsecond past it does not), as PostHog's UDF compares `t - start <= window`.
//! - `order` (constant): `'ordered'`, `'strict'` or `'unordered'`.
//! - `step_mask`: bit `i` set when the event matches step `i` (an event may match several).
//!   Bit 62 ([`NO_START`]) marks an event that cannot open an attempt: it still counts for the
//!   steps it matches in attempts opened by other events (in ordered/strict funnels its step 0
//!   does not start one; in unordered funnels it is no attempt's first event). Funnel trends use
//!   it to evaluate only the attempts that start in one interval.
//! - `exclusion_mask`: bit `s` set when the event drops an attempt whose furthest step is `s`
//!   (an exclusion with `funnelFromStep <= s < funnelToStep`).
//!
//! The result per actor is `[furthest step (0-based), seconds from step 0 to 1, 1 to 2, ...]`
//! (NULL for the steps not reached), or NULL when the actor never did step 0 or the attempt
//! that went furthest was excluded (PostHog then drops the actor from every step).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Builder, Int64Array, LargeBinaryArray,
    ListArray, ListBuilder,
};
use datafusion::arrow::buffer::{Buffer, OffsetBuffer};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

use crate::grouped_rows::{GroupedRows, constant_argument, micros, passes, timestamp_argument};

/// The name the rewriter maps `aggregateFunnel` to.
pub const NAME: &str = "hogql_aggregate_funnel";

/// Bit masks are u64 with bit 62 a flag ([`NO_START`]), so at most this many steps.
pub const MAX_STEPS: usize = 62;

/// The step-mask flag of an event that cannot open an attempt (see the module docs).
pub const NO_START: u64 = 1 << 62;

pub fn aggregate_funnel() -> AggregateUDF {
    AggregateUDF::new_from_impl(AggregateFunnel {
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AggregateFunnel {
    signature: Signature,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Ordered,
    Strict,
    Unordered,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub steps: usize,
    pub window_micros: i64,
    pub order: Order,
}

/// One input row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Event {
    pub micros: i64,
    pub steps: u64,
    pub exclusions: u64,
}

/// What one actor reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The furthest step, 0-based.
    pub reached: usize,
    /// Seconds between consecutive steps of the attempt that got there (`reached` values).
    pub conversion_seconds: Vec<f64>,
}

fn item_field() -> FieldRef {
    Arc::new(Field::new_list_field(DataType::Float64, true))
}

impl AggregateUDFImpl for AggregateFunnel {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 6 {
            return plan_err!(
                "aggregateFunnel expects 6 arguments (steps, window seconds, order, timestamp, step mask, exclusion mask), found {}",
                arg_types.len()
            );
        }
        let timestamp = timestamp_argument(&arg_types[3], "aggregateFunnel")?;
        Ok(vec![
            DataType::Int64,
            DataType::Int64,
            DataType::Utf8,
            timestamp,
            DataType::Int64,
            DataType::Int64,
        ])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(item_field()))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[events]", args.name),
            DataType::LargeBinary,
            true,
        ))])
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(FunnelAccumulator {
            params: params(&acc_args)?,
            events: Vec::new(),
        }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(FunnelGroups::new(params(&args)?)))
    }
}

/// The constant arguments, read from the planned expressions.
fn params(args: &AccumulatorArgs) -> Result<Params> {
    let constant = |index: usize| constant_argument(args, index, "aggregateFunnel");
    let integer = |index: usize| -> Result<i64> {
        match constant(index)?.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(value)) => Ok(value),
            _ => exec_err!("aggregateFunnel: argument {} must be an integer", index + 1),
        }
    };
    let steps = integer(0)?;
    if !(1..=MAX_STEPS as i64).contains(&steps) {
        return exec_err!("aggregateFunnel: the number of steps must be between 1 and {MAX_STEPS}");
    }
    let window = integer(1)?;
    if window < 0 {
        return exec_err!("aggregateFunnel: the window must not be negative");
    }
    let order = match constant(2)? {
        ScalarValue::Utf8(Some(text))
        | ScalarValue::Utf8View(Some(text))
        | ScalarValue::LargeUtf8(Some(text)) => match text.as_str() {
            "ordered" => Order::Ordered,
            "strict" => Order::Strict,
            "unordered" => Order::Unordered,
            other => return exec_err!("aggregateFunnel: unknown order '{other}'"),
        },
        _ => return exec_err!("aggregateFunnel: the order must be a string"),
    };
    Ok(Params {
        steps: steps as usize,
        window_micros: window.saturating_mul(1_000_000),
        order,
    })
}

/// The event columns of one batch (arguments 4 to 6).
struct Columns {
    micros: Int64Array,
    steps: Int64Array,
    exclusions: Int64Array,
}

impl Columns {
    fn new(values: &[ArrayRef]) -> Result<Self> {
        if values.len() < 6 {
            return exec_err!("aggregateFunnel expects 6 arguments");
        }
        let steps = cast(&values[4], &DataType::Int64)?;
        let exclusions = cast(&values[5], &DataType::Int64)?;
        Ok(Self {
            micros: micros(&values[3])?,
            steps: steps.as_primitive::<Int64Type>().clone(),
            exclusions: exclusions.as_primitive::<Int64Type>().clone(),
        })
    }

    /// The row as an event, unless it cannot matter: no time, or (outside strict funnels, where
    /// any event breaks a sequence) neither a step nor an exclusion.
    fn event(&self, row: usize, order: Order) -> Option<Event> {
        if self.micros.is_null(row) {
            return None;
        }
        let mask = |array: &Int64Array| {
            if array.is_null(row) {
                0
            } else {
                array.value(row) as u64
            }
        };
        let event = Event {
            micros: self.micros.value(row),
            steps: mask(&self.steps),
            exclusions: mask(&self.exclusions),
        };
        (order == Order::Strict || event.steps != 0 || event.exclusions != 0).then_some(event)
    }
}

/// The intermediate state: per group, its events packed as [`PACKED_BYTES`] little-endian
/// bytes each (time, step mask, exclusion mask). One flat buffer instead of a list per field:
/// a funnel skips partial aggregation, so every input row becomes a state row that is
/// repartitioned and merged, and a list per field cost more than the funnel itself.
struct StateRows<'a> {
    events: &'a LargeBinaryArray,
}

const PACKED_BYTES: usize = 24;

impl Event {
    fn pack(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.micros.to_le_bytes());
        out.extend_from_slice(&self.steps.to_le_bytes());
        out.extend_from_slice(&self.exclusions.to_le_bytes());
    }

    fn unpack(bytes: &[u8]) -> Self {
        let word = |i: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[8 * i..8 * i + 8]);
            word
        };
        Event {
            micros: i64::from_le_bytes(word(0)),
            steps: u64::from_le_bytes(word(1)),
            exclusions: u64::from_le_bytes(word(2)),
        }
    }
}

impl<'a> StateRows<'a> {
    fn new(states: &'a [ArrayRef]) -> Result<Self> {
        match states.first().and_then(|s| s.as_binary_opt::<i64>()) {
            Some(events) => Ok(Self { events }),
            None => exec_err!("aggregateFunnel: bad intermediate state"),
        }
    }

    fn len(&self) -> usize {
        self.events.len()
    }

    /// The events of state row `row`.
    fn events(&self, row: usize) -> impl Iterator<Item = Event> + '_ {
        let bytes: &[u8] = if self.events.is_null(row) {
            &[]
        } else {
            self.events.value(row)
        };
        bytes.chunks_exact(PACKED_BYTES).map(Event::unpack)
    }
}

/// One state row per group (or per input row, `None` for a row that cannot matter).
fn state_arrays<'a, G>(groups: impl ExactSizeIterator<Item = G>) -> Vec<ArrayRef>
where
    G: IntoIterator<Item = &'a Event>,
{
    let mut offsets = Vec::with_capacity(groups.len() + 1);
    offsets.push(0i64);
    let mut values = Vec::new();
    for events in groups {
        for event in events {
            event.pack(&mut values);
        }
        offsets.push(values.len() as i64);
    }
    let offsets = OffsetBuffer::new(offsets.into());
    vec![Arc::new(LargeBinaryArray::new(
        offsets,
        Buffer::from_vec(values),
        None,
    ))]
}

fn results<'a>(params: Params, groups: impl Iterator<Item = &'a mut [Event]>) -> ListArray {
    let mut out = ListBuilder::new(Float64Builder::new()).with_field(item_field());
    for events in groups {
        match evaluate(events, params) {
            Some(outcome) => {
                out.values().append_value(outcome.reached as f64);
                for step in 1..params.steps {
                    out.values()
                        .append_option(outcome.conversion_seconds.get(step - 1).copied());
                }
                out.append(true);
            }
            None => out.append(false),
        }
    }
    out.finish()
}

/// The events taken, by actor.
struct FunnelGroups {
    params: Params,
    rows: GroupedRows<Event>,
}

impl FunnelGroups {
    fn new(params: Params) -> Self {
        Self {
            params,
            rows: GroupedRows::new(),
        }
    }
}

impl GroupsAccumulator for FunnelGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.rows.know(total_num_groups, "aggregateFunnel")?;
        let columns = Columns::new(values)?;
        for (row, &group) in group_indices.iter().enumerate() {
            if passes(opt_filter, row)
                && let Some(event) = columns.event(row, self.params.order)
            {
                self.rows.push(group, event);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let mut taken = self.rows.take(emit_to);
        Ok(Arc::new(results(self.params, taken.slices())))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let mut taken = self.rows.take(emit_to);
        Ok(state_arrays(taken.slices().map(|events| &*events)))
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.rows.know(total_num_groups, "aggregateFunnel")?;
        let states = StateRows::new(values)?;
        for (row, &group) in group_indices.iter().enumerate() {
            for event in states.events(row) {
                self.rows.push(group, event);
            }
        }
        Ok(())
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let columns = Columns::new(values)?;
        let events: Vec<Option<Event>> = (0..columns.micros.len())
            .map(|row| {
                passes(opt_filter, row)
                    .then(|| columns.event(row, self.params.order))
                    .flatten()
            })
            .collect();
        Ok(state_arrays(events.iter()))
    }

    fn size(&self) -> usize {
        self.rows.size()
    }
}

/// The same, for plans that aggregate without group indices.
#[derive(Debug)]
struct FunnelAccumulator {
    params: Params,
    events: Vec<Event>,
}

impl Accumulator for FunnelAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let columns = Columns::new(values)?;
        for row in 0..columns.micros.len() {
            if let Some(event) = columns.event(row, self.params.order) {
                self.events.push(event);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let list = results(self.params, std::iter::once(self.events.as_mut_slice()));
        Ok(ScalarValue::List(Arc::new(list)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.events.capacity() * std::mem::size_of::<Event>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        state_arrays(std::iter::once(&self.events))
            .iter()
            .map(|array| ScalarValue::try_from_array(array, 0))
            .collect()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let states = StateRows::new(states)?;
        for row in 0..states.len() {
            self.events.extend(states.events(row));
        }
        Ok(())
    }
}

/// An attempt: the timestamps (µs) of the steps it went through, from its step 0.
#[derive(Debug, Clone)]
struct Attempt {
    times: Vec<i64>,
    excluded: bool,
}

impl Attempt {
    fn start(&self) -> i64 {
        self.times[0]
    }
}

fn bits(mask: u64) -> impl Iterator<Item = usize> {
    let mut rest = mask;
    std::iter::from_fn(move || {
        (rest != 0).then(|| {
            let bit = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            bit
        })
    })
}

/// One actor's outcome. Events are sorted by time; at equal times by the lowest step they
/// match, so that steps done in the same instant count in funnel order.
pub fn evaluate(events: &mut [Event], params: Params) -> Option<Outcome> {
    let steps = params.steps.clamp(1, MAX_STEPS);
    let relevant = (1u64 << steps) - 1;
    // Stable: its merge finds the runs already in order (a person's events come a day, and an
    // event name, at a time).
    events.sort_by_key(|event| {
        let matched = event.steps & relevant;
        (
            event.micros,
            matched.trailing_zeros(),
            matched,
            event.exclusions,
            event.steps,
        )
    });
    match params.order {
        Order::Unordered => unordered(events, steps, relevant, params.window_micros),
        order => ordered(
            events,
            steps,
            relevant,
            params.window_micros,
            order == Order::Strict,
        ),
    }
}

fn outcome(reached: usize, times: &[i64]) -> Outcome {
    Outcome {
        reached,
        conversion_seconds: times
            .windows(2)
            .map(|pair| (pair[1] - pair[0]) as f64 / 1_000_000.0)
            .collect(),
    }
}

/// Ordered and strict funnels, in one pass (as PostHog's UDF): `latest[s]` is the attempt that
/// most recently reached step `s` (the latest start wins: it has the most window left), and
/// `furthest` the first attempt that reached the furthest step.
fn ordered(
    events: &[Event],
    steps: usize,
    relevant: u64,
    window: i64,
    strict: bool,
) -> Option<Outcome> {
    let mut latest: Vec<Option<Attempt>> = vec![None; steps];
    let mut furthest: Option<(usize, Attempt)> = None;
    let in_window = |attempt: &Attempt, at: i64| at - attempt.start() <= window;
    for event in events {
        // Exclusions first: an event both excluding and completing a step is processed as PostHog
        // does (its exclusion entries come last in the array, which the UDF walks backwards).
        for step in bits(event.exclusions & relevant) {
            if step + 1 >= steps {
                continue;
            }
            let went_on = match (&latest[step], &latest[step + 1]) {
                (Some(at), Some(next)) => next.start() == at.start(),
                _ => false,
            };
            if let Some(attempt) = &mut latest[step]
                && in_window(attempt, event.micros)
                && !went_on
            {
                attempt.excluded = true;
                if let Some((reached, best)) = &mut furthest
                    && *reached == step
                    && in_window(best, event.micros)
                {
                    best.excluded = true;
                }
            }
        }
        // Later steps first, so one event never advances an attempt by two steps.
        for step in bits(event.steps & relevant)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            let advanced = if step == 0 {
                if event.steps & NO_START != 0
                    || latest[0]
                        .as_ref()
                        .is_some_and(|attempt| attempt.start() == event.micros)
                {
                    continue;
                }
                Attempt {
                    times: vec![event.micros],
                    excluded: false,
                }
            } else {
                let Some(previous) = &latest[step - 1] else {
                    continue;
                };
                let already = latest[step]
                    .as_ref()
                    .is_some_and(|current| current.start() == previous.start());
                if !in_window(previous, event.micros) || already {
                    continue;
                }
                let mut attempt = Attempt {
                    times: Vec::with_capacity(steps),
                    excluded: previous.excluded,
                };
                attempt.times.extend_from_slice(&previous.times);
                attempt.times.push(event.micros);
                attempt
            };
            let replaces = match &furthest {
                None => true,
                Some((reached, best)) => step > *reached || (step == *reached && best.excluded),
            };
            // Copied only when it goes further than before: the hot path allocates once.
            if replaces {
                furthest = Some((step, advanced.clone()));
            }
            if !advanced.excluded {
                latest[step] = Some(advanced);
            }
        }
        if strict {
            // Any event that is not the next step breaks every sequence it does not continue.
            for (step, attempt) in latest.iter_mut().enumerate() {
                if event.steps & (1 << step) == 0 {
                    *attempt = None;
                }
            }
        }
        if latest[steps - 1].is_some() {
            break;
        }
    }
    match furthest {
        Some((reached, attempt)) if !attempt.excluded => Some(outcome(reached, &attempt.times)),
        _ => None,
    }
}

/// Unordered funnels: each event opens a window of `window` from its time; the steps done in it
/// (each event standing for one step, the lowest unclaimed one it matches, earliest event
/// first) are the attempt. The furthest attempt wins, the earliest one among equals; an
/// exclusion event inside an attempt (before it completed, or in its whole window when it did
/// not) drops that attempt.
fn unordered(events: &[Event], steps: usize, relevant: u64, window: i64) -> Option<Outcome> {
    let count = events.len();
    // next[i * steps + s]: the first event at or after i matching step s (count when none).
    let mut next = vec![count as u32; (count + 1) * steps];
    for i in (0..count).rev() {
        for step in 0..steps {
            next[i * steps + step] = if events[i].steps & (1 << step) != 0 {
                i as u32
            } else {
                next[(i + 1) * steps + step]
            };
        }
    }
    // exclusions_before[i]: how many exclusion events come before event i.
    let mut exclusions_before = Vec::with_capacity(count + 1);
    let mut seen = 0u32;
    exclusions_before.push(0);
    for event in events {
        seen += u32::from(event.exclusions & relevant != 0);
        exclusions_before.push(seen);
    }
    let mut best_reached = 0usize;
    let mut best: Option<Vec<i64>> = None;
    let mut any = false;
    let mut claimed: Vec<usize> = Vec::with_capacity(steps);
    for (anchor, event) in events.iter().enumerate() {
        if event.steps & relevant == 0 || event.steps & NO_START != 0 {
            continue;
        }
        let end = event.micros.saturating_add(window);
        claimed.clear();
        for step in 0..steps {
            let mut candidate = next[anchor * steps + step] as usize;
            while candidate < count && claimed.contains(&candidate) {
                candidate = next[(candidate + 1) * steps + step] as usize;
            }
            if candidate < count && events[candidate].micros <= end {
                claimed.push(candidate);
            }
        }
        let reached = claimed.len();
        let last_index = if reached == steps {
            claimed.iter().copied().max().unwrap_or(anchor)
        } else {
            events[anchor..]
                .iter()
                .position(|later| later.micros > end)
                .map_or(count, |offset| anchor + offset)
        };
        let excluded =
            exclusions_before[last_index.max(anchor + 1)] > exclusions_before[anchor + 1];
        let better = !any || reached > best_reached;
        if better {
            best_reached = reached;
            best = None;
            any = true;
        }
        if reached == best_reached && best.is_none() && !excluded {
            let mut times: Vec<i64> = claimed.iter().map(|&i| events[i].micros).collect();
            times.sort_unstable();
            best = Some(times);
        }
        if best_reached == steps && best.is_some() {
            break;
        }
    }
    best.map(|times| outcome(times.len().saturating_sub(1), &times))
}

#[cfg(test)]
#[path = "funnel_tests.rs"]
mod tests;
