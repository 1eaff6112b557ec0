//! `analytics import`: PostHog-shaped NDJSON (plain or gzip) into a project's events table,
//! streamed in bounded memory, with a progress bar and a summary.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, bail};
use chrono::{DateTime, NaiveDateTime, Utc};
use common::models::Project;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

/// Lines parsed and handed to the table at a time.
const CHUNK_LINES: usize = 50_000;

/// Counts the bytes read from the file itself (compressed, when it is), for the progress bar.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn open(path: &Path, read: Arc<AtomicU64>) -> anyhow::Result<Box<dyn BufRead + Send>> {
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut magic = [0u8; 2];
    let gzip = file.read(&mut magic)? == 2 && magic == [0x1f, 0x8b];
    let file = File::open(path)?;
    let counting = Counting { inner: file, read };
    Ok(if gzip {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(counting),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, counting))
    })
}

/// Exports write properties as JSON text and timestamps the ClickHouse way; capture takes objects
/// and ISO 8601.
fn adapt(mut event: Value) -> Value {
    if let Some(object) = event.as_object_mut() {
        for key in ["properties", "person_properties"] {
            if let Some(Value::String(text)) = object.get(key)
                && let Ok(parsed) = serde_json::from_str::<Value>(text)
            {
                object.insert(key.to_owned(), parsed);
            }
        }
        if let Some(Value::String(text)) = object.get("timestamp")
            && DateTime::parse_from_rfc3339(text).is_err()
            && let Ok(naive) = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
        {
            let iso = DateTime::<Utc>::from_naive_utc_and_offset(naive, Utc).to_rfc3339();
            object.insert("timestamp".into(), Value::String(iso));
        }
    }
    event
}

pub async fn run(data_dir: PathBuf, project: i64, file: PathBuf) -> anyhow::Result<()> {
    let state = crate::serve::state_for(data_dir).await?;
    if Project::load(state.store.as_ref(), project)
        .await?
        .is_none()
    {
        bail!("no project {project}");
    }
    let total = std::fs::metadata(&file)?.len();
    let read = Arc::new(AtomicU64::new(0));
    let mut lines = open(&file, read.clone())?;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg} ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut importer = engine::import::Importer::new(state.clone(), project).await?;
    let now = Utc::now();
    let (mut line_number, mut rejected) = (0u64, 0u64);
    let mut chunk = Vec::with_capacity(CHUNK_LINES);
    let mut text = String::new();
    loop {
        text.clear();
        let done = lines.read_line(&mut text)? == 0;
        if !done && !text.trim().is_empty() {
            line_number += 1;
            let parsed = serde_json::from_str::<Value>(&text)
                .map_err(|e| e.to_string())
                .and_then(|event| {
                    capture::normalize_one(adapt(event), now).map_err(|e| e.body.detail)
                });
            match parsed {
                Ok(event) => chunk.push(event),
                Err(reason) => {
                    rejected += 1;
                    if rejected <= 10 {
                        bar.println(format!("line {line_number}: skipped: {reason}"));
                    }
                }
            }
        }
        if chunk.len() >= CHUNK_LINES || (done && !chunk.is_empty()) {
            importer.push(&chunk).await?;
            chunk.clear();
            bar.set_position(read.load(Ordering::Relaxed));
            bar.set_message(format!("{} events", importer.rows()));
        }
        if done {
            break;
        }
    }
    let report = importer.finish().await?;
    bar.finish_and_clear();
    let peak = peak_rss_bytes();
    println!(
        "imported {} events ({} lines skipped) from {} bytes in {:.1} s: {:.0} events/s, {} commits{}",
        report.rows,
        rejected,
        total,
        report.seconds,
        report.rows as f64 / report.seconds.max(1e-9),
        report.commits,
        peak.map(|b| format!(", peak RSS {} MiB", b / (1 << 20)))
            .unwrap_or_default(),
    );
    Ok(())
}

/// The process's peak resident set size, where the OS tells it (Linux).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
