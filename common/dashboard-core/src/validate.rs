//! Field checks PostHog's serializers make on an insight's or a dashboard's own fields (the
//! query node is checked by [`crate::query`], dashboard filters by the query compiler).

use common::ApiError;

/// PostHog's `CharField(max_length=400)` (insight and dashboard names, insight descriptions).
pub const MAX_NAME_CHARS: usize = 400;
/// A bound on free text (dashboard descriptions, text tiles) that keeps one item well under
/// DynamoDB's 400 KB.
pub const MAX_TEXT_CHARS: usize = 4_000;

/// Refuses `value` over `max` characters, naming `attr`.
pub fn length(attr: &str, value: Option<&str>, max: usize) -> Result<(), ApiError> {
    match value {
        Some(text) if text.chars().count() > max => Err(ApiError::field(
            attr,
            "max_length",
            format!("Ensure this field has no more than {max} characters."),
        )),
        _ => Ok(()),
    }
}

/// Tags as PostHog's `tagify` keeps them: trimmed, lower-cased, without blanks or repeats, in
/// the order given.
pub fn tags(given: &[String]) -> Result<Vec<String>, ApiError> {
    let mut tags: Vec<String> = Vec::new();
    for (index, tag) in given.iter().enumerate() {
        let tag = tag.trim().trim_matches('"').to_lowercase();
        length(&format!("tags[{index}]"), Some(&tag), MAX_NAME_CHARS)?;
        if !tag.is_empty() && !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_tidied_and_long_names_refused() {
        let given = [
            " Growth ".to_owned(),
            "growth".into(),
            "".into(),
            "\"q4\"".into(),
        ];
        assert_eq!(tags(&given).unwrap(), ["growth", "q4"]);
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        let error = length("name", Some(&long), MAX_NAME_CHARS).unwrap_err();
        assert_eq!(error.body.attr.as_deref(), Some("name"));
        assert!(length("name", None, MAX_NAME_CHARS).is_ok());
    }
}
