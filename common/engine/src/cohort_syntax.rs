//! HogQL's `x [NOT] IN COHORT <id>` and `x [NOT] IN COHORT 'name'`, as tokens. The query service
//! finds the cohorts a text names ([`references`]), loads them and compiles each one's membership
//! over [`SUBJECT`] into `Bindings::cohorts`; the parser reads the operator as
//! `x [NOT] IN (__cohort__(<id or name>))` ([`mark`]), and `cohort_expand` puts the membership
//! there, `x` in place of the subject, before the rewrite checks and rewrites the whole query.

use datafusion::sql::sqlparser::dialect::ClickHouseDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace, Word};

/// The person id column a membership condition is compiled over, replaced by the operand.
pub const SUBJECT: &str = "__cohort_subject";
/// The function the parser reads `IN COHORT`'s operand as (see `cohort_expand`).
pub(crate) const MARKER: &str = "__cohort__";

/// A cohort as a query names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum CohortRef {
    Id(i64),
    Name(String),
}

impl CohortRef {
    /// Its key in `Bindings::cohorts`.
    pub fn key(&self) -> String {
        match self {
            Self::Id(id) => id.to_string(),
            Self::Name(name) => format!("name:{name}"),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Id(id) => format!("Cohort with id {id} does not exist"),
            Self::Name(name) => format!("Could not find a cohort with the name '{name}'"),
        }
    }
}

/// The `IN COHORT` operands of `text`, in order (none when it does not tokenize: parsing will
/// say why).
pub fn references(text: &str) -> Vec<CohortRef> {
    // Every query's text comes here: most name no cohort, and are not tokenized again.
    if !text.to_ascii_lowercase().contains("cohort") {
        return Vec::new();
    }
    let Ok(tokens) = Tokenizer::new(&ClickHouseDialect {}, text).tokenize_with_location() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut index = 0;
    while index < tokens.len() {
        match operand_after(&tokens, index) {
            Some((reference, _)) => {
                found.push(reference);
                index += 1;
            }
            None => index += 1,
        }
    }
    found
}

/// At `IN COHORT <operand>` starting at `index`: the operand and the index of its token.
fn operand_after(tokens: &[TokenWithSpan], index: usize) -> Option<(CohortRef, usize)> {
    let is_word = |token: &Token, keyword: Option<Keyword>, text: &str| match token {
        Token::Word(word) if word.quote_style.is_none() => match keyword {
            Some(keyword) => word.keyword == keyword,
            None => word.value.eq_ignore_ascii_case(text),
        },
        _ => false,
    };
    if !is_word(&tokens[index].token, Some(Keyword::IN), "") {
        return None;
    }
    let next = |from: usize| {
        (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
    };
    let cohort = next(index + 1)?;
    if !is_word(&tokens[cohort].token, None, "cohort") {
        return None;
    }
    let operand = next(cohort + 1)?;
    let reference = match &tokens[operand].token {
        Token::Number(text, _) => CohortRef::Id(text.parse().ok()?),
        Token::SingleQuotedString(name) => CohortRef::Name(name.clone()),
        _ => return None,
    };
    Some((reference, operand))
}

/// `IN COHORT <operand>` → `IN (__cohort__(<operand>))`.
pub fn mark(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut index = 0;
    while index < tokens.len() {
        let Some((_, operand)) = operand_after(&tokens, index) else {
            out.push(tokens[index].clone());
            index += 1;
            continue;
        };
        out.push(tokens[index].clone());
        for token in [
            Token::Whitespace(Whitespace::Space),
            Token::LParen,
            Token::Word(Word {
                value: MARKER.into(),
                quote_style: None,
                keyword: Keyword::NoKeyword,
            }),
            Token::LParen,
        ] {
            out.push(TokenWithSpan::wrap(token));
        }
        out.push(tokens[operand].clone());
        out.push(TokenWithSpan::wrap(Token::RParen));
        out.push(TokenWithSpan::wrap(Token::RParen));
        index = operand + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_the_marked_text() {
        let text = "select count() from events where person_id in cohort 5 \
                    and person_id not IN COHORT 'Power users' and x in (1)";
        assert_eq!(
            references(text),
            vec![CohortRef::Id(5), CohortRef::Name("Power users".into())]
        );
        let parsed = crate::parse::parse(text).unwrap().query.to_string();
        assert!(
            parsed.contains("person_id IN (__cohort__(5))")
                && parsed.contains("person_id NOT IN (__cohort__('Power users'))"),
            "{parsed}"
        );
    }
}
