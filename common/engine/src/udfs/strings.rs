//! String functions with ClickHouse's semantics where DataFusion's differ: ClickHouse counts
//! bytes (`substring`, `position`, `leftPad`, `reverse`), its UTF8 variants code points; `lower`
//! and `upper` touch ASCII letters only; `concat` is NULL when any argument is, and writes
//! numbers as ClickHouse's `toString` does; `splitByChar(',', '')` is `['']`.
//!
//! A byte operation can cut a character in two. ClickHouse then answers bytes that are not UTF-8,
//! which its JSON output writes with one U+FFFD per run of bad bytes: [`clickhouse_text`] does the
//! same here, so the answer a user sees is ClickHouse's.

use super::{all_constant, answer, to_arrays};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, GenericListArray, Int64Array, ListBuilder, StringArray,
    StringBuilder, UInt64Array,
};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt64Type};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Which string operation a [`TextFunction`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    LowerAscii,
    UpperAscii,
    /// `substring(s, offset[, length])` over bytes.
    Substring,
    /// `substringUTF8`: the same over code points.
    SubstringUtf8,
    /// `position(haystack, needle[, start])`: 1-based byte offset, 0 when absent.
    Position,
    /// `positionUTF8`: the same in code points.
    PositionUtf8,
    LeftPad,
    RightPad,
    /// Bytes of a string, elements of an array.
    Reverse,
    SplitByChar,
    SplitByString,
    /// NULL when any argument is; numbers written as `toString` writes them.
    Concat,
    /// `concatWithSeparator(sep, ...)`.
    ConcatWithSeparator,
    /// `replaceRegexpAll(s, pattern, replacement)`: `\N` is group N, `\\` a backslash.
    ReplaceRegexpAll,
    /// `replaceRegexpOne`: the first match only.
    ReplaceRegexpOne,
}

const FUNCTIONS: &[(&str, Op)] = &[
    ("hogql_lower_ascii", Op::LowerAscii),
    ("hogql_upper_ascii", Op::UpperAscii),
    ("hogql_substring", Op::Substring),
    ("hogql_substring_utf8", Op::SubstringUtf8),
    ("hogql_position", Op::Position),
    ("hogql_position_utf8", Op::PositionUtf8),
    ("hogql_left_pad", Op::LeftPad),
    ("hogql_right_pad", Op::RightPad),
    ("hogql_reverse", Op::Reverse),
    ("hogql_split_by_char", Op::SplitByChar),
    ("hogql_split_by_string", Op::SplitByString),
    ("hogql_concat", Op::Concat),
    ("hogql_concat_ws", Op::ConcatWithSeparator),
    ("hogql_replace_regexp_all", Op::ReplaceRegexpAll),
    ("hogql_replace_regexp_one", Op::ReplaceRegexpOne),
];

/// This file's UDFs.
pub(super) fn udfs() -> Vec<ScalarUDF> {
    FUNCTIONS
        .iter()
        .map(|(name, op)| {
            ScalarUDF::new_from_impl(TextFunction {
                name,
                op: *op,
                signature: Signature::variadic_any(Volatility::Immutable),
            })
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TextFunction {
    name: &'static str,
    op: Op,
    signature: Signature,
}

impl ScalarUDFImpl for TextFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, types: &[DataType]) -> Result<DataType> {
        Ok(match self.op {
            Op::Position | Op::PositionUtf8 => DataType::UInt64,
            Op::SplitByChar | Op::SplitByString => list_of_text(),
            Op::Reverse => match types.first() {
                Some(list @ DataType::List(_)) => list.clone(),
                Some(DataType::LargeList(field) | DataType::FixedSizeList(field, _)) => {
                    DataType::List(field.clone())
                }
                _ => DataType::Utf8,
            },
            Op::Concat | Op::ConcatWithSeparator => {
                for kind in types {
                    printable(kind, self.name)?;
                }
                DataType::Utf8
            }
            _ => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let all_scalar = all_constant(&args.args);
        let arrays = to_arrays(&args.args, rows)?;
        let result = self.compute(&arrays, rows)?;
        answer(result, all_scalar)
    }
}

fn list_of_text() -> DataType {
    DataType::List(Arc::new(
        datafusion::arrow::datatypes::Field::new_list_field(DataType::Utf8, true),
    ))
}

/// Refuses the types `concat` write as ClickHouse does.
fn printable(kind: &DataType, name: &str) -> Result<()> {
    match kind {
        DataType::Null
        | DataType::Boolean
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Date32
        | DataType::Date64 => Ok(()),
        kind if kind.is_integer() || kind.is_floating() => Ok(()),
        other => {
            let function = match name {
                "hogql_concat_ws" => "concatWithSeparator",
                _ => "concat",
            };
            plan_err!("{function} of a {other} value is not supported")
        }
    }
}

fn text(array: &ArrayRef) -> Result<ArrayRef> {
    Ok(match array.data_type() {
        DataType::Utf8 => array.clone(),
        _ => cast(array, &DataType::Utf8)?,
    })
}

fn integers(array: &ArrayRef) -> Result<Int64Array> {
    Ok(cast(array, &DataType::Int64)?
        .as_primitive::<Int64Type>()
        .clone())
}

fn get<'a>(arrays: &'a [ArrayRef], index: usize, name: &str) -> Result<&'a ArrayRef> {
    match arrays.get(index) {
        Some(array) => Ok(array),
        None => exec_err!("{name}: missing argument {}", index + 1),
    }
}

/// Bytes as ClickHouse's JSON output shows them: valid UTF-8 as it is, each run of invalid
/// bytes as one U+FFFD.
pub(crate) fn clickhouse_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(bytes.len() + 2);
    let mut replaced = false;
    for chunk in bytes.utf8_chunks() {
        if !chunk.valid().is_empty() {
            out.push_str(chunk.valid());
            replaced = false;
        }
        if !chunk.invalid().is_empty() && !replaced {
            out.push('\u{FFFD}');
            replaced = true;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The window `substring(_, offset, length)` keeps of `len` units, as ClickHouse computes it:
/// a negative offset counts from the end, a negative length drops that many from the end, an
/// offset of 0 keeps nothing.
pub(super) fn window(len: usize, offset: i64, length: Option<i64>) -> (usize, usize) {
    let len = len as i64;
    if offset == 0 {
        return (0, 0);
    }
    let start = if offset > 0 { offset - 1 } else { len + offset };
    let end = match length {
        None => len,
        Some(length) if length < 0 => len + length,
        Some(length) => start.saturating_add(length),
    };
    let start_clipped = start.clamp(0, len);
    let end_clipped = end.clamp(start_clipped, len);
    (start_clipped as usize, end_clipped as usize)
}

/// ClickHouse's text of a double (`toString`, `concat`): the shortest digits that read back the
/// same, in plain notation for exponents from -6 to 20 and `1e21`, `1.5e-7` beyond.
pub(crate) fn clickhouse_float(value: f64) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    let scientific = format!("{value:e}");
    let exponent: i32 = scientific
        .rsplit_once('e')
        .and_then(|(_, exponent)| exponent.parse().ok())
        .unwrap_or(0);
    if value != 0.0 && !(-6..21).contains(&exponent) {
        scientific
    } else {
        format!("{value}")
    }
}

/// One value's text, as `toString` writes it (`None` for NULL).
fn value_texts(array: &ArrayRef) -> Result<Vec<Option<String>>> {
    let len = array.len();
    let each = |f: &dyn Fn(usize) -> String| -> Vec<Option<String>> {
        (0..len)
            .map(|i| (!array.is_null(i)).then(|| f(i)))
            .collect()
    };
    Ok(match array.data_type() {
        DataType::Null => vec![None; len],
        DataType::Boolean => {
            let values = array.as_boolean();
            each(&|i| if values.value(i) { "true" } else { "false" }.into())
        }
        kind if kind.is_floating() => {
            let values = cast(array, &DataType::Float64)?;
            let values = values.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
            each(&|i| clickhouse_float(values.value(i)))
        }
        kind if kind.is_unsigned_integer() => {
            let values = cast(array, &DataType::UInt64)?;
            let values = values.as_primitive::<UInt64Type>();
            each(&|i| values.value(i).to_string())
        }
        _ => {
            let values = text(array)?;
            let values = values.as_string::<i32>();
            each(&|i| values.value(i).to_owned())
        }
    })
}

impl TextFunction {
    fn compute(&self, arrays: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
        let name = self.name;
        match self.op {
            Op::LowerAscii | Op::UpperAscii => {
                let input = text(get(arrays, 0, name)?)?;
                let upper = self.op == Op::UpperAscii;
                let out: StringArray = input
                    .as_string::<i32>()
                    .iter()
                    .map(|value| {
                        value.map(|value| {
                            if upper {
                                value.to_ascii_uppercase()
                            } else {
                                value.to_ascii_lowercase()
                            }
                        })
                    })
                    .collect();
                Ok(Arc::new(out))
            }
            Op::Substring | Op::SubstringUtf8 => {
                let input = text(get(arrays, 0, name)?)?;
                let input = input.as_string::<i32>();
                let offsets = integers(get(arrays, 1, name)?)?;
                let lengths = arrays.get(2).map(integers).transpose()?;
                let mut out = StringBuilder::with_capacity(rows, 0);
                for row in 0..input.len() {
                    let length = lengths
                        .as_ref()
                        .map(|l| (!l.is_null(row)).then(|| l.value(row)));
                    if input.is_null(row) || offsets.is_null(row) || length == Some(None) {
                        out.append_null();
                        continue;
                    }
                    let value = input.value(row);
                    let offset = offsets.value(row);
                    let length = length.flatten();
                    if self.op == Op::Substring {
                        let (start, end) = window(value.len(), offset, length);
                        out.append_value(clickhouse_text(&value.as_bytes()[start..end]));
                    } else {
                        let bounds: Vec<usize> = value
                            .char_indices()
                            .map(|(at, _)| at)
                            .chain([value.len()])
                            .collect();
                        let (start, end) = window(bounds.len() - 1, offset, length);
                        out.append_value(&value[bounds[start]..bounds[end]]);
                    }
                }
                Ok(Arc::new(out.finish()))
            }
            Op::Position | Op::PositionUtf8 => {
                let haystacks = text(get(arrays, 0, name)?)?;
                let haystacks = haystacks.as_string::<i32>();
                let needles = text(get(arrays, 1, name)?)?;
                let needles = needles.as_string::<i32>();
                let starts = arrays.get(2).map(integers).transpose()?;
                let out: UInt64Array = (0..haystacks.len())
                    .map(|row| {
                        if haystacks.is_null(row)
                            || needles.is_null(row)
                            || starts.as_ref().is_some_and(|s| s.is_null(row))
                        {
                            return None;
                        }
                        let start = starts.as_ref().map_or(1, |s| s.value(row));
                        Some(position(
                            haystacks.value(row),
                            needles.value(row),
                            start,
                            self.op == Op::PositionUtf8,
                        ))
                    })
                    .collect();
                Ok(Arc::new(out))
            }
            Op::LeftPad | Op::RightPad => {
                let input = text(get(arrays, 0, name)?)?;
                let input = input.as_string::<i32>();
                let lengths = integers(get(arrays, 1, name)?)?;
                let pads = arrays.get(2).map(text).transpose()?;
                let pads = pads.as_ref().map(|p| p.as_string::<i32>());
                let mut out = StringBuilder::with_capacity(rows, 0);
                for row in 0..input.len() {
                    if input.is_null(row)
                        || lengths.is_null(row)
                        || pads.is_some_and(|p| p.is_null(row))
                    {
                        out.append_null();
                        continue;
                    }
                    let length = lengths.value(row);
                    if length < 0 {
                        return exec_err!("New padded length ({length}) is negative");
                    }
                    let pad = pads.map_or(" ", |p| p.value(row));
                    let padded = pad_bytes(
                        input.value(row).as_bytes(),
                        length as usize,
                        pad.as_bytes(),
                        self.op == Op::LeftPad,
                    );
                    out.append_value(clickhouse_text(&padded));
                }
                Ok(Arc::new(out.finish()))
            }
            Op::Reverse => {
                let input = get(arrays, 0, name)?;
                match input.data_type() {
                    DataType::List(_) => reverse_lists(input.as_list::<i32>()),
                    DataType::LargeList(field) | DataType::FixedSizeList(field, _) => {
                        let list = cast(input, &DataType::List(field.clone()))?;
                        reverse_lists(list.as_list::<i32>())
                    }
                    _ => {
                        let input = text(input)?;
                        let out: StringArray = input
                            .as_string::<i32>()
                            .iter()
                            .map(|value| {
                                value.map(|value| {
                                    let mut bytes = value.as_bytes().to_vec();
                                    bytes.reverse();
                                    clickhouse_text(&bytes).into_owned()
                                })
                            })
                            .collect();
                        Ok(Arc::new(out))
                    }
                }
            }
            Op::SplitByChar | Op::SplitByString => {
                let separators = text(get(arrays, 0, name)?)?;
                let separators = separators.as_string::<i32>();
                let input = text(get(arrays, 1, name)?)?;
                let input = input.as_string::<i32>();
                let mut out = ListBuilder::new(StringBuilder::new());
                for row in 0..input.len() {
                    if input.is_null(row) || separators.is_null(row) {
                        out.append_null();
                        continue;
                    }
                    let separator = separators.value(row);
                    if self.op == Op::SplitByChar && separator.len() != 1 {
                        return exec_err!(
                            "Illegal separator for function splitByChar. Must be exactly one byte"
                        );
                    }
                    let value = input.value(row);
                    if separator.is_empty() {
                        // Each byte on its own.
                        for byte in value.as_bytes() {
                            out.values()
                                .append_value(clickhouse_text(std::slice::from_ref(byte)));
                        }
                    } else {
                        for part in value.split(separator) {
                            out.values().append_value(part);
                        }
                    }
                    out.append(true);
                }
                Ok(Arc::new(out.finish()))
            }
            Op::ReplaceRegexpAll | Op::ReplaceRegexpOne => {
                let input = text(get(arrays, 0, name)?)?;
                let input = input.as_string::<i32>();
                let patterns = text(get(arrays, 1, name)?)?;
                let patterns = patterns.as_string::<i32>();
                let replacements = text(get(arrays, 2, name)?)?;
                let replacements = replacements.as_string::<i32>();
                let mut compiled: Option<(String, regex::Regex)> = None;
                let mut out = StringBuilder::with_capacity(rows, 0);
                for row in 0..input.len() {
                    if input.is_null(row) || patterns.is_null(row) || replacements.is_null(row) {
                        out.append_null();
                        continue;
                    }
                    let (value, pattern) = (input.value(row), patterns.value(row));
                    if pattern.is_empty() {
                        out.append_value(value);
                        continue;
                    }
                    if compiled.as_ref().is_none_or(|(text, _)| text != pattern) {
                        let regex = match regex::Regex::new(pattern) {
                            Ok(regex) => regex,
                            Err(error) => {
                                return exec_err!(
                                    "Invalid regular expression '{pattern}': {error}"
                                );
                            }
                        };
                        compiled = Some((pattern.to_owned(), regex));
                    }
                    let Some((_, regex)) = compiled.as_ref() else {
                        return exec_err!("{name}: no regular expression");
                    };
                    out.append_value(replace_regexp(
                        regex,
                        value,
                        replacements.value(row),
                        self.op == Op::ReplaceRegexpAll,
                    ));
                }
                Ok(Arc::new(out.finish()))
            }
            Op::Concat | Op::ConcatWithSeparator => {
                let columns = arrays.iter().map(value_texts).collect::<Result<Vec<_>>>()?;
                let (separator, parts) = match self.op {
                    Op::ConcatWithSeparator => match columns.split_first() {
                        Some((separator, parts)) => (Some(separator), parts),
                        None => return exec_err!("concatWithSeparator needs a separator"),
                    },
                    _ => (None, columns.as_slice()),
                };
                let mut out = StringBuilder::with_capacity(rows, 0);
                'rows: for row in 0..rows {
                    let mut joined = String::new();
                    let separator = match separator {
                        Some(separator) => match &separator[row] {
                            Some(separator) => separator.as_str(),
                            None => {
                                out.append_null();
                                continue;
                            }
                        },
                        None => "",
                    };
                    for (index, part) in parts.iter().enumerate() {
                        match &part[row] {
                            Some(part) => {
                                if index > 0 {
                                    joined.push_str(separator);
                                }
                                joined.push_str(part);
                            }
                            None => {
                                out.append_null();
                                continue 'rows;
                            }
                        }
                    }
                    out.append_value(joined);
                }
                Ok(Arc::new(out.finish()))
            }
        }
    }
}

/// `position`'s answer: the 1-based offset (bytes, or code points when `utf8`) of `needle` in
/// `haystack` at or after `start`, 0 when absent. An empty needle is found where the search
/// starts, if that is within the text or just past it.
fn position(haystack: &str, needle: &str, start: i64, utf8: bool) -> u64 {
    let units = if utf8 {
        haystack.chars().count()
    } else {
        haystack.len()
    };
    let start = start.max(1) as usize;
    if start > units + 1 {
        return 0;
    }
    let from = if utf8 {
        haystack
            .char_indices()
            .nth(start - 1)
            .map_or(haystack.len(), |(at, _)| at)
    } else {
        start - 1
    };
    let found = match haystack.as_bytes().get(from..) {
        Some(rest) => memchr::memmem::find(rest, needle.as_bytes()).map(|at| at + from),
        None => None,
    };
    match found {
        None => 0,
        Some(at) if utf8 => haystack
            .get(..at)
            .map_or(0, |before| before.chars().count() as u64 + 1),
        Some(at) => at as u64 + 1,
    }
}

/// `value` with the first (or every) match of `regex` replaced as ClickHouse does: `\0`..`\9`
/// are the match and its groups (empty when a group did not take part), `\\` a backslash.
fn replace_regexp(regex: &regex::Regex, value: &str, replacement: &str, all: bool) -> String {
    let mut out = String::with_capacity(value.len());
    let mut last = 0;
    for captures in regex.captures_iter(value) {
        let Some(whole) = captures.get(0) else {
            continue;
        };
        out.push_str(&value[last..whole.start()]);
        let mut chars = replacement.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek().copied()) {
                ('\\', Some(digit)) if digit.is_ascii_digit() => {
                    chars.next();
                    let group = digit as usize - '0' as usize;
                    if let Some(found) = captures.get(group) {
                        out.push_str(found.as_str());
                    }
                }
                ('\\', Some('\\')) => {
                    chars.next();
                    out.push('\\');
                }
                (c, _) => out.push(c),
            }
        }
        last = whole.end();
        if !all {
            break;
        }
    }
    out.push_str(&value[last..]);
    out
}

/// `leftPad`/`rightPad` over bytes: cut to `length` when longer, else padded with `pad`
/// repeated (and cut) to `length`.
fn pad_bytes(value: &[u8], length: usize, pad: &[u8], left: bool) -> Vec<u8> {
    if value.len() >= length {
        return value[..length].to_vec();
    }
    // An empty padding pads with spaces, as ClickHouse does.
    let pad = if pad.is_empty() { b" " } else { pad };
    let filler: Vec<u8> = pad
        .iter()
        .copied()
        .cycle()
        .take(length - value.len())
        .collect();
    if left {
        [filler.as_slice(), value].concat()
    } else {
        [value, filler.as_slice()].concat()
    }
}

/// Each row's elements in reverse order.
fn reverse_lists(list: &GenericListArray<i32>) -> Result<ArrayRef> {
    let offsets = list.value_offsets();
    let mut indices = Vec::with_capacity(list.values().len());
    for row in 0..list.len() {
        let (start, end) = (offsets[row] as u64, offsets[row + 1] as u64);
        indices.extend((start..end).rev());
    }
    let first = offsets.first().copied().unwrap_or(0);
    let shifted: Vec<i32> = offsets.iter().map(|offset| offset - first).collect();
    let values = take(list.values(), &UInt64Array::from(indices), None)?;
    let field = match list.data_type() {
        DataType::List(field) => field.clone(),
        _ => return exec_err!("reverse: not a list"),
    };
    Ok(Arc::new(GenericListArray::<i32>::try_new(
        field,
        datafusion::arrow::buffer::OffsetBuffer::new(shifted.into()),
        values,
        list.nulls().cloned(),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_clickhouse() {
        assert_eq!(window(5, 2, None), (1, 5));
        assert_eq!(window(5, -3, Some(2)), (2, 4));
        assert_eq!(window(5, 0, Some(2)), (0, 0));
        assert_eq!(window(5, -10, None), (0, 5));
        assert_eq!(window(5, -10, Some(3)), (0, 0));
        assert_eq!(window(5, 2, Some(-1)), (1, 4));
        assert_eq!(window(5, 10, None), (5, 5));
    }

    #[test]
    fn floats_read_as_clickhouse_writes_them() {
        for (value, text) in [
            (1e20, "100000000000000000000"),
            (1e21, "1e21"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (100000000.0, "100000000"),
            (-0.0, "-0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(clickhouse_float(value), text);
        }
    }

    #[test]
    fn bad_bytes_show_as_one_replacement_per_run() {
        assert_eq!(clickhouse_text(&[0xAB, 0xC3, b'o']), "\u{FFFD}o");
        assert_eq!(clickhouse_text(b"ok"), "ok");
    }
}
