//! The dialect's errors: what the user did wrong (a 400 with PostHog's code) and failures of our
//! own (a 500 whose cause is logged), and DataFusion's errors sorted into the two.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use datafusion::common::DataFusionError;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The text does not parse.
    #[error("{0}")]
    Syntax(String),
    /// It parses but is not a valid query for this project (unknown table or function...).
    #[error("{0}")]
    Query(String),
    #[error(
        "Query has hit the max execution time before completing. See our docs for how to improve your query performance. You may need to materialize."
    )]
    Timeout,
    #[error(
        "Query has reached the max memory limit before completing. See our docs for how to improve your query performance. You may need to materialize."
    )]
    Memory,
    #[error("Query was cancelled")]
    Cancelled,
    /// The query needs the cluster (it asked for it), which cannot be reached now: a 503.
    #[error("{0}")]
    ClusterUnavailable(String),
    /// A structured node that cannot be compiled: the field and what is wrong with it.
    #[error("{detail}")]
    Invalid { attr: String, detail: String },
    /// A failure on our side (storage, DataFusion, a broken invariant): a 500 whose cause is
    /// logged, never shown.
    #[error(transparent)]
    Internal(InternalCause),
}

impl QueryError {
    /// An internal failure caused by `cause` (a typed error, whose sources are kept, or a message).
    pub fn internal(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        QueryError::Internal(InternalCause::new(cause))
    }

    /// PostHog's `code` for the 400s.
    pub fn code(&self) -> &'static str {
        match self {
            QueryError::Syntax(_) => "hogql_syntax_error",
            _ => "hogql_query_error",
        }
    }
}

/// The cause of a [`QueryError::Internal`], shared so that the error answered to the caller
/// (an `ApiError`, cloned from it) and the query log can both keep it. Transparent: it shows and
/// chains as the error it wraps.
#[derive(Debug, Clone)]
pub struct InternalCause(Arc<dyn Error + Send + Sync>);

impl InternalCause {
    pub fn new(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        Self(Arc::from(cause.into()))
    }
}

impl fmt::Display for InternalCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Error for InternalCause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

impl From<&str> for InternalCause {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl From<String> for InternalCause {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

/// DataFusion's errors, sorted into what the user did and what went wrong on our side. The
/// cause may be wrapped (an optimizer rule's `Context`, `Shared` across partitions, `External`
/// from a function), so the whole chain is looked at: a bad regular expression, a cast of a
/// constant that cannot convert, a division by zero are the query's fault (400s); only failures
/// of our own (I/O, storage, internal invariants) are 500s.
pub(crate) fn classify(error: DataFusionError) -> QueryError {
    let text = error.to_string();
    let mut current: Option<&(dyn Error + 'static)> = Some(&error);
    while let Some(cause) = current {
        let exhausted = matches!(
            cause.downcast_ref::<DataFusionError>(),
            Some(DataFusionError::ResourcesExhausted(_))
        ) || matches!(
            cause.downcast_ref::<datafusion::arrow::error::ArrowError>(),
            Some(datafusion::arrow::error::ArrowError::MemoryError(_))
        );
        if exhausted {
            // The answer says only that memory ran out; the operator needs which operator.
            tracing::warn!(cause = %text, "query ran out of memory");
            return QueryError::Memory;
        }
        current = cause.source();
    }
    if let Some(message) = regex_message(&text) {
        return QueryError::Query(message);
    }
    if crate::remote::Unreachable::is(&error) {
        return QueryError::ClusterUnavailable(error.find_root().to_string());
    }
    let root = error.find_root();
    let user_error = match root {
        DataFusionError::Plan(_) | DataFusionError::SchemaError(_, _) => {
            Some(QueryError::Query(clean(&root.to_string())))
        }
        DataFusionError::SQL(e, _) => Some(QueryError::Query(clean(&e.to_string()))),
        DataFusionError::NotImplemented(message)
            if message.contains("does not support logical expression") =>
        {
            // The planner's debug print of the expression means nothing to the user.
            Some(QueryError::Query(
                "Not supported: a subquery (IN, EXISTS) in this position; use it in the select list, WHERE or HAVING".into(),
            ))
        }
        DataFusionError::NotImplemented(message) => {
            Some(QueryError::Query(format!("Not supported: {message}")))
        }
        DataFusionError::Execution(message) => Some(QueryError::Query(clean(message))),
        DataFusionError::ArrowError(e, _) => arrow_error(e),
        DataFusionError::External(inner) => inner
            .downcast_ref::<datafusion::arrow::error::ArrowError>()
            .and_then(arrow_error),
        _ => None,
    };
    // Ours: the whole DataFusion error, wrappers and all, goes to the log.
    user_error.unwrap_or_else(|| QueryError::internal(error))
}

/// Arrow's errors: bad values (casts, arithmetic, parsing, arguments) are the query's fault
/// (`None`: ours).
fn arrow_error(error: &datafusion::arrow::error::ArrowError) -> Option<QueryError> {
    use datafusion::arrow::error::ArrowError;
    match error {
        ArrowError::CastError(_)
        | ArrowError::ComputeError(_)
        | ArrowError::DivideByZero
        | ArrowError::ArithmeticOverflow(_)
        | ArrowError::ParseError(_)
        | ArrowError::InvalidArgumentError(_)
        | ArrowError::NotYetImplemented(_)
        | ArrowError::JsonError(_)
        | ArrowError::CsvError(_) => Some(QueryError::Query(clean(&error.to_string()))),
        _ => None,
    }
}

/// The `regex` crate's parse error, wherever it is in a message, as one clear line:
/// "Invalid regular expression `(`: unclosed group".
fn regex_message(text: &str) -> Option<String> {
    let start = text.find("regex parse error:")?;
    let lines: Vec<&str> = text[start..].lines().map(str::trim).collect();
    let pattern = lines.get(1).copied().unwrap_or_default();
    let reason = lines
        .iter()
        .find_map(|line| line.strip_prefix("error: "))
        .unwrap_or("cannot be parsed");
    Some(format!("Invalid regular expression `{pattern}`: {reason}"))
}

/// Drops DataFusion's own prefixes, its advice to its developers and its lists of signatures,
/// and hides our internal names.
fn clean(message: &str) -> String {
    let mut text = message.to_owned();
    for prefix in [
        "Error during planning: ",
        "Schema error: ",
        "Execution error: ",
        "Arrow error: ",
        "Internal error: ",
    ] {
        text = text.replace(prefix, "");
    }
    for tail in [
        "\nThis issue was likely caused by a bug in DataFusion's code",
        "This issue was likely caused by a bug in DataFusion's code",
        " You might need to add explicit type casts",
        "\n\tCandidate functions:",
    ] {
        if let Some(at) = text.find(tail) {
            text.truncate(at);
        }
    }
    text.trim_end().replace("__events_raw", "events")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template;

    /// Whether an error of type `T` is anywhere in `error`'s chain.
    fn caused_by<T: Error + 'static>(error: &(dyn Error + 'static)) -> bool {
        let mut current = Some(error);
        while let Some(cause) = current {
            if cause.is::<T>() {
                return true;
            }
            current = cause.source();
        }
        false
    }

    #[test]
    fn our_failures_keep_their_typed_cause_and_the_querys_are_shown() {
        let io = DataFusionError::IoError(std::io::Error::other("disk gone"));
        let error = classify(DataFusionError::Context(
            "reading events".into(),
            Box::new(io),
        ));
        assert!(matches!(error, QueryError::Internal(_)), "{error:?}");
        assert!(caused_by::<std::io::Error>(&error), "{error:?}");
        // Shared, so the answer and the log can each hold it.
        let QueryError::Internal(cause) = &error else {
            unreachable!()
        };
        assert!(caused_by::<std::io::Error>(&cause.clone()));

        let error = classify(DataFusionError::Plan("No field named nope".into()));
        assert!(
            matches!(&error, QueryError::Query(message) if message == "No field named nope"),
            "{error:?}"
        );
        let error = classify(DataFusionError::ArrowError(
            Box::new(datafusion::arrow::error::ArrowError::DivideByZero),
            None,
        ));
        assert!(matches!(error, QueryError::Query(_)), "{error:?}");
    }

    #[test]
    fn messages_lose_datafusions_advice_and_signature_lists() {
        let raw = "Internal error: Function 'sum' failed to match any signature.\nThis issue was likely caused by a bug in DataFusion's code. Please help us. No function matches 'sum(Boolean)'. You might need to add explicit type casts.\n\tCandidate functions:\n\tsum(Int64)";
        assert_eq!(
            super::clean(raw),
            "Function 'sum' failed to match any signature."
        );
    }

    #[test]
    fn a_broken_template_names_itself_and_keeps_the_parser_error() {
        let error = template::expr("f(", &[]).expect_err("does not parse");
        assert!(error.to_string().starts_with("template f("), "{error}");
        assert!(
            caused_by::<datafusion::sql::sqlparser::parser::ParserError>(&error),
            "{error:?}"
        );
    }
}
