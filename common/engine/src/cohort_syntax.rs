//! HogQL's `x [NOT] IN COHORT <id>` and `x [NOT] IN COHORT 'name'`. The query service finds the
//! cohorts a text names ([`references`]), loads them and compiles each one's membership over
//! [`SUBJECT`] into `Bindings::cohorts`; the parser reads the operator as
//! `x [NOT] IN (__cohort__(<id or name>))`, and [`expand`] puts the membership there, `x` in
//! place of the subject, before the rewrite checks and rewrites the whole query.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, Query, Value, VisitMut,
    VisitorMut,
};
use datafusion::sql::sqlparser::dialect::ClickHouseDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace, Word};

use crate::{Bindings, QueryError};

/// The person id column a membership condition is compiled over, replaced by the operand.
pub const SUBJECT: &str = "__cohort_subject";
const MARKER: &str = "__cohort__";

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

    fn describe(&self) -> String {
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

/// Puts each marked cohort's membership (from `bindings`) in place of its `IN` test.
pub fn expand(query: &mut Query, bindings: &Bindings) -> Result<(), QueryError> {
    match VisitMut::visit(query, &mut Expand { bindings }) {
        ControlFlow::Break(error) => Err(error),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Expand<'a> {
    bindings: &'a Bindings,
}

impl VisitorMut for Expand<'_> {
    type Break = QueryError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<QueryError> {
        let Expr::InList {
            expr: subject,
            list,
            negated,
        } = expr
        else {
            return ControlFlow::Continue(());
        };
        let [Expr::Function(function)] = list.as_slice() else {
            return ControlFlow::Continue(());
        };
        if !matches!(function.name.0.as_slice(), [ObjectNamePart::Identifier(i)] if i.value == MARKER)
        {
            return ControlFlow::Continue(());
        }
        let operand = match &function.args {
            FunctionArguments::List(list) => match list.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))] => {
                    match &value.value {
                        Value::Number(text, _) => text.parse().ok().map(CohortRef::Id),
                        Value::SingleQuotedString(name) => Some(CohortRef::Name(name.clone())),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        };
        let Some(operand) = operand else {
            return ControlFlow::Break(QueryError::Query(
                "IN COHORT takes a cohort id or a cohort name in quotes".into(),
            ));
        };
        let Some(condition) = self.bindings.cohorts.get(&operand.key()) else {
            return ControlFlow::Break(QueryError::Query(operand.describe()));
        };
        let mut membership = match super::parse::parse(&format!("SELECT ({condition})")) {
            Ok(parsed) => match *parsed.query.body {
                datafusion::sql::sqlparser::ast::SetExpr::Select(select) => {
                    match select.projection.into_iter().next() {
                        Some(datafusion::sql::sqlparser::ast::SelectItem::UnnamedExpr(expr)) => {
                            expr
                        }
                        _ => return ControlFlow::Break(QueryError::internal("cohort membership")),
                    }
                }
                _ => return ControlFlow::Break(QueryError::internal("cohort membership")),
            },
            Err(error) => return ControlFlow::Break(error),
        };
        let _ = VisitMut::visit(
            &mut membership,
            &mut Subject {
                subject: subject.as_ref().clone(),
            },
        );
        let membership = Expr::Nested(Box::new(membership));
        *expr = if *negated {
            Expr::UnaryOp {
                op: datafusion::sql::sqlparser::ast::UnaryOperator::Not,
                expr: Box::new(membership),
            }
        } else {
            membership
        };
        ControlFlow::Continue(())
    }
}

/// Replaces [`SUBJECT`] with the tested expression.
struct Subject {
    subject: Expr,
}

impl VisitorMut for Subject {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if matches!(expr, Expr::Identifier(ident) if ident.value == SUBJECT) {
            *expr = Expr::Nested(Box::new(self.subject.clone()));
        }
        ControlFlow::Continue(())
    }
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
