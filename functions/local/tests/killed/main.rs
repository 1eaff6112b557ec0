//! The `analytics` binary killed (SIGKILL) mid-work and served again on the same data dir: one test
//! binary, since each target links the whole product.

mod capture;
mod import;
mod job;
mod support;
