//! Property conditions (posthog-python's `match_property`). OWNER: evaluation helper.
