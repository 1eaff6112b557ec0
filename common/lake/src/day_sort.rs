//! Sorting a day's rows in memory, for writers whose input comes a day at a time (an export or
//! capture's log, in time order). The external sort copies every row into a spilled run and
//! back and merges the runs; a day held in memory is sorted once, by its keys in row format,
//! and its rows are gathered into pieces in that order as the Parquet writer takes them.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Date32Array, RecordBatch};
use datafusion::arrow::compute::kernels::cmp::eq;
use datafusion::arrow::compute::{filter_record_batch, interleave};
use datafusion::arrow::datatypes::{Date32Type, Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use deltalake_core::{DeltaResult, DeltaTableError};

use crate::table;

/// The day partition of every row of `batch` (an error when a row has none).
pub(crate) fn dates(batch: &RecordBatch) -> DeltaResult<&Date32Array> {
    let dates = batch
        .column_by_name(table::PARTITION_COLUMN)
        .ok_or_else(|| DeltaTableError::generic("rows without a date partition"))?
        .as_primitive_opt::<Date32Type>()
        .ok_or_else(|| DeltaTableError::generic("the date partition is not a Date32"))?;
    if dates.null_count() > 0 {
        return Err(DeltaTableError::generic("rows without a date"));
    }
    Ok(dates)
}

/// `batch`'s rows by day: the batch itself when it holds one day (as a time-ordered input's
/// batches mostly do), else a copy of each day's rows.
pub(crate) fn by_day(batch: &RecordBatch) -> DeltaResult<Vec<(i32, RecordBatch)>> {
    let dates = dates(batch)?;
    let values = dates.values();
    let Some(&first) = values.first() else {
        return Ok(Vec::new());
    };
    if values.iter().all(|&day| day == first) {
        return Ok(vec![(first, batch.clone())]);
    }
    let days: BTreeSet<i32> = values.iter().copied().collect();
    days.into_iter()
        .map(|day| {
            let on_day = eq(dates, &Date32Array::new_scalar(day))?;
            Ok((day, filter_record_batch(batch, &on_day)?))
        })
        .collect()
}

/// Rows held by day, with their memory.
#[derive(Default)]
pub(crate) struct Days {
    days: BTreeMap<i32, Vec<RecordBatch>>,
    bytes: usize,
}

impl Days {
    pub(crate) fn add(&mut self, day: i32, rows: RecordBatch) {
        self.bytes += rows.get_array_memory_size();
        self.days.entry(day).or_default().push(rows);
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn len(&self) -> usize {
        self.days.len()
    }

    /// The earliest day held and its rows.
    pub(crate) fn pop_first(&mut self) -> Option<(i32, Vec<RecordBatch>)> {
        let (day, rows) = self.days.pop_first()?;
        self.bytes -= rows
            .iter()
            .map(RecordBatch::get_array_memory_size)
            .sum::<usize>();
        Some((day, rows))
    }

    /// Every row held, days in order.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (i32, Vec<RecordBatch>)> {
        self.bytes = 0;
        std::mem::take(&mut self.days).into_iter()
    }
}

/// One day's rows in key order: the keys of every row in row format (compared as bytes), each
/// row's place among the batches, and the order.
pub(crate) struct SortedDay {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    places: Vec<(usize, usize)>,
    order: Vec<u32>,
}

impl SortedDay {
    /// Sorts `batches` by the columns `keys` (indices into `schema`), ascending, nulls first.
    pub(crate) fn new(
        schema: &Schema,
        keys: &[usize],
        batches: Vec<RecordBatch>,
    ) -> DeltaResult<Self> {
        let fields = keys
            .iter()
            .map(|&key| SortField::new(schema.field(key).data_type().clone()))
            .collect();
        let converter = RowConverter::new(fields)?;
        let count: usize = batches.iter().map(RecordBatch::num_rows).sum();
        if count > u32::MAX as usize {
            return Err(DeltaTableError::generic(
                "a day of more than 4 billion rows",
            ));
        }
        let mut rows: Rows = converter.empty_rows(count, count * 32);
        let mut places = Vec::with_capacity(count);
        for (index, batch) in batches.iter().enumerate() {
            let columns: Vec<ArrayRef> =
                keys.iter().map(|&key| batch.column(key).clone()).collect();
            converter.append(&mut rows, &columns)?;
            places.extend((0..batch.num_rows()).map(|row| (index, row)));
        }
        let mut order: Vec<u32> = (0..count as u32).collect();
        order.sort_unstable_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
        Ok(Self {
            schema: Arc::new(schema.clone()),
            batches,
            places,
            order,
        })
    }

    /// The schema of the rows.
    pub(crate) fn schema(&self) -> &Schema {
        &self.schema
    }

    /// How many rows the day holds.
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// The rows in order, `rows` at a time.
    #[cfg(test)]
    pub(crate) fn pieces(
        &self,
        rows: usize,
    ) -> impl Iterator<Item = DeltaResult<RecordBatch>> + '_ {
        use datafusion::arrow::compute::interleave_record_batch;
        let batches: Vec<&RecordBatch> = self.batches.iter().collect();
        let places = self.places_of(0..self.len());
        let pieces: Vec<Vec<(usize, usize)>> =
            places.chunks(rows.max(1)).map(<[_]>::to_vec).collect();
        pieces
            .into_iter()
            .map(move |piece| Ok(interleave_record_batch(&batches, &piece)?))
    }

    /// Where the rows at `range` of the order are: (batch, row) pairs for [`Self::gather`].
    pub(crate) fn places_of(&self, range: Range<usize>) -> Vec<(usize, usize)> {
        let order = self.order.get(range).unwrap_or_default();
        order.iter().map(|&row| self.places[row as usize]).collect()
    }

    /// Column `column` of the rows at `places`, in that order.
    pub(crate) fn gather(&self, column: usize, places: &[(usize, usize)]) -> DeltaResult<ArrayRef> {
        let arrays: Vec<&dyn Array> = self
            .batches
            .iter()
            .map(|batch| batch.column(column).as_ref())
            .collect();
        Ok(interleave(&arrays, places)?)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Int64Type};

    use super::*;

    fn schema() -> Arc<Schema> {
        Arc::new(Schema::new(vec![
            Field::new("date", DataType::Date32, false),
            Field::new("distinct_id", DataType::Utf8, true),
            Field::new("timestamp", DataType::Int64, false),
        ]))
    }

    fn batch(dates: &[i32], ids: &[Option<&str>], times: &[i64]) -> RecordBatch {
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Date32Array::from(dates.to_vec())),
                Arc::new(StringArray::from(ids.to_vec())),
                Arc::new(Int64Array::from(times.to_vec())),
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_batch_splits_by_day_whatever_its_order() {
        let rows = batch(
            &[3, 1, 3, 2, 1],
            &[Some("a"), Some("b"), Some("c"), Some("d"), Some("e")],
            &[1, 2, 3, 4, 5],
        );
        let days = by_day(&rows).unwrap();
        let found: Vec<(i32, Vec<i64>)> = days
            .iter()
            .map(|(day, rows)| {
                let times = rows.column(2).as_primitive::<Int64Type>();
                (*day, times.values().to_vec())
            })
            .collect();
        assert_eq!(found, vec![(1, vec![2, 5]), (2, vec![4]), (3, vec![1, 3])]);
        let one_day = batch(&[7, 7], &[None, Some("x")], &[1, 2]);
        let days = by_day(&one_day).unwrap();
        assert_eq!(days.len(), 1);
        assert_eq!(days[0].1.num_rows(), 2);
        assert!(by_day(&batch(&[], &[], &[])).unwrap().is_empty());
    }

    #[test]
    fn a_day_sorts_across_its_batches_by_every_key() {
        let first = batch(&[1, 1, 1], &[Some("b"), Some("a"), None], &[30, 20, 50]);
        let second = batch(&[1, 1, 1], &[Some("a"), Some("b"), Some("a")], &[10, 5, 40]);
        let sorted = SortedDay::new(&schema(), &[1, 2], vec![first, second]).unwrap();
        let mut seen = Vec::new();
        let mut sizes = Vec::new();
        for piece in sorted.pieces(4) {
            let piece = piece.unwrap();
            sizes.push(piece.num_rows());
            let ids = piece.column(1).as_string::<i32>();
            let times = piece.column(2).as_primitive::<Int64Type>();
            for row in 0..piece.num_rows() {
                seen.push((
                    ids.is_valid(row).then(|| ids.value(row).to_owned()),
                    times.value(row),
                ));
            }
        }
        assert_eq!(sizes, [4, 2]);
        let expected = [
            (None, 50),
            (Some("a"), 10),
            (Some("a"), 20),
            (Some("a"), 40),
            (Some("b"), 5),
            (Some("b"), 30),
        ];
        let expected: Vec<(Option<String>, i64)> = expected
            .iter()
            .map(|(id, time)| (id.map(str::to_owned), *time))
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn held_days_come_out_earliest_first_and_their_memory_is_returned() {
        let mut days = Days::default();
        days.add(5, batch(&[5], &[Some("a")], &[1]));
        days.add(2, batch(&[2, 2], &[Some("a"), Some("b")], &[1, 2]));
        days.add(5, batch(&[5], &[Some("c")], &[3]));
        assert_eq!(days.len(), 2);
        assert!(days.bytes() > 0);
        let (day, rows) = days.pop_first().unwrap();
        assert_eq!((day, rows.len()), (2, 1));
        let rest: Vec<(i32, usize)> = days.drain().map(|(day, rows)| (day, rows.len())).collect();
        assert_eq!(rest, vec![(5, 2)]);
        assert_eq!(days.bytes(), 0);
    }
}
