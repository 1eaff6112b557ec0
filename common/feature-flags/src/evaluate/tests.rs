//! Evaluation order and reasons.
