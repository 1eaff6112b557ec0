//! The engine's SQL answered end to end: one test binary, since each target links DataFusion.

mod funnel_udaf;
mod sql_dates_and_errors;
mod sql_grouping;
mod sql_lambdas;
mod sql_time_zones;
