//! Tracing setup: JSON lines in Lambda (CloudWatch), human-readable text locally. `RUST_LOG` filters.

use tracing_subscriber::EnvFilter;

/// Our own logs at info; the Delta libraries narrate every snapshot at info, so only their warnings.
const DEFAULT_FILTER: &str =
    "info,buoyant_kernel=warn,buoyant_kernel_engine=warn,deltalake_core=warn";

fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
}

pub fn init_json() {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter())
        .without_time()
        .with_current_span(false)
        .try_init();
}

pub fn init_text() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr)
        .try_init();
}
