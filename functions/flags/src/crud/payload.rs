//! A flag as PostHog's FeatureFlagSerializer shows it: the rendering lives in
//! `feature_flags::render`, shared with the experiments family.

pub use feature_flags::render::{Creators, flag};
