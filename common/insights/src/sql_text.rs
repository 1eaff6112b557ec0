//! Building dialect text safely: every user-given value enters as a quoted literal.

/// A string literal of the dialect (ClickHouse rules: backslash escapes).
pub fn string(value: &str) -> String {
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('\'');
    for c in value.chars() {
        match c {
            '\\' => quoted.push_str("\\\\"),
            '\'' => quoted.push_str("\\'"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\0' => quoted.push_str("\\0"),
            c => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

/// `properties['key']` of the event (or of `person.` when `person` is set).
pub fn property(key: &str, person: bool) -> String {
    let scope = if person {
        "person.properties"
    } else {
        "properties"
    };
    format!("{scope}[{}]", string(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(string("it's"), r"'it\'s'");
        assert_eq!(string(r"a\b"), r"'a\\b'");
        assert_eq!(string("x\ny"), r"'x\ny'");
    }
}
