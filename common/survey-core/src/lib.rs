//! Surveys: questions shown to a project's users by posthog-js (or answered through the API),
//! their targeting through internal feature flags, and their responses, which are `survey sent`
//! events in the lake. This crate holds the model, write validation, the Store repository (a
//! survey, its name claim, its internal flags and its activity entry in one transaction), the
//! archive of responses, rendering (PostHog's API and SDK shapes) and the offline summarizer. It
//! links no query engine: the SQL over events is built by `insights::surveys`.

pub mod actions;
pub mod archive;
pub mod flags;
pub mod html;
pub mod model;
pub mod render;
pub mod repository;
pub mod summary;
pub mod validate;

pub use model::{Question, QuestionType, Survey, SurveyType};
