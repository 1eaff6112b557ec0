//! Actions (PostHog's `/actions/`): named sets of steps, each matching events by name, URL,
//! element selector, text, href and properties. Their model, validation, Store repository and
//! JSON (PostHog's serializers, also what surveys show of the actions they name); the HTTP
//! lives in `functions/actions`, the SQL an action compiles to in `insights::actions`.

pub mod body;
pub mod model;
pub mod render;
pub mod repository;
pub mod selector;

pub use model::{Action, Matching, Step};
