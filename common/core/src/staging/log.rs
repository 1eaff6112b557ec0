//! The embedded backend's staging log: what capture appends before it answers, and what the
//! committer reads into the events lake. A file per accepted request (the S3 layout) costs the
//! kernel an inode to create and delete each time; a log costs one `write` and a share of one
//! `fdatasync`.
//!
//! Layout: `<data dir>/staging-log/team_id=<id>/<uuidv7>.log`, a *segment*: records appended one
//! after another, each `[payload length: u32 LE][CRC-32 of the payload: u32 LE][payload]`, the
//! payload one request's events as NDJSON. One writer thread per process appends every request
//! that arrives while the previous group was being written, then `fdatasync`s each file it
//! touched once, and only then answers those requests: an acknowledged record is on disk.
//!
//! A segment is written by the process that created it only, which holds an exclusive `flock`
//! on it for as long as it may append. A committer that gets the lock knows the segment is
//! *sealed*: its writer closed it (rotation, [`StagingLog::seal`]) or died, so it will never
//! grow again. A crash can leave a torn record at a sealed segment's end (written, never
//! synced, never acknowledged): the length and checksum tell it from a complete one.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use uuid::Uuid;

use super::StagedEvent;

/// The log's folder under the data dir.
pub const LOG_DIR: &str = "staging-log";
const SEGMENT_EXTENSION: &str = "log";
/// A segment being created: renamed to `.log` once locked, so a committer never sees an
/// unlocked live segment.
const CREATING_EXTENSION: &str = "log.tmp";
const HEADER_BYTES: usize = 8;
/// A segment is closed once it holds this much, so a committed one can be deleted.
const SEGMENT_BYTES: u64 = 16 << 20;
/// ... or once it is this old, so a process without a committer (a capture function under
/// `cargo lambda watch`) hands its records over soon.
const SEGMENT_AGE: Duration = Duration::from_secs(1);
/// Bytes of appends folded into one group at most (one write and one sync per file).
const GROUP_BYTES: usize = 8 << 20;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("staging log {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("staging log writer stopped")]
    WriterGone,
    /// A failed group, told to each request in it.
    #[error("staging log append failed: {0}")]
    Failed(String),
    #[error("a staged request of {0} bytes does not fit a log record")]
    TooLarge(usize),
}

impl LogError {
    fn io(path: &Path, source: io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// One request's events as a framed record.
pub fn record(events: &[StagedEvent]) -> Result<Vec<u8>, LogError> {
    let mut record = vec![0; HEADER_BYTES];
    for event in events {
        // Serializing owned JSON-safe values into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut record, event);
        record.push(b'\n');
    }
    let payload = &record[HEADER_BYTES..];
    let length = u32::try_from(payload.len()).map_err(|_| LogError::TooLarge(payload.len()))?;
    let crc = checksum(payload);
    record[..4].copy_from_slice(&length.to_le_bytes());
    record[4..HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
    Ok(record)
}

fn checksum(payload: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(payload);
    crc.sum()
}

/// A complete record read back: its payload and the offset just past it.
#[derive(Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub payload: &'a [u8],
    pub end: u64,
}

/// The complete records of `bytes` (a segment's bytes from `offset` on), in order. Stops at the
/// first that is cut short or fails its checksum: see [`Records::rest`].
pub fn records(bytes: &[u8], offset: u64) -> Records<'_> {
    Records {
        bytes,
        at: 0,
        offset,
    }
}

pub struct Records<'a> {
    bytes: &'a [u8],
    at: usize,
    offset: u64,
}

impl Records<'_> {
    /// Bytes after the last complete record read: a torn record (or nothing).
    pub fn rest(&self) -> usize {
        self.bytes.len() - self.at
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        let header = self.bytes.get(self.at..self.at + HEADER_BYTES)?;
        let length = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
        let crc = u32::from_le_bytes(header[4..].try_into().ok()?);
        let start = self.at + HEADER_BYTES;
        let payload = self.bytes.get(start..start.checked_add(length)?)?;
        if checksum(payload) != crc {
            return None;
        }
        self.at = start + length;
        Some(Record {
            payload,
            end: self.offset + self.at as u64,
        })
    }
}

enum Command {
    Append {
        team_id: i64,
        record: Vec<u8>,
        done: oneshot::Sender<Result<(), LogError>>,
    },
    Seal {
        done: oneshot::Sender<()>,
    },
}

/// A process's handle on the log: appends go through its one writer thread, started with the
/// first append and stopped when the handle is dropped.
pub struct StagingLog {
    dir: PathBuf,
    writer: Mutex<Option<mpsc::Sender<Command>>>,
}

impl std::fmt::Debug for StagingLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagingLog")
            .field("dir", &self.dir)
            .finish()
    }
}

impl StagingLog {
    /// The log in `dir` (created with the first segment).
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            writer: Mutex::new(None),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn team_dir(&self, team_id: i64) -> PathBuf {
        self.dir.join(format!("team_id={team_id}"))
    }

    /// The writer, started on first use (and again if it ever stopped).
    fn writer(&self) -> Result<mpsc::Sender<Command>, LogError> {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sender) = writer.as_ref() {
            return Ok(sender.clone());
        }
        let (sender, receiver) = mpsc::channel();
        let dir = self.dir.clone();
        std::thread::Builder::new()
            .name("staging-log".into())
            .spawn(move || Writer::new(dir).run(receiver))
            .map_err(|e| LogError::io(&self.dir, e))?;
        *writer = Some(sender.clone());
        Ok(sender)
    }

    fn send(&self, command: Command) -> Result<(), LogError> {
        self.writer()?.send(command).map_err(|_| {
            // Start a new writer next time.
            *self.writer.lock().unwrap_or_else(|e| e.into_inner()) = None;
            LogError::WriterGone
        })
    }

    /// Appends one framed [`record`] to the project's segment; returns once it is on disk.
    pub async fn append(&self, team_id: i64, record: Vec<u8>) -> Result<(), LogError> {
        let (done, written) = oneshot::channel();
        self.send(Command::Append {
            team_id,
            record,
            done,
        })?;
        written.await.map_err(|_| LogError::WriterGone)?
    }

    /// Closes the segments this process appends to (appends after this go to new ones), so a
    /// committer can take everything acknowledged so far.
    pub async fn seal(&self) -> Result<(), LogError> {
        let running = self
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(writer) = running else {
            return Ok(());
        };
        let (done, sealed) = oneshot::channel();
        if writer.send(Command::Seal { done }).is_err() {
            return Ok(());
        }
        sealed.await.map_err(|_| LogError::WriterGone)
    }

    /// Projects that have segments.
    pub fn teams(&self) -> Result<Vec<i64>, LogError> {
        let mut teams: Vec<i64> = entries(&self.dir)?
            .iter()
            .filter_map(|path| {
                path.file_name()?
                    .to_str()?
                    .strip_prefix("team_id=")?
                    .parse()
                    .ok()
            })
            .collect();
        teams.sort_unstable();
        Ok(teams)
    }

    /// A project's segments, oldest first (their names are UUIDv7s).
    pub fn segments(&self, team_id: i64) -> Result<Vec<PathBuf>, LogError> {
        let mut segments: Vec<PathBuf> = entries(&self.team_dir(team_id))?
            .into_iter()
            .filter(|path| path.extension().is_some_and(|ext| ext == SEGMENT_EXTENSION))
            .collect();
        segments.sort();
        Ok(segments)
    }

    /// Removes segments whose creation was cut short (by a crash before they were named):
    /// nothing was ever appended to them.
    pub fn remove_abandoned(&self, team_id: i64) -> Result<(), LogError> {
        let suffix = format!(".{CREATING_EXTENSION}");
        for path in entries(&self.team_dir(team_id))? {
            let creating = path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.ends_with(&suffix));
            if creating && let Some(segment) = Sealed::open(&path)? {
                segment.remove()?;
            }
        }
        Ok(())
    }

    /// Records in every segment, committed or not yet deleted alike (by their lengths only:
    /// checksums are the committer's business).
    pub fn records_waiting(&self) -> Result<usize, LogError> {
        let mut count = 0;
        for team_id in self.teams()? {
            for segment in self.segments(team_id)? {
                count += count_records(&segment).map_err(|e| LogError::io(&segment, e))?;
            }
        }
        Ok(count)
    }
}

/// Walks a segment's record headers.
fn count_records(segment: &Path) -> io::Result<usize> {
    let mut file = match File::open(segment) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error),
    };
    let size = file.metadata()?.len();
    let (mut at, mut count) = (0u64, 0);
    let mut header = [0; HEADER_BYTES];
    while at + HEADER_BYTES as u64 <= size {
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(&mut header)?;
        let length = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let end = at + HEADER_BYTES as u64 + u64::from(length);
        if end > size {
            break;
        }
        (at, count) = (end, count + 1);
    }
    Ok(count)
}

fn entries(dir: &Path) -> Result<Vec<PathBuf>, LogError> {
    let listed = match std::fs::read_dir(dir) {
        Ok(listed) => listed,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(LogError::io(dir, error)),
    };
    listed
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<io::Result<_>>()
        .map_err(|e| LogError::io(dir, e))
}

/// A segment no writer holds, locked by this handle until it is dropped: it will not grow.
#[derive(Debug)]
pub struct Sealed {
    file: File,
    path: PathBuf,
}

impl Sealed {
    /// `None` while a writer (or another committer) holds it, or once it is gone.
    pub fn open(path: &Path) -> Result<Option<Self>, LogError> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(LogError::io(path, error)),
        };
        match file.try_lock() {
            Ok(()) => Ok(Some(Self {
                file,
                path: path.to_owned(),
            })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(error)) => Err(LogError::io(path, error)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The segment's name: unique across processes and time.
    pub fn name(&self) -> &str {
        self.path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_default()
    }

    /// The segment's bytes from `offset` to its end.
    pub fn read_from(&mut self, offset: u64) -> Result<Vec<u8>, LogError> {
        let mut bytes = Vec::new();
        self.file
            .seek(SeekFrom::Start(offset))
            .and_then(|_| self.file.read_to_end(&mut bytes))
            .map_err(|e| LogError::io(&self.path, e))?;
        Ok(bytes)
    }

    /// Deletes the segment (everything in it is committed).
    pub fn remove(self) -> Result<(), LogError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(LogError::io(&self.path, error)),
        }
    }

    /// Moves the segment to `folder` for a person to look at (it ends in bytes that are not a
    /// complete record).
    pub fn set_aside(self, folder: &Path) -> Result<PathBuf, LogError> {
        std::fs::create_dir_all(folder).map_err(|e| LogError::io(folder, e))?;
        let target = folder.join(self.path.file_name().unwrap_or_default());
        std::fs::rename(&self.path, &target).map_err(|e| LogError::io(&self.path, e))?;
        Ok(target)
    }
}

/// A segment this process appends to.
struct Segment {
    file: File,
    path: PathBuf,
    len: u64,
    opened: Instant,
}

/// The writer thread's state: each project's open segment.
struct Writer {
    dir: PathBuf,
    open: HashMap<i64, Segment>,
    /// Projects whose folder is known to exist, durably.
    folders: std::collections::HashSet<i64>,
}

type Waiting = Vec<oneshot::Sender<Result<(), LogError>>>;

impl Writer {
    fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            open: HashMap::new(),
            folders: Default::default(),
        }
    }

    fn run(mut self, commands: mpsc::Receiver<Command>) {
        loop {
            let first = match commands.recv_timeout(SEGMENT_AGE) {
                Ok(command) => command,
                // Idle: hand what was written over to the committer.
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.open.clear();
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            };
            // Everything that arrived meanwhile joins the group.
            let mut group = vec![first];
            let mut bytes = 0;
            while bytes < GROUP_BYTES {
                match commands.try_recv() {
                    Ok(command) => {
                        if let Command::Append { record, .. } = &command {
                            bytes += record.len();
                        }
                        group.push(command);
                    }
                    Err(_) => break,
                }
            }
            self.write_group(group);
            let now = Instant::now();
            self.open.retain(|_, segment| {
                segment.len < SEGMENT_BYTES && now.duration_since(segment.opened) < SEGMENT_AGE
            });
        }
    }

    /// Appends the group's records, syncs each file once, then answers: a seal closes the
    /// segments holding what came before it.
    fn write_group(&mut self, group: Vec<Command>) {
        let mut pending: HashMap<i64, (Vec<u8>, Waiting)> = HashMap::new();
        for command in group {
            match command {
                Command::Append {
                    team_id,
                    record,
                    done,
                } => {
                    let (bytes, waiting) = pending.entry(team_id).or_default();
                    bytes.extend_from_slice(&record);
                    waiting.push(done);
                }
                Command::Seal { done } => {
                    self.flush(std::mem::take(&mut pending));
                    self.open.clear();
                    let _ = done.send(());
                }
            }
        }
        self.flush(pending);
    }

    fn flush(&mut self, pending: HashMap<i64, (Vec<u8>, Waiting)>) {
        let mut written = Vec::new();
        for (team_id, (bytes, waiting)) in pending {
            match self.append(team_id, &bytes) {
                Ok(start) => written.push((team_id, start, waiting)),
                Err(error) => answer(waiting, error),
            }
        }
        for (team_id, start, waiting) in written {
            match self.sync(team_id, start) {
                Ok(()) => {
                    for done in waiting {
                        let _ = done.send(Ok(()));
                    }
                }
                Err(error) => answer(waiting, error),
            }
        }
    }

    /// Writes `bytes` at the end of the project's segment; returns where they start.
    fn append(&mut self, team_id: i64, bytes: &[u8]) -> Result<u64, LogError> {
        if !self.open.contains_key(&team_id) {
            let segment = self.create(team_id)?;
            self.open.insert(team_id, segment);
        }
        let Some(segment) = self.open.get_mut(&team_id) else {
            return Err(LogError::WriterGone);
        };
        let start = segment.len;
        match segment.file.write_all(bytes) {
            Ok(()) => {
                segment.len += bytes.len() as u64;
                Ok(start)
            }
            Err(error) => Err(self.abandon(team_id, start, error)),
        }
    }

    fn sync(&mut self, team_id: i64, start: u64) -> Result<(), LogError> {
        let synced = match self.open.get(&team_id) {
            Some(segment) => segment.file.sync_data(),
            None => return Err(LogError::WriterGone),
        };
        synced.map_err(|error| self.abandon(team_id, start, error))
    }

    /// After a failed write or sync: cuts what this group wrote (its requests fail, so its
    /// records should not be committed) and closes the segment, so no later record follows
    /// bytes of unknown state.
    fn abandon(&mut self, team_id: i64, start: u64, error: io::Error) -> LogError {
        let Some(segment) = self.open.remove(&team_id) else {
            return LogError::WriterGone;
        };
        if let Err(cut) = segment
            .file
            .set_len(start)
            .and_then(|()| segment.file.sync_data())
        {
            tracing::error!(path = %segment.path.display(), %cut, "cannot cut a failed append");
        }
        LogError::io(&segment.path, error)
    }

    /// A new segment, locked, named, its name on disk.
    fn create(&mut self, team_id: i64) -> Result<Segment, LogError> {
        let folder = self.dir.join(format!("team_id={team_id}"));
        if !self.folders.contains(&team_id) {
            std::fs::create_dir_all(&folder).map_err(|e| LogError::io(&folder, e))?;
            sync_dir(&self.dir)?;
            if let Some(parent) = self.dir.parent() {
                sync_dir(parent)?;
            }
            self.folders.insert(team_id);
        }
        // A committer removing abandoned creations can take a new file in the instant before
        // it is locked (it is empty then): that creation starts again under a new name.
        let mut attempts = 0;
        let (file, path) = loop {
            attempts += 1;
            let name = Uuid::now_v7();
            let creating = folder.join(format!("{name}.{CREATING_EXTENSION}"));
            let path = folder.join(format!("{name}.{SEGMENT_EXTENSION}"));
            let file = OpenOptions::new()
                .append(true)
                .create_new(true)
                .open(&creating)
                .map_err(|e| LogError::io(&creating, e))?;
            file.try_lock().map_err(|e| {
                LogError::io(
                    &creating,
                    io::Error::other(format!("locking a new segment: {e}")),
                )
            })?;
            match std::fs::rename(&creating, &path) {
                Ok(()) => break (file, path),
                Err(error) if error.kind() == io::ErrorKind::NotFound && attempts < 3 => continue,
                Err(error) => return Err(LogError::io(&creating, error)),
            }
        };
        sync_dir(&folder)?;
        Ok(Segment {
            file,
            path,
            len: 0,
            opened: Instant::now(),
        })
    }
}

fn answer(waiting: Waiting, error: LogError) {
    tracing::error!(%error, "staging log append failed");
    let message = error.to_string();
    for done in waiting {
        let _ = done.send(Err(LogError::Failed(message.clone())));
    }
}

fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir)
        .and_then(|folder| folder.sync_all())
        .map_err(|e| LogError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> StagedEvent {
        let at = chrono::DateTime::UNIX_EPOCH;
        StagedEvent {
            uuid: Uuid::now_v7(),
            event: name.into(),
            distinct_id: "d".into(),
            properties: Default::default(),
            timestamp: at,
            created_at: at,
            elements_chain: None,
        }
    }

    fn payloads(bytes: &[u8]) -> Vec<String> {
        records(bytes, 0)
            .map(|r| String::from_utf8(r.payload.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn torn_and_corrupt_records_end_the_readable_part() {
        let mut bytes = record(&[event("a")]).unwrap();
        let first = bytes.len() as u64;
        bytes.extend(record(&[event("b"), event("c")]).unwrap());
        let whole = bytes.clone();
        let read: Vec<_> = records(&whole, 0).collect();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].end, first);
        assert_eq!(read[1].end, whole.len() as u64);
        assert_eq!(payloads(&whole)[1].lines().count(), 2);
        // Read from an offset: ends are the segment's.
        let tail: Vec<_> = records(&whole[first as usize..], first).collect();
        assert_eq!(tail[0].end, whole.len() as u64);

        // Cut anywhere inside the second record: only the first is read.
        for cut in first as usize..whole.len() {
            let mut reader = records(&whole[..cut], 0);
            assert_eq!(reader.by_ref().count(), 1, "cut at {cut}");
            assert_eq!(reader.rest(), cut - first as usize);
        }
        // A flipped byte in the payload fails the checksum.
        let mut flipped = whole.clone();
        let last = flipped.len() - 3;
        flipped[last] ^= 0x20;
        assert_eq!(records(&flipped, 0).count(), 1);
        // A length past the end is a torn record, not a panic.
        let mut long = whole.clone();
        long[first as usize..first as usize + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(records(&long, 0).count(), 1);
    }

    #[tokio::test]
    async fn appends_are_acknowledged_once_written_and_sealed_segments_unlock() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::sync::Arc::new(StagingLog::new(dir.path().join(LOG_DIR)));
        // Concurrent appends share groups; each answers once its record is in the file.
        let appends: Vec<_> = (0..50)
            .map(|i| {
                let log = log.clone();
                tokio::spawn(async move {
                    let record = record(&[event(&format!("e{i}"))]).unwrap();
                    log.append(7, record).await
                })
            })
            .collect();
        for append in appends {
            append.await.unwrap().unwrap();
        }
        assert_eq!(log.teams().unwrap(), vec![7]);
        let segments = log.segments(7).unwrap();
        assert_eq!(segments.len(), 1);
        // The writer holds it: not sealed.
        assert!(Sealed::open(&segments[0]).unwrap().is_none());
        assert_eq!(log.records_waiting().unwrap(), 50);

        log.seal().await.unwrap();
        let mut sealed = Sealed::open(&segments[0]).unwrap().expect("sealed");
        // Held by one committer, it is busy for another.
        assert!(Sealed::open(&segments[0]).unwrap().is_none());
        let bytes = sealed.read_from(0).unwrap();
        let mut names: Vec<String> = payloads(&bytes)
            .iter()
            .map(|line| {
                serde_json::from_str::<StagedEvent>(line.trim_end())
                    .unwrap()
                    .event
            })
            .collect();
        names.sort();
        let mut expected: Vec<String> = (0..50).map(|i| format!("e{i}")).collect();
        expected.sort();
        assert_eq!(names, expected);

        // Appends after the seal open a new segment.
        log.append(7, record(&[event("later")]).unwrap())
            .await
            .unwrap();
        assert_eq!(log.segments(7).unwrap().len(), 2);
        sealed.remove().unwrap();
        assert_eq!(log.segments(7).unwrap().len(), 1);
        assert_eq!(log.records_waiting().unwrap(), 1);
    }

    #[test]
    fn abandoned_creations_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let log = StagingLog::new(dir.path().join(LOG_DIR));
        let folder = log.team_dir(3);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join(format!("x.{CREATING_EXTENSION}")), b"").unwrap();
        log.remove_abandoned(3).unwrap();
        assert!(entries(&folder).unwrap().is_empty());
    }
}
