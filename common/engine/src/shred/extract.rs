//! Reading the shredded keys where the properties are parsed anyway. The bulk importer's
//! parsers must walk every row's properties to validate them and find the session and any
//! person update; the same walk reads the shredded keys' values, so the encoders need not walk
//! the text a second time. The values travel with the rows as extra columns of their batch,
//! named so that no table column can have the name ([`extracted_column`]), and
//! [`super::Shredder::apply`] takes them instead of extracting.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use deltalake_core::arrow::array::{StringArray, StringBuilder};
use jiter::Peek;

use crate::sql::udfs::json::{WantedKeys, property_values};

/// Delta column names refuse spaces: no table column is named like this.
const EXTRACTED_PREFIX: &str = "extracted ";

/// The batch column holding `key`'s extracted values (as `properties.key` reads them).
pub fn extracted_column(key: &str) -> String {
    format!("{EXTRACTED_PREFIX}{key}")
}

/// What rows need from properties besides their text, read in the extracting walk: the same
/// answers as [`common::staging::PropertiesProbe`].
#[derive(Debug, Default, PartialEq)]
pub struct PropertiesRead<'t> {
    /// `$session_id`, when it is a string.
    pub session_id: Option<Cow<'t, str>>,
    /// `$set`, `$set_once` or `$unset` is there (and not null).
    pub updates_person: bool,
}

/// Keys whose values the probe reads; a second occurrence of one is refused, as the probe's
/// typed reading refuses a duplicate field.
const PROBED: [&str; 4] = ["$session_id", "$set", "$set_once", "$unset"];

/// One row's values of the extracted keys, kept aside until the row is known to be taken.
#[derive(Debug, Default)]
pub struct RowValues {
    text: String,
    values: Vec<Option<Range<usize>>>,
}

impl RowValues {
    /// The value of the key at `index` (`None` for NULL).
    pub fn get(&self, index: usize) -> Option<&str> {
        self.values
            .get(index)?
            .as_ref()
            .and_then(|range| self.text.get(range.clone()))
    }
}

/// Walks `text` once: `None` unless it is one valid JSON object without a repeated probed key;
/// else what the probe reads, with each of `keys`' values in `row` (when given).
fn read_properties<'t>(
    text: &'t str,
    keys: Option<(&mut WantedKeys, &mut RowValues)>,
) -> Option<PropertiesRead<'t>> {
    let mut read = PropertiesRead::default();
    let mut probed = [0u8; PROBED.len()];
    let mut session: Option<Range<usize>> = None;
    let mut seen = |key: &str, peek: Peek, raw: Range<usize>| {
        if let Some(at) = PROBED.iter().position(|probed| *probed == key) {
            probed[at] += 1;
            match at {
                0 if peek == Peek::String => session = Some(raw),
                0 => session = None,
                _ => read.updates_person |= peek != Peek::Null,
            }
        }
    };
    let (mut no_keys, mut no_row) = (WantedKeys::new([]), RowValues::default());
    let (wanted, row) = match keys {
        Some((wanted, row)) => (wanted, row),
        None => (&mut no_keys, &mut no_row),
    };
    let count = wanted.len();
    row.text.clear();
    row.values.clear();
    row.values.resize(count, None);
    let mut done = vec![false; count];
    let whole = property_values(
        text,
        wanted,
        &mut done,
        |index, value| {
            row.values[index] = value.map(|value| {
                let start = row.text.len();
                row.text.push_str(value);
                start..row.text.len()
            });
        },
        Some(&mut seen),
    );
    if !whole || probed.iter().any(|n| *n > 1) {
        return None;
    }
    read.session_id = match session {
        Some(raw) => Some(common::staging::json_text_of(text.get(raw)?)?),
        None => None,
    };
    Some(read)
}

/// The keys a parser extracts, ready for its walks.
pub struct Extraction {
    keys: Arc<[String]>,
    wanted: WantedKeys,
    row: RowValues,
}

impl Extraction {
    pub fn new(keys: Arc<[String]>) -> Self {
        let wanted = WantedKeys::new(keys.iter().map(String::as_str));
        Self {
            keys,
            wanted,
            row: RowValues::default(),
        }
    }

    pub fn keys(&self) -> &Arc<[String]> {
        &self.keys
    }

    /// [`read_properties`] with these keys; the values wait in [`Self::row`].
    pub fn read<'t>(&mut self, text: &'t str) -> Option<PropertiesRead<'t>> {
        read_properties(text, Some((&mut self.wanted, &mut self.row)))
    }

    /// The values the last [`Self::read`] found.
    pub fn row(&self) -> &RowValues {
        &self.row
    }
}

/// Builders of the extracted keys' values for a batch of rows.
pub struct ExtractedColumns {
    extraction: Extraction,
    builders: Vec<StringBuilder>,
}

impl ExtractedColumns {
    pub fn new(keys: Arc<[String]>, rows: usize) -> Self {
        let builders = keys
            .iter()
            .map(|_| StringBuilder::with_capacity(rows, rows * 8))
            .collect();
        Self {
            extraction: Extraction::new(keys),
            builders,
        }
    }

    pub fn keys(&self) -> &Arc<[String]> {
        self.extraction.keys()
    }

    /// Adds a row's values, read by [`read_properties`] with these keys.
    pub fn push(&mut self, row: &RowValues) {
        for (index, builder) in self.builders.iter_mut().enumerate() {
            builder.append_option(row.get(index));
        }
    }

    /// Adds a row whose properties were not read here (an event the general path took).
    pub fn push_text(&mut self, properties: &str) {
        // A text that does not parse as a whole still gives the values before the fault, as
        // the encoders' own extraction would.
        let _ = self.extraction.read(properties);
        for (index, builder) in self.builders.iter_mut().enumerate() {
            builder.append_option(self.extraction.row.get(index));
        }
    }

    /// (column name, values) for each key.
    pub fn finish(self) -> Vec<(String, StringArray)> {
        self.extraction
            .keys
            .iter()
            .zip(self.builders)
            .map(|(key, mut builder)| (extracted_column(key), builder.finish()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use common::staging::PropertiesProbe;
    use deltalake_core::arrow::array::Array;

    use super::*;

    const DOCUMENTS: [&str; 16] = [
        r#"{"$session_id": "s-1", "$browser": "Firefox", "n": 1.5}"#,
        r#"{"$browser": "", "n": null, "$session_id": 7}"#,
        r#"{"$session_id": "a\"b\u00e9", "nested": {"$set": 1}, "n": [1, {"a": 2}]}"#,
        r#"{"$set": {"plan": "pro"}, "$browser": "Safari"}"#,
        r#"{"$set": null, "$set_once": null, "$unset": null}"#,
        r#"{"$unset": ["plan"]}"#,
        r#"{"$set_once": {"a": 1}, "$browser": "Chrome"}"#,
        r#"{"$session_id": "s-1", "$session_id": "s-2"}"#,
        r#"{"$set": {}, "$set": {}}"#,
        r#"{"$browser": "Firefox", "$browser": "Opera"}"#,
        r#"{"$s\u0065ssion_id": "escaped key", "n": true}"#,
        r#"{"n": 1} trailing"#,
        r#"{"n": 1, "$browser": "cut"#,
        r#"[1, 2]"#,
        r#"  {"n": -0.0e1 , "$browser" : "spaced" }  "#,
        r#"{}"#,
    ];
    const KEYS: [&str; 3] = ["$browser", "n", "$set"];

    #[test]
    fn the_walk_reads_what_the_probe_reads() {
        let mut extraction = Extraction::new(KEYS.iter().map(|k| k.to_string()).collect());
        for text in DOCUMENTS {
            let probe = PropertiesProbe::read(text).ok();
            let expected = probe.map(|probe| PropertiesRead {
                session_id: probe.session_id(),
                updates_person: probe.updates_person(),
            });
            assert_eq!(extraction.read(text), expected, "{text}");
            assert_eq!(read_properties(text, None), expected, "{text}");
        }
    }

    #[test]
    fn extracted_values_are_the_values_the_encoders_read() {
        let keys: Arc<[String]> = KEYS.iter().map(|k| k.to_string()).collect();
        let mut extraction = Extraction::new(keys.clone());
        let (mut walked, mut from_text) = (
            ExtractedColumns::new(keys.clone(), 0),
            ExtractedColumns::new(keys.clone(), 0),
        );
        for text in DOCUMENTS {
            let _ = extraction.read(text);
            walked.push(extraction.row());
            from_text.push_text(text);
        }
        let (walked, from_text) = (walked.finish(), from_text.finish());
        for (index, key) in KEYS.iter().enumerate() {
            let (name, values) = &walked[index];
            assert_eq!(name, &extracted_column(key));
            assert_eq!(values, &from_text[index].1, "{key}");
            // As a query reads `properties.key` from the JSON text.
            let expected = crate::sql::udfs::json::property(&DOCUMENTS.map(Some), key);
            let got: Vec<Option<String>> = (0..values.len())
                .map(|row| values.is_valid(row).then(|| values.value(row).to_owned()))
                .collect();
            assert_eq!(got, expected, "{key}");
        }
    }
}
