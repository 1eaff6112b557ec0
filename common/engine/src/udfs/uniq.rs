//! What `uniq` and the exact distinct counts count: a hash, or a 128-bit key, of their
//! arguments per row.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, FixedSizeBinaryArray, UInt32Array,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::take;
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
    let runs = match arrays.as_slice() {
        [single] => view_runs(single)
            .filter(|starts| starts.len() < rows / 2)
            .map(|starts| (single, starts)),
        _ => None,
    };
    match runs {
        Some((single, starts)) => {
            // Each run of one value hashed once (its first row), then copied along the run.
            let firsts = UInt32Array::from(starts);
            let mut run_hashes = vec![0; firsts.len()];
            create_hashes(&[take(single, &firsts, None)?], &state, &mut run_hashes)?;
            let starts = firsts.values();
            let ends = starts.iter().skip(1).map(|&s| s as usize).chain([rows]);
            let spans = starts.iter().map(|&s| s as usize).zip(ends);
            for ((start, end), hash) in spans.zip(run_hashes) {
                hashes[start..end].fill(hash);
            }
        }
        None => {
            create_hashes(&arrays, &state, &mut hashes)?;
        }
    }
    Ok(Arc::new(datafusion::arrow::array::UInt64Array::new(
        hashes.into(),
        any_null(&arrays),
    )))
}

/// The rows that start a run of equal views, for a view array (`None` for other types). A view
/// holds a short value inline and points at a long one, so equal views are equal values: ids read
/// from a dictionary-encoded column (a user's events come together in a sorted file) repeat their
/// view along each run.
fn view_runs(array: &ArrayRef) -> Option<Vec<u32>> {
    let views = match array.data_type() {
        DataType::Utf8View => array.as_string_view().views(),
        DataType::BinaryView => array.as_binary_view().views(),
        _ => return None,
    };
    let nulls = array.logical_nulls();
    let mut starts = Vec::new();
    let mut previous = None;
    for (row, view) in views.iter().enumerate() {
        // A NULL's view may equal an empty text's: validity is part of what must repeat.
        let current = (nulls.as_ref().is_none_or(|n| n.is_valid(row)), view);
        if previous != Some(current) {
            starts.push(row as u32);
            previous = Some(current);
        }
    }
    Some(starts)
}

/// A 16-byte key per row for `count(DISTINCT ...)` and `uniqExact`, as ClickHouse's uniqExact
/// keeps: a value of at most 16 bytes (numbers, dates, times) is its own key, so its count is
/// exact; anything longer (texts, tuples) is keyed by its 128-bit CityHash (ClickHouse's own hash), which two distinct
/// values share with a chance of about n²/2^129 (nil for any table). A set of keys per group
/// counts in one pass what DataFusion plans as a second grouping by every distinct value.
pub(super) fn uniq_key(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let arrays = arrays(args, rows)?;
    let mut keys = Vec::with_capacity(rows * KEY_BYTES as usize);
    let mut push_hash = |bytes: &[u8]| keys.extend_from_slice(&city_key(bytes));
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
            DataType::Utf8View => {
                // A view equal to the row before is the same value (see `view_runs`): its key too.
                let texts = single.as_string_view();
                let mut previous = None;
                for (view, text) in texts.views().iter().zip(texts.iter()) {
                    let key = match previous {
                        Some((last, key)) if last == (text.is_some(), view) => key,
                        _ => city_key(text.unwrap_or("").as_bytes()),
                    };
                    keys.extend_from_slice(&key);
                    previous = Some(((text.is_some(), view), key));
                }
            }
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

/// What `actorKey` returns: the exact-count key as a 128-bit number, which DataFusion groups as
/// a primitive (a hash and one comparison of 16 bytes per row) where it interns a 36-character
/// person id as text (hashing and comparing the bytes, copying each new one): a per-actor count
/// (a funnel's steps) groups by it instead of the id. Decimal128 is Arrow's 128-bit primitive;
/// the key is never shown, so values beyond its 38 digits do not matter.
pub const ACTOR_KEY_TYPE: DataType = DataType::Decimal128(38, 0);

/// `actorKey(x)`: [`uniq_key`]'s key of each row as an [`ACTOR_KEY_TYPE`] number.
pub(super) fn actor_key(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let keys = uniq_key(args, rows)?;
    let keys = keys.as_fixed_size_binary();
    let numbers: Vec<i128> = keys
        .values()
        .chunks_exact(KEY_BYTES as usize)
        .map(|key| i128::from_le_bytes(key.try_into().unwrap_or_default()))
        .collect();
    Ok(Arc::new(
        Decimal128Array::new(numbers.into(), keys.nulls().cloned()).with_data_type(ACTOR_KEY_TYPE),
    ))
}

/// A value's 128-bit CityHash, as the key's bytes.
fn city_key(bytes: &[u8]) -> [u8; KEY_BYTES as usize] {
    let hash = ch_cityhash102::cityhash128(bytes);
    let mut key = [0u8; KEY_BYTES as usize];
    key[..8].copy_from_slice(&hash.first.to_le_bytes());
    key[8..].copy_from_slice(&hash.second.to_le_bytes());
    key
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
    use datafusion::arrow::array::{Int32Array, Int64Array, StringArray, StringViewBuilder};

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

    #[test]
    fn runs_of_one_view_hash_as_their_values_do() {
        // Deduplicated views: a repeated long value points at the same bytes, as ids read from a
        // dictionary-encoded column do; a NULL beside an empty text shares its view bits.
        let mut builder = StringViewBuilder::new().with_deduplicate_strings();
        let long = "0192f1a4-5b7c-7d3e-8f90-123456789abc";
        let values = [
            Some(long),
            Some(long),
            Some(long),
            Some(long),
            Some(long),
            Some(long),
            Some(long),
            Some(long),
            None,
            Some(""),
            Some(""),
            Some("short"),
            Some(long),
            Some("0192f1a4-5b7c-7d3e-8f90-000000000000"),
            Some("0192f1a4-5b7c-7d3e-8f90-000000000000"),
        ];
        for value in values {
            builder.append_option(value);
        }
        let runs: ArrayRef = Arc::new(builder.finish());
        let plain: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
        let view_runs = view_runs(&runs).unwrap();
        // Half the rows or more start runs: hashed row by row; fewer: by run.
        assert_eq!(view_runs, vec![0, 8, 9, 11, 12, 13]);
        assert!(view_runs.len() < values.len() / 2);

        let hash = |array: &ArrayRef| {
            let array = uniq_hash(&[ColumnarValue::Array(array.clone())], values.len()).unwrap();
            array
                .as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
                .clone()
        };
        // The run path hashes as DataFusion hashes every row of the same view array.
        let mut every_row = vec![0; values.len()];
        datafusion::common::hash_utils::create_hashes(
            std::slice::from_ref(&runs),
            &datafusion::common::hash_utils::RandomState::with_seed(0x5eed_0001),
            &mut every_row,
        )
        .unwrap();
        let by_runs = hash(&runs);
        for (row, value) in values.iter().enumerate() {
            assert_eq!(by_runs.is_valid(row), value.is_some());
            if value.is_some() {
                assert_eq!(by_runs.value(row), every_row[row], "row {row}");
            }
        }
        // The exact keys of the views are the keys of the same texts in a plain array.
        let (by_view, by_text) = (keys(vec![runs.clone()]), keys(vec![plain]));
        for (row, value) in values.iter().enumerate() {
            assert_eq!(by_view.is_valid(row), value.is_some());
            assert_eq!(by_view.value(row), by_text.value(row), "row {row}");
        }
        // An actor key is the same 16 bytes as a number.
        let actors = actor_key(&[ColumnarValue::Array(runs)], values.len()).unwrap();
        assert_eq!(actors.data_type(), &ACTOR_KEY_TYPE);
        let actors = actors.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>();
        for (row, value) in values.iter().enumerate() {
            assert_eq!(actors.is_valid(row), value.is_some());
            if value.is_some() {
                let bytes = actors.value(row).to_le_bytes();
                assert_eq!(&bytes[..], by_text.value(row), "row {row}");
            }
        }
    }
}
