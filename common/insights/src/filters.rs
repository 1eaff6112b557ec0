//! Property filters (`properties`, `fixedProperties`: a list, or an AND/OR group) as a boolean
//! expression of the dialect. OWNER: the EventsQuery helper.

use serde_json::Value;

use crate::{Context, Invalid};

/// The filters as one boolean dialect expression (`true` when there are none); `attr` names the
/// field in errors (`properties`, `series[0].properties`, ...).
pub fn expression(filters: Option<&Value>, _ctx: &Context, attr: &str) -> Result<String, Invalid> {
    match filters {
        None | Some(Value::Null) => Ok("true".into()),
        Some(Value::Array(items)) if items.is_empty() => Ok("true".into()),
        Some(_) => Err(Invalid::new(attr, "property filters are not implemented yet")),
    }
}
