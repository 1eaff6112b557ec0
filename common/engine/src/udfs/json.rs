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
use jiter::{Jiter, JiterResult, Peek};

use lake_core::json::{Step, property_text, raw_value, seek};

use super::{Kind, argument};

pub(super) fn path(args: &[ColumnarValue]) -> Result<Vec<Step>> {
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

pub(super) fn text_rows(value: &ColumnarValue, rows: usize) -> Result<ArrayRef> {
    let array = value.to_array(rows)?;
    match array.data_type() {
        DataType::Utf8 => Ok(array),
        DataType::Null => Ok(cast(&array, &DataType::Utf8)?),
        _ => Ok(cast(&array, &DataType::Utf8)?),
    }
}

/// The text a string-valued JSON function gives for one document (borrowed: no copy per row).
fn text_value<'a>(
    kind: Kind,
    jiter: &'a mut Jiter<'_>,
    text: &'a str,
) -> JiterResult<Option<&'a str>> {
    if kind == Kind::Property {
        return property_text(jiter, text);
    }
    let peek = jiter.peek()?;
    Ok(match (kind, peek) {
        (Kind::JsonRaw, _) => Some(raw_value(jiter, text)?),
        // JSONExtractString: the string, or '' for anything else.
        (_, Peek::String) => Some(jiter.known_str()?),
        _ => Some(""),
    })
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
            builder.append_null();
            continue;
        }
        let text = input.value(row);
        if !probe.may_have(text) {
            builder.append_option(missing);
            continue;
        }
        let mut jiter = Jiter::new(text.as_bytes());
        match (seek(&mut jiter, steps), kind) {
            (Ok(true), Kind::Property) => match text_value(kind, &mut jiter, text) {
                Ok(value) => builder.append_option(value),
                Err(_) => builder.append_option(missing),
            },
            // A string as it is (no copy); any other value is read whole and written back.
            (Ok(true), Kind::JsonString) if matches!(jiter.peek(), Ok(Peek::String)) => {
                match jiter.known_str() {
                    Ok(value) => builder.append_value(value),
                    Err(_) => builder.append_option(missing),
                }
            }
            (Ok(true), _) => match read_node(&mut jiter) {
                Ok(node) if kind == Kind::JsonString => builder.append_value(string_of(&node)),
                Ok(node) => builder.append_value(raw(&node).unwrap_or_default()),
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
                if input.is_null(row) {
                    builder.append_null();
                    continue;
                }
                if !probe.may_have(input.value(row)) {
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
        // ClickHouse's readings of each JSON type (see `integer_of` and the others).
        Kind::JsonInt => each!(
            Int64Builder::with_capacity(rows),
            Some(0),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<i64>> {
                let node = read_node(jiter)?;
                Ok(Some(
                    integer_of(&node, false)
                        .and_then(|value| i64::try_from(value).ok())
                        .unwrap_or(0),
                ))
            }
        ),
        Kind::JsonFloat => each!(
            Float64Builder::with_capacity(rows),
            Some(0.0),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<f64>> {
                Ok(Some(float_of(&read_node(jiter)?, false).unwrap_or(0.0)))
            }
        ),
        Kind::JsonBool => each!(
            BooleanBuilder::with_capacity(rows),
            Some(false),
            |jiter: &mut Jiter, _text| -> JiterResult<Option<bool>> {
                Ok(Some(bool_of(&read_node(jiter)?).unwrap_or(false)))
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
        builder.append(!input.is_null(row));
    }
    Ok(Arc::new(builder.finish()))
}

/// Nesting a JSON value may have before it counts as invalid (protects the stack).
const MAX_DEPTH: usize = 128;

/// A JSON value as ClickHouse reads it: numbers keep their text, to tell integers from doubles.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

/// The value the jiter sits before (after `seek`), read whole.
pub(super) fn read_node(jiter: &mut Jiter) -> JiterResult<Node> {
    let peek = jiter.peek()?;
    read_known(jiter, peek, 0)
}

fn too_deep(jiter: &Jiter) -> jiter::JiterError {
    jiter::JiterError {
        error_type: jiter::JiterErrorType::JsonError(jiter::JsonErrorType::RecursionLimitExceeded),
        index: jiter.current_index(),
    }
}

fn read_known(jiter: &mut Jiter, peek: Peek, depth: usize) -> JiterResult<Node> {
    if depth > MAX_DEPTH {
        return Err(too_deep(jiter));
    }
    Ok(match peek {
        Peek::Null => {
            jiter.known_null()?;
            Node::Null
        }
        Peek::True | Peek::False => Node::Bool(jiter.known_bool(peek)?),
        Peek::String => Node::String(jiter.known_str()?.to_owned()),
        Peek::Array => {
            let mut items = Vec::new();
            let mut next = jiter.known_array()?;
            while let Some(peek) = next {
                items.push(read_known(jiter, peek, depth + 1)?);
                next = jiter.array_step()?;
            }
            Node::Array(items)
        }
        Peek::Object => {
            let mut entries = Vec::new();
            let mut key = jiter.known_object()?.map(str::to_owned);
            while let Some(name) = key {
                let peek = jiter.peek()?;
                entries.push((name, read_known(jiter, peek, depth + 1)?));
                key = jiter.next_key()?.map(str::to_owned);
            }
            Node::Object(entries)
        }
        peek => Node::Number(String::from_utf8_lossy(jiter.known_number_bytes(peek)?).into_owned()),
    })
}

/// Whether a number's text is an integer (no fraction, no exponent).
fn integral(text: &str) -> bool {
    !text.contains(['.', 'e', 'E'])
}

/// A JSON number as ClickHouse holds it: an Int64, a UInt64 or a double.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Number {
    Int(i64),
    UInt(u64),
    Double(f64),
    /// An integer past UInt64 (ClickHouse keeps its text), or a double past the range.
    Big,
}

pub(super) fn number(text: &str) -> Number {
    if integral(text) {
        if let Ok(value) = text.parse::<i64>() {
            return Number::Int(value);
        }
        if let Ok(value) = text.parse::<u64>() {
            return Number::UInt(value);
        }
        return Number::Big;
    }
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() => Number::Double(value),
        _ => Number::Big,
    }
}

/// `node` as `JSONExtractRaw` writes it (compact, numbers and strings rewritten); None when
/// ClickHouse could not read the document (a double past the range).
pub(super) fn raw(node: &Node) -> Option<String> {
    let mut out = String::new();
    write_raw(node, &mut out).then_some(out)
}

fn write_raw(node: &Node, out: &mut String) -> bool {
    match node {
        Node::Null => out.push_str("null"),
        Node::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Node::Number(text) => match number(text) {
            Number::Int(value) => out.push_str(&value.to_string()),
            Number::UInt(value) => out.push_str(&value.to_string()),
            Number::Double(value) => out.push_str(&super::strings::clickhouse_float(value)),
            Number::Big if integral(text) => {
                out.push('"');
                out.push_str(text);
                out.push('"');
            }
            Number::Big => return false,
        },
        Node::String(text) => write_string(text, out),
        Node::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                if !write_raw(item, out) {
                    return false;
                }
            }
            out.push(']');
        }
        Node::Object(entries) => {
            out.push('{');
            for (index, (key, value)) in entries.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                if !write_raw(value, out) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    true
}

/// A JSON string as ClickHouse escapes it: quotes, backslashes and control characters only.
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `JSONExtractString`'s answer: a string's text, '' for null, any other value's raw JSON.
pub(super) fn string_of(node: &Node) -> String {
    match node {
        Node::String(text) => text.clone(),
        Node::Null => String::new(),
        other => raw(other).unwrap_or_default(),
    }
}

/// An integer read from a string as ClickHouse does: an integer, else a double's integer part.
fn text_integer(text: &str) -> Option<i128> {
    if let Ok(value) = text.parse::<i128>() {
        return Some(value);
    }
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() => Some(value.trunc() as i128),
        _ => None,
    }
}

/// The integer `node` holds for `JSONExtractInt`/`JSONExtract(.., 'Int64')`: numbers (doubles
/// truncated), numeric strings, booleans only when `bools`; None when there is none.
pub(super) fn integer_of(node: &Node, bools: bool) -> Option<i128> {
    match node {
        Node::Bool(flag) if bools => Some(i128::from(*flag)),
        Node::Number(text) => match number(text) {
            Number::Int(value) => Some(i128::from(value)),
            Number::UInt(value) => Some(i128::from(value)),
            Number::Double(value) => Some(value.trunc() as i128),
            Number::Big => None,
        },
        Node::String(text) => text_integer(text),
        _ => None,
    }
}

/// The double `node` holds for `JSONExtractFloat`: numbers, numeric strings (`inf`, `nan`
/// too), booleans only when `bools`.
pub(super) fn float_of(node: &Node, bools: bool) -> Option<f64> {
    match node {
        Node::Bool(flag) if bools => Some(f64::from(u8::from(*flag))),
        Node::Number(text) => match number(text) {
            Number::Int(value) => Some(value as f64),
            Number::UInt(value) => Some(value as f64),
            Number::Double(value) => Some(value),
            Number::Big if integral(text) => text.parse().ok(),
            Number::Big => None,
        },
        Node::String(text) => text.parse().ok(),
        _ => None,
    }
}

/// `JSONExtractBool`: true and false, and integers (not doubles) by whether they are 0.
pub(super) fn bool_of(node: &Node) -> Option<bool> {
    match node {
        Node::Bool(flag) => Some(*flag),
        Node::Number(text) => match number(text) {
            Number::Int(value) => Some(value != 0),
            Number::UInt(value) => Some(value != 0),
            _ => None,
        },
        _ => None,
    }
}

/// The value at `steps` in `text`, read whole; None when missing or unreadable.
pub(super) fn node_at(text: &str, steps: &[Step]) -> Option<Node> {
    let mut jiter = Jiter::new(text.as_bytes());
    match seek(&mut jiter, steps) {
        Ok(true) => read_node(&mut jiter).ok(),
        _ => None,
    }
}

/// Whether `text` is one JSON document ClickHouse reads (doubles within range).
pub(super) fn valid(text: &str) -> bool {
    let mut jiter = Jiter::new(text.as_bytes());
    let Ok(node) = read_node(&mut jiter) else {
        return false;
    };
    jiter.finish().is_ok() && raw(&node).is_some()
}

#[cfg(test)]
mod tests {
    use lake_core::json::{WantedKeys, property_values};

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
