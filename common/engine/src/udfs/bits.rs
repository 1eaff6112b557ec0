//! Shifts and bit tests with ClickHouse's answers where Arrow's differ: Arrow wraps the count
//! (1 << 65 is 2), ClickHouse gives 0 for a count past the width; a negative count or bit
//! position has no answer (NULL here, an error there). One function per row, not a `CASE` over
//! the count: a count computed from a timestamp (retention's interval index) was computed three
//! times per row that way.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;

use super::argument;

/// Which bit operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Bits {
    ShiftLeft,
    ShiftRight,
    Test,
}

impl Bits {
    /// The dialect's name for it, for errors.
    pub(super) fn dialect_name(self) -> &'static str {
        match self {
            Bits::ShiftLeft => "bitShiftLeft",
            Bits::ShiftRight => "bitShiftRight",
            Bits::Test => "bitTest",
        }
    }

    fn apply(self, value: i64, count: i64) -> Option<i64> {
        let within = (0..64).contains(&count);
        match self {
            _ if count < 0 => None,
            Bits::ShiftLeft => Some(if within { value << count } else { 0 }),
            Bits::ShiftRight => Some(if within { value >> count } else { 0 }),
            Bits::Test => within.then(|| (value >> count) & 1),
        }
    }
}

/// `operation` over the first argument's integers by the second's counts.
pub(super) fn bits(
    operation: Bits,
    args: &[ColumnarValue],
    rows: usize,
    name: &str,
) -> Result<ArrayRef> {
    let as_integers = |index: usize| -> Result<ArrayRef> {
        let array = argument(args, index, name)?.to_array(rows)?;
        Ok(cast(&array, &DataType::Int64)?)
    };
    let (values, counts) = (as_integers(0)?, as_integers(1)?);
    let (values, counts) = (
        values.as_primitive::<Int64Type>(),
        counts.as_primitive::<Int64Type>(),
    );
    let result: Int64Array = values
        .iter()
        .zip(counts.iter())
        .map(|(value, count)| operation.apply(value?, count?))
        .collect();
    Ok(Arc::new(result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_past_the_width_give_zero_and_negative_ones_nothing() {
        assert_eq!(Bits::ShiftLeft.apply(1, 5), Some(32));
        assert_eq!(Bits::ShiftLeft.apply(1, 63), Some(i64::MIN));
        assert_eq!(Bits::ShiftLeft.apply(1, 64), Some(0));
        assert_eq!(Bits::ShiftLeft.apply(1, -1), None);
        assert_eq!(Bits::ShiftRight.apply(-8, 1), Some(-4));
        assert_eq!(Bits::ShiftRight.apply(-8, 70), Some(0));
        assert_eq!(Bits::Test.apply(5, 2), Some(1));
        assert_eq!(Bits::Test.apply(5, 1), Some(0));
        assert_eq!(Bits::Test.apply(1, 64), None);
        assert_eq!(Bits::Test.apply(1, -1), None);
    }
}
