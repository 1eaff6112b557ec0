//! Moves staged capture batches into each project's Delta table, exactly once.
//!
//! A committer first *claims* a staged object: it copies it to `claimed/` with a create-only
//! put (one claimant wins even with several committers) and removes the original. Claimed objects
//! are committed with a Delta application transaction named after them, atomically with their
//! rows, then deleted. A committer that dies anywhere in between leaves the object in `claimed/`;
//! the next run checks only those (few) objects for their marker: already in the table, it just
//! deletes them; otherwise it commits them. Nothing acknowledged is lost, nothing is committed twice.
//!
//! Embedded, capture appends to the staging log instead (`common::staging::log`). A run first
//! seals this process's open segments, then takes every segment no writer holds (its lock says
//! so), reads its complete records from the offset its Delta application transaction
//! (`staging-log:<segment>`, version = the byte offset committed up to) records, commits them with
//! that transaction moved to the last record's end, and deletes the segment. A run that dies
//! after the commit finds the segment committed to its end and only deletes it.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use common::AppState;
use common::staging::log::{self as staging_log, LogError, Sealed, StagingLog};
use common::staging::{self, PropertiesProbe, STAGING_ROOT, StagedEvent, StagedLine, StagingError};
use deltalake_core::kernel::Transaction;
use deltalake_core::kernel::transaction::CommitProperties;
use deltalake_core::writer::{DeltaWriter, RecordBatchWriter};
use deltalake_core::{DeltaTable, DeltaTableError};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions};
use tokio::sync::watch;
use uuid::Uuid;

use lake_core::LakeError;

use crate::definitions::KnownDefinitions;
use crate::group_types::KnownGroupTypes;
use crate::persons::Persons;
use crate::rows::ParsedRows;
use crate::table;

/// Staged objects folded into one Delta commit at most.
const BATCHES_PER_COMMIT: usize = 256;
/// Commits per project per run: a run lists the staging prefix once (listing is what costs on a
/// large backlog) and stays well inside a Lambda invocation.
const COMMITS_PER_RUN: usize = 16;
const QUARANTINE_ROOT: &str = "staging-rejected";
/// Object-store calls in flight at once while claiming and cleaning up.
const CONCURRENT_OBJECT_CALLS: usize = 16;
const CLAIMED_ROOT: &str = "claimed";
/// Staging log payload bytes folded into one Delta commit (whole segments are added until it
/// is reached).
const LOG_BYTES_PER_COMMIT: usize = 32 << 20;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommitReport {
    pub team_id: i64,
    /// Staged objects and staging log records whose events went into the table in this run.
    pub batches: usize,
    pub events: usize,
    /// Claimed objects and log segments found already committed (a previous run died before
    /// deleting them).
    pub recovered: usize,
    /// Events dropped because an earlier event of this commit had the same uuid.
    pub duplicates: usize,
    /// Unreadable staged objects, log records and torn log tails moved aside to
    /// `staging-rejected/`.
    pub rejected: usize,
    pub version: Option<i64>,
}

fn app_id(path: &Path) -> String {
    format!("staging:{}", path.filename().unwrap_or_default())
}

/// The application transaction whose version is the byte offset a log segment is committed to.
fn log_app_id(segment: &str) -> String {
    format!("staging-log:{segment}")
}

fn log_error(error: LogError) -> LakeError {
    LakeError::Objects(object_store::Error::Generic {
        store: "staging log",
        source: Box::new(error),
    })
}

/// Runs blocking file work (the staging log) off the runtime's workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, LogError> + Send + 'static,
) -> Result<T, LakeError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|joined| LakeError::Delta(DeltaTableError::Generic(joined.to_string())))?
        .map_err(log_error)
}

/// Projects with staged objects or staging log segments waiting.
async fn teams_waiting(state: &AppState) -> Result<Vec<i64>, LakeError> {
    let mut teams = teams_with_staging(state.objects.as_ref()).await?;
    if let Some(log) = state.staging_log.clone() {
        teams.extend(blocking(move || log.teams()).await?);
        teams.sort_unstable();
        teams.dedup();
    }
    Ok(teams)
}

/// Projects that have staged objects waiting (claimed ones included).
pub async fn teams_with_staging(objects: &dyn ObjectStore) -> Result<Vec<i64>, LakeError> {
    let mut teams = Vec::new();
    for root in [STAGING_ROOT, CLAIMED_ROOT] {
        match objects.list_with_delimiter(Some(&Path::from(root))).await {
            Ok(listing) => teams.extend(listing.common_prefixes.iter().filter_map(|prefix| {
                prefix
                    .filename()?
                    .strip_prefix("team_id=")?
                    .parse::<i64>()
                    .ok()
            })),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(other) => return Err(other.into()),
        }
    }
    teams.sort_unstable();
    teams.dedup();
    Ok(teams)
}

/// How many staged or claimed objects and staging log records wait, across projects (empty local
/// folders do not count).
pub async fn staged_count(state: &AppState) -> Result<usize, LakeError> {
    let objects = state.objects.as_ref();
    let mut count = match state.staging_log.clone() {
        Some(log) => blocking(move || log.records_waiting()).await?,
        None => 0,
    };
    for root in [STAGING_ROOT, CLAIMED_ROOT] {
        match objects
            .list(Some(&Path::from(root)))
            .try_fold(0, |n, _| async move { Ok(n + 1) })
            .await
        {
            Ok(n) => count += n,
            Err(object_store::Error::NotFound { .. }) => {}
            Err(other) => return Err(other.into()),
        }
    }
    Ok(count)
}

/// Commits every project's waiting batches.
pub async fn commit_all(state: &AppState) -> Result<Vec<CommitReport>, LakeError> {
    Committer::new(state.clone()).commit_all().await
}

/// Commits up to [`BATCHES_PER_COMMIT`] of one project's waiting batches.
pub async fn commit_team(state: &AppState, team_id: i64) -> Result<CommitReport, LakeError> {
    Committer::new(state.clone()).commit_team(team_id).await
}

/// The embedded committer: picks up staged batches (including any left from a previous run)
/// every `interval` until `stop` turns true. A run in progress when it does is finished first
/// (stopping mid-run would be safe, claimed objects are recovered, but costs the next start a
/// recovery pass).
pub async fn run_committer(state: AppState, interval: Duration, mut stop: watch::Receiver<bool>) {
    let mut committer = Committer::new(state);
    loop {
        match committer.commit_all().await {
            Ok(reports) => {
                for report in reports
                    .iter()
                    .filter(|r| r.batches + r.recovered + r.rejected > 0)
                {
                    tracing::debug!(?report, "committed staged events");
                }
            }
            Err(error) => {
                tracing::error!(%error, "committer run failed; retrying");
                // A handle may be stale after a failure: reload from scratch next time.
                committer.tables.clear();
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            // A dropped sender stops it too.
            _ = stop.wait_for(|stop| *stop) => return,
        }
    }
}

fn claimed_path(staged: &Path) -> Path {
    Path::from(format!(
        "{CLAIMED_ROOT}/{}",
        staged.as_ref().trim_start_matches("staging/")
    ))
}

fn claimed_prefix(team_id: i64) -> Path {
    Path::from(format!("{CLAIMED_ROOT}/team_id={team_id}"))
}

async fn list_batches(objects: &dyn ObjectStore, prefix: &Path) -> Result<Vec<Path>, LakeError> {
    let listed: Result<Vec<Path>, _> = objects
        .list(Some(prefix))
        .map_ok(|meta| meta.location)
        .try_collect()
        .await;
    let mut paths = match listed {
        Ok(paths) => paths,
        Err(object_store::Error::NotFound { .. }) => Vec::new(),
        Err(other) => return Err(other.into()),
    };
    paths.retain(|path| path.as_ref().ends_with(".ndjson.gz"));
    // UUIDv7 names: oldest first.
    paths.sort();
    Ok(paths)
}

async fn delete_if_present(objects: &dyn ObjectStore, path: &Path) -> Result<(), LakeError> {
    match objects.delete(path).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(other) => Err(other.into()),
    }
}

/// Commits waiting batches, keeping each project's table open between runs.
pub struct Committer {
    state: AppState,
    tables: HashMap<i64, DeltaTable>,
    /// Each project's group types as last seen, so ordinary batches skip the Store.
    group_types: KnownGroupTypes,
    /// Keys seen in each project's recent batches, until enough are seen to pick hot ones.
    key_counts: HashMap<i64, crate::shred::KeyCounts>,
    /// Each project's event and property definitions known to exist.
    definitions: KnownDefinitions,
}

impl Committer {
    pub fn new(state: AppState) -> Self {
        Self {
            state,
            tables: HashMap::new(),
            group_types: KnownGroupTypes::default(),
            key_counts: HashMap::new(),
            definitions: KnownDefinitions::default(),
        }
    }

    pub async fn commit_all(&mut self) -> Result<Vec<CommitReport>, LakeError> {
        let mut reports = Vec::new();
        for team_id in teams_waiting(&self.state).await? {
            reports.push(self.commit_team(team_id).await?);
        }
        Ok(reports)
    }

    /// The project's table, brought up to date with other committers' commits.
    async fn table(&mut self, team_id: i64) -> Result<&mut DeltaTable, LakeError> {
        let table = match self.tables.entry(team_id) {
            std::collections::hash_map::Entry::Occupied(entry) => {
                let table = entry.into_mut();
                table.update_incremental(None).await?;
                table
            }
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(table::open_or_create(&self.state, team_id).await?)
            }
        };
        Ok(table)
    }

    /// The project's table as [`Committer::table`] last left it.
    fn table_loaded(&mut self, team_id: i64) -> Result<&mut DeltaTable, LakeError> {
        self.tables
            .get_mut(&team_id)
            .ok_or_else(|| LakeError::Delta(DeltaTableError::Generic("table not open".into())))
    }

    /// Moves a staged object to `claimed/`; `None` when another committer got it first.
    async fn claim(&self, path: &Path) -> Result<Option<(Path, Bytes)>, LakeError> {
        let objects = self.state.objects.as_ref();
        let bytes = match objects.get(path).await {
            Ok(found) => found.bytes().await?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(other) => return Err(other.into()),
        };
        let target = claimed_path(path);
        let create = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match objects
            .put_opts(&target, bytes.clone().into(), create)
            .await
        {
            Ok(_) => {}
            // Claimed already (by another committer, or by a run that died before removing
            // the original): the claimed copy is the one that counts.
            Err(object_store::Error::AlreadyExists { .. }) => {
                delete_if_present(objects, path).await?;
                return Ok(None);
            }
            Err(other) => return Err(other.into()),
        }
        delete_if_present(objects, path).await?;
        Ok(Some((target, bytes)))
    }

    /// Commits one project's waiting batches: up to [`COMMITS_PER_RUN`] commits of
    /// [`BATCHES_PER_COMMIT`] staged objects, from one listing, then its staging log.
    pub async fn commit_team(&mut self, team_id: i64) -> Result<CommitReport, LakeError> {
        let mut total = self.commit_objects(team_id).await?;
        if let Some(log) = self.state.staging_log.clone() {
            self.commit_log(team_id, log, &mut total).await?;
        }
        Ok(total)
    }

    async fn commit_objects(&mut self, team_id: i64) -> Result<CommitReport, LakeError> {
        let objects = self.state.objects.clone();
        // What a previous run claimed and may or may not have committed.
        let leftovers = list_batches(objects.as_ref(), &claimed_prefix(team_id)).await?;
        let mut staged = list_batches(objects.as_ref(), &staging::team_prefix(team_id)).await?;
        staged.truncate(BATCHES_PER_COMMIT * COMMITS_PER_RUN);
        let mut total = CommitReport {
            team_id,
            ..Default::default()
        };
        let mut chunks = staged.chunks(BATCHES_PER_COMMIT).peekable();
        let mut leftovers = Some(leftovers);
        while leftovers.is_some() || chunks.peek().is_some() {
            let chunk = chunks.next().unwrap_or_default();
            let report = self
                .commit_chunk(
                    team_id,
                    leftovers.take().unwrap_or_default(),
                    chunk.to_vec(),
                )
                .await?;
            total.batches += report.batches;
            total.events += report.events;
            total.recovered += report.recovered;
            total.duplicates += report.duplicates;
            total.rejected += report.rejected;
            total.version = report.version.or(total.version);
        }
        Ok(total)
    }

    /// One Delta commit: the claimed leftovers not yet in the table, plus `staged`.
    async fn commit_chunk(
        &mut self,
        team_id: i64,
        leftovers: Vec<Path>,
        staged: Vec<Path>,
    ) -> Result<CommitReport, LakeError> {
        let state = self.state.clone();
        let objects = state.objects.as_ref();
        let started = std::time::Instant::now();
        let mut phases = Vec::new();
        let mut report = CommitReport {
            team_id,
            ..Default::default()
        };
        if leftovers.is_empty() && staged.is_empty() {
            return Ok(report);
        }

        let mut claimed = Vec::new();
        let mut committed = Vec::new();
        if !leftovers.is_empty() {
            let table = self.table(team_id).await?;
            let log_store = table.log_store();
            for path in leftovers {
                let marker = table
                    .snapshot()?
                    .transaction_version(log_store.as_ref(), app_id(&path))
                    .await?;
                if marker.is_some() {
                    report.recovered += 1;
                    committed.push(path);
                } else {
                    let bytes = objects.get(&path).await?.bytes().await?;
                    claimed.push((path, bytes));
                }
            }
        }
        // Claims are independent: several at once (an object store answers each in a round
        // trip), kept in staging order so persons resolve in capture order.
        let this = &*self;
        let claims: Vec<Option<(Path, Bytes)>> = futures::stream::iter(staged)
            .map(move |path| async move { this.claim(&path).await })
            .buffered(CONCURRENT_OBJECT_CALLS)
            .try_collect()
            .await?;
        claimed.extend(claims.into_iter().flatten());

        phases.push(("claim", started.elapsed()));
        let mut rows = ParsedRows::default();
        let mut seen = HashSet::new();
        let mut paths = Vec::with_capacity(claimed.len());
        for (path, bytes) in claimed {
            match add_staged(&path, &bytes, &mut rows, &mut seen) {
                Ok(repeats) => {
                    report.duplicates += repeats;
                    paths.push(path);
                }
                Err(error) => {
                    // Never lose it, never let it block the others: set it aside for a person.
                    tracing::error!(%error, "staged object unreadable; moving it aside");
                    let aside = Path::from(format!(
                        "{QUARANTINE_ROOT}/{}",
                        path.as_ref().trim_start_matches("claimed/")
                    ));
                    objects.put(&aside, bytes.into()).await?;
                    delete_if_present(objects, &path).await?;
                    report.rejected += 1;
                }
            }
        }

        if !paths.is_empty() {
            let transactions = paths
                .iter()
                .map(|path| Transaction::new(app_id(path), 1))
                .collect();
            report.events = rows.len();
            phases.push(("read", started.elapsed()));
            report.version = Some(
                self.write_rows(team_id, rows, transactions, &mut phases, started)
                    .await?,
            );
            report.batches = paths.len();
            committed.extend(paths);
        }
        futures::stream::iter(committed)
            .map(move |path| async move { delete_if_present(objects, &path).await })
            .buffer_unordered(CONCURRENT_OBJECT_CALLS)
            .try_collect::<Vec<()>>()
            .await?;
        phases.push(("clean up", started.elapsed()));
        tracing::debug!(
            events = report.events,
            objects = report.batches,
            ?phases,
            "commit timings (elapsed at the end of each phase)"
        );
        Ok(report)
    }

    /// Resolves persons, shreds and commits `rows` with `transactions` in one Delta commit;
    /// returns the table's new version.
    async fn write_rows(
        &mut self,
        team_id: i64,
        mut rows: ParsedRows,
        transactions: Vec<Transaction>,
        phases: &mut Vec<(&'static str, std::time::Duration)>,
        started: std::time::Instant,
    ) -> Result<i64, LakeError> {
        let state = self.state.clone();
        let mut persons = Persons::new(state.store.clone(), state.clock.clone(), team_id);
        // Before the Delta commit: a failure here fails the commit, which is retried whole,
        // while recording types whose events then fail to commit is harmless.
        let seen = rows.take_group_types();
        if !seen.is_empty() {
            self.group_types
                .record(state.store.as_ref(), team_id, &seen)
                .await?;
        }
        let observed = rows.take_definitions();
        let batches = rows.resolve(&mut persons).await?;
        phases.push(("persons", started.elapsed()));
        let mut counts = self.key_counts.remove(&team_id).unwrap_or_default();
        if crate::shred::enabled(&state) {
            for batch in &batches {
                counts.observe(batch);
            }
        }
        let table = self.table(team_id).await?;
        let shredder = crate::shred::prepare(&state, team_id, table, Some(&counts)).await?;
        // Keys are picked once enough rows were seen; until then the counts accumulate.
        if counts.sampled() < crate::shred::MIN_SAMPLED_ROWS {
            self.key_counts.insert(team_id, counts);
        }
        let batches = batches
            .iter()
            .map(|batch| shredder.apply(batch))
            .collect::<Result<Vec<_>, _>>()?;
        phases.push(("shred", started.elapsed()));
        let table = self.table_loaded(team_id)?;
        let mut writer = RecordBatchWriter::for_table(table)?
            .with_writer_properties(table::writer_properties())
            .with_commit_properties(
                CommitProperties::default().with_application_transactions(transactions),
            );
        for batch in batches {
            writer.write(batch).await?;
        }
        let version = writer.flush_and_commit(table).await? as i64;
        crate::shred::settle(&state, team_id, &shredder).await?;
        // After the commit, so a retried commit does not count its events twice; a failure
        // here loses a batch's counts, never its events.
        if let Err(error) = self
            .definitions
            .record(state.store.as_ref(), team_id, &observed, state.clock.now())
            .await
        {
            tracing::warn!(team_id, %error, "event and property definitions not recorded");
        }
        phases.push(("commit", started.elapsed()));
        Ok(version)
    }

    /// Commits the project's sealed staging log segments: up to [`COMMITS_PER_RUN`] commits of
    /// whole segments, about [`LOG_BYTES_PER_COMMIT`] each, and deletes them.
    async fn commit_log(
        &mut self,
        team_id: i64,
        log: std::sync::Arc<StagingLog>,
        total: &mut CommitReport,
    ) -> Result<(), LakeError> {
        // What this process acknowledged until now becomes committable.
        log.seal().await.map_err(log_error)?;
        // Locked while this run holds them: no writer appends, no other committer reads.
        let sealed = blocking(move || {
            log.remove_abandoned(team_id)?;
            let mut sealed = Vec::new();
            for path in log.segments(team_id)? {
                sealed.extend(Sealed::open(&path)?);
            }
            Ok(sealed)
        })
        .await?;
        if sealed.is_empty() {
            return Ok(());
        }
        let table = self.table(team_id).await?;
        let log_store = table.log_store();
        let mut waiting = Vec::with_capacity(sealed.len());
        for segment in sealed {
            let committed = table
                .snapshot()?
                .transaction_version(log_store.as_ref(), log_app_id(segment.name()))
                .await?;
            let offset = committed.map_or(0, |offset| offset.max(0) as u64);
            waiting.push((segment, offset));
        }
        let mut waiting = waiting.into_iter().peekable();
        let mut commits = 0;
        while waiting.peek().is_some() && commits < COMMITS_PER_RUN {
            let started = std::time::Instant::now();
            let mut phases = Vec::new();
            let mut rows = ParsedRows::default();
            let mut seen = HashSet::new();
            let mut transactions = Vec::new();
            let mut done = Vec::new();
            let mut bytes = 0;
            let mut records = 0;
            while bytes < LOG_BYTES_PER_COMMIT
                && let Some((mut segment, offset)) = waiting.next()
            {
                let (segment, data) = blocking(move || {
                    let data = segment.read_from(offset)?;
                    Ok((segment, data))
                })
                .await?;
                let mut reader = staging_log::records(&data, offset);
                let mut end = offset;
                for record in reader.by_ref() {
                    let named = Path::from(format!("{}@{end}", segment.name()));
                    match add_record(record.payload, &named, &mut rows, &mut seen) {
                        Ok(repeats) => {
                            total.duplicates += repeats;
                            records += 1;
                        }
                        Err(error) => {
                            // Framed whole yet unreadable: set aside, never lost, never blocking.
                            tracing::error!(%error, "staging log record unreadable; moving it aside");
                            self.set_aside(team_id, &segment, end, record.payload)
                                .await?;
                            total.rejected += 1;
                        }
                    }
                    bytes += record.payload.len();
                    end = record.end;
                }
                let torn = reader.rest();
                if torn > 0 {
                    // Written but never synced, so never acknowledged: kept for a person only.
                    tracing::warn!(
                        segment = %segment.path().display(),
                        bytes = torn,
                        "staging log segment ends in a torn record; moving it aside"
                    );
                    let tail = &data[data.len() - torn..];
                    self.set_aside(team_id, &segment, end, tail).await?;
                    total.rejected += 1;
                }
                if end > offset {
                    transactions.push(Transaction::new(log_app_id(segment.name()), end as i64));
                } else if offset > 0 {
                    total.recovered += 1;
                }
                done.push(segment);
            }
            phases.push(("read", started.elapsed()));
            if !rows.is_empty() {
                total.events += rows.len();
                let version = self
                    .write_rows(team_id, rows, transactions, &mut phases, started)
                    .await?;
                total.version = Some(version);
                total.batches += records;
                commits += 1;
            }
            // Committed to their end (or holding nothing to commit): gone.
            blocking(move || done.into_iter().try_for_each(Sealed::remove)).await?;
            phases.push(("clean up", started.elapsed()));
            tracing::debug!(
                events = total.events,
                records,
                ?phases,
                "staging log commit timings (elapsed at the end of each phase)"
            );
        }
        Ok(())
    }

    /// Keeps unreadable staging log bytes in `staging-rejected/` for a person to look at.
    async fn set_aside(
        &self,
        team_id: i64,
        segment: &Sealed,
        offset: u64,
        bytes: &[u8],
    ) -> Result<(), LakeError> {
        let aside = Path::from(format!(
            "{QUARANTINE_ROOT}/team_id={team_id}/{}-{offset}.log",
            segment.name()
        ));
        self.state
            .objects
            .put(&aside, bytes.to_vec().into())
            .await?;
        Ok(())
    }
}

/// Adds a staged object's events to `rows`, skipping uuids `seen` earlier in the commit, and
/// returns how many it skipped. The object is read whole first: a corrupt one adds nothing.
fn add_staged(
    path: &Path,
    bytes: &[u8],
    rows: &mut ParsedRows,
    seen: &mut HashSet<Uuid>,
) -> Result<usize, StagingError> {
    let text = staging::inflate(path, bytes)?;
    add_lines(&text, path, rows, seen)
}

/// [`add_staged`] for one staging log record (`at` names it in errors).
fn add_record(
    payload: &[u8],
    at: &Path,
    rows: &mut ParsedRows,
    seen: &mut HashSet<Uuid>,
) -> Result<usize, StagingError> {
    let text = std::str::from_utf8(payload).map_err(|e| StagingError::corrupt(at, e))?;
    add_lines(text, at, rows, seen)
}

fn add_lines(
    text: &str,
    path: &Path,
    rows: &mut ParsedRows,
    seen: &mut HashSet<Uuid>,
) -> Result<usize, StagingError> {
    let corrupt = |error| StagingError::corrupt(path, error);
    let mut events = Vec::new();
    for line in staging::lines(text) {
        let staged: StagedLine = serde_json::from_str(line).map_err(corrupt)?;
        let probe = PropertiesProbe::read(staged.properties.get()).map_err(corrupt)?;
        let update = if ParsedRows::needs_whole_event(&staged, &probe) {
            Some(serde_json::from_str::<StagedEvent>(line).map_err(corrupt)?)
        } else {
            None
        };
        events.push((staged, probe, update));
    }
    let mut repeats = 0;
    for (staged, probe, update) in events {
        if seen.insert(staged.uuid) {
            rows.push_staged_line(&staged, &probe, update);
        } else {
            repeats += 1;
        }
    }
    Ok(repeats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u128) -> StagedEvent {
        let at = chrono::DateTime::UNIX_EPOCH;
        StagedEvent {
            uuid: Uuid::from_u128(n),
            event: "e".into(),
            distinct_id: "d".into(),
            properties: Default::default(),
            timestamp: at,
            created_at: at,
            elements_chain: None,
        }
    }

    #[tokio::test]
    async fn a_log_segment_is_committed_once_from_where_its_marker_says() {
        let test = common::testing::TestState::embedded().await;
        let state = &test.state;
        let log = state.staging_log.clone().expect("embedded: a staging log");
        let team = 5;
        staging::stage(state, team, &[event(1), event(2)])
            .await
            .unwrap();
        staging::stage(state, team, &[event(3)]).await.unwrap();
        assert_eq!(staged_count(state).await.unwrap(), 2);
        log.seal().await.unwrap();
        let segment = log.segments(team).unwrap().pop().expect("a segment");
        let bytes = std::fs::read(&segment).unwrap();

        let report = commit_team(state, team).await.unwrap();
        assert_eq!((report.batches, report.events), (2, 3), "{report:?}");
        assert!(log.segments(team).unwrap().is_empty());
        assert_eq!(staged_count(state).await.unwrap(), 0);

        // A run that died after its Delta commit, before deleting the segment: nothing again.
        std::fs::write(&segment, &bytes).unwrap();
        let retry = commit_team(state, team).await.unwrap();
        assert_eq!(
            (retry.batches, retry.events, retry.recovered),
            (0, 0, 1),
            "{retry:?}"
        );
        assert!(log.segments(team).unwrap().is_empty());

        // Past the marker's offset, only what follows it is committed; a torn tail is set aside.
        let mut longer = bytes.clone();
        longer.extend(staging_log::record(&[event(4)]).unwrap());
        longer.extend([9, 0, 0, 0, 1]);
        std::fs::write(&segment, &longer).unwrap();
        let resumed = commit_team(state, team).await.unwrap();
        assert_eq!(
            (resumed.batches, resumed.events, resumed.rejected),
            (1, 1, 1),
            "{resumed:?}"
        );
        let rows = table::scan(state, team).await.unwrap();
        let mut uuids: Vec<_> = rows.iter().map(|row| row.uuid.clone()).collect();
        uuids.sort();
        let expected: Vec<_> = (1..=4).map(|n| Uuid::from_u128(n).to_string()).collect();
        assert_eq!(uuids, expected);
    }
}
