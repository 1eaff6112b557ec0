//! Property matching edge cases.
