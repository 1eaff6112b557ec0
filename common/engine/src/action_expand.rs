//! PostHog's `matchesAction(<id>)` / `matchesAction('<name>')`: true for the events the action
//! matches. The query service finds the actions a text names ([`references`]), loads them and
//! compiles each one's condition over `events` into `Bindings::actions`; [`expand`] puts that
//! condition in place of the call before the rewrite checks and rewrites the whole query (so
//! `matchesAction` itself never reaches the function allow-list).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, Query, SelectItem,
    SetExpr, Value, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::ClickHouseDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::{Bindings, QueryError};

const FUNCTION: &str = "matchesAction";

/// An action as a query names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ActionRef {
    Id(i64),
    Name(String),
}

impl ActionRef {
    /// Its key in `Bindings::actions`.
    pub fn key(&self) -> String {
        match self {
            Self::Id(id) => id.to_string(),
            Self::Name(name) => format!("name:{name}"),
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Id(id) => format!("Action with id {id} does not exist"),
            Self::Name(name) => format!("Could not find an action with the name '{name}'"),
        }
    }
}

/// The `matchesAction(...)` operands of `text`, in order (none when it does not tokenize:
/// parsing will say why).
pub fn references(text: &str) -> Vec<ActionRef> {
    // Most texts name no action and are not tokenized again.
    if !text.to_ascii_lowercase().contains("matchesaction") {
        return Vec::new();
    }
    let Ok(tokens) = Tokenizer::new(&ClickHouseDialect {}, text).tokenize() else {
        return Vec::new();
    };
    let tokens: Vec<Token> = tokens
        .into_iter()
        .filter(|token| !matches!(token, Token::Whitespace(_)))
        .collect();
    tokens
        .windows(4)
        .filter_map(|window| match window {
            [Token::Word(word), Token::LParen, operand, Token::RParen]
                if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(FUNCTION) =>
            {
                match operand {
                    Token::Number(text, _) => text.parse().ok().map(ActionRef::Id),
                    Token::SingleQuotedString(name) => Some(ActionRef::Name(name.clone())),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

/// Puts each `matchesAction(...)` call's condition (from `bindings`) in its place.
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
        let Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        let is_call = matches!(function.name.0.as_slice(),
            [ObjectNamePart::Identifier(i)] if i.value.eq_ignore_ascii_case(FUNCTION));
        if !is_call {
            return ControlFlow::Continue(());
        }
        let operand = match &function.args {
            FunctionArguments::List(list) => match list.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))] => {
                    match &value.value {
                        Value::Number(text, _) => text.parse().ok().map(ActionRef::Id),
                        Value::SingleQuotedString(name) => Some(ActionRef::Name(name.clone())),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        };
        let Some(operand) = operand else {
            return ControlFlow::Break(QueryError::Query(
                "matchesAction takes an action id or an action name in quotes".into(),
            ));
        };
        let Some(condition) = self.bindings.actions.get(&operand.key()) else {
            return ControlFlow::Break(QueryError::Query(operand.describe()));
        };
        match condition_expr(condition) {
            Ok(condition) => {
                *expr = match condition {
                    nested @ Expr::Nested(_) => nested,
                    other => Expr::Nested(Box::new(other)),
                };
                ControlFlow::Continue(())
            }
            Err(error) => ControlFlow::Break(error),
        }
    }
}

/// The condition's text as one expression.
fn condition_expr(condition: &str) -> Result<Expr, QueryError> {
    let parsed = crate::parse::parse(&format!("SELECT ({condition})"))?;
    match *parsed.query.body {
        SetExpr::Select(select) => match select.projection.into_iter().next() {
            Some(SelectItem::UnnamedExpr(expr)) => Ok(expr),
            _ => Err(QueryError::internal("action condition")),
        },
        _ => Err(QueryError::internal("action condition")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_the_expanded_text() {
        let text = "select count() from events where matchesAction(5) or \
                    MATCHESACTION('Signed up') and not matchesAction (7)";
        assert_eq!(
            references(text),
            vec![
                ActionRef::Id(5),
                ActionRef::Name("Signed up".into()),
                ActionRef::Id(7)
            ]
        );
        let mut bindings = Bindings::default();
        bindings.actions.insert("5".into(), "event = 'a'".into());
        bindings
            .actions
            .insert("name:Signed up".into(), "(event = 'b')".into());
        let mut query = crate::parse::parse(text).unwrap().query;
        let missing = expand(&mut query, &bindings).unwrap_err();
        assert_eq!(
            missing.to_string(),
            QueryError::Query("Action with id 7 does not exist".into()).to_string()
        );
        bindings.actions.insert("7".into(), "true".into());
        let mut query = crate::parse::parse(text).unwrap().query;
        expand(&mut query, &bindings).unwrap();
        let expanded = query.to_string();
        assert!(
            expanded.contains("(event = 'a') OR ((event = 'b')) AND NOT (true)"),
            "{expanded}"
        );
    }
}
