//! `hogql_uniq`: how many distinct non-NULL 64-bit hashes (`hogql_uniq_hash`) each group has,
//! what `uniq(x)` compiles to. `count(DISTINCT hash)` would be planned as a second grouping by
//! (group, hash): millions of intermediate rows for "distinct users per day". A set of hashes per
//! group is the same count with one pass and no repartition of those rows.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, ListArray, UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

pub const NAME: &str = "hogql_uniq";

type Hashes = foldhash::HashSet<u64>;

pub fn aggregate_uniq() -> AggregateUDF {
    AggregateUDF::new_from_impl(Uniq {
        signature: Signature::exact(vec![DataType::UInt64], Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Uniq {
    signature: Signature,
}

fn list_of_hashes() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::UInt64, true)))
}

impl AggregateUDFImpl for Uniq {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::UInt64] => Ok(DataType::Int64),
            other => plan_err!("{NAME} counts hashes (UInt64), not {other:?}"),
        }
    }

    fn is_nullable(&self) -> bool {
        false
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[hashes]", args.name),
            list_of_hashes(),
            true,
        ))])
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(UniqAccumulator::default()))
    }

    fn groups_accumulator_supported(&self, _: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(UniqGroups::default()))
    }

    fn default_value(&self, _: &DataType) -> Result<ScalarValue> {
        Ok(ScalarValue::Int64(Some(0)))
    }
}

fn hashes(array: &ArrayRef) -> &UInt64Array {
    array.as_primitive::<UInt64Type>()
}

/// Sets as list rows (the partial state).
fn to_lists(sets: &[Hashes]) -> ArrayRef {
    let mut offsets = Vec::with_capacity(sets.len() + 1);
    offsets.push(0i32);
    let mut values = Vec::with_capacity(sets.iter().map(|s| s.len()).sum());
    for set in sets {
        values.extend(set.iter().copied());
        offsets.push(values.len() as i32);
    }
    Arc::new(ListArray::new(
        Arc::new(Field::new_list_field(DataType::UInt64, true)),
        OffsetBuffer::new(offsets.into()),
        Arc::new(UInt64Array::from(values)),
        None,
    ))
}

fn set_bytes(set: &Hashes) -> usize {
    // hashbrown: a slot and a control byte per bucket.
    set.capacity() * (std::mem::size_of::<u64>() + 1)
}

#[derive(Debug, Default)]
struct UniqGroups {
    sets: Vec<Hashes>,
    bytes: usize,
}

impl UniqGroups {
    fn insert(&mut self, group: usize, hash: u64) {
        let set = &mut self.sets[group];
        let before = set.capacity();
        set.insert(hash);
        if set.capacity() != before {
            self.bytes += (set.capacity() - before) * (std::mem::size_of::<u64>() + 1);
        }
    }

    /// Room for `more` hashes in `group`'s set at once, instead of doubling its way there.
    fn reserve(&mut self, group: usize, more: usize) {
        let set = &mut self.sets[group];
        let before = set.capacity();
        set.reserve(more);
        self.bytes += (set.capacity() - before) * (std::mem::size_of::<u64>() + 1);
    }

    fn take(&mut self, emit_to: EmitTo) -> Vec<Hashes> {
        let taken = emit_to.take_needed(&mut self.sets);
        self.bytes = self.sets.iter().map(set_bytes).sum();
        taken
    }
}

impl GroupsAccumulator for UniqGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.sets.resize_with(total_num_groups, Hashes::default);
        let values = hashes(&values[0]);
        // Tables are sorted by event and distinct id: a person's events of one kind come
        // together, so a row often repeats the one before it (group and value); skipping those
        // leaves the set as it would be and saves a probe of it.
        let mut last = None;
        for (row, &group) in group_indices.iter().enumerate() {
            let kept = opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            if kept && values.is_valid(row) {
                let hash = values.value(row);
                if last != Some((group, hash)) {
                    self.insert(group, hash);
                    last = Some((group, hash));
                }
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let counts: Int64Array = self
            .take(emit_to)
            .iter()
            .map(|set| Some(set.len() as i64))
            .collect();
        Ok(Arc::new(counts))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![to_lists(&self.take(emit_to))])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.sets.resize_with(total_num_groups, Hashes::default);
        let lists = values[0].as_list::<i32>();
        for (row, &group) in group_indices.iter().enumerate() {
            if lists.is_null(row) {
                continue;
            }
            let list = lists.value(row);
            let list = hashes(&list);
            self.reserve(group, list.len());
            for hash in list.iter().flatten() {
                self.insert(group, hash);
            }
        }
        Ok(())
    }

    /// Each row as its own one-hash state (when partial aggregation stops paying).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let values = hashes(&values[0]);
        let mut offsets = Vec::with_capacity(values.len() + 1);
        offsets.push(0i32);
        let mut kept = Vec::with_capacity(values.len());
        for row in 0..values.len() {
            let passes = opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            if passes && values.is_valid(row) {
                kept.push(values.value(row));
            }
            offsets.push(kept.len() as i32);
        }
        Ok(vec![Arc::new(ListArray::new(
            Arc::new(Field::new_list_field(DataType::UInt64, true)),
            OffsetBuffer::new(offsets.into()),
            Arc::new(UInt64Array::from(kept)),
            None,
        ))])
    }

    fn size(&self) -> usize {
        self.bytes + self.sets.capacity() * std::mem::size_of::<Hashes>()
    }
}

#[derive(Debug, Default)]
struct UniqAccumulator {
    set: Hashes,
}

impl Accumulator for UniqAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.set.extend(hashes(&values[0]).iter().flatten());
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Int64(Some(self.set.len() as i64)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + set_bytes(&self.set)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let list = to_lists(std::slice::from_ref(&self.set));
        Ok(vec![ScalarValue::try_from_array(&list, 0)?])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for row in 0..lists.len() {
            if lists.is_valid(row) {
                let list = lists.value(row);
                self.set.extend(hashes(&list).iter().flatten());
            }
        }
        Ok(())
    }
}
