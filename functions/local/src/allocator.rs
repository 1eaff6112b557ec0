//! How long mimalloc keeps freed pages before handing them back to the OS.
//!
//! By default it returns them after 10 ms. An import or a query frees and reallocates batches
//! of tens of megabytes every few milliseconds, so each batch faulted in freshly zeroed pages:
//! a fifth of an import's CPU time was the kernel clearing them. A second's delay keeps them
//! for the next batch, and an idle process still shrinks back after it.
//!
//! mimalloc reads its options when the process loads, and setting one from Rust afterwards
//! takes an `unsafe` FFI call, which this workspace forbids. So the binary starts itself again
//! with the option in its environment; `MIMALLOC_PURGE_DELAY` set by the user wins.

use std::ffi::OsStr;

const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";
const PURGE_DELAY_MS: &str = "1000";

/// Returns only when the process already runs with the option (or cannot start itself again).
pub fn start_with_options() {
    if std::env::var_os(PURGE_DELAY).is_some() {
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut args = std::env::args_os();
        let name = args.next().unwrap_or_else(|| exe.clone().into_os_string());
        // `exec` replaces this process (same pid, same stdio) and returns only on failure, in
        // which case the default delay is merely slower.
        let _failed = std::process::Command::new(&exe)
            .arg0(&name)
            .args(args)
            .env(PURGE_DELAY, OsStr::new(PURGE_DELAY_MS))
            .exec();
    }
}
