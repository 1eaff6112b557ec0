//! PostHog's bucketing hashes (reference 3.2). OWNER: evaluation helper.
