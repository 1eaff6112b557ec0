//! How posthog-python 7.91.1 turns JSON values into the strings, booleans and numbers its
//! operators compare (`_value_to_string`, `_is_truthy_property_value`, `_parse_numeric_value`).

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// `_value_to_string`: a string as is, anything else as compact JSON the way the SDK writes it
/// (object keys sorted, floats as Python's `repr` adjusted to the flags service's output).
pub fn value_to_string(value: &Value) -> std::borrow::Cow<'_, str> {
    match value {
        Value::String(text) => std::borrow::Cow::Borrowed(text),
        other => {
            let mut out = String::new();
            write_json(other, &mut out);
            std::borrow::Cow::Owned(out)
        }
    }
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => {
            // serde_json escapes as json.dumps(ensure_ascii=False) does for these cases.
            out.push_str(&serde_json::to_string(text).unwrap_or_default());
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push(':');
                if let Some(item) = map.get(key) {
                    write_json(item, out);
                }
            }
            out.push('}');
        }
    }
}

/// Integers in decimal; floats as `_format_json_float`: Python's shortest `repr`, with
/// exponent -5 spelled out (`0.00001`) and positive exponents signed (`1e+16`).
fn write_number(number: &Number, out: &mut String) {
    if let Some(int) = number.as_i64() {
        let _ = write!(out, "{int}");
        return;
    }
    if let Some(int) = number.as_u64() {
        let _ = write!(out, "{int}");
        return;
    }
    let float = number.as_f64().unwrap_or(f64::NAN);
    out.push_str(&python_float_repr(float));
}

/// Python's `repr(float)` as `_format_json_float` rewrites it. Rust's `{:?}` gives the same
/// shortest digits and switches to an exponent at the same bounds (below 1e-4, from 1e16).
pub fn python_float_repr(float: f64) -> String {
    let debug = format!("{float:?}");
    let Some((mantissa, exponent)) = debug.split_once('e') else {
        return debug;
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return debug;
    };
    if exponent == -5 {
        // Decimal(repr).__format__("f"): the digits moved five places right.
        let (sign, digits) = match mantissa.strip_prefix('-') {
            Some(rest) => ("-", rest),
            None => ("", mantissa),
        };
        let digits: String = digits.chars().filter(|c| *c != '.').collect();
        return format!("{sign}0.0000{digits}");
    }
    if exponent >= 0 {
        format!("{mantissa}e+{exponent}")
    } else {
        format!("{mantissa}e{exponent}")
    }
}

/// `_is_truthy_or_falsy_property_value`: a boolean, `"true"`/`"false"` in any case, or a list of
/// such values (the empty list included).
pub fn is_truthy_or_falsy(value: &Value) -> bool {
    match value {
        Value::Bool(_) => true,
        Value::String(text) => {
            text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false")
        }
        Value::Array(items) => items.iter().all(is_truthy_or_falsy),
        _ => false,
    }
}

/// `_is_truthy_property_value`: `true`, `"true"` in any case, or a list of only those.
pub fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Bool(flag) => *flag,
        Value::String(text) => text.eq_ignore_ascii_case("true"),
        Value::Array(items) => items.iter().all(is_truthy),
        _ => false,
    }
}

/// `_parse_numeric_value`: numbers, and strings that are plainly decimal numbers (no spaces,
/// no `inf`/`nan`); booleans and everything else are not numbers. Only finite values count.
pub fn parse_numeric(value: &Value) -> Option<f64> {
    let parsed = match value {
        Value::Number(number) => number.as_f64()?,
        Value::String(text) if is_decimal_literal(text) => text.parse::<f64>().ok()?,
        _ => return None,
    };
    parsed.is_finite().then_some(parsed)
}

/// `[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?`, whole string.
fn is_decimal_literal(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        at += 1;
    }
    let integer_digits = count_digits(&bytes[at..]);
    at += integer_digits;
    let mut fraction_digits = 0;
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        fraction_digits = count_digits(&bytes[at..]);
        at += fraction_digits;
    }
    if integer_digits == 0 && fraction_digits == 0 {
        return false;
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let exponent_digits = count_digits(&bytes[at..]);
        if exponent_digits == 0 {
            return false;
        }
        at += exponent_digits;
    }
    at == bytes.len()
}

fn count_digits(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Outputs of posthog-python 7.91.1's `_value_to_string` for the same inputs.
    #[test]
    fn strings_as_the_sdk_writes_them() {
        let cases = [
            (json!("Hello"), "Hello"),
            (json!(null), "null"),
            (json!(true), "true"),
            (json!(5), "5"),
            (json!(-5), "-5"),
            (json!(1.0), "1.0"),
            (json!(2.5), "2.5"),
            (json!(1e16), "1e+16"),
            (json!(1.5e-5), "0.000015"),
            (json!(1e-5), "0.00001"),
            (json!(1e-7), "1e-7"),
            (json!(0.0001), "0.0001"),
            (json!(123456789012345.6), "123456789012345.6"),
            (json!([1, "a", null, true]), "[1,\"a\",null,true]"),
            (json!({"b": 1, "a": [2.0]}), "{\"a\":[2.0],\"b\":1}"),
        ];
        for (value, expected) in cases {
            assert_eq!(value_to_string(&value), expected, "{value}");
        }
    }

    #[test]
    fn numbers_as_the_sdk_reads_them() {
        assert_eq!(parse_numeric(&json!("5")), Some(5.0));
        assert_eq!(parse_numeric(&json!("-1.5e3")), Some(-1500.0));
        assert_eq!(parse_numeric(&json!(".5")), Some(0.5));
        assert_eq!(parse_numeric(&json!("5.")), Some(5.0));
        assert_eq!(parse_numeric(&json!(3)), Some(3.0));
        for not_numbers in [
            json!(" 5"),
            json!("5 "),
            json!("inf"),
            json!("NaN"),
            json!("1e"),
            json!("."),
            json!(""),
            json!("0x10"),
            json!(true),
            json!(null),
            json!([1]),
            json!("1e999"),
        ] {
            assert_eq!(parse_numeric(&not_numbers), None, "{not_numbers}");
        }
    }

    #[test]
    fn truthiness() {
        assert!(is_truthy_or_falsy(&json!("TRUE")));
        assert!(is_truthy_or_falsy(&json!([true, "false"])));
        assert!(is_truthy_or_falsy(&json!([])));
        assert!(!is_truthy_or_falsy(&json!("yes")));
        assert!(!is_truthy_or_falsy(&json!(1)));
        assert!(is_truthy(&json!("True")));
        assert!(is_truthy(&json!([true, "true"])));
        assert!(!is_truthy(&json!([true, false])));
        assert!(!is_truthy(&json!(1)));
        assert!(!is_truthy(&json!(null)));
    }
}
