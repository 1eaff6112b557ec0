//! `dateRange` (absolute or relative bounds, in the project's time zone) and interval buckets.
//! OWNER: the trends helper. Signatures are shared by trends, funnels and retention.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::{Context, Invalid};

/// A bucket size (`interval` of insights, `period` of retention).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    Minute,
    Hour,
    Day,
    Week,
    Month,
}

/// Resolved bounds, as instants: `from <= timestamp <= to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// Resolves a node's `dateRange` (`attr` names it in errors). TODO(trends helper).
pub fn resolve(
    _date_range: Option<&Value>,
    _interval: Interval,
    _ctx: &Context,
    attr: &str,
) -> Result<Range, Invalid> {
    Err(Invalid::new(attr, "dateRange is not implemented yet"))
}
