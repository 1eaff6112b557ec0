//! Moves staged capture batches into each project's Delta table, exactly once.
//!
//! A committer first *claims* a staged object: it copies it to `claimed/` with a create-only
//! put (one claimant wins even with several committers) and removes the original. Claimed objects
//! are committed with a Delta application transaction named after them, atomically with their
//! rows, then deleted. A committer that dies anywhere in between leaves the object in `claimed/`;
//! the next run checks only those (few) objects for their marker: already in the table, it just
//! deletes them; otherwise it commits them. Nothing acknowledged is lost, nothing is committed twice.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use common::AppState;
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

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommitReport {
    pub team_id: i64,
    /// Staged objects whose events went into the table in this run.
    pub batches: usize,
    pub events: usize,
    /// Claimed objects found already committed (a previous run died before deleting them).
    pub recovered: usize,
    /// Events dropped because an earlier event of this commit had the same uuid.
    pub duplicates: usize,
    /// Unreadable staged objects moved aside to `staging-rejected/`.
    pub rejected: usize,
    pub version: Option<i64>,
}

fn app_id(path: &Path) -> String {
    format!("staging:{}", path.filename().unwrap_or_default())
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

/// How many staged or claimed objects wait, across projects (empty local folders do not count).
pub async fn staged_count(objects: &dyn ObjectStore) -> Result<usize, LakeError> {
    let mut count = 0;
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
}

impl Committer {
    pub fn new(state: AppState) -> Self {
        Self {
            state,
            tables: HashMap::new(),
            group_types: KnownGroupTypes::default(),
            key_counts: HashMap::new(),
        }
    }

    pub async fn commit_all(&mut self) -> Result<Vec<CommitReport>, LakeError> {
        let mut reports = Vec::new();
        for team_id in teams_with_staging(self.state.objects.as_ref()).await? {
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
    /// [`BATCHES_PER_COMMIT`] staged objects, from one listing.
    pub async fn commit_team(&mut self, team_id: i64) -> Result<CommitReport, LakeError> {
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
            let mut persons = Persons::new(state.store.clone(), state.clock.clone(), team_id);
            let transactions = paths
                .iter()
                .map(|path| Transaction::new(app_id(path), 1))
                .collect();
            report.events = rows.len();
            phases.push(("read", started.elapsed()));
            // Before the Delta commit: a failure here fails the commit, which is retried whole,
            // while recording types whose events then fail to commit is harmless.
            let seen = rows.take_group_types();
            if !seen.is_empty() {
                self.group_types
                    .record(state.store.as_ref(), team_id, &seen)
                    .await?;
            }
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
            report.version = Some(writer.flush_and_commit(table).await? as i64);
            crate::shred::settle(&state, team_id, &shredder).await?;
            phases.push(("commit", started.elapsed()));
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
    let corrupt = |error| StagingError::corrupt(path, error);
    let mut events = Vec::new();
    for line in staging::lines(&text) {
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
