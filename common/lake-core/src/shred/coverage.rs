//! Which shredded keys the files of one snapshot hold, from the statistics of `__shred` (a
//! constant per batch written, so a file's minimum equals its maximum unless batches of one file
//! differ). A key every file holds is read from its column alone; a key some files hold is read
//! from the column where the row's mask says so and from the JSON elsewhere.

use deltalake_core::arrow::array::{Array, AsArray};
use deltalake_core::arrow::datatypes::Int64Type;
use deltalake_core::{DeltaTable, DeltaTableError};

use super::registry::{ColumnType, Registry, Source};
use super::{MASK_COLUMN, arrow_type};

#[derive(Debug, Clone, PartialEq)]
pub struct CoveredKey {
    pub key: String,
    pub source: Source,
    pub column: String,
    pub column_type: ColumnType,
    pub slot: u8,
    /// Every file of the snapshot holds the column: no JSON fallback is needed.
    pub everywhere: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coverage {
    pub keys: Vec<CoveredKey>,
    /// Event names by code (`event_names[code - 1]`).
    pub event_names: std::sync::Arc<Vec<String>>,
    /// Every name has a code (the registry never overflowed), so a row without a code is a
    /// row of a file written before codes.
    pub events_complete: bool,
}

/// Each file's mask as far as statistics tell: exact when constant, else unknown.
enum FileMask {
    Exact(i64),
    Unknown,
}

fn file_masks(table: &DeltaTable) -> Result<Vec<FileMask>, DeltaTableError> {
    let actions = table.snapshot()?.add_actions_table(true)?;
    let column = |name: &str| {
        actions
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<Int64Type>().cloned())
    };
    let (min, max) = (
        column(&format!("min.{MASK_COLUMN}")),
        column(&format!("max.{MASK_COLUMN}")),
    );
    Ok((0..actions.num_rows())
        .map(|row| match (&min, &max) {
            (Some(min), Some(max)) if min.is_valid(row) && max.is_valid(row) => {
                if min.value(row) == max.value(row) {
                    FileMask::Exact(min.value(row))
                } else {
                    FileMask::Unknown
                }
            }
            // No statistics: either no row has a mask (an older file) or they were not kept.
            (Some(min), Some(max)) if min.is_null(row) && max.is_null(row) => FileMask::Exact(0),
            _ => FileMask::Unknown,
        })
        .collect())
}

impl Coverage {
    /// The keys of `registry` (dropped ones included: their files still hold them) whose
    /// columns the table has and some file holds.
    pub fn of(table: &DeltaTable, registry: &Registry) -> Result<Self, DeltaTableError> {
        let schema = super::table_schema(table)?;
        if schema.field_with_name(MASK_COLUMN).is_err() || registry.keys.is_empty() {
            return Ok(Self::default());
        }
        let (mut everywhere, mut somewhere) = (!0i64, 0i64);
        for mask in file_masks(table)? {
            match mask {
                FileMask::Exact(mask) => {
                    everywhere &= mask;
                    somewhere |= mask;
                }
                FileMask::Unknown => {
                    everywhere = 0;
                    somewhere = !0;
                }
            }
        }
        let keys = registry
            .keys
            .iter()
            .filter(|k| {
                schema
                    .field_with_name(&k.column)
                    .is_ok_and(|f| f.data_type() == &arrow_type(k.column_type))
            })
            .filter(|k| somewhere & (1 << k.slot) != 0)
            .map(|k| CoveredKey {
                key: k.key.clone(),
                source: k.source,
                column: k.column.clone(),
                column_type: k.column_type,
                slot: k.slot,
                everywhere: everywhere & (1 << k.slot) != 0,
            })
            .collect();
        Ok(Self {
            keys,
            event_names: std::sync::Arc::new(registry.events.clone()),
            events_complete: !registry.events_overflowed,
        })
    }

    /// An event name's code.
    pub fn event_code(&self, name: &str) -> Option<i64> {
        self.event_names
            .iter()
            .position(|known| known == name)
            .map(|i| i as i64 + 1)
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key's column, preferring one every file holds (a key re-added with another type has
    /// two).
    pub fn find(&self, source: Source, key: &str) -> Option<&CoveredKey> {
        self.keys
            .iter()
            .filter(|k| k.source == source && k.key == key)
            .max_by_key(|k| (k.everywhere, k.slot))
    }

    /// The columns queries may need: the mask and every covered key's.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        let mask = (!self.keys.is_empty()).then_some(MASK_COLUMN);
        mask.into_iter()
            .chain(self.keys.iter().map(|k| k.column.as_str()))
    }
}
