//! `aggregatePaths(step_limit, session_gap_seconds, start_point, end_point, timestamp, item)`:
//! one actor's paths, as PostHog's paths runner computes them from each person's sorted
//! `groupArray((timestamp, item))` (one pass per actor instead of a chain of window sorts).
//!
//! - Events are sorted by time, then item, and cut into sessions at every gap of
//!   `session_gap_seconds` or more (whole seconds crossed, as `dateDiff('second')`). Rows with a
//!   NULL time or item are not path items.
//! - In a session, a run of one item counts once, at its last event (an item is compared with the
//!   next one, and the session's last with `''`).
//! - `start_point` (a string, or NULL for none) keeps the sessions that reach it and starts them
//!   at its first occurrence; `end_point` keeps the sessions that reach it and ends them at its
//!   first occurrence (with both, the first at or after the start). Then `step_limit` steps are
//!   kept: the first ones, the last ones with only an end point, or with both points the first
//!   and last halves around one `...` step (at the time of the first step it hides) when the
//!   path is longer.
//!
//! The result per actor is a list of tuples `(session, step, item, timestamp, previous_item,
//! conversion_seconds, last_step)`, read as `t.1` to `t.7`: sessions numbered from 0, steps from
//! 1, `previous_item` `''` and `conversion_seconds` NULL at step 1, `last_step` the session's
//! last step.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, Int64Builder, LargeBinaryArray, ListArray,
    StringBuilder, StructArray, TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::{Buffer, OffsetBuffer};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, TimeUnit};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

use crate::grouped_rows::{GroupedRows, constant_argument, micros, passes, timestamp_argument};

/// The name the rewriter maps `aggregatePaths` to.
pub const NAME: &str = "hogql_aggregate_paths";

/// The step standing for the middle of a path cut to its first and last halves.
pub const ELLIPSIS: &str = "...";

/// The most steps a session may keep (PostHog's paths take at most 20).
const MAX_STEP_LIMIT: i64 = 1_000;

const FUNCTION: &str = "aggregatePaths";

pub fn aggregate_paths() -> AggregateUDF {
    AggregateUDF::new_from_impl(AggregatePaths {
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AggregatePaths {
    signature: Signature,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    pub step_limit: usize,
    pub gap_seconds: i64,
    pub start: Option<String>,
    pub end: Option<String>,
}

/// One kept step of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step<'a> {
    pub session: i64,
    pub step: i64,
    pub item: &'a str,
    pub micros: i64,
    pub previous_item: &'a str,
    pub conversion_seconds: Option<i64>,
    pub last_step: i64,
}

/// The tuple's fields, named as `t.1` ... `t.7` read them.
fn step_fields(timestamp: DataType) -> Fields {
    Fields::from(vec![
        Field::new("1", DataType::Int64, false),
        Field::new("2", DataType::Int64, false),
        Field::new("3", DataType::Utf8, false),
        Field::new("4", timestamp, false),
        Field::new("5", DataType::Utf8, false),
        Field::new("6", DataType::Int64, true),
        Field::new("7", DataType::Int64, false),
    ])
}

fn list_field(fields: Fields) -> FieldRef {
    Arc::new(Field::new_list_field(DataType::Struct(fields), false))
}

fn is_text(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    )
}

impl AggregateUDFImpl for AggregatePaths {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 6 {
            return plan_err!(
                "{FUNCTION} expects 6 arguments (step limit, session gap seconds, start point, end point, timestamp, item), found {}",
                arg_types.len()
            );
        }
        let timestamp = timestamp_argument(&arg_types[4], FUNCTION)?;
        // Items are read in whichever string layout they come (no copy into another).
        let item = match &arg_types[5] {
            text if is_text(text) => text.clone(),
            DataType::Null => DataType::Utf8,
            other => return plan_err!("{FUNCTION} expects a string item, found {other}"),
        };
        Ok(vec![
            DataType::Int64,
            DataType::Int64,
            DataType::Utf8,
            DataType::Utf8,
            timestamp,
            item,
        ])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let timestamp = arg_types
            .get(4)
            .and_then(|argument| timestamp_argument(argument, FUNCTION).ok())
            .unwrap_or(DataType::Timestamp(TimeUnit::Microsecond, None));
        Ok(DataType::List(list_field(step_fields(timestamp))))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[events]", args.name),
            DataType::LargeBinary,
            true,
        ))])
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(PathsAccumulator {
            output: Output::new(&acc_args)?,
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
        Ok(Box::new(PathsGroups {
            output: Output::new(&args)?,
            rows: GroupedRows::new(),
            text: Vec::new(),
        }))
    }
}

/// The constant arguments, read from the planned expressions.
fn params(args: &AccumulatorArgs) -> Result<Params> {
    let integer = |index: usize| -> Result<i64> {
        match constant_argument(args, index, FUNCTION)?.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(value)) => Ok(value),
            _ => exec_err!("{FUNCTION}: argument {} must be an integer", index + 1),
        }
    };
    let point = |index: usize| -> Result<Option<String>> {
        match constant_argument(args, index, FUNCTION)? {
            ScalarValue::Utf8(text)
            | ScalarValue::Utf8View(text)
            | ScalarValue::LargeUtf8(text) => Ok(text),
            ScalarValue::Null => Ok(None),
            _ => exec_err!(
                "{FUNCTION}: argument {} must be a string or NULL",
                index + 1
            ),
        }
    };
    let step_limit = integer(0)?;
    if !(1..=MAX_STEP_LIMIT).contains(&step_limit) {
        return exec_err!("{FUNCTION}: the step limit must be between 1 and {MAX_STEP_LIMIT}");
    }
    let gap_seconds = integer(1)?;
    if gap_seconds < 0 {
        return exec_err!("{FUNCTION}: the session gap must not be negative");
    }
    Ok(Params {
        step_limit: step_limit as usize,
        gap_seconds,
        start: point(2)?,
        end: point(3)?,
    })
}

fn seconds(micros: i64) -> i64 {
    micros.div_euclid(1_000_000)
}

/// One actor's kept steps, appended to `out`. `events` (time in µs, item) are sorted here.
pub fn evaluate<'a>(events: &mut [(i64, &'a str)], params: &'a Params, out: &mut Vec<Step<'a>>) {
    events.sort_unstable();
    let mut session = 0i64;
    let mut begin = 0;
    for end in 1..=events.len() {
        let cut = end == events.len()
            || seconds(events[end].0) - seconds(events[end - 1].0) >= params.gap_seconds;
        if cut {
            session_steps(&events[begin..end], session, params, out);
            session += 1;
            begin = end;
        }
    }
}

/// The kept steps of one session (its events sorted).
fn session_steps<'a>(
    events: &[(i64, &'a str)],
    session: i64,
    params: &'a Params,
    out: &mut Vec<Step<'a>>,
) {
    // Runs compacted: an event stays when the next item differs (the session ends with '').
    let positions: Vec<(i64, &'a str)> = events
        .iter()
        .enumerate()
        .filter(|&(index, &(_, item))| item != events.get(index + 1).map_or("", |next| next.1))
        .map(|(_, &event)| event)
        .collect();
    let first = |point: &str, from: usize| {
        positions[from..]
            .iter()
            .position(|event| event.1 == point)
            .map(|offset| from + offset)
    };
    let limit = params.step_limit;
    // (step, item, time), steps increasing.
    let mut kept: Vec<(usize, &'a str, i64)> = Vec::with_capacity(limit.min(positions.len()));
    match (params.start.as_deref(), params.end.as_deref()) {
        (None, None) => {
            for (index, &(micros, item)) in positions.iter().take(limit).enumerate() {
                kept.push((index + 1, item, micros));
            }
        }
        (Some(start), None) => {
            let Some(from) = first(start, 0) else { return };
            for (index, &(micros, item)) in positions[from..].iter().take(limit).enumerate() {
                kept.push((index + 1, item, micros));
            }
        }
        // The last `limit` steps up to the end point, numbered so the end point is step
        // `limit` (or its own position when that is nearer the start).
        (None, Some(end)) => {
            let Some(to) = first(end, 0) else { return };
            let from = (to + 1).saturating_sub(limit);
            let shift = (to + 1).max(limit) - limit;
            for (index, &(micros, item)) in positions.iter().enumerate().take(to + 1).skip(from) {
                kept.push((index + 1 - shift, item, micros));
            }
        }
        // From the start point to the first end point at or after it; a longer path keeps its
        // first and last halves around one `...` step, as PostHog's `arrayConcat` does.
        (Some(start), Some(end)) => {
            let Some(from) = first(start, 0) else { return };
            let Some(to) = first(end, from) else { return };
            let length = to - from + 1;
            let half = limit / 2;
            for (offset, &(micros, item)) in positions[from..=to].iter().enumerate() {
                let relative = offset + 1;
                if length <= limit || relative < half + 1 {
                    kept.push((relative, item, micros));
                } else if relative == half + 1 {
                    kept.push((relative, ELLIPSIS, micros));
                } else if relative + half > length {
                    kept.push((relative + 2 * half + 1 - length, item, micros));
                }
            }
        }
    }
    let Some(&(last_step, _, _)) = kept.last() else {
        return;
    };
    for (index, &(step, item, micros)) in kept.iter().enumerate() {
        let previous = index.checked_sub(1).map(|before| kept[before]);
        out.push(Step {
            session,
            step: step as i64,
            item,
            micros,
            previous_item: previous.map_or("", |before| before.1),
            conversion_seconds: previous.map(|before| seconds(micros) - seconds(before.2)),
            last_step: last_step as i64,
        });
    }
}

/// What the aggregate emits: its parameters and the output's tuple fields.
#[derive(Debug)]
struct Output {
    params: Params,
    fields: Fields,
}

impl Output {
    fn new(args: &AccumulatorArgs) -> Result<Self> {
        let DataType::List(item) = args.return_field.data_type() else {
            return exec_err!("{FUNCTION}: unexpected return type");
        };
        let DataType::Struct(fields) = item.data_type() else {
            return exec_err!("{FUNCTION}: unexpected return type");
        };
        Ok(Self {
            params: params(args)?,
            fields: fields.clone(),
        })
    }

    /// One list per actor, of the steps of its events.
    fn results<'a>(&self, actors: impl Iterator<Item = Vec<(i64, &'a str)>>) -> Result<ListArray> {
        let mut offsets = vec![0i32];
        let mut steps = Vec::new();
        let mut columns = Columns::default();
        for mut events in actors {
            steps.clear();
            evaluate(&mut events, &self.params, &mut steps);
            for step in &steps {
                columns.push(step);
            }
            let total = *offsets.last().unwrap_or(&0) as usize + steps.len();
            match i32::try_from(total) {
                Ok(total) => offsets.push(total),
                Err(_) => return exec_err!("{FUNCTION}: too many steps in one batch"),
            }
        }
        let tuples = columns.finish(&self.fields)?;
        Ok(ListArray::try_new(
            list_field(self.fields.clone()),
            OffsetBuffer::new(offsets.into()),
            Arc::new(tuples),
            None,
        )?)
    }
}

#[derive(Default)]
struct Columns {
    sessions: Vec<i64>,
    steps: Vec<i64>,
    items: StringBuilder,
    micros: Vec<i64>,
    previous: StringBuilder,
    conversion: Int64Builder,
    last_steps: Vec<i64>,
}

impl Columns {
    fn push(&mut self, step: &Step) {
        self.sessions.push(step.session);
        self.steps.push(step.step);
        self.items.append_value(step.item);
        self.micros.push(step.micros);
        self.previous.append_value(step.previous_item);
        self.conversion.append_option(step.conversion_seconds);
        self.last_steps.push(step.last_step);
    }

    fn finish(mut self, fields: &Fields) -> Result<StructArray> {
        let zone = match fields[3].data_type() {
            DataType::Timestamp(_, zone) => zone.clone(),
            _ => None,
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(self.sessions)),
            Arc::new(Int64Array::from(self.steps)),
            Arc::new(self.items.finish()),
            Arc::new(TimestampMicrosecondArray::from(self.micros).with_timezone_opt(zone)),
            Arc::new(self.previous.finish()),
            Arc::new(self.conversion.finish()),
            Arc::new(Int64Array::from(self.last_steps)),
        ];
        Ok(StructArray::try_new(fields.clone(), columns, None)?)
    }
}

/// The event columns of one batch (arguments 5 and 6).
struct EventColumns {
    micros: Int64Array,
    items: ArrayRef,
}

impl EventColumns {
    fn new(values: &[ArrayRef]) -> Result<Self> {
        if values.len() < 6 {
            return exec_err!("{FUNCTION} expects 6 arguments");
        }
        Ok(Self {
            micros: micros(&values[4])?,
            items: Arc::clone(&values[5]),
        })
    }

    fn len(&self) -> usize {
        self.micros.len()
    }

    /// The row's time and item, unless either is NULL.
    fn event(&self, row: usize) -> Option<(i64, &str)> {
        if self.micros.is_null(row) || self.items.is_null(row) {
            return None;
        }
        let item = match self.items.data_type() {
            DataType::Utf8View => self.items.as_string_view().value(row),
            DataType::LargeUtf8 => self.items.as_string::<i64>().value(row),
            _ => self.items.as_string_opt::<i32>()?.value(row),
        };
        Some((self.micros.value(row), item))
    }
}

/// Intermediate states: per actor, its events packed as time (8 bytes), item length (4) and
/// the item's bytes, little-endian.
fn pack(out: &mut Vec<u8>, micros: i64, item: &str) {
    out.extend_from_slice(&micros.to_le_bytes());
    out.extend_from_slice(&(item.len() as u32).to_le_bytes());
    out.extend_from_slice(item.as_bytes());
}

fn unpack(mut bytes: &[u8]) -> impl Iterator<Item = (i64, &str)> {
    std::iter::from_fn(move || {
        if bytes.len() < 12 {
            return None;
        }
        let micros = i64::from_le_bytes(bytes[..8].try_into().ok()?);
        let length = u32::from_le_bytes(bytes[8..12].try_into().ok()?) as usize;
        let item = std::str::from_utf8(bytes.get(12..12 + length)?).ok()?;
        bytes = &bytes[12 + length..];
        Some((micros, item))
    })
}

fn state_rows(states: &[ArrayRef]) -> Result<&LargeBinaryArray> {
    match states.first().and_then(|s| s.as_binary_opt::<i64>()) {
        Some(events) => Ok(events),
        None => exec_err!("{FUNCTION}: bad intermediate state"),
    }
}

fn state_events(states: &LargeBinaryArray, row: usize) -> impl Iterator<Item = (i64, &str)> {
    unpack(match states.is_null(row) {
        true => &[],
        false => states.value(row),
    })
}

fn state_array(offsets: Vec<i64>, values: Vec<u8>) -> Vec<ArrayRef> {
    vec![Arc::new(LargeBinaryArray::new(
        OffsetBuffer::new(offsets.into()),
        Buffer::from_vec(values),
        None,
    ))]
}

/// One event kept by the groups accumulator: its time and its item's bytes in `text`.
#[derive(Debug, Clone, Copy, Default)]
struct Event {
    micros: i64,
    start: usize,
    length: usize,
}

struct PathsGroups {
    output: Output,
    rows: GroupedRows<Event>,
    /// Every kept item's bytes, one after another.
    text: Vec<u8>,
}

impl PathsGroups {
    fn push(&mut self, group: usize, micros: i64, item: &str) {
        let start = self.text.len();
        self.text.extend_from_slice(item.as_bytes());
        self.rows.push(
            group,
            Event {
                micros,
                start,
                length: item.len(),
            },
        );
    }

    fn item(&self, event: &Event) -> &str {
        // Only whole `&str`s are copied in, so every slice is valid UTF-8.
        std::str::from_utf8(&self.text[event.start..event.start + event.length]).unwrap_or("")
    }

    /// Once nothing is kept, the text can go too.
    fn release(&mut self) {
        if self.rows.is_empty() {
            self.text = Vec::new();
        }
    }
}

impl GroupsAccumulator for PathsGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.rows.know(total_num_groups, FUNCTION)?;
        let columns = EventColumns::new(values)?;
        for (row, &group) in group_indices.iter().enumerate() {
            if passes(opt_filter, row)
                && let Some((micros, item)) = columns.event(row)
            {
                self.push(group, micros, item);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let mut taken = self.rows.take(emit_to);
        let actors = taken.slices().map(|events| {
            events
                .iter()
                .map(|event| (event.micros, self.item(event)))
                .collect::<Vec<_>>()
        });
        let results = self.output.results(actors)?;
        self.release();
        Ok(Arc::new(results))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let mut taken = self.rows.take(emit_to);
        let mut offsets = vec![0i64];
        let mut values = Vec::new();
        for events in taken.slices() {
            for event in events.iter() {
                pack(&mut values, event.micros, self.item(event));
            }
            offsets.push(values.len() as i64);
        }
        self.release();
        Ok(state_array(offsets, values))
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.rows.know(total_num_groups, FUNCTION)?;
        let states = state_rows(values)?;
        for (row, &group) in group_indices.iter().enumerate() {
            for (micros, item) in state_events(states, row) {
                self.push(group, micros, item);
            }
        }
        Ok(())
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let columns = EventColumns::new(values)?;
        let mut offsets = Vec::with_capacity(columns.len() + 1);
        offsets.push(0i64);
        let mut packed = Vec::new();
        for row in 0..columns.len() {
            if passes(opt_filter, row)
                && let Some((micros, item)) = columns.event(row)
            {
                pack(&mut packed, micros, item);
            }
            offsets.push(packed.len() as i64);
        }
        Ok(state_array(offsets, packed))
    }

    fn size(&self) -> usize {
        self.rows.size() + self.text.capacity()
    }
}

/// The same, for plans that aggregate without group indices.
#[derive(Debug)]
struct PathsAccumulator {
    output: Output,
    events: Vec<(i64, String)>,
}

impl Accumulator for PathsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let columns = EventColumns::new(values)?;
        for row in 0..columns.len() {
            if let Some((micros, item)) = columns.event(row) {
                self.events.push((micros, item.to_owned()));
            }
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let events = self
            .events
            .iter()
            .map(|(micros, item)| (*micros, item.as_str()))
            .collect();
        let list = self.output.results(std::iter::once(events))?;
        Ok(ScalarValue::List(Arc::new(list)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self.events.capacity() * std::mem::size_of::<(i64, String)>()
            + self
                .events
                .iter()
                .map(|(_, item)| item.capacity())
                .sum::<usize>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let mut packed = Vec::new();
        for (micros, item) in &self.events {
            pack(&mut packed, *micros, item);
        }
        state_array(vec![0, packed.len() as i64], packed)
            .iter()
            .map(|array| ScalarValue::try_from_array(array, 0))
            .collect()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let states = state_rows(states)?;
        for row in 0..states.len() {
            self.events
                .extend(state_events(states, row).map(|(micros, item)| (micros, item.to_owned())));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
