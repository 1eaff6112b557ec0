//! Which keys ingestion sees most: a sample of each committed batch's rows, counted per key with
//! the kinds of its values, so the most frequent keys can be shredded with a type that fits.

use std::collections::HashMap;

use deltalake_core::arrow::array::{Array, AsArray, RecordBatch};
use deltalake_core::arrow::compute::cast;
use deltalake_core::arrow::datatypes::DataType;
use jiter::Peek;

use lake_core::json::{WantedKeys, property_values};

use super::registry::{ColumnType, Source};

/// Rows sampled per batch at most: counting every key of every row would cost capture as much
/// as shredding does.
const SAMPLE_ROWS_PER_BATCH: usize = 2048;
/// Distinct keys counted at most (a batch of random keys must not grow memory).
const MAX_COUNTED_KEYS: usize = 4096;

#[derive(Debug, Default, Clone)]
struct Kinds {
    present: u64,
    ints: u64,
    floats: u64,
    bools: u64,
}

#[derive(Debug, Default, Clone)]
pub struct KeyCounts {
    sampled: u64,
    keys: HashMap<(Source, String), Kinds>,
    /// Every event name seen (not a sample: each needs a code before its rows are written).
    event_names: std::collections::HashSet<String>,
}

/// Distinct event names remembered at most.
const MAX_EVENT_NAMES_SEEN: usize = 10_000;

impl KeyCounts {
    /// Rows sampled so far.
    pub fn sampled(&self) -> u64 {
        self.sampled
    }

    /// The event names seen.
    pub fn event_names(&self) -> Vec<String> {
        self.event_names.iter().cloned().collect()
    }

    /// Samples a base batch's rows evenly, and notes every event name.
    pub fn observe(&mut self, batch: &RecordBatch) {
        let rows = batch.num_rows();
        if rows == 0 {
            return;
        }
        if let Some(names) = batch
            .column_by_name("event")
            .and_then(|c| cast(c, &DataType::Utf8).ok())
        {
            let names = names.as_string::<i32>();
            for name in names.iter().flatten() {
                if !self.event_names.contains(name) && self.event_names.len() < MAX_EVENT_NAMES_SEEN
                {
                    self.event_names.insert(name.to_owned());
                }
            }
        }
        let step = rows.div_ceil(SAMPLE_ROWS_PER_BATCH).max(1);
        let mut wanted = WantedKeys::new([]);
        for source in [Source::Properties, Source::PersonProperties] {
            let Some(column) = batch.column_by_name(source.column()) else {
                continue;
            };
            let Ok(text) = cast(column, &DataType::Utf8) else {
                continue;
            };
            let text = text.as_string::<i32>();
            for row in (0..rows).step_by(step) {
                if text.is_null(row) {
                    continue;
                }
                let mut record = |key: &str, peek: Peek, raw: Option<&str>| {
                    self.count(source, key, peek, raw.unwrap_or(""));
                };
                property_values(
                    text.value(row),
                    &mut wanted,
                    &mut [],
                    |_, _| {},
                    Some(&mut record),
                );
            }
        }
        self.sampled += rows.div_ceil(step) as u64;
    }

    fn count(&mut self, source: Source, key: &str, peek: Peek, raw: &str) {
        if peek == Peek::Null || raw == "\"\"" {
            return;
        }
        let full = self.keys.len() >= MAX_COUNTED_KEYS;
        let kinds = match self.keys.get_mut(&(source, key.to_owned())) {
            Some(kinds) => kinds,
            None if full => return,
            None => self.keys.entry((source, key.to_owned())).or_default(),
        };
        kinds.present += 1;
        match peek {
            Peek::True | Peek::False => kinds.bools += 1,
            peek if peek.is_num() => {
                if raw.parse::<i64>().is_ok_and(|n| n.to_string() == raw) {
                    kinds.ints += 1;
                } else if raw.contains('.') && !raw.contains(['e', 'E']) {
                    kinds.floats += 1;
                }
            }
            _ => {}
        }
    }

    /// Keys present in at least `min_share` of the sampled rows, most frequent first, each with
    /// the type all its sampled values fit (else text). Properties the table keeps in columns of
    /// their own are left to the slow query log: only a query of `properties.$session_id`
    /// itself is worth the second copy.
    pub fn candidates(&self, min_share: f64) -> Vec<(Source, String, ColumnType)> {
        let floor = (self.sampled as f64 * min_share).max(1.0);
        let mut frequent: Vec<(&(Source, String), &Kinds)> = self
            .keys
            .iter()
            .filter(|(_, kinds)| kinds.present as f64 >= floor)
            .filter(|((source, key), _)| {
                !(*source == Source::Properties
                    && crate::table::PROPERTIES_WITH_COLUMNS.contains(&key.as_str()))
            })
            .collect();
        frequent.sort_by(|a, b| b.1.present.cmp(&a.1.present).then(a.0.1.cmp(&b.0.1)));
        frequent
            .into_iter()
            .map(|((source, key), kinds)| {
                let column_type = if kinds.ints == kinds.present {
                    ColumnType::Int64
                } else if kinds.floats == kinds.present {
                    ColumnType::Float64
                } else if kinds.bools == kinds.present {
                    ColumnType::Boolean
                } else {
                    ColumnType::String
                };
                (*source, key.clone(), column_type)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use deltalake_core::arrow::array::StringArray;
    use deltalake_core::arrow::datatypes::{Field, Schema};

    use super::*;

    #[test]
    fn properties_with_columns_of_their_own_are_no_candidates() {
        let properties = StringArray::from(vec![
            r#"{"$session_id": "s1", "$browser": "Firefox", "n": 1}"#,
            r#"{"$session_id": "s2", "$browser": "Safari", "n": 2}"#,
        ]);
        let person_properties = StringArray::from(vec![r#"{"$session_id": "p"}"#; 2]);
        let schema = Schema::new(vec![
            Field::new("properties", DataType::Utf8, false),
            Field::new("person_properties", DataType::Utf8, false),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![Arc::new(properties), Arc::new(person_properties)],
        )
        .unwrap();
        let mut counts = KeyCounts::default();
        counts.observe(&batch);
        let candidates: Vec<(Source, String)> = counts
            .candidates(0.5)
            .into_iter()
            .map(|(source, key, _)| (source, key))
            .collect();
        assert_eq!(
            candidates,
            vec![
                (Source::Properties, "$browser".to_owned()),
                // A person property of that name has no column of its own.
                (Source::PersonProperties, "$session_id".to_owned()),
                (Source::Properties, "n".to_owned()),
            ]
        );
    }
}
