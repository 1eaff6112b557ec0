//! `analytics import`: PostHog-shaped NDJSON (plain or gzip) into a project's events table,
//! streamed in bounded memory, with a progress bar and a summary.
//!
//! One thread reads (and inflates) the file into chunks of whole lines; one parser per core turns
//! chunks into rows; this task takes them in file order, so persons are resolved in event order,
//! and hands them to the importer, whose encoders write Parquet on every core.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc as sync_channel};

use anyhow::{Context, bail};
use chrono::{DateTime, NaiveDateTime, Utc};
use common::AppState;
use common::models::Project;
use common::staging::PropertiesProbe;
use indicatif::{ProgressBar, ProgressStyle};
use lake::rows::{EventFields, ParsedRows};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use uuid::Uuid;

/// Uncompressed bytes handed to a parser at a time (whole lines).
const CHUNK_BYTES: usize = 4 << 20;
/// A line longer than this is an error, not a reason to hold the whole file in memory.
const MAX_LINE_BYTES: usize = 256 << 20;
/// Rejected lines reported one by one before only counting them.
const REPORTED_REJECTIONS: u64 = 10;

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

fn open(path: &Path, read: Arc<AtomicU64>) -> anyhow::Result<Box<dyn Read + Send>> {
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut magic = [0u8; 2];
    let gzip = file.read(&mut magic)? == 2 && magic == [0x1f, 0x8b];
    let file = File::open(path)?;
    let counting = BufReader::with_capacity(1 << 20, Counting { inner: file, read });
    Ok(if gzip {
        Box::new(flate2::bufread::MultiGzDecoder::new(counting))
    } else {
        Box::new(counting)
    })
}

/// Whole lines of the file, and the chunk's place among the others.
struct Chunk {
    index: usize,
    bytes: Vec<u8>,
}

/// Reads `input` into chunks of whole lines (the reader thread). Buffers parsers are done with
/// come back through `spare` and are filled again: fresh ones cost a page fault (and the kernel
/// clearing the page) per 4 KiB.
fn read_chunks(
    mut input: impl Read,
    chunk_bytes: usize,
    chunks: sync_channel::SyncSender<Result<Chunk, String>>,
    spare: &sync_channel::Receiver<Vec<u8>>,
) -> Result<(), String> {
    let mut index = 0;
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut buffer = spare.try_recv().unwrap_or_default();
        buffer.clear();
        // Room for the last read past `chunk_bytes` too: the buffer never moves.
        buffer.reserve(chunk_bytes + carry.len() + (1 << 20));
        buffer.append(&mut carry);
        let mut ended = false;
        while buffer.len() < chunk_bytes || memchr::memrchr(b'\n', &buffer).is_none() {
            if buffer.len() > MAX_LINE_BYTES {
                return Err(format!(
                    "a line is longer than {} MiB",
                    MAX_LINE_BYTES >> 20
                ));
            }
            let before = buffer.len();
            buffer.resize(before + chunk_bytes.clamp(1, 1 << 20), 0);
            let n = input
                .read(&mut buffer[before..])
                .map_err(|e| format!("cannot read the file: {e}"))?;
            buffer.truncate(before + n);
            if n == 0 {
                ended = true;
                break;
            }
        }
        if !ended && let Some(end) = memchr::memrchr(b'\n', &buffer) {
            carry.extend_from_slice(&buffer[end + 1..]);
            buffer.truncate(end + 1);
        }
        if !buffer.is_empty() {
            let chunk = Chunk {
                index,
                bytes: buffer,
            };
            if chunks.send(Ok(chunk)).is_err() {
                return Ok(());
            }
            index += 1;
        }
        if ended {
            return Ok(());
        }
    }
}

/// What a parser made of one chunk.
struct Parsed {
    index: usize,
    rows: ParsedRows,
    lines: u64,
    /// (line within the chunk, reason), the first few.
    rejected: Vec<(u64, String)>,
    rejected_count: u64,
}

/// The fields of an export line the fast path reads; the rest is skipped unparsed. Strings are
/// read (and unescaped) in the one pass over the line; `Properties` is the properties' shape:
/// JSON text in exports, an object in capture payloads.
#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a, Properties: Deserialize<'de>"))]
struct ExportLine<'a, Properties> {
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    event: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    distinct_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default = "Option::default")]
    properties: Option<Properties>,
    #[serde(borrow, default)]
    elements_chain: Option<Cow<'a, str>>,
    /// Any of these sends the line down the general path.
    #[serde(rename = "$set", default)]
    set: Option<IgnoredAny>,
    #[serde(rename = "$set_once", default)]
    set_once: Option<IgnoredAny>,
    #[serde(rename = "$unset", default)]
    unset: Option<IgnoredAny>,
    #[serde(default)]
    sent_at: Option<IgnoredAny>,
    #[serde(default)]
    offset: Option<IgnoredAny>,
}

impl<'a> ExportLine<'a, Cow<'a, str>> {
    /// The line with its properties as text, whichever shape they came in; `None` when its
    /// fields do not have the types the fast path takes.
    fn read(line: &'a [u8]) -> Option<Self> {
        if let Ok(exported) = serde_json::from_slice::<Self>(line) {
            return Some(exported);
        }
        let captured = serde_json::from_slice::<ExportLine<&RawValue>>(line).ok()?;
        let properties = match captured.properties {
            Some(raw) if raw.get().starts_with('{') => Some(Cow::Borrowed(raw.get())),
            _ => return None,
        };
        Some(ExportLine {
            uuid: captured.uuid,
            event: captured.event,
            distinct_id: captured.distinct_id,
            timestamp: captured.timestamp,
            properties,
            elements_chain: captured.elements_chain,
            set: captured.set,
            set_once: captured.set_once,
            unset: captured.unset,
            sent_at: captured.sent_at,
            offset: captured.offset,
        })
    }
}

/// Exports write timestamps the ClickHouse way (`2026-11-01 10:00:00.000000`, UTC); capture
/// takes ISO 8601.
fn export_time(text: &str) -> Option<DateTime<Utc>> {
    if let Some(at) = clickhouse_time(text.as_bytes()) {
        return Some(at);
    }
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
                .ok()
                .map(|naive| naive.and_utc())
        })
}

/// `YYYY-MM-DD hh:mm:ss[.f…]`, the exports' own shape, read by position: chrono's format-string
/// parser cost more than the rest of the line's fields. Anything else (leap seconds, other
/// shapes) is left to chrono.
fn clickhouse_time(text: &[u8]) -> Option<DateTime<Utc>> {
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        text.get(range)?.iter().try_fold(0u32, |value, &byte| {
            byte.is_ascii_digit()
                .then(|| value * 10 + u32::from(byte - b'0'))
        })
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b' '), (13, b':'), (16, b':')];
    if separators
        .iter()
        .any(|&(at, byte)| text.get(at) != Some(&byte))
    {
        return None;
    }
    let nanos = match text.get(19..) {
        Some([]) => 0,
        Some([b'.', digits @ ..]) if (1..=9).contains(&digits.len()) => {
            let value = number(20..text.len())?;
            value * 10u32.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let date =
        chrono::NaiveDate::from_ymd_opt(number(0..4)? as i32, number(5..7)?, number(8..10)?)?;
    let seconds = number(17..19)?;
    if seconds > 59 {
        return None;
    }
    let time =
        chrono::NaiveTime::from_hms_nano_opt(number(11..13)?, number(14..16)?, seconds, nanos)?;
    Some(date.and_time(time).and_utc())
}

/// The common line: nothing for persons to apply, every field present and valid. Adds it and
/// says `true`; anything else is left to [`general_line`], which also names what is wrong.
fn fast_line(line: &[u8], now: DateTime<Utc>, rows: &mut ParsedRows) -> bool {
    let Some(parsed) = ExportLine::read(line) else {
        return false;
    };
    if parsed.set.is_some()
        || parsed.set_once.is_some()
        || parsed.unset.is_some()
        || parsed.sent_at.is_some()
        || parsed.offset.is_some()
    {
        return false;
    }
    let (Some(event), Some(distinct_id)) = (parsed.event, parsed.distinct_id) else {
        return false;
    };
    if event.trim().is_empty()
        || !capture::name_fits(&event)
        || lake::persons::joins_persons(&event)
        || distinct_id.trim().is_empty()
        || !capture::distinct_id_fits(&distinct_id)
    {
        return false;
    }
    let uuid = match parsed.uuid {
        None => Uuid::now_v7(),
        Some(text) => match Uuid::parse_str(&text) {
            Ok(uuid) => uuid,
            Err(_) => return false,
        },
    };
    let timestamp = match parsed.timestamp {
        None => now,
        Some(text) => match export_time(&text) {
            Some(at) => at,
            None => return false,
        },
    };
    let elements_chain = parsed.elements_chain;
    let properties = parsed.properties.unwrap_or(Cow::Borrowed("{}"));
    let Ok(probe) = PropertiesProbe::read(&properties) else {
        return false;
    };
    if probe.updates_person() {
        return false;
    }
    let session_id = probe.session_id();
    rows.push(&EventFields {
        uuid,
        event: &event,
        distinct_id: &distinct_id,
        properties: &properties,
        session_id: session_id.as_deref(),
        timestamp,
        created_at: now,
        elements_chain: elements_chain.as_deref(),
    });
    true
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
            && let Some(at) = export_time(text)
        {
            object.insert("timestamp".into(), Value::String(at.to_rfc3339()));
        }
    }
    event
}

/// Any line, validated and normalized exactly as capture would.
fn general_line(line: &[u8], now: DateTime<Utc>, rows: &mut ParsedRows) -> Result<(), String> {
    let event = serde_json::from_slice::<Value>(line).map_err(|e| e.to_string())?;
    let staged = capture::normalize_one(adapt(event), now).map_err(|e| e.body.detail)?;
    rows.push_staged(staged);
    Ok(())
}

fn parse_chunk(chunk: &Chunk, now: DateTime<Utc>) -> Parsed {
    let lines = memchr::memchr_iter(b'\n', &chunk.bytes).count() + 1;
    let mut parsed = Parsed {
        index: chunk.index,
        rows: ParsedRows::with_capacity(lines, chunk.bytes.len()),
        lines: 0,
        rejected: Vec::new(),
        rejected_count: 0,
    };
    for line in lines_of(&chunk.bytes) {
        parsed.lines += 1;
        if line.trim_ascii().is_empty() || fast_line(line, now, &mut parsed.rows) {
            continue;
        }
        if let Err(reason) = general_line(line, now, &mut parsed.rows) {
            parsed.rejected_count += 1;
            if parsed.rejected.len() < REPORTED_REJECTIONS as usize {
                parsed.rejected.push((parsed.lines, reason));
            }
        }
    }
    // The chunk ends with a newline unless it ends the file: no line after it.
    if chunk.bytes.last() == Some(&b'\n') {
        parsed.lines -= 1;
    }
    parsed
}

/// The newline-separated lines of `bytes` (the text after the last newline included, as
/// `split` gives them), found with `memchr` rather than byte by byte.
fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', bytes)
        .chain(std::iter::once(bytes.len()))
        .map(move |end| {
            let line = &bytes[start..end];
            start = end + 1;
            line
        })
}

/// `count` parser threads: chunks in, rows out (in whatever order they finish), buffers back
/// to the reader through `spare`.
fn spawn_parsers(
    count: usize,
    chunks: sync_channel::Receiver<Result<Chunk, String>>,
    parsed: mpsc::Sender<Result<Parsed, String>>,
    spare: sync_channel::SyncSender<Vec<u8>>,
    now: DateTime<Utc>,
) -> Vec<std::thread::JoinHandle<()>> {
    let chunks = Arc::new(Mutex::new(chunks));
    (0..count)
        .map(|_| {
            let (chunks, parsed, spare) = (chunks.clone(), parsed.clone(), spare.clone());
            std::thread::spawn(move || {
                loop {
                    let next = match chunks.lock() {
                        Ok(receiver) => receiver.recv(),
                        Err(_) => return,
                    };
                    let Ok(next) = next else { return };
                    let result = next.map(|chunk| {
                        let rows = parse_chunk(&chunk, now);
                        // A full pool (or a reader that is done) lets the buffer go.
                        let _ = spare.try_send(chunk.bytes);
                        rows
                    });
                    if parsed.blocking_send(result).is_err() {
                        return;
                    }
                }
            })
        })
        .collect()
}

pub async fn run(
    data_dir: PathBuf,
    project: i64,
    file: PathBuf,
    rows_per_commit: usize,
) -> anyhow::Result<()> {
    let state = crate::serve::state_for(data_dir).await?;
    let summary = import_file_committing(&state, project, &file, rows_per_commit).await?;
    println!("{summary}");
    Ok(())
}

/// What an import did.
pub struct Summary {
    pub report: lake::import::ImportReport,
    /// Lines that were not events (unreadable, or missing a field).
    pub rejected: u64,
    pub file_bytes: u64,
    /// The process's peak resident memory when the import ended.
    pub peak_rss_bytes: Option<u64>,
}

impl Summary {
    pub fn events_per_s(&self) -> f64 {
        self.report.rows as f64 / self.report.seconds.max(1e-9)
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let report = &self.report;
        write!(
            f,
            "read {} events ({} lines rejected) from {} bytes in {:.1} s: {:.0} events/s; \
             {} added, {} already in the table (skipped); {} commits, {} files",
            report.rows,
            self.rejected,
            self.file_bytes,
            report.seconds,
            self.events_per_s(),
            report.rows - report.skipped,
            report.skipped,
            report.commits,
            report.files,
        )?;
        match self.peak_rss_bytes {
            Some(bytes) => write!(f, ", peak RSS {} MiB", bytes / (1 << 20)),
            None => Ok(()),
        }
    }
}

/// Imports `file` into `project`'s table.
pub async fn import_file(state: &AppState, project: i64, file: &Path) -> anyhow::Result<Summary> {
    import_file_committing(state, project, file, lake::import::ROWS_PER_COMMIT).await
}

/// Imports `file` into `project`'s table, committing every `rows_per_commit` rows.
pub async fn import_file_committing(
    state: &AppState,
    project: i64,
    file: &Path,
    rows_per_commit: usize,
) -> anyhow::Result<Summary> {
    if Project::load(state.store.as_ref(), project)
        .await?
        .is_none()
    {
        bail!("no project {project}");
    }
    let total = std::fs::metadata(file)?.len();
    let read = Arc::new(AtomicU64::new(0));
    let input = open(file, read.clone())?;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg} ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut importer = lake::import::Importer::new(state.clone(), project)
        .await?
        .with_rows_per_commit(rows_per_commit);

    let parsers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let (chunk_sender, chunks) = sync_channel::sync_channel(parsers);
    // Room for a resolve's worth of parsed chunks: parsers keep going while persons resolve.
    let (parsed_sender, mut parsed) = mpsc::channel(parsers * 4);
    // Every buffer in flight can come back: those queued, and one per parser.
    let (spare_sender, spare) = sync_channel::sync_channel(parsers * 2 + 1);
    let reader = std::thread::spawn(move || {
        if let Err(error) = read_chunks(input, CHUNK_BYTES, chunk_sender.clone(), &spare) {
            let _ = chunk_sender.send(Err(error));
        }
    });
    let workers = spawn_parsers(
        parsers,
        chunks,
        parsed_sender,
        spare_sender,
        state.clock.now(),
    );

    // Chunks finish out of order; rows go to the importer in file order.
    let mut waiting: BTreeMap<usize, Parsed> = BTreeMap::new();
    let (mut next, mut lines_before, mut rejected) = (0usize, 0u64, 0u64);
    while let Some(result) = parsed.recv().await {
        let chunk = result.map_err(anyhow::Error::msg)?;
        waiting.insert(chunk.index, chunk);
        while let Some(chunk) = waiting.remove(&next) {
            for (line, reason) in &chunk.rejected {
                if rejected < REPORTED_REJECTIONS {
                    bar.println(format!("line {}: rejected: {reason}", lines_before + line));
                }
                rejected += 1;
            }
            rejected += chunk.rejected_count - chunk.rejected.len() as u64;
            lines_before += chunk.lines;
            importer.push(chunk.rows).await?;
            next += 1;
            bar.set_position(read.load(Ordering::Relaxed));
            bar.set_message(format!("{} events", importer.rows()));
        }
    }
    let _ = reader.join();
    for worker in workers {
        let _ = worker.join();
    }
    let report = importer.finish().await?;
    bar.finish_and_clear();
    Ok(Summary {
        report,
        rejected,
        file_bytes: total,
        peak_rss_bytes: peak_rss_bytes(),
    })
}

/// The process's peak resident set size, where the OS tells it (Linux).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use deltalake_core::arrow::array::{Array, StringArray};
    use deltalake_core::arrow::record_batch::RecordBatch;
    use lake::persons::Persons;

    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-22T12:00:00Z".parse().unwrap()
    }

    async fn resolved(rows: ParsedRows) -> RecordBatch {
        let store = Arc::new(common::testing::memory_store());
        let mut persons = Persons::new(store, Arc::new(common::clock::SystemClock), 1);
        let mut batches = rows.resolve(&mut persons).await.unwrap();
        assert_eq!(batches.len(), 1);
        batches.remove(0)
    }

    fn text_column(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
        let column = batch.column_by_name(name).unwrap();
        let strings = column.as_any().downcast_ref::<StringArray>().unwrap();
        (0..strings.len())
            .map(|i| (!strings.is_null(i)).then(|| strings.value(i).to_owned()))
            .collect()
    }

    #[tokio::test]
    async fn the_fast_path_writes_what_the_general_path_writes() {
        let lines = [
            // A PostHog export: properties as JSON text, ClickHouse timestamps, escapes.
            r#"{"uuid": "0192f0a1-7c3e-7b2a-9d41-3f5e6a7b8c9d", "event": "$autocapture", "distinct_id": "user \"1\"", "timestamp": "2026-11-01 10:00:00.123456", "properties": "{\"$session_id\": \"s-1\", \"$current_url\": \"https://example.com/\\u00e9\", \"n\": 1.5}", "elements_chain": "button:attr__class=\"btn\"", "created_at": "2026-11-01 10:00:01"}"#,
            // A capture payload: properties as an object, an ISO timestamp with an offset.
            r#"{"uuid": "0192F0A1-7C3E-7B2A-9D41-3F5E6A7B8C9E", "event": "café ☕", "distinct_id": "d2", "timestamp": "2026-11-01T12:00:00+02:00", "properties": {"$session_id": 7, "nested": {"a": [1, null]}}}"#,
            // No timestamp, no properties, null elements chain.
            r#"{"uuid": "0192f0a1-7c3e-7b2a-9d41-3f5e6a7b8c9f", "event": "e", "distinct_id": "d3", "elements_chain": null}"#,
        ];
        let (mut fast, mut general) = (ParsedRows::default(), ParsedRows::default());
        for line in lines {
            assert!(fast_line(line.as_bytes(), now(), &mut fast), "{line}");
            general_line(line.as_bytes(), now(), &mut general).unwrap();
        }
        let (fast, general) = (resolved(fast).await, resolved(general).await);
        for column in [
            "uuid",
            "event",
            "distinct_id",
            "person_id",
            "person_properties",
            "$session_id",
            "elements_chain",
        ] {
            assert_eq!(
                text_column(&fast, column),
                text_column(&general, column),
                "{column}"
            );
        }
        for column in ["timestamp", "created_at", "date"] {
            assert_eq!(
                fast.column_by_name(column).unwrap().to_data(),
                general.column_by_name(column).unwrap().to_data(),
                "{column}"
            );
        }
        let json = |batch: &RecordBatch| -> Vec<Value> {
            text_column(batch, "properties")
                .into_iter()
                .map(|text| serde_json::from_str(&text.unwrap()).unwrap())
                .collect()
        };
        assert_eq!(json(&fast), json(&general));
        assert_eq!(
            text_column(&fast, "elements_chain")[0].as_deref(),
            Some("button:attr__class=\"btn\"")
        );
    }

    #[test]
    fn clickhouse_times_read_by_position_as_chrono_reads_them() {
        let chrono_reads = |text: &str| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
                .ok()
                .map(|naive| naive.and_utc())
        };
        for text in [
            "2026-11-01 10:00:00.123456",
            "2026-11-01 10:00:00",
            "2024-02-29 23:59:59.9",
            "1999-12-31 00:00:01.123456789",
            "2026-01-05 07:08:09.000001",
        ] {
            assert_eq!(
                clickhouse_time(text.as_bytes()),
                chrono_reads(text),
                "{text}"
            );
            assert!(clickhouse_time(text.as_bytes()).is_some(), "{text}");
        }
        for text in [
            "2026-11-01T10:00:00Z",
            "2026-02-30 10:00:00",
            "2026-11-01 24:00:00",
            "2026-11-01 10:00:60",
            "2026-11-01 10:00:00.",
            "2026-11-01 10:00:00.1234567890",
            "2026-11-01 10:0a:00",
            "2026-11-01 10:00",
            "+026-11-01 10:00:00",
        ] {
            assert_eq!(clickhouse_time(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn person_updates_and_odd_lines_take_the_general_path() {
        let lines = [
            r#"{"event": "$identify", "distinct_id": "d", "properties": {"$anon_distinct_id": "a"}}"#,
            r#"{"event": "$create_alias", "distinct_id": "d", "properties": {"alias": "a"}}"#,
            r#"{"event": "e", "distinct_id": "d", "properties": "{\"$set\": {\"a\": 1}}"}"#,
            r#"{"event": "e", "distinct_id": "d", "properties": {"$unset": ["a"]}}"#,
            r#"{"event": "e", "distinct_id": "d", "$set_once": {"a": 1}}"#,
            r#"{"event": "e", "distinct_id": 42}"#,
            r#"{"event": "e", "properties": {"distinct_id": "d"}}"#,
            r#"{"event": "e", "distinct_id": "d", "sent_at": "2026-11-01T00:00:00Z"}"#,
            r#"{"event": "e", "distinct_id": "d", "offset": 100}"#,
            r#"{"event": "e", "distinct_id": "d", "uuid": "nope"}"#,
            r#"{"event": "e", "distinct_id": "d", "timestamp": "yesterday"}"#,
            r#"{"event": "e", "distinct_id": "d", "properties": "[1]"}"#,
            r#"{"event": " ", "distinct_id": "d"}"#,
            r#"[{"event": "e", "distinct_id": "d"}]"#,
        ];
        for line in lines {
            let mut rows = ParsedRows::default();
            assert!(!fast_line(line.as_bytes(), now(), &mut rows), "{line}");
            assert!(rows.is_empty());
        }
    }

    #[test]
    fn lines_are_split_as_split_splits_them() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\n\nb\n",
            "\n\n",
            "ab\ncd\n\n",
        ] {
            let ours: Vec<&[u8]> = lines_of(text.as_bytes()).collect();
            let split: Vec<&[u8]> = text.as_bytes().split(|b| *b == b'\n').collect();
            assert_eq!(ours, split, "{text:?}");
        }
    }

    #[test]
    fn chunks_hold_whole_lines_and_lose_nothing() {
        let input: String = (0..1000)
            .map(|i| format!("{{\"line\": {i}, \"pad\": \"{}\"}}\n", "x".repeat(i % 37)))
            .collect();
        let input = format!("{input}last line without newline");
        let (sender, receiver) = sync_channel::sync_channel(1024);
        let (spare_sender, spare) = sync_channel::sync_channel(4);
        for _ in 0..4 {
            // Recycled buffers come with old bytes and any capacity.
            spare_sender.send(vec![b'x'; 7]).unwrap();
        }
        read_chunks(input.as_bytes(), 100, sender, &spare).unwrap();
        let chunks: Vec<Chunk> = receiver.iter().map(Result::unwrap).collect();
        assert!(chunks.len() > 100);
        for (index, chunk) in chunks.iter().enumerate() {
            assert_eq!(chunk.index, index);
            if index + 1 < chunks.len() {
                assert_eq!(chunk.bytes.last(), Some(&b'\n'));
            }
        }
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.bytes.clone()).collect();
        assert_eq!(joined, input.as_bytes());
        let lines: u64 = chunks
            .into_iter()
            .map(|chunk| parse_chunk(&chunk, now()).lines)
            .sum();
        assert_eq!(lines, 1001);
    }
}
