//! Tracing setup: JSON lines in Lambda (CloudWatch), human-readable text locally. `RUST_LOG` filters.
//!
//! Every line logged while a request is served carries that request's span (`request_id`,
//! `method`, `route`, see `common::http`): as a `spans` list in JSON, as a prefix in text.
//! Panics are logged through the same subscriber, so they carry it too.

use std::backtrace::{Backtrace, BacktraceStatus};
use std::io::IsTerminal;
use std::panic::PanicHookInfo;

use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;

/// Our own logs at info; the Delta libraries narrate every snapshot at info, so only their warnings.
const DEFAULT_FILTER: &str =
    "info,buoyant_kernel=warn,buoyant_kernel_engine=warn,deltalake_core=warn";

/// `RUST_LOG`, or our default.
pub fn default_filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
}

/// Lambda's format: one JSON object a line, with every enclosing span (the Lambda invocation's,
/// then the request's) and its fields under `spans`; the current span alone would repeat the
/// innermost one.
pub fn json<W>(filter: EnvFilter, writer: W) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .without_time()
        .with_span_list(true)
        .with_current_span(false)
        .with_writer(writer)
        .finish()
}

/// The local format: human-readable lines, each prefixed with its spans and their fields;
/// colored only for a terminal (not in a file or journald).
pub fn text<W>(filter: EnvFilter, writer: W, ansi: bool) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi)
        .finish()
}

pub fn init_json() {
    let _ = json(default_filter(), std::io::stdout).try_init();
    log_panics();
}

pub fn init_text() {
    let ansi = std::io::stderr().is_terminal();
    let _ = text(default_filter(), std::io::stderr, ansi).try_init();
    log_panics();
}

/// Routes panic messages through `tracing` (one line, in the panicking request's span, with the
/// location and, under `RUST_BACKTRACE`, the backtrace) instead of raw stderr. Where no subscriber
/// would record the line, Rust's default hook still prints it.
pub fn log_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if tracing::enabled!(tracing::Level::ERROR) {
            log_panic(info);
        } else {
            default(info);
        }
    }));
}

fn log_panic(info: &PanicHookInfo<'_>) {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    let location = info
        .location()
        .map(|location| location.to_string())
        .unwrap_or_default();
    let backtrace = Backtrace::capture();
    if backtrace.status() == BacktraceStatus::Captured {
        tracing::error!(panic = message, %location, %backtrace, "panicked");
    } else {
        tracing::error!(panic = message, %location, "panicked");
    }
}
