//! What the engines the benches compare with share: the Python that runs their scripts
//! (`bench/scripts/`, `--python`), running one with a JSON request and reading its JSON report,
//! finding a query's entry in that report, and whether two answers agree on their numbers.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

/// The scripts the benches run: `bench/scripts/` of the checkout this binary was built from.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts");

/// The Python that runs the other engines' side of a bench.
#[derive(Debug, Clone, clap::Args)]
pub struct Python {
    /// Python with the `duckdb`, `pyarrow` and `chdb` packages, for example `.venv/bin/python`
    /// (which `scripts/test` creates).
    #[arg(
        long = "python",
        env = "ANALYTICS_BENCH_PYTHON",
        default_value = "python3"
    )]
    program: PathBuf,
}

impl Python {
    /// Whether `module` imports in this Python (a missing package turns an engine's side off
    /// before the bench prepares anything for it).
    pub(super) async fn has_module(&self, module: &str) -> bool {
        let program = self.program.clone();
        let module = module.to_owned();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(program)
                .args(["-c", &format!("import {module}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
        .await
        .unwrap_or(false)
    }
}

/// Runs `script` of `bench/scripts/` with `python`, `input` as JSON on stdin, and returns the
/// JSON object it prints, or its `error` as an error.
pub(super) async fn run_script(
    script: &str,
    python: &Python,
    input: &Value,
) -> anyhow::Result<Value> {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let script = Path::new(SCRIPTS).join(script);
    if !script.exists() {
        bail!("{} not found", script.display());
    }
    let python = python.program.clone();
    let input = input.to_string();
    println!("running {} {}", python.display(), script.display());
    let name = script.display().to_string();
    let output = tokio::task::spawn_blocking(move || -> anyhow::Result<std::process::Output> {
        let mut child = Command::new(&python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot run {}", python.display()))?;
        child
            .stdin
            .take()
            .context("no stdin")?
            .write_all(input.as_bytes())?;
        Ok(child.wait_with_output()?)
    })
    .await??;
    if !output.status.success() {
        bail!("{name} failed ({})", output.status);
    }
    let report: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("{name} printed no JSON"))?;
    if let Some(error) = report["error"].as_str() {
        bail!("{error}");
    }
    Ok(report)
}

/// The entry of a script's report (`results`) for the query `name`.
pub(super) fn result_of<'a>(report: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    report?["results"]
        .as_array()?
        .iter()
        .find(|r| r["name"].as_str() == Some(name))
}

/// How far two answers' numbers are apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Agreement {
    /// The same numbers (to 1e-6 relative: float sums add in another order).
    Same,
    /// Within `MAX_CLOSE` relative, the largest gap given: an approximate aggregate
    /// (ClickHouse's `uniq` and `quantile` are estimates; ours are exact).
    Close(f64),
    /// Another shape, or numbers further apart.
    Differ,
}

impl Agreement {
    /// The largest relative gap still reported as close.
    const MAX_CLOSE: f64 = 0.02;

    /// How `ours` and `theirs` agree, row by row (labels and timestamps are spelled differently
    /// by the engines, and ties may order labels differently, so only numbers are compared).
    pub(super) fn of(ours: &Value, theirs: &Value) -> Agreement {
        let (Some(ours), Some(theirs)) = (ours.as_array(), theirs.as_array()) else {
            return Agreement::Differ;
        };
        if ours.len() != theirs.len() {
            return Agreement::Differ;
        }
        let mut widest = 0.0_f64;
        for (a, b) in ours.iter().zip(theirs) {
            let (Some(a), Some(b)) = (a.as_array(), b.as_array()) else {
                return Agreement::Differ;
            };
            if a.len() != b.len() {
                return Agreement::Differ;
            }
            for (x, y) in a.iter().zip(b) {
                if let (Some(x), Some(y)) = (x.as_f64(), y.as_f64()) {
                    let gap = (x - y).abs();
                    if gap > 1e-9 {
                        widest = widest.max(gap / x.abs().max(y.abs()));
                    }
                }
            }
        }
        match widest {
            w if w <= 1e-6 => Agreement::Same,
            w if w <= Self::MAX_CLOSE => Agreement::Close(w),
            _ => Agreement::Differ,
        }
    }

    /// "yes", "~0.31%" or "NO".
    pub(super) fn label(self) -> String {
        match self {
            Agreement::Same => "yes".to_owned(),
            Agreement::Close(gap) => format!("~{:.2}%", gap * 100.0),
            Agreement::Differ => "NO".to_owned(),
        }
    }
}

/// Whether two answers agree on their numbers (to 1e-6 relative), row by row.
pub(super) fn same_numbers(ours: &Value, theirs: &Value) -> bool {
    Agreement::of(ours, theirs) == Agreement::Same
}

/// Bytes as MiB for a report line, "?" when unknown.
pub(super) fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("?".to_owned(), |b| format!("{} MiB", b / (1 << 20)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn agreement_compares_numbers_only() {
        let ours = json!([["Chrome", 100, 2.5], ["Safari", 50, 1.0]]);
        assert_eq!(
            Agreement::of(&ours, &json!([["a", 100, 2.5], ["b", 50, 1.0]])),
            Agreement::Same
        );
        assert!(matches!(
            Agreement::of(&ours, &json!([["a", 101, 2.5], ["b", 50, 1.0]])),
            Agreement::Close(gap) if (gap - 1.0 / 101.0).abs() < 1e-12
        ));
        assert_eq!(
            Agreement::of(&ours, &json!([["a", 200, 2.5], ["b", 50, 1.0]])),
            Agreement::Differ
        );
        assert_eq!(
            Agreement::of(&ours, &json!([["a", 100, 2.5]])),
            Agreement::Differ
        );
        assert!(same_numbers(&json!([]), &json!([])));
    }
}
