//! `uniq`'s hash of its arguments.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;

/// A 64-bit hash of the arguments, for `uniq`: counting distinct hashes is exact but for
/// collisions (about one in 10^8 at a million values) and keeps a small fixed-size key per value
/// instead of the value itself, so counting distinct users per day fits in little memory. With
/// one argument, NULL stays NULL (uniq skips it), as with `count(DISTINCT x)`.
pub(super) fn uniq_hash(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    use datafusion::common::hash_utils::{RandomState, create_hashes};
    // Fixed seeds: partial counts from different partitions must agree on every hash.
    let state = RandomState::with_seed(0x5eed_0001);
    let arrays = args
        .iter()
        .map(|arg| arg.to_array(rows))
        .collect::<Result<Vec<_>>>()?;
    let mut hashes = vec![0; rows];
    create_hashes(&arrays, &state, &mut hashes)?;
    let nulls = match arrays.as_slice() {
        [single] => single.logical_nulls(),
        _ => None,
    };
    Ok(Arc::new(datafusion::arrow::array::UInt64Array::new(
        hashes.into(),
        nulls,
    )))
}
