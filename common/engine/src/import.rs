//! Bulk loading: validated events straight into a project's Delta table, in commits of a bounded
//! number of rows, so memory stays flat however long the input is.

use std::time::Instant;

use common::AppState;
use common::staging::StagedEvent;
use deltalake_core::DeltaTable;
use deltalake_core::writer::{DeltaWriter, RecordBatchWriter};

use crate::committer::{CommitError, Rows};
use crate::lake;
use crate::persons::Persons;

/// Rows per Delta commit (each commit closes its Parquet files).
const ROWS_PER_COMMIT: usize = 2_000_000;
/// Rows buffered as Arrow before they are encoded.
const ROWS_PER_BATCH: usize = 65_536;
/// Parquet files roll over at about this size.
const TARGET_FILE_BYTES: u64 = 128 * 1024 * 1024;

#[derive(Debug, Default, Clone)]
pub struct ImportReport {
    pub rows: u64,
    pub commits: u64,
    pub seconds: f64,
}

pub struct Importer {
    table: DeltaTable,
    writer: RecordBatchWriter,
    rows: Rows,
    persons: Persons,
    rows_in_commit: usize,
    report: ImportReport,
    started: Instant,
}

fn writer_for(table: &DeltaTable) -> Result<RecordBatchWriter, CommitError> {
    Ok(RecordBatchWriter::for_table(table)?.with_target_file_size(TARGET_FILE_BYTES))
}

impl Importer {
    pub async fn new(state: AppState, team_id: i64) -> Result<Self, CommitError> {
        let table = lake::open_or_create(&state, team_id).await?;
        let persons = Persons::new(state.store.clone(), team_id);
        let writer = writer_for(&table)?;
        Ok(Self {
            table,
            writer,
            rows: Rows::default(),
            persons,
            rows_in_commit: 0,
            report: ImportReport::default(),
            started: Instant::now(),
        })
    }

    /// Adds events (their persons resolved as the committer would).
    pub async fn push(&mut self, events: &[StagedEvent]) -> Result<(), CommitError> {
        for event in events {
            self.rows.push_with_person(&mut self.persons, event).await?;
            if self.rows.len() >= ROWS_PER_BATCH {
                self.encode().await?;
            }
        }
        if self.rows_in_commit >= ROWS_PER_COMMIT {
            self.commit().await?;
        }
        Ok(())
    }

    async fn encode(&mut self) -> Result<(), CommitError> {
        let rows = std::mem::take(&mut self.rows);
        let count = rows.len();
        for batch in rows.into_batches()? {
            self.writer.write(batch).await?;
        }
        self.rows_in_commit += count;
        self.report.rows += count as u64;
        Ok(())
    }

    async fn commit(&mut self) -> Result<(), CommitError> {
        if self.rows_in_commit == 0 {
            return Ok(());
        }
        self.writer.flush_and_commit(&mut self.table).await?;
        self.writer = writer_for(&self.table)?;
        self.rows_in_commit = 0;
        self.report.commits += 1;
        Ok(())
    }

    /// Rows accepted so far.
    pub fn rows(&self) -> u64 {
        self.report.rows + self.rows.len() as u64
    }

    pub async fn finish(mut self) -> Result<ImportReport, CommitError> {
        self.encode().await?;
        self.commit().await?;
        self.report.seconds = self.started.elapsed().as_secs_f64();
        Ok(self.report)
    }
}
