//! Distinct counts as sets of fixed-size keys per group: `hogql_uniq` counts 64-bit hashes
//! (`hogql_uniq_hash`, what `uniq(x)` compiles to), `hogql_uniq_exact` 16-byte keys
//! (`hogql_uniq_key`, what `count(DISTINCT x)` and `uniqExact` compile to). DataFusion plans
//! `count(DISTINCT x)` as a second grouping by (group, x): millions of intermediate rows for
//! "distinct users per day", each a string to hash and compare. A set of keys per group is the
//! same count with one pass and no repartition of those rows.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, FixedSizeBinaryArray, Int64Array, ListArray,
    UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

pub const NAME: &str = "hogql_uniq";
pub const EXACT_NAME: &str = "hogql_uniq_exact";

/// A key a set holds: how it is typed in Arrow, read from a column and written back as one.
trait Key: Copy + Eq + Hash + Debug + Send + Sync + 'static {
    fn data_type() -> DataType;
    /// Calls `visit` with each non-NULL row and its key.
    fn for_each(array: &dyn Array, visit: impl FnMut(usize, Self));
    fn to_array(keys: Vec<Self>) -> ArrayRef;
}

impl Key for u64 {
    fn data_type() -> DataType {
        DataType::UInt64
    }

    fn for_each(array: &dyn Array, mut visit: impl FnMut(usize, Self)) {
        let hashes = array.as_primitive::<UInt64Type>();
        for (row, hash) in hashes.iter().enumerate() {
            if let Some(hash) = hash {
                visit(row, hash);
            }
        }
    }

    fn to_array(keys: Vec<Self>) -> ArrayRef {
        Arc::new(UInt64Array::from(keys))
    }
}

impl Key for u128 {
    fn data_type() -> DataType {
        DataType::FixedSizeBinary(16)
    }

    fn for_each(array: &dyn Array, mut visit: impl FnMut(usize, Self)) {
        let keys = array.as_fixed_size_binary();
        for (row, key) in keys.iter().enumerate() {
            if let Some(key) = key.and_then(|key| <[u8; 16]>::try_from(key).ok()) {
                visit(row, u128::from_le_bytes(key));
            }
        }
    }

    fn to_array(keys: Vec<Self>) -> ArrayRef {
        let bytes: Vec<u8> = keys.iter().flat_map(|key| key.to_le_bytes()).collect();
        Arc::new(FixedSizeBinaryArray::new(16, bytes.into(), None))
    }
}

type Keys<K> = foldhash::HashSet<K>;

pub fn aggregate_uniq() -> AggregateUDF {
    AggregateUDF::new_from_impl(Uniq::<u64>::new(NAME))
}

pub fn aggregate_uniq_exact() -> AggregateUDF {
    AggregateUDF::new_from_impl(Uniq::<u128>::new(EXACT_NAME))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Uniq<K> {
    name: &'static str,
    signature: Signature,
    key: std::marker::PhantomData<K>,
}

impl<K: Key> Uniq<K> {
    fn new(name: &'static str) -> Self {
        Uniq {
            name,
            signature: Signature::exact(vec![K::data_type()], Volatility::Immutable),
            key: std::marker::PhantomData,
        }
    }
}

fn list_of<K: Key>() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(K::data_type(), true)))
}

impl<K: Key> AggregateUDFImpl for Uniq<K> {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [single] if *single == K::data_type() => Ok(DataType::Int64),
            other => plan_err!(
                "{} counts {:?} keys, not {other:?}",
                self.name,
                K::data_type()
            ),
        }
    }

    fn is_nullable(&self) -> bool {
        false
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[keys]", args.name),
            list_of::<K>(),
            true,
        ))])
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(UniqAccumulator::<K>::default()))
    }

    fn groups_accumulator_supported(&self, _: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(UniqGroups::<K>::default()))
    }

    fn default_value(&self, _: &DataType) -> Result<ScalarValue> {
        Ok(ScalarValue::Int64(Some(0)))
    }
}

/// Sets as list rows (the partial state).
fn to_lists<K: Key>(sets: &[Keys<K>]) -> ArrayRef {
    let mut offsets = Vec::with_capacity(sets.len() + 1);
    offsets.push(0i32);
    let mut values = Vec::with_capacity(sets.iter().map(|s| s.len()).sum());
    for set in sets {
        values.extend(set.iter().copied());
        offsets.push(values.len() as i32);
    }
    Arc::new(ListArray::new(
        Arc::new(Field::new_list_field(K::data_type(), true)),
        OffsetBuffer::new(offsets.into()),
        K::to_array(values),
        None,
    ))
}

fn set_bytes<K>(set: &Keys<K>) -> usize {
    // hashbrown: a slot and a control byte per bucket.
    set.capacity() * (std::mem::size_of::<K>() + 1)
}

#[derive(Debug)]
struct UniqGroups<K> {
    sets: Vec<Keys<K>>,
    bytes: usize,
}

impl<K> Default for UniqGroups<K> {
    fn default() -> Self {
        UniqGroups {
            sets: Vec::new(),
            bytes: 0,
        }
    }
}

impl<K: Key> UniqGroups<K> {
    fn insert(&mut self, group: usize, key: K) {
        let set = &mut self.sets[group];
        let before = set.capacity();
        set.insert(key);
        if set.capacity() != before {
            self.bytes += (set.capacity() - before) * (std::mem::size_of::<K>() + 1);
        }
    }

    /// Room for `more` keys in `group`'s set at once, instead of doubling its way there.
    fn reserve(&mut self, group: usize, more: usize) {
        let set = &mut self.sets[group];
        let before = set.capacity();
        set.reserve(more);
        self.bytes += (set.capacity() - before) * (std::mem::size_of::<K>() + 1);
    }

    fn take(&mut self, emit_to: EmitTo) -> Vec<Keys<K>> {
        let taken = emit_to.take_needed(&mut self.sets);
        self.bytes = self.sets.iter().map(set_bytes).sum();
        taken
    }
}

fn passes(filter: Option<&BooleanArray>, row: usize) -> bool {
    filter.is_none_or(|f| f.is_valid(row) && f.value(row))
}

impl<K: Key> GroupsAccumulator for UniqGroups<K> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.sets.resize_with(total_num_groups, Keys::default);
        // Tables are sorted by event and distinct id: a person's events of one kind come
        // together, so a row often repeats the one before it (group and key); skipping those
        // leaves the set as it would be and saves a probe of it.
        let mut last = None;
        K::for_each(values[0].as_ref(), |row, key| {
            let group = group_indices[row];
            if passes(opt_filter, row) && last != Some((group, key)) {
                self.insert(group, key);
                last = Some((group, key));
            }
        });
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
        self.sets.resize_with(total_num_groups, Keys::default);
        let lists = values[0].as_list::<i32>();
        for (row, &group) in group_indices.iter().enumerate() {
            if lists.is_null(row) {
                continue;
            }
            let list = lists.value(row);
            self.reserve(group, list.len());
            K::for_each(list.as_ref(), |_, key| self.insert(group, key));
        }
        Ok(())
    }

    /// Each row as its own one-key state (when partial aggregation stops paying).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let rows = values[0].len();
        let mut ends = vec![0i32; rows];
        let mut kept = Vec::with_capacity(rows);
        K::for_each(values[0].as_ref(), |row, key| {
            if passes(opt_filter, row) {
                kept.push(key);
                ends[row] = 1;
            }
        });
        let offsets = std::iter::once(0)
            .chain(ends.iter().scan(0i32, |end, one| {
                *end += one;
                Some(*end)
            }))
            .collect::<Vec<_>>();
        Ok(vec![Arc::new(ListArray::new(
            Arc::new(Field::new_list_field(K::data_type(), true)),
            OffsetBuffer::new(offsets.into()),
            K::to_array(kept),
            None,
        ))])
    }

    fn size(&self) -> usize {
        self.bytes + self.sets.capacity() * std::mem::size_of::<Keys<K>>()
    }
}

#[derive(Debug)]
struct UniqAccumulator<K> {
    set: Keys<K>,
}

impl<K> Default for UniqAccumulator<K> {
    fn default() -> Self {
        UniqAccumulator {
            set: Keys::default(),
        }
    }
}

impl<K: Key> Accumulator for UniqAccumulator<K> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let mut last = None;
        K::for_each(values[0].as_ref(), |_, key| {
            if last != Some(key) {
                self.set.insert(key);
                last = Some(key);
            }
        });
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
                self.set.reserve(list.len());
                K::for_each(list.as_ref(), |_, key| {
                    self.set.insert(key);
                });
            }
        }
        Ok(())
    }
}
