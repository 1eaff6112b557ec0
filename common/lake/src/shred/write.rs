//! Writing shredded columns: each batch a writer commits gets, besides the table's own columns,
//! one column per shredded key (the value `properties.key` reads, typed when every value of the
//! batch survives the round trip through the type) and `__shred`, the mask of keys the batch
//! holds. A key whose values do not fit its type in some batch leaves that batch's bit unset:
//! its rows are read from the JSON, so an answer never depends on how a file was written.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use deltalake_core::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray, StringBuilder, new_null_array,
};
use deltalake_core::arrow::compute::{CastOptions, cast, cast_with_options};
use deltalake_core::arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use deltalake_core::arrow::error::ArrowError;

use lake_core::json::{WantedKeys, property_values};

use super::registry::{ColumnType, Registry, Source};
use super::{MASK_COLUMN, arrow_type};
use crate::table;

/// One key a writer fills.
#[derive(Debug, Clone)]
struct Planned {
    key: String,
    source: Source,
    column: String,
    column_type: ColumnType,
    slot: u8,
}

/// Turns the table's base batches into batches of the table's full schema.
#[derive(Debug)]
pub struct Shredder {
    /// The table's columns after the base ones, in table order.
    extra: Vec<FieldRef>,
    planned: Vec<Planned>,
    schema: SchemaRef,
    /// Slots of typed keys some batch's values did not fit: the writer demotes them to text.
    misfits: AtomicI64,
    /// Event name → code (looked up for every row: foldhash).
    codes: foldhash::HashMap<String, i64>,
    /// Names some batch had without a code: the writer codes them for the next writes.
    uncoded: Mutex<HashSet<String>>,
}

/// Uncoded names remembered per writer at most.
const MAX_UNCODED: usize = 1_000;

impl Shredder {
    /// Fills the registry's active keys that the table has columns for (of the right type);
    /// the table's other extra columns get NULLs.
    pub fn new(registry: Option<&Registry>, table_schema: &Schema) -> Self {
        let base = table::arrow_schema();
        let extra: Vec<FieldRef> = table_schema
            .fields()
            .iter()
            .filter(|f| base.field_with_name(f.name()).is_err())
            .cloned()
            .collect();
        let planned = registry
            .into_iter()
            .flat_map(Registry::active)
            .filter(|k| {
                extra
                    .iter()
                    .any(|f| f.name() == &k.column && f.data_type() == &arrow_type(k.column_type))
            })
            .map(|k| Planned {
                key: k.key.clone(),
                source: k.source,
                column: k.column.clone(),
                column_type: k.column_type,
                slot: k.slot,
            })
            .collect();
        let mut fields: Vec<FieldRef> = base.fields().iter().cloned().collect();
        fields.extend(
            extra
                .iter()
                .map(|f| Arc::new(f.as_ref().clone().with_nullable(true))),
        );
        Self {
            extra,
            planned,
            schema: Arc::new(Schema::new(fields)),
            misfits: AtomicI64::new(0),
            codes: registry
                .map(|r| {
                    r.events
                        .iter()
                        .enumerate()
                        .map(|(i, name)| (name.clone(), i as i64 + 1))
                        .collect()
                })
                .unwrap_or_default(),
            uncoded: Mutex::new(HashSet::new()),
        }
    }

    /// Event names some batch had without a code.
    pub fn uncoded(&self) -> Vec<String> {
        self.uncoded
            .lock()
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The batch's event codes, and whether every row has one.
    fn event_codes(&self, batch: &RecordBatch) -> Result<(ArrayRef, bool), ArrowError> {
        let names = text_column(batch, "event")?;
        let mut complete = true;
        let mut missing = Vec::new();
        let codes: Int64Array = (0..names.len())
            .map(|row| {
                if names.is_null(row) {
                    return None;
                }
                let code = self.codes.get(names.value(row)).copied();
                if code.is_none() {
                    complete = false;
                    if missing.len() < MAX_UNCODED {
                        missing.push(names.value(row).to_owned());
                    }
                }
                code
            })
            .collect();
        if !missing.is_empty()
            && let Ok(mut uncoded) = self.uncoded.lock()
        {
            for name in missing {
                if uncoded.len() >= MAX_UNCODED {
                    break;
                }
                uncoded.insert(name);
            }
        }
        Ok((Arc::new(codes), complete))
    }

    /// Slots of the typed keys whose values did not fit their type in some batch so far.
    pub fn misfits(&self) -> Vec<u8> {
        let mask = self.misfits.load(Ordering::Relaxed);
        (0..64).filter(|slot| mask & (1 << slot) != 0).collect()
    }

    /// A base batch (the table's own columns, by name) with the shredded columns and the mask.
    pub fn apply(&self, batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
        let rows = batch.num_rows();
        let mut values: HashMap<&str, ArrayRef> = HashMap::new();
        let mut mask: i64 = 0;
        if let Some(event) = self.planned.iter().find(|p| p.source == Source::Event) {
            let (codes, complete) = self.event_codes(batch)?;
            if complete {
                mask |= 1 << event.slot;
            }
            values.insert(event.column.as_str(), codes);
        }
        for source in [Source::Properties, Source::PersonProperties] {
            let keys: Vec<&Planned> = self.planned.iter().filter(|p| p.source == source).collect();
            if keys.is_empty() {
                continue;
            }
            let text = text_column(batch, source.column())?;
            for (planned, strings) in keys.iter().zip(extract(&text, &keys)) {
                let (array, complete) = typed(strings, planned.column_type)?;
                if complete {
                    mask |= 1 << planned.slot;
                } else {
                    self.misfits.fetch_or(1 << planned.slot, Ordering::Relaxed);
                }
                values.insert(planned.column.as_str(), array);
            }
        }
        let base = table::arrow_schema();
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for field in base.fields() {
            let column = batch.column_by_name(field.name()).ok_or_else(|| {
                ArrowError::SchemaError(format!("batch lacks column {}", field.name()))
            })?;
            columns.push(if column.data_type() == field.data_type() {
                column.clone()
            } else {
                cast(column, field.data_type())?
            });
        }
        for field in &self.extra {
            columns.push(if field.name() == MASK_COLUMN {
                Arc::new(Int64Array::from_value(mask, rows)) as ArrayRef
            } else {
                match values.remove(field.name().as_str()) {
                    Some(array) => array,
                    None => new_null_array(field.data_type(), rows),
                }
            });
        }
        RecordBatch::try_new(self.schema.clone(), columns)
    }
}

/// A text column as Utf8 (files written by `optimize` may hold views).
fn text_column(batch: &RecordBatch, name: &str) -> Result<StringArray, ArrowError> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| ArrowError::SchemaError(format!("batch lacks column {name}")))?;
    Ok(cast(column, &DataType::Utf8)?.as_string::<i32>().clone())
}

/// Each key's `hogql_prop` value for every row, in one walk per row.
fn extract(text: &StringArray, keys: &[&Planned]) -> Vec<StringArray> {
    let mut wanted = WantedKeys::new(keys.iter().map(|p| p.key.as_str()));
    let mut builders: Vec<StringBuilder> = keys
        .iter()
        .map(|_| StringBuilder::with_capacity(text.len(), text.len() * 8))
        .collect();
    let mut done = vec![false; keys.len()];
    for row in 0..text.len() {
        done.fill(false);
        if !text.is_null(row) {
            property_values(
                text.value(row),
                &mut wanted,
                &mut done,
                |index, value| builders[index].append_option(value),
                None,
            );
        }
        for (index, filled) in done.iter().enumerate() {
            if !filled {
                builders[index].append_null();
            }
        }
    }
    builders.into_iter().map(|mut b| b.finish()).collect()
}

/// The column as written, and whether it says exactly what the text says: every value cast to
/// the type and back gives its text again (so `CAST(column AS VARCHAR)` reads what the JSON
/// would have given). Strings always are.
fn typed(strings: StringArray, column_type: ColumnType) -> Result<(ArrayRef, bool), ArrowError> {
    let target = arrow_type(column_type);
    if target == DataType::Utf8 {
        return Ok((Arc::new(strings), true));
    }
    let options = CastOptions {
        safe: true,
        ..Default::default()
    };
    let converted = cast_with_options(&strings, &target, &options)?;
    let back = cast(&converted, &DataType::Utf8)?;
    let back = back.as_string::<i32>();
    let exact = (0..strings.len()).all(|row| {
        strings.is_null(row) && back.is_null(row)
            || (strings.is_valid(row)
                && back.is_valid(row)
                && strings.value(row) == back.value(row))
    });
    if exact {
        Ok((converted, true))
    } else {
        Ok((new_null_array(&target, strings.len()), false))
    }
}

#[cfg(test)]
mod tests {
    use deltalake_core::arrow::array::Float64Array;

    use super::*;

    #[test]
    fn only_values_that_read_back_the_same_are_typed() {
        let exact = StringArray::from(vec![Some("19.99"), None, Some("100.0"), Some("0.5")]);
        let (array, complete) = typed(exact, ColumnType::Float64).unwrap();
        assert!(complete);
        let floats = array.as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(floats.value(0), 19.99);
        // "20" would read back as "20.0"; "abc" is no number.
        for bad in ["20", "abc", "1e3"] {
            let strings = StringArray::from(vec![Some("1.5"), Some(bad)]);
            let (array, complete) = typed(strings, ColumnType::Float64).unwrap();
            assert!(!complete, "{bad}");
            assert_eq!(array.null_count(), 2);
        }
        let ints = StringArray::from(vec![Some("12"), Some("-3"), None]);
        assert!(typed(ints, ColumnType::Int64).unwrap().1);
        let padded = StringArray::from(vec![Some("012")]);
        assert!(!typed(padded, ColumnType::Int64).unwrap().1);
        let flags = StringArray::from(vec![Some("true"), Some("false")]);
        assert!(typed(flags, ColumnType::Boolean).unwrap().1);
        let numbers = StringArray::from(vec![Some("1")]);
        assert!(!typed(numbers, ColumnType::Boolean).unwrap().1);
    }
}
