//! The rows a per-actor aggregate (`aggregateFunnel`, `aggregatePaths`) keeps until it emits:
//! every row taken in arrival order with its group's index, grouped by a counting sort when
//! emitted. (A vector per group, grown row by row, each push into another group's buffer, was
//! the funnel's largest cost in `perf`, with the allocator's.)

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::EmitTo;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::physical_expr::expressions::Literal;

/// Argument `index` of an aggregate's call, which must be a constant (read from the planned
/// expressions).
pub(crate) fn constant_argument(
    args: &AccumulatorArgs,
    index: usize,
    function: &str,
) -> Result<ScalarValue> {
    match args
        .exprs
        .get(index)
        .and_then(|expr| expr.downcast_ref::<Literal>())
    {
        Some(literal) => Ok(literal.value().clone()),
        None => exec_err!("{function}: argument {} must be a constant", index + 1),
    }
}

/// The type a per-actor aggregate takes its timestamp argument as: microseconds, in the
/// argument's own time zone.
pub(crate) fn timestamp_argument(argument: &DataType, function: &str) -> Result<DataType> {
    match argument {
        DataType::Timestamp(_, zone) => {
            Ok(DataType::Timestamp(TimeUnit::Microsecond, zone.clone()))
        }
        DataType::Date32 | DataType::Date64 | DataType::Null => {
            Ok(DataType::Timestamp(TimeUnit::Microsecond, None))
        }
        other => plan_err!("{function} expects a timestamp, found {other}"),
    }
}

/// A timestamp argument's values as microseconds since the epoch.
pub(crate) fn micros(values: &ArrayRef) -> Result<Int64Array> {
    let micros = cast(
        &cast(values, &DataType::Timestamp(TimeUnit::Microsecond, None))?,
        &DataType::Int64,
    )?;
    Ok(micros.as_primitive::<Int64Type>().clone())
}

/// Whether row `row` passes the aggregate's `FILTER` (every row does without one).
pub(crate) fn passes(filter: Option<&BooleanArray>, row: usize) -> bool {
    filter.is_none_or(|filter| filter.is_valid(row) && filter.value(row))
}

#[derive(Debug, PartialEq)]
pub(crate) struct GroupedRows<T> {
    /// Groups known (`total_num_groups`).
    groups: usize,
    owners: Vec<u32>,
    rows: Vec<T>,
}

/// Rows by group: group `g`'s are `rows[offsets[g]..offsets[g + 1]]`.
pub(crate) struct Grouped<T> {
    offsets: Vec<usize>,
    rows: Vec<T>,
}

impl<T> Grouped<T> {
    pub(crate) fn slices(&mut self) -> impl ExactSizeIterator<Item = &mut [T]> {
        let mut rest: &mut [T] = &mut self.rows;
        self.offsets.windows(2).map(move |bounds| {
            let (group, after) = std::mem::take(&mut rest).split_at_mut(bounds[1] - bounds[0]);
            rest = after;
            group
        })
    }
}

impl<T: Copy + Default> GroupedRows<T> {
    pub(crate) fn new() -> Self {
        Self {
            groups: 0,
            owners: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Records `total_num_groups` (an aggregate names it on every batch).
    pub(crate) fn know(&mut self, total_num_groups: usize, function: &str) -> Result<()> {
        if total_num_groups > u32::MAX as usize {
            return exec_err!("{function}: more than {} actors", u32::MAX);
        }
        self.groups = self.groups.max(total_num_groups);
        Ok(())
    }

    pub(crate) fn push(&mut self, group: usize, row: T) {
        self.owners.push(group as u32);
        self.rows.push(row);
    }

    /// The rows of the groups `emit_to` names, grouped; the later groups' stay, renumbered.
    pub(crate) fn take(&mut self, emit_to: EmitTo) -> Grouped<T> {
        let emitted = match emit_to {
            EmitTo::All => self.groups,
            EmitTo::First(n) => n.min(self.groups),
        };
        let mut offsets = vec![0usize; emitted + 1];
        for &owner in &self.owners {
            if let Some(count) = offsets.get_mut(owner as usize + 1) {
                *count += 1;
            }
        }
        for group in 0..emitted {
            offsets[group + 1] += offsets[group];
        }
        let mut grouped = vec![T::default(); offsets[emitted]];
        let mut next = offsets[..emitted].to_vec();
        let (owners, rows) = (
            std::mem::take(&mut self.owners),
            std::mem::take(&mut self.rows),
        );
        for (owner, row) in owners.into_iter().zip(rows) {
            let owner = owner as usize;
            if owner < emitted {
                grouped[next[owner]] = row;
                next[owner] += 1;
            } else {
                self.push(owner - emitted, row);
            }
        }
        self.groups -= emitted;
        Grouped {
            offsets,
            rows: grouped,
        }
    }

    /// Whether no rows are kept (nothing left to emit).
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub(crate) fn size(&self) -> usize {
        self.owners.capacity() * std::mem::size_of::<u32>()
            + self.rows.capacity() * std::mem::size_of::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Emitting the first groups leaves the others' rows, renumbered from 0.
    #[test]
    fn emitting_the_first_groups_keeps_the_rest_in_order() {
        let mut rows = GroupedRows::<i64>::new();
        rows.know(3, "test").unwrap();
        for (group, row) in [(2, 1), (0, 2), (1, 3), (0, 4), (2, 5)] {
            rows.push(group, row);
        }
        let mut first = rows.take(EmitTo::First(1));
        let taken: Vec<Vec<i64>> = first.slices().map(|rows| rows.to_vec()).collect();
        assert_eq!(taken, vec![vec![2, 4]]);
        assert_eq!(rows.groups, 2);
        let mut rest = rows.take(EmitTo::All);
        let taken: Vec<Vec<i64>> = rest.slices().map(|rows| rows.to_vec()).collect();
        assert_eq!(taken, vec![vec![3], vec![1, 5]]);
        assert!(rows.is_empty());
    }
}
