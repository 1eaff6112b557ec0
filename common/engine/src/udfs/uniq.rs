//! What `uniq` and the exact distinct counts count: a hash, or a 128-bit key, of their
//! arguments per row.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, FixedSizeBinaryArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;

/// Bytes of an exact-count key.
pub const KEY_BYTES: i32 = 16;

fn arrays(args: &[ColumnarValue], rows: usize) -> Result<Vec<ArrayRef>> {
    args.iter().map(|arg| arg.to_array(rows)).collect()
}

/// NULL where any argument is NULL: ClickHouse's aggregates skip such rows, tuples of several
/// arguments included (`uniqExact(a, b)` counts no row whose `b` is NULL).
fn any_null(arrays: &[ArrayRef]) -> Option<NullBuffer> {
    arrays.iter().fold(None, |nulls, array| {
        NullBuffer::union(nulls.as_ref(), array.logical_nulls().as_ref())
    })
}

/// A 64-bit hash of the arguments, for `uniq`: counting distinct hashes is exact but for
/// collisions (about one in 10^8 at a million values) and keeps a small fixed-size key per value
/// instead of the value itself, so counting distinct users per day fits in little memory.
pub(super) fn uniq_hash(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    use datafusion::common::hash_utils::{RandomState, create_hashes};
    // Fixed seeds: partial counts from different partitions must agree on every hash.
    let state = RandomState::with_seed(0x5eed_0001);
    let arrays = arrays(args, rows)?;
    let mut hashes = vec![0; rows];
    create_hashes(&arrays, &state, &mut hashes)?;
    Ok(Arc::new(datafusion::arrow::array::UInt64Array::new(
        hashes.into(),
        any_null(&arrays),
    )))
}

/// A 16-byte key per row for `count(DISTINCT ...)` and `uniqExact`, as ClickHouse's uniqExact
/// keeps: a value of at most 16 bytes (numbers, dates, times) is its own key, so its count is
/// exact; anything longer (texts, tuples) is keyed by its 128-bit CityHash (ClickHouse's own hash), which two distinct
/// values share with a chance of about n²/2^129 (nil for any table). A set of keys per group
/// counts in one pass what DataFusion plans as a second grouping by every distinct value.
pub(super) fn uniq_key(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let arrays = arrays(args, rows)?;
    let mut keys = Vec::with_capacity(rows * KEY_BYTES as usize);
    let mut push_hash = |bytes: &[u8]| {
        let hash = ch_cityhash102::cityhash128(bytes);
        keys.extend_from_slice(&hash.first.to_le_bytes());
        keys.extend_from_slice(&hash.second.to_le_bytes());
    };
    match arrays.as_slice() {
        [single] => match single.data_type() {
            DataType::Utf8 => single
                .as_string::<i32>()
                .iter()
                .for_each(|s| push_hash(s.unwrap_or("").as_bytes())),
            DataType::LargeUtf8 => single
                .as_string::<i64>()
                .iter()
                .for_each(|s| push_hash(s.unwrap_or("").as_bytes())),
            DataType::Utf8View => single
                .as_string_view()
                .iter()
                .for_each(|s| push_hash(s.unwrap_or("").as_bytes())),
            DataType::Binary => single
                .as_binary::<i32>()
                .iter()
                .for_each(|b| push_hash(b.unwrap_or(&[]))),
            DataType::LargeBinary => single
                .as_binary::<i64>()
                .iter()
                .for_each(|b| push_hash(b.unwrap_or(&[]))),
            DataType::BinaryView => single
                .as_binary_view()
                .iter()
                .for_each(|b| push_hash(b.unwrap_or(&[]))),
            other => match other.primitive_width() {
                Some(width) if width <= KEY_BYTES as usize => {
                    let data = single.to_data();
                    let start = data.offset() * width;
                    let values = &data.buffers()[0].as_slice()[start..start + rows * width];
                    for value in values.chunks_exact(width) {
                        let mut key = [0u8; KEY_BYTES as usize];
                        key[..width].copy_from_slice(value);
                        keys.extend_from_slice(&key);
                    }
                }
                _ => hash_rows(&arrays, &mut push_hash)?,
            },
        },
        _ => hash_rows(&arrays, &mut push_hash)?,
    }
    Ok(Arc::new(FixedSizeBinaryArray::try_new(
        KEY_BYTES,
        keys.into(),
        any_null(&arrays),
    )?))
}

/// Hashes each row of the arrays in Arrow's row format (one byte string per row that equal
/// rows, and only they, share).
fn hash_rows(arrays: &[ArrayRef], push_hash: &mut impl FnMut(&[u8])) -> Result<()> {
    let fields = arrays
        .iter()
        .map(|array| SortField::new(array.data_type().clone()))
        .collect();
    let rows = RowConverter::new(fields)?.convert_columns(arrays)?;
    rows.iter().for_each(|row| push_hash(row.as_ref()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, Int64Array, StringArray};

    fn keys(args: Vec<ArrayRef>) -> FixedSizeBinaryArray {
        let rows = args[0].len();
        let args: Vec<_> = args.into_iter().map(ColumnarValue::Array).collect();
        uniq_key(&args, rows)
            .unwrap()
            .as_fixed_size_binary()
            .clone()
    }

    #[test]
    fn equal_values_share_a_key_and_nulls_have_none() {
        let texts = keys(vec![Arc::new(StringArray::from(vec![
            Some("a"),
            Some("b"),
            Some("a"),
            None,
        ]))]);
        assert_eq!(texts.value(0), texts.value(2));
        assert_ne!(texts.value(0), texts.value(1));
        assert!(texts.is_null(3));

        // A number is its own key (exact); a sliced array reads its own rows.
        let numbers = Int64Array::from(vec![3, 7, -1, 7]).slice(1, 3);
        let numbers = keys(vec![Arc::new(numbers)]);
        assert_eq!(numbers.value(0), numbers.value(2));
        assert_eq!(
            numbers.value(0),
            [&7i64.to_le_bytes()[..], &[0; 8]].concat()
        );
        assert_eq!(&numbers.value(1)[..8], &(-1i64).to_le_bytes());

        // Several arguments: NULL when any is.
        let pairs = keys(vec![
            Arc::new(Int32Array::from(vec![Some(1), Some(1), None, Some(1)])),
            Arc::new(StringArray::from(vec![
                Some("x"),
                None,
                Some("x"),
                Some("x"),
            ])),
        ]);
        assert!(pairs.is_valid(0) && pairs.is_null(1) && pairs.is_null(2));
        assert_eq!(pairs.value(0), pairs.value(3));
    }
}
