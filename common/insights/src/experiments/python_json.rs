//! JSON text exactly as Python's `json.dumps(value, sort_keys=True, separators=(",", ":"))`
//! writes it (`ensure_ascii` on): PostHog hashes metrics in that form, so a fingerprint computed
//! here equals PostHog's only if every byte does.

use std::fmt::Write;

use serde_json::Value;

/// `json.dumps(value, sort_keys=True, separators=(",", ":"))`.
pub fn dumps_sorted(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(int), _, _) => write!(out, "{int}").unwrap_or_default(),
            (None, Some(int), _) => write!(out, "{int}").unwrap_or_default(),
            (None, None, Some(float)) => out.push_str(&float_repr(float)),
            _ => out.push_str("null"),
        },
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(object) => {
            // Python sorts keys by code point; UTF-8 byte order is the same order.
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, &object[key]);
            }
            out.push('}');
        }
    }
}

/// A string with Python's escapes: the short ones, then `\uXXXX` (lower-case hex) for other
/// control characters and everything outside ASCII, as UTF-16 surrogate pairs above U+FFFF.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(out, "\\u{unit:04x}").unwrap_or_default();
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest digits that read back as the same float (Rust finds
/// the same ones), written positionally when the decimal exponent is in -4..16 and with an
/// exponent of at least two digits otherwise (`1e-05`, `1.5e+16`); integral values keep `.0`.
pub fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .into();
    }
    // `{:e}` gives the shortest round-trip digits: `-1.2345e-7`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exponent) {
        let point = exponent + 1;
        let text = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            let (whole, fraction) = digits.split_at(point as usize);
            format!("{whole}.{fraction}")
        };
        format!("{sign}{text}")
    } else {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_owned()
        } else {
            format!("{first}.{rest}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{sign}{mantissa}e{exponent_sign}{:02}",
            exponent.unsigned_abs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Expected texts printed by CPython 3.11's `repr` for the same floats.
    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            (0.1, "0.1"),
            (100.0, "100.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e16, "1.5e+16"),
            (1e16, "1e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (123456.789, "123456.789"),
            (-2.5e-7, "-2.5e-07"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.30000000000000004, "0.30000000000000004"),
            (-0.0, "-0.0"),
            (2.0, "2.0"),
            (12.5, "12.5"),
            (95.5, "95.5"),
        ];
        for (value, expected) in cases {
            assert_eq!(float_repr(value), expected, "{value:e}");
        }
    }

    /// Expected text printed by CPython 3.11 for
    /// `json.dumps(value, sort_keys=True, separators=(",", ":"))`.
    #[test]
    fn documents_print_as_python_json_dumps() {
        let value = json!({
            "name": "Käufe — €uro 😀",
            "b": [1, 2.0, -3, 1e-7, null, true, false],
            "a": {"z": "tab\there\nline \"quoted\" back\\slash \u{1} \u{7f}", "y": 18446744073709551615u64},
            "é": 0.5,
            "A": -9223372036854775808i64,
        });
        assert_eq!(
            dumps_sorted(&value),
            r#"{"A":-9223372036854775808,"a":{"y":18446744073709551615,"z":"tab\there\nline \"quoted\" back\\slash \u0001 \u007f"},"b":[1,2.0,-3,1e-07,null,true,false],"name":"K\u00e4ufe \u2014 \u20acuro \ud83d\ude00","\u00e9":0.5}"#
        );
    }
}
