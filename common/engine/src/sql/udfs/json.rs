//! JSON text: PostHog's property access (`hogql_prop`), `JSONExtract*`, `JSONHas`,
//! `JSONLength` and `JSONExtractKeys`, read with jiter along a constant path.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, Float64Builder, Int64Builder, StringArray,
    StringBuilder, UInt64Builder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::ColumnarValue;
use jiter::{Jiter, JiterResult, NumberInt, Peek};

use super::{Kind, argument};

/// One JSON path step: an object key or a 1-based array index (negative counts from the end).
enum Step {
    Key(String),
    Index(i64),
}

fn path(args: &[ColumnarValue]) -> Result<Vec<Step>> {
    args.iter()
        .map(|arg| match arg {
            ColumnarValue::Scalar(scalar) => match scalar {
                ScalarValue::Utf8(Some(key))
                | ScalarValue::Utf8View(Some(key))
                | ScalarValue::LargeUtf8(Some(key)) => Ok(Step::Key(key.clone())),
                other => match other.cast_to(&DataType::Int64) {
                    Ok(ScalarValue::Int64(Some(index))) => Ok(Step::Index(index)),
                    _ => exec_err!("JSON paths are keys (strings) or indexes (integers)"),
                },
            },
            ColumnarValue::Array(_) => exec_err!("JSON paths must be constants"),
        })
        .collect()
}

fn text_rows(value: &ColumnarValue, rows: usize) -> Result<ArrayRef> {
    let array = value.to_array(rows)?;
    match array.data_type() {
        DataType::Utf8 => Ok(array),
        DataType::Null => Ok(cast(&array, &DataType::Utf8)?),
        _ => Ok(cast(&array, &DataType::Utf8)?),
    }
}

/// Walks to the value at `path`; true when it exists (the jiter then sits before the value).
fn seek(jiter: &mut Jiter, path: &[Step]) -> JiterResult<bool> {
    for step in path {
        let peek = jiter.peek()?;
        match (step, peek) {
            (Step::Key(wanted), Peek::Object) => {
                let mut key = jiter.next_object()?;
                let mut found = false;
                while let Some(current) = key {
                    if current == wanted {
                        found = true;
                        break;
                    }
                    jiter.next_skip()?;
                    key = jiter.next_key()?;
                }
                if !found {
                    return Ok(false);
                }
            }
            (Step::Index(wanted), Peek::Array) => {
                // Count first when indexing from the end.
                let target = if *wanted < 0 {
                    let mut probe = jiter.clone();
                    let mut count = 0i64;
                    let mut next = probe.next_array()?;
                    while let Some(peek) = next {
                        probe.known_skip(peek)?;
                        count += 1;
                        next = probe.array_step()?;
                    }
                    count + wanted
                } else {
                    wanted - 1
                };
                if target < 0 {
                    return Ok(false);
                }
                let mut next = jiter.next_array()?;
                let mut position = 0;
                loop {
                    match next {
                        None => return Ok(false),
                        Some(_) if position == target => break,
                        Some(peek) => {
                            jiter.known_skip(peek)?;
                            position += 1;
                            next = jiter.array_step()?;
                        }
                    }
                }
            }
            _ => return Ok(false),
        }
    }
    Ok(true)
}

fn raw_value<'a>(jiter: &mut Jiter<'_>, text: &'a str) -> JiterResult<&'a str> {
    let peek = jiter.peek()?;
    let start = jiter.current_index();
    jiter.known_skip(peek)?;
    let end = jiter.current_index();
    Ok(text.get(start..end).unwrap_or(""))
}

/// The text a string-valued JSON function gives for one document (borrowed: no copy per row).
fn text_value<'a>(
    kind: Kind,
    jiter: &'a mut Jiter<'_>,
    text: &'a str,
) -> JiterResult<Option<&'a str>> {
    let peek = jiter.peek()?;
    Ok(match (kind, peek) {
        // PostHog's property rules: JSON null and "" are NULL, strings lose their quotes,
        // anything else is its JSON text.
        (Kind::Property, Peek::Null) => None,
        (Kind::Property, Peek::String) => {
            Some(jiter.known_str()?).filter(|value| !value.is_empty())
        }
        (Kind::Property | Kind::JsonRaw, _) => Some(raw_value(jiter, text)?),
        // JSONExtractString: the string, or '' for anything else.
        (_, Peek::String) => Some(jiter.known_str()?),
        _ => Some(""),
    })
}

/// Told each top-level key reached: its name, its value's kind, its raw JSON text.
pub(crate) type KeySeen<'s> = dyn FnMut(&str, Peek, Option<&str>) + 's;

/// Top-level positions whose last key is remembered, at most.
const REMEMBERED_POSITIONS: usize = 256;

/// The keys a walk looks for, each with its index. Rows written by one SDK list their keys in the
/// same order, so the key last met at each position is compared first: a match spares hashing.
pub(crate) struct WantedKeys<'k> {
    by_name: foldhash::HashMap<&'k str, usize>,
    /// The key last met at each position, and its index.
    by_position: Vec<(String, Option<usize>)>,
}

impl<'k> WantedKeys<'k> {
    /// `keys[i]` has index `i`; a key listed twice keeps its first index.
    pub(crate) fn new(keys: impl IntoIterator<Item = &'k str>) -> Self {
        let mut by_name = foldhash::HashMap::default();
        for (index, key) in keys.into_iter().enumerate() {
            by_name.entry(key).or_insert(index);
        }
        Self {
            by_name,
            by_position: Vec::new(),
        }
    }

    fn index(&mut self, position: usize, key: &str) -> Option<usize> {
        match self.by_position.get_mut(position) {
            Some((last, index)) if last == key => *index,
            Some((last, index)) => {
                last.clear();
                last.push_str(key);
                *index = self.by_name.get(key).copied();
                *index
            }
            None => {
                let index = self.by_name.get(key).copied();
                if position == self.by_position.len() && position < REMEMBERED_POSITIONS {
                    self.by_position.push((key.to_owned(), index));
                }
                index
            }
        }
    }
}

/// One walk over a JSON object's top-level keys, for the writers that shred properties into
/// columns: for the first occurrence of each key in `wanted`, `found(index, value)` gets exactly
/// what `hogql_prop(text, key)` gives for it (`None` for NULL), so a shredded column always holds
/// what the query would have read from the JSON (the caller takes a key not `done` as NULL).
/// `seen` gets every key reached with its value's kind and raw JSON text. A document that stops
/// parsing ends the walk, as it ends `seek` for later keys.
pub(crate) fn property_values(
    text: &str,
    wanted: &mut WantedKeys,
    done: &mut [bool],
    mut found: impl FnMut(usize, Option<&str>),
    mut seen: Option<&mut KeySeen>,
) {
    let mut jiter = Jiter::new(text.as_bytes());
    if !matches!(jiter.peek(), Ok(Peek::Object)) {
        return;
    }
    // A key `seen` is told is copied into one buffer: the jiter lends it only until its next step.
    let mut current = String::new();
    let mut next = jiter.next_object();
    let mut position = 0;
    while let Ok(Some(key)) = next {
        let index = wanted.index(position, key).filter(|i| !done[*i]);
        position += 1;
        if seen.is_some() {
            current.clear();
            current.push_str(key);
        }
        let Ok(peek) = jiter.peek() else { return };
        let start = jiter.current_index();
        match index {
            Some(index) if peek != Peek::Null => {
                let Ok(value) = text_value(Kind::Property, &mut jiter, text) else {
                    return;
                };
                done[index] = true;
                found(index, value);
            }
            // Other values are skipped as `seek` skips them, so later keys are reached (or not)
            // as it would; a JSON null is NULL, which `text_value` says without reading it.
            _ => {
                if jiter.known_skip(peek).is_err() {
                    return;
                }
                if let Some(index) = index {
                    done[index] = true;
                    found(index, None);
                }
            }
        }
        if let Some(seen) = seen.as_mut() {
            seen(&current, peek, text.get(start..jiter.current_index()));
        }
        next = jiter.next_key();
    }
}

/// A quick test that rules a key out without parsing: a key is written `"key"` in JSON text unless
/// escaped, so text without that substring and without any backslash cannot have it. Most rows
/// lack most properties, and two SIMD scans are far cheaper than a parse.
struct KeyProbe {
    quoted: Option<memchr::memmem::Finder<'static>>,
}

impl KeyProbe {
    fn new(steps: &[Step]) -> Self {
        let quoted = match steps.first() {
            Some(Step::Key(key))
                if !key.chars().any(|c| c == '"' || c == '\\' || c.is_control()) =>
            {
                Some(memchr::memmem::Finder::new(format!("\"{key}\"").as_bytes()).into_owned())
            }
            _ => None,
        };
        Self { quoted }
    }

    /// False only when the text surely lacks the first key.
    fn may_have(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        match &self.quoted {
            Some(finder) => finder.find(bytes).is_some() || memchr::memchr(b'\\', bytes).is_some(),
            None => true,
        }
    }
}

/// Bytes a property value takes, as first guessed.
const VALUE_BYTES: usize = 16;

fn text_values(kind: Kind, input: &StringArray, steps: &[Step]) -> ArrayRef {
    let missing = if kind == Kind::Property {
        None
    } else {
        Some("")
    };
    // Room for a short value per row: sized from the documents instead (a quarter of them), the
    // buffer was mostly unused, and fresh pages for it cost more than growing a small one.
    let mut builder = StringBuilder::with_capacity(input.len(), input.len() * VALUE_BYTES);
    let probe = KeyProbe::new(steps);
    for row in 0..input.len() {
        if input.is_null(row) {
            builder.append_option(missing);
            continue;
        }
        let text = input.value(row);
        if !probe.may_have(text) {
            builder.append_option(missing);
            continue;
        }
        let mut jiter = Jiter::new(text.as_bytes());
        match seek(&mut jiter, steps) {
            Ok(true) => match text_value(kind, &mut jiter, text) {
                Ok(value) => builder.append_option(value),
                Err(_) => builder.append_option(missing),
            },
            _ => builder.append_option(missing),
        }
    }
    Arc::new(builder.finish())
}

pub(super) fn json(kind: Kind, args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    let owned = text_rows(argument(args, 0, "JSON")?, rows)?;
    let input = owned.as_string::<i32>();
    let steps = path(&args[1..])?;
    let probe = KeyProbe::new(&steps);
    macro_rules! each {
        ($builder:expr, $missing:expr, $extract:expr) => {{
            let mut builder = $builder;
            for row in 0..input.len() {
                if input.is_null(row) || !probe.may_have(input.value(row)) {
                    builder.append_option($missing);
                    continue;
                }
                let text = input.value(row);
                let mut jiter = Jiter::new(text.as_bytes());
                let value = match seek(&mut jiter, &steps) {
                    Ok(true) => $extract(&mut jiter, text).unwrap_or($missing),
                    _ => $missing,
                };
                builder.append_option(value);
            }
            Arc::new(builder.finish()) as ArrayRef
        }};
    }
    Ok(match kind {
        Kind::Property | Kind::JsonString | Kind::JsonRaw => text_values(kind, input, &steps),
        Kind::JsonInt => each!(
            Int64Builder::with_capacity(rows),
            Some(0),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<i64>> {
                let peek = jiter.peek()?;
                Ok(Some(match peek {
                    Peek::True => 1,
                    Peek::False => 0,
                    peek if peek.is_num() => match jiter.known_int(peek) {
                        Ok(NumberInt::Int(value)) => value,
                        _ => 0,
                    },
                    _ => 0,
                }))
            }
        ),
        Kind::JsonFloat => each!(
            Float64Builder::with_capacity(rows),
            Some(0.0),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<f64>> {
                let peek = jiter.peek()?;
                Ok(Some(if peek.is_num() {
                    jiter.known_float(peek)?
                } else {
                    0.0
                }))
            }
        ),
        Kind::JsonBool => each!(
            BooleanBuilder::with_capacity(rows),
            Some(false),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<bool>> {
                Ok(Some(jiter.peek()? == Peek::True))
            }
        ),
        Kind::JsonHas => each!(
            BooleanBuilder::with_capacity(rows),
            Some(false),
            |_jiter: &mut Jiter, _text| -> JiterResult<Option<bool>> { Ok(Some(true)) }
        ),
        Kind::JsonLength => each!(
            UInt64Builder::with_capacity(rows),
            Some(0),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<u64>> {
                let mut count = 0;
                match jiter.peek()? {
                    Peek::Array => {
                        let mut next = jiter.next_array()?;
                        while let Some(peek) = next {
                            jiter.known_skip(peek)?;
                            count += 1;
                            next = jiter.array_step()?;
                        }
                    }
                    Peek::Object => {
                        let mut key = jiter.next_object()?.is_some();
                        while key {
                            jiter.next_skip()?;
                            count += 1;
                            key = jiter.next_key()?.is_some();
                        }
                    }
                    _ => {}
                }
                Ok(Some(count))
            }
        ),
        _ => return exec_err!("not a JSON function"),
    })
}

pub(super) fn json_keys(args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
    use datafusion::arrow::array::ListBuilder;
    let owned = text_rows(argument(args, 0, "JSONExtractKeys")?, rows)?;
    let input = owned.as_string::<i32>();
    let steps = path(&args[1..])?;
    let mut builder = ListBuilder::new(StringBuilder::new());
    for row in 0..input.len() {
        if !input.is_null(row) {
            let mut jiter = Jiter::new(input.value(row).as_bytes());
            if let Ok(true) = seek(&mut jiter, &steps)
                && let Ok(Peek::Object) = jiter.peek()
            {
                let mut key = jiter.next_object().ok().flatten().map(str::to_owned);
                while let Some(current) = key {
                    builder.values().append_value(&current);
                    if jiter.next_skip().is_err() {
                        break;
                    }
                    key = jiter.next_key().ok().flatten().map(str::to_owned);
                }
            }
        }
        builder.append(true);
    }
    Ok(Arc::new(builder.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn property(texts: &[Option<&str>], key: &str) -> Vec<Option<String>> {
        let input = StringArray::from(texts.to_vec());
        let output = text_values(Kind::Property, &input, &[Step::Key(key.into())]);
        let output = output.as_string::<i32>();
        (0..output.len())
            .map(|row| (!output.is_null(row)).then(|| output.value(row).to_owned()))
            .collect()
    }

    #[test]
    fn the_key_probe_never_hides_a_key() {
        let texts = [
            Some(r#"{"plan": "pro", "amount": 12}"#),
            Some(r#"{"plan": "pro"}"#),
            // Escaped in the text: the probe must not rule it out.
            Some(r#"{"\u0061mount": 7}"#),
            // The name inside a value is not the key.
            Some(r#"{"note": "amount"}"#),
            None,
        ];
        assert_eq!(
            property(&texts, "amount"),
            [Some("12".into()), None, Some("7".into()), None, None]
        );
        // Keys the probe cannot quote are looked up by parsing.
        assert_eq!(
            property(&[Some(r#"{"a\"b": 1}"#)], "a\"b"),
            [Some("1".into())]
        );
    }

    #[test]
    fn a_walk_finds_what_the_query_reads_whatever_order_the_rows_list_their_keys_in() {
        let rows = [
            r#"{"plan": "pro", "amount": 12, "x": 1}"#,
            r#"{"plan": "pro", "amount": 12, "x": 2}"#,
            // Other keys at the remembered positions, then the same again.
            r#"{"amount": 3, "plan": "free"}"#,
            r#"{"x": 1, "plan": "team"}"#,
            r#"{"plan": "pro", "amount": 5, "x": 3}"#,
            // A repeated key: the first occurrence counts, as in `hogql_prop`.
            r#"{"amount": 1, "amount": 2}"#,
            r#"{"a\u006dount": 9}"#,
        ];
        let keys = ["amount", "plan"];
        let mut wanted = WantedKeys::new(keys);
        for text in rows {
            let mut done = [false; 2];
            let mut values = [None, None];
            property_values(
                text,
                &mut wanted,
                &mut done,
                |index, value| values[index] = value.map(str::to_owned),
                None,
            );
            for (index, key) in keys.iter().enumerate() {
                assert_eq!(
                    values[index],
                    property(&[Some(text)], key)[0],
                    "{text} {key}"
                );
            }
        }
    }
}
