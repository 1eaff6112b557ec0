//! ClickHouse syntax that sqlparser's ClickHouse dialect does not parse, rewritten on tokens into
//! the SQL it means before parsing:
//! - `WITH <expression> AS name` (an alias usable anywhere in the query, not a table):
//!   every later `name` becomes `(<expression>)`;
//! - `... LIMIT n BY keys LIMIT m`: the second LIMIT applies to the LIMIT BY's result, so the
//!   query becomes `SELECT * FROM (... LIMIT n BY keys) LIMIT m`;
//! - `LIMIT n OFFSET m BY keys` and `LIMIT m, n BY keys`: sqlparser reads `OFFSET m LIMIT n BY`.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

fn is_keyword(token: &Token, keyword: Keyword) -> bool {
    matches!(token, Token::Word(word) if word.keyword == keyword && word.quote_style.is_none())
}

fn meaningful(token: &Token) -> bool {
    !matches!(token, Token::Whitespace(_))
}

fn depth_change(token: &Token) -> i32 {
    match token {
        Token::LParen | Token::LBracket => 1,
        Token::RParen | Token::RBracket => -1,
        _ => 0,
    }
}

fn plain(token: Token) -> TokenWithSpan {
    TokenWithSpan::wrap(token)
}

/// `WITH 5 AS n, x AS (SELECT ...) SELECT n * 2 FROM x` → `WITH x AS (SELECT ...) SELECT (5) * 2
/// FROM x`. Only a leading WITH is read; tables (`name AS (query)`) stay as they are.
pub fn inline_with_aliases(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let Some(with) = tokens.iter().position(|t| meaningful(&t.token)) else {
        return tokens;
    };
    if !is_keyword(&tokens[with].token, Keyword::WITH) {
        return tokens;
    }
    // The WITH items: comma-separated at depth 0, up to the SELECT at depth 0.
    let mut items: Vec<(usize, usize)> = Vec::new();
    let mut depth = 0;
    let mut start = with + 1;
    let mut end = None;
    for (index, item) in tokens.iter().enumerate().skip(with + 1) {
        depth += depth_change(&item.token);
        if depth != 0 {
            continue;
        }
        if matches!(item.token, Token::Comma) {
            items.push((start, index));
            start = index + 1;
        } else if is_keyword(&item.token, Keyword::SELECT) {
            items.push((start, index));
            end = Some(index);
            break;
        }
    }
    let Some(end) = end else {
        return tokens;
    };
    let mut aliases: Vec<(String, Vec<TokenWithSpan>)> = Vec::new();
    let mut tables: Vec<&[TokenWithSpan]> = Vec::new();
    for &(from, to) in &items {
        let item = &tokens[from..to];
        let significant: Vec<usize> = (0..item.len())
            .filter(|&i| meaningful(&item[i].token))
            .collect();
        let alias = match significant.as_slice() {
            [.., before, last]
                if is_keyword(&item[*before].token, Keyword::AS)
                    && matches!(&item[*last].token, Token::Word(_))
                    && significant.len() >= 3 =>
            {
                match &item[*last].token {
                    Token::Word(word) => Some((word.value.clone(), item[..*before].to_vec())),
                    _ => None,
                }
            }
            _ => None,
        };
        match alias {
            Some((name, expr)) => {
                let expr = substitute(&expr, &aliases);
                aliases.push((name, expr));
            }
            None => tables.push(item),
        }
    }
    if aliases.is_empty() {
        return tokens;
    }
    let mut out: Vec<TokenWithSpan> = tokens[..with].to_vec();
    if !tables.is_empty() {
        out.push(tokens[with].clone());
        for (index, table) in tables.iter().enumerate() {
            if index > 0 {
                out.push(plain(Token::Comma));
            }
            out.extend(table.iter().cloned());
        }
        out.push(plain(Token::Whitespace(Whitespace::Space)));
    }
    out.extend(substitute(&tokens[end..], &aliases));
    out
}

/// `tokens` with each reference to an alias replaced by its parenthesised expression.
/// `aliases` are in the WITH's order, each already holding the ones before it.
fn substitute(
    tokens: &[TokenWithSpan],
    aliases: &[(String, Vec<TokenWithSpan>)],
) -> Vec<TokenWithSpan> {
    let mut out = Vec::with_capacity(tokens.len());
    for (index, item) in tokens.iter().enumerate() {
        let replacement = match &item.token {
            Token::Word(word) if is_reference(tokens, index) => {
                aliases.iter().find(|(name, _)| *name == word.value)
            }
            _ => None,
        };
        match replacement {
            Some((_, expr)) => {
                out.push(plain(Token::LParen));
                out.extend(expr.iter().cloned());
                out.push(plain(Token::RParen));
            }
            None => out.push(item.clone()),
        }
    }
    out
}

/// Whether the word at `index` names a value: not a qualified part (`t.n`), not a function
/// (`n(`), not an alias being defined (`AS n`).
fn is_reference(tokens: &[TokenWithSpan], index: usize) -> bool {
    let previous = tokens[..index].iter().rev().find(|t| meaningful(&t.token));
    let next = tokens[index + 1..].iter().find(|t| meaningful(&t.token));
    let after_dot = previous.is_some_and(|t| matches!(t.token, Token::Period));
    let after_as = previous.is_some_and(|t| is_keyword(&t.token, Keyword::AS));
    let before_call_or_dot =
        next.is_some_and(|t| matches!(t.token, Token::LParen | Token::Period | Token::Arrow));
    !(after_dot || after_as || before_call_or_dot)
}

/// `q LIMIT n BY keys LIMIT m [OFFSET k]` → `SELECT * FROM (q LIMIT n BY keys) LIMIT m [OFFSET k]`.
pub fn nest_limit_after_limit_by(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut depth = 0;
    let mut seen_limit = false;
    let mut seen_by = false;
    let mut split = None;
    for (index, item) in tokens.iter().enumerate() {
        depth += depth_change(&item.token);
        if depth != 0 {
            continue;
        }
        if is_keyword(&item.token, Keyword::LIMIT) {
            if seen_by {
                split = Some(index);
                break;
            }
            seen_limit = true;
        } else if seen_limit && is_keyword(&item.token, Keyword::BY) {
            seen_by = true;
        }
    }
    let Some(split) = split else {
        return tokens;
    };
    let mut out = Vec::with_capacity(tokens.len() + 8);
    for token in [
        Token::make_keyword("SELECT"),
        Token::Whitespace(Whitespace::Space),
        Token::Mul,
        Token::Whitespace(Whitespace::Space),
        Token::make_keyword("FROM"),
        Token::Whitespace(Whitespace::Space),
        Token::LParen,
    ] {
        out.push(plain(token));
    }
    out.extend(tokens[..split].iter().cloned());
    out.push(plain(Token::RParen));
    out.push(plain(Token::Whitespace(Whitespace::Space)));
    out.extend(tokens[split..].iter().cloned());
    out
}

/// ClickHouse's offsets of a LIMIT BY, `LIMIT n OFFSET m BY keys` and `LIMIT m, n BY keys`, in
/// the order sqlparser reads: `OFFSET m LIMIT n BY keys`.
pub fn limit_by_offsets(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut depth = 0;
    // The last LIMIT seen (its index and depth), and where its count and offset split.
    let mut limit: Option<(usize, i32)> = None;
    let mut split = None;
    for (index, item) in tokens.iter().enumerate() {
        let at = depth;
        depth += depth_change(&item.token);
        if is_keyword(&item.token, Keyword::LIMIT) {
            limit = Some((index, at));
            split = None;
            continue;
        }
        let Some((start, limit_depth)) = limit else {
            continue;
        };
        if at != limit_depth {
            if at < limit_depth {
                limit = None;
            }
            continue;
        }
        if split.is_none()
            && (is_keyword(&item.token, Keyword::OFFSET) || matches!(item.token, Token::Comma))
        {
            split = Some((index, matches!(item.token, Token::Comma)));
        } else if is_keyword(&item.token, Keyword::BY) {
            let Some((split, comma)) = split else {
                limit = None;
                continue;
            };
            let first = &tokens[start + 1..split];
            let second = &tokens[split + 1..index];
            let (count, offset) = if comma {
                (second, first)
            } else {
                (first, second)
            };
            let mut out = tokens[..start].to_vec();
            out.push(plain(Token::make_keyword("OFFSET")));
            out.push(plain(Token::Whitespace(Whitespace::Space)));
            out.extend(offset.iter().cloned());
            out.push(plain(Token::Whitespace(Whitespace::Space)));
            out.push(tokens[start].clone());
            out.extend(count.iter().cloned());
            out.push(plain(Token::Whitespace(Whitespace::Space)));
            out.extend(tokens[index..].iter().cloned());
            // Another LIMIT BY (in a subquery or a UNION) may follow.
            return limit_by_offsets(out);
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use crate::parse::parse;

    fn text(sql: &str) -> String {
        parse(sql).unwrap().query.to_string()
    }

    #[test]
    fn with_expression_aliases_are_inlined() {
        assert_eq!(text("WITH 5 AS n SELECT n * 2"), "SELECT (5) * 2");
        assert_eq!(
            text("WITH 5 AS n, n + 1 AS m, t AS (SELECT 1 AS a) SELECT m, a AS n FROM t"),
            "WITH t AS (SELECT 1 AS a) SELECT ((5) + 1), a AS n FROM t"
        );
        assert_eq!(
            text("WITH t AS (SELECT 1 AS a) SELECT a FROM t"),
            "WITH t AS (SELECT 1 AS a) SELECT a FROM t"
        );
    }

    #[test]
    fn a_limit_after_limit_by_nests_the_query() {
        assert_eq!(
            text("SELECT a FROM t ORDER BY a LIMIT 1 BY a LIMIT 2"),
            "SELECT * FROM (SELECT a FROM t ORDER BY a LIMIT 1 BY a) LIMIT 2"
        );
        assert_eq!(
            text("SELECT a FROM t LIMIT 2 BY a"),
            "SELECT a FROM t LIMIT 2 BY a"
        );
        for sql in [
            "SELECT a FROM t LIMIT 2 OFFSET 1 BY a",
            "SELECT a FROM t LIMIT 1, 2 BY a",
        ] {
            assert_eq!(text(sql), "SELECT a FROM t LIMIT 2 OFFSET 1 BY a", "{sql}");
        }
        assert_eq!(
            text("SELECT * FROM (SELECT a FROM t LIMIT 1, 2 BY a) LIMIT 2 OFFSET 1 BY a LIMIT 3"),
            "SELECT * FROM (SELECT * FROM (SELECT a FROM t LIMIT 2 OFFSET 1 BY a) LIMIT 2 OFFSET 1 BY a) LIMIT 3"
        );
    }
}
