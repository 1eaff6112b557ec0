//! How mimalloc handles the pages it takes from the OS.
//!
//! How long it keeps freed pages: by default it returns them after 10 ms. An import or a query
//! frees and reallocates batches of tens of megabytes every few milliseconds, so each batch
//! faulted in freshly zeroed pages: a fifth of an import's CPU time was the kernel clearing
//! them. A second's delay keeps them for the next batch, and an idle process still shrinks back
//! after it.
//!
//! Transparent huge pages: mimalloc asks for them by default, and each first touch of one makes
//! the kernel clear 2 MB at once, also for the tail of a batch's buffer that is never used. An
//! import of 2M events spent 1.7-2.4 s of system CPU with them and 0.9 s without, and finished
//! in 5.7 s instead of 6.3-6.5 s; queries measured no slower, with a lower peak.
//!
//! An import holds a day of rows while the next one is read, and a second's delay kept the freed
//! pages of both: 10M events peaked at 969-996 MiB with it and 809-817 MiB with 100 ms, at the
//! same speed (117,000 events/s in each of two interleaved runs). So `import` keeps them 100 ms.
//!
//! mimalloc reads its options when the process loads, and setting one from Rust afterwards
//! takes an `unsafe` FFI call, which this workspace forbids. So the binary starts itself again
//! with the options in its environment; an option the user set wins.

use std::ffi::OsStr;

/// mimalloc's options this binary runs with, unless the environment sets them: milliseconds
/// freed pages are kept, and no transparent huge pages.
fn options(command: Option<&str>) -> [(&'static str, &'static str); 2] {
    let purge_delay = if command == Some("import") {
        "100"
    } else {
        "1000"
    };
    [
        ("MIMALLOC_PURGE_DELAY", purge_delay),
        ("MIMALLOC_ALLOW_THP", "0"),
    ]
}

/// Returns only when the process already runs with the options (or cannot start itself again).
pub fn start_with_options() {
    let command = std::env::args().nth(1);
    let missing: Vec<(&str, &str)> = options(command.as_deref())
        .into_iter()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .collect();
    if missing.is_empty() {
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
        // which case mimalloc's defaults are merely slower.
        let _failed = std::process::Command::new(&exe)
            .arg0(&name)
            .args(args)
            .envs(
                missing
                    .iter()
                    .map(|(name, value)| (name, OsStr::new(value))),
            )
            .exec();
    }
}
