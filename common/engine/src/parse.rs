//! Text → AST: the ClickHouse dialect of sqlparser, after a token pass for what HogQL adds on top
//! (`$`-prefixed identifiers such as `properties.$browser`, `{placeholder}` bindings and `==`).

use datafusion::sql::sqlparser::ast::{Query, Statement};
use datafusion::sql::sqlparser::dialect::ClickHouseDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Word};

use crate::{QueryError, clickhouse_syntax, cohort_syntax};

/// How deep expressions may nest before the parser refuses (protects the stack).
const RECURSION_LIMIT: usize = 64;
/// Placeholders become identifiers with this prefix, replaced by literals after parsing.
pub const PLACEHOLDER_PREFIX: &str = "__placeholder_";

/// A parsed query and the placeholder paths it names, in order (`variables.x`, `event`, ...).
pub struct Parsed {
    pub query: Box<Query>,
    pub placeholders: Vec<String>,
}

pub fn parse(text: &str) -> Result<Parsed, QueryError> {
    let dialect = ClickHouseDialect {};
    let tokens = Tokenizer::new(&dialect, text)
        .tokenize_with_location()
        .map_err(|e| QueryError::Syntax(e.to_string()))?;
    let tokens = clickhouse_syntax::nest_limit_after_limit_by(clickhouse_syntax::limit_by_offsets(
        clickhouse_syntax::inline_with_aliases(cohort_syntax::mark(tokens)),
    ));
    let (tokens, placeholders) = rewrite_tokens(split_interval_strings(tokens))?;
    let mut statements = Parser::new(&dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| QueryError::Syntax(syntax_message(&e.to_string())))?;
    if statements.len() != 1 {
        return Err(QueryError::Syntax(if statements.is_empty() {
            "Empty query".into()
        } else {
            "Only one statement may be run at a time".into()
        }));
    }
    match statements.remove(0) {
        Statement::Query(query) => Ok(Parsed {
            query,
            placeholders,
        }),
        other => Err(QueryError::Syntax(format!(
            "Only SELECT queries are supported, not {}",
            statement_kind(&other)
        ))),
    }
}

fn syntax_message(raw: &str) -> String {
    raw.strip_prefix("sql parser error: ")
        .unwrap_or(raw)
        .to_owned()
}

fn statement_kind(statement: &Statement) -> String {
    let text = statement.to_string();
    text.split_whitespace()
        .next()
        .unwrap_or("that statement")
        .to_uppercase()
}

fn rewrite_tokens(
    tokens: Vec<TokenWithSpan>,
) -> Result<(Vec<TokenWithSpan>, Vec<String>), QueryError> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut placeholders = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(item) = iter.next() {
        match item.token {
            Token::Placeholder(ref name) if is_dollar_identifier(name) => {
                out.push(TokenWithSpan::new(quoted_word(name), item.span));
            }
            Token::DoubleEq => out.push(TokenWithSpan::new(Token::Eq, item.span)),
            // `t.1` (a tuple's first element) reads field `1` of the struct a tuple is: `t['1']`.
            Token::Number(ref text, _)
                if tuple_index(text).is_some()
                    && out.last().is_some_and(|last: &TokenWithSpan| {
                        matches!(last.token, Token::RParen | Token::RBracket | Token::Word(_))
                    }) =>
            {
                let index = tuple_index(text).unwrap_or_default().to_owned();
                out.push(TokenWithSpan::new(Token::LBracket, item.span));
                out.push(TokenWithSpan::new(
                    Token::SingleQuotedString(index),
                    item.span,
                ));
                out.push(TokenWithSpan::new(Token::RBracket, item.span));
            }
            // `0x10` is a number in ClickHouse (the tokenizer reads it as X'10', a string).
            Token::HexStringLiteral(ref digits)
                if item.span.end.column.saturating_sub(item.span.start.column)
                    == digits.len() as u64 + 2
                    && u64::from_str_radix(digits, 16).is_ok() =>
            {
                let value = u64::from_str_radix(digits, 16).unwrap_or_default();
                out.push(TokenWithSpan::new(
                    Token::Number(value.to_string(), false),
                    item.span,
                ));
            }
            Token::LBrace => {
                // `{name}` or `{a.b.c}`: a binding, never text spliced into the query.
                let mut path = Vec::new();
                let mut expect_word = true;
                let mut closed = false;
                for next in iter.by_ref() {
                    match (&next.token, expect_word) {
                        (Token::Whitespace(_), _) => {}
                        (Token::Word(word), true) => {
                            path.push(word.value.clone());
                            expect_word = false;
                        }
                        (Token::Period, false) => expect_word = true,
                        (Token::RBrace, false) => {
                            closed = true;
                            break;
                        }
                        _ => break,
                    }
                }
                if !closed || path.is_empty() {
                    return Err(QueryError::Syntax(
                        "Placeholders are written {name} or {variables.code_name}".into(),
                    ));
                }
                let index = placeholders.len();
                placeholders.push(path.join("."));
                out.push(TokenWithSpan::new(
                    Token::Word(Word {
                        value: format!("{PLACEHOLDER_PREFIX}{index}"),
                        quote_style: None,
                        keyword: datafusion::sql::sqlparser::keywords::Keyword::NoKeyword,
                    }),
                    item.span,
                ));
            }
            _ => out.push(item),
        }
    }
    Ok((out, placeholders))
}

const INTERVAL_UNITS: &[&str] = &[
    "second", "minute", "hour", "day", "week", "month", "quarter", "year",
];

/// The unit of an interval word (`days` → `DAY`), if it is one.
fn interval_unit(word: &str) -> Option<String> {
    let singular = word.to_lowercase();
    let singular = singular.strip_suffix('s').unwrap_or(&singular);
    INTERVAL_UNITS
        .contains(&singular)
        .then(|| singular.to_uppercase())
}

/// `INTERVAL '1 day'` (unit inside the string, as HogQL takes it) becomes `INTERVAL '1' DAY`,
/// which the ClickHouse dialect parses; `INTERVAL '1' DAY` and `INTERVAL 1 DAY` are left as
/// they are.
fn split_interval_strings(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let next_meaningful = |tokens: &[TokenWithSpan], from: usize| {
        (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
    };
    let mut out = Vec::with_capacity(tokens.len());
    let mut index = 0;
    while index < tokens.len() {
        let is_interval = matches!(&tokens[index].token, Token::Word(word)
            if word.keyword == datafusion::sql::sqlparser::keywords::Keyword::INTERVAL);
        out.push(tokens[index].clone());
        index += 1;
        if !is_interval {
            continue;
        }
        let Some(literal) = next_meaningful(&tokens, index) else {
            continue;
        };
        let Token::SingleQuotedString(text) = &tokens[literal].token else {
            continue;
        };
        let unit_follows = next_meaningful(&tokens, literal + 1).is_some_and(|after| {
            matches!(&tokens[after].token, Token::Word(word) if interval_unit(&word.value).is_some())
        });
        let mut parts = text.split_whitespace();
        let (Some(amount), Some(unit), None) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Some(unit) = interval_unit(unit) else {
            continue;
        };
        if unit_follows || amount.parse::<f64>().is_err() {
            continue;
        }
        let span = tokens[literal].span;
        out.extend(tokens[index..literal].iter().cloned());
        out.push(TokenWithSpan::new(
            Token::SingleQuotedString(amount.to_owned()),
            span,
        ));
        out.push(TokenWithSpan::new(
            Token::Whitespace(datafusion::sql::sqlparser::tokenizer::Whitespace::Space),
            span,
        ));
        out.push(TokenWithSpan::new(Token::make_keyword(&unit), span));
        index = literal + 1;
    }
    out
}

/// The digits of `.N` (a tuple element access), if `text` is one.
fn tuple_index(text: &str) -> Option<&str> {
    text.strip_prefix('.')
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

fn is_dollar_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next() == Some('$')
        && chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && name[1..]
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

fn quoted_word(name: &str) -> Token {
    Token::Word(Word {
        value: name.to_owned(),
        quote_style: Some('`'),
        keyword: datafusion::sql::sqlparser::keywords::Keyword::NoKeyword,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_identifiers_and_placeholders() {
        let parsed =
            parse("select properties.$browser, $session_id from events where event == {name}")
                .unwrap();
        let text = parsed.query.to_string();
        assert!(text.contains("properties.`$browser`"), "{text}");
        assert!(text.contains("`$session_id`"), "{text}");
        assert!(text.contains("event = __placeholder_0"), "{text}");
        assert_eq!(parsed.placeholders, vec!["name".to_owned()]);
    }

    #[test]
    fn intervals_with_the_unit_inside_the_string() {
        for (sql, expected) in [
            ("select now() - interval '1 day'", "INTERVAL '1' DAY"),
            ("select now() - INTERVAL '7 days'", "INTERVAL '7' DAY"),
            ("select now() - interval '2' hour", "INTERVAL '2' HOUR"),
            ("select now() - interval 3 month", "INTERVAL 3 MONTH"),
        ] {
            let text = parse(sql).unwrap().query.to_string();
            assert!(text.contains(expected), "{sql}: {text}");
        }
    }

    #[test]
    fn refuses_other_statements() {
        for sql in [
            "drop table events",
            "insert into events values (1)",
            "select 1; select 2",
            "",
            "set x = 1",
        ] {
            assert!(parse(sql).is_err(), "{sql}");
        }
    }
}
