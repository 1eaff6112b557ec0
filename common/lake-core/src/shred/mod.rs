//! What shredding's writer and its readers share: the project's shredded keys ([`registry`]),
//! which keys the files of a snapshot hold ([`coverage`]), the mask column and the Arrow type of
//! each key's column. The writer side (observing keys, writing and backfilling columns) is the
//! `lake` crate's `shred`; the SQL side reads the columns (the `engine` crate's `shredded`).

pub mod coverage;
pub mod registry;

use common::AppState;
use deltalake_core::arrow::datatypes::DataType;
use deltalake_core::{DeltaTable, DeltaTableError};

pub use coverage::Coverage;
pub use registry::{ColumnType, Origin, Registry, ShreddedKey, Source};

/// The mask column: bit `slot` set when the row's batch holds that key's column.
pub const MASK_COLUMN: &str = "__shred";

/// The Arrow type of a key's column.
pub fn arrow_type(column_type: ColumnType) -> DataType {
    match column_type {
        ColumnType::String => DataType::Utf8,
        ColumnType::Int64 => DataType::Int64,
        ColumnType::Float64 => DataType::Float64,
        ColumnType::Boolean => DataType::Boolean,
    }
}

/// Whether this deployment shreds (`ANALYTICS_SHREDDING`, on by default).
pub fn enabled(state: &AppState) -> bool {
    state.config.query.shredding
}

/// The table's Arrow schema, as its current metadata declares it.
pub fn table_schema(
    table: &DeltaTable,
) -> Result<deltalake_core::arrow::datatypes::SchemaRef, DeltaTableError> {
    Ok(table.snapshot()?.snapshot().arrow_schema())
}
