//! TrendsQuery and StickinessQuery v2 → v3: result customizations no longer tell the compare
//! periods apart. Keys used to include a `compare_label`, giving the current and the previous
//! period of a series separate entries; both periods now share the base series' entry.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use super::{has_breakdown, has_compare, insight_filter_key, kind_of, truthy};
use crate::nodes::{Migration, Node};

/// Merges per-compare-period result customizations into one entry per base series.
///
/// - By value: `compare_label` is stripped from the key. When entries collide, the one the user
///   saw wins (`"current"` with compare on, the unlabelled one otherwise). `"previous"` entries
///   are dropped: carrying e.g. `hidden` over would hide the current period too. Keys that are
///   not JSON objects are kept as they are.
/// - By position: with compare on, previous-period datasets sat at positions offset by the
///   number of base series. Those entries shift back where the base slot is free. Skipped with
///   breakdowns, where the offset depends on the data.
pub struct TrendsResultCustomizationsCompare;

impl Migration for TrendsResultCustomizationsCompare {
    fn targets(&self) -> &'static [(&'static str, u32)] {
        &[("TrendsQuery", 2), ("StickinessQuery", 2)]
    }

    fn transform(&self, mut node: Node) -> Node {
        let Some(filter_key) = insight_filter_key(kind_of(&node)) else {
            return node;
        };
        let Some(Value::Object(filter)) = node.get(filter_key) else {
            return node;
        };
        let Some(Value::Object(customizations)) = filter.get("resultCustomizations") else {
            return node;
        };
        if customizations.is_empty() {
            return node;
        }
        let merged =
            if filter.get("resultCustomizationBy").and_then(Value::as_str) == Some("position") {
                by_position(&node, filter, customizations)
            } else {
                by_value(customizations, has_compare(&node))
            };
        if merged == *customizations {
            return node;
        }
        if let Some(Value::Object(filter)) = node.get_mut(filter_key) {
            filter.insert("resultCustomizations".to_owned(), Value::Object(merged));
        }
        node
    }
}

fn by_value(customizations: &Map<String, Value>, compare_on: bool) -> Map<String, Value> {
    let mut merged = Map::new();
    for (key, value) in customizations {
        let labelled = parse_value_key(key).and_then(|mut entries| {
            let label = entries.remove("compare_label")?;
            Some((label, entries))
        });
        match labelled {
            Some((label, entries)) => {
                if !matches!(label, Ordered::Scalar(Value::String(ref label)) if label == "current")
                {
                    continue;
                }
                let Ok(base_key) = serde_json::to_string(&entries) else {
                    continue;
                };
                if merged.contains_key(&base_key) && !compare_on {
                    continue;
                }
                merged.insert(base_key, value.clone());
            }
            None => {
                // Already a base key: a "current" entry seen earlier wins when compare is on.
                if merged.contains_key(key) && compare_on {
                    continue;
                }
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    merged
}

fn by_position(
    node: &Node,
    filter: &Map<String, Value>,
    customizations: &Map<String, Value>,
) -> Map<String, Value> {
    if !has_compare(node) || has_breakdown(node) {
        return customizations.clone();
    }
    let base_series_count = base_series_count(node, filter);
    if base_series_count == 0 {
        return customizations.clone();
    }
    let mut remapped = Map::new();
    let mut offset_entries = Vec::new();
    for (key, value) in customizations {
        match python_int(key) {
            Some(position) if position >= base_series_count => {
                offset_entries.push((position, value));
            }
            _ => {
                remapped.insert(key.clone(), value.clone());
            }
        }
    }
    for (position, value) in offset_entries {
        // Existing base entries win over shifted ones.
        remapped
            .entry((position - base_series_count).to_string())
            .or_insert_with(|| value.clone());
    }
    remapped
}

/// How many datasets one period shows: formulas replace the series when present.
fn base_series_count(node: &Node, filter: &Map<String, Value>) -> i64 {
    let count = |value: Option<&Value>| match value {
        Some(Value::Array(items)) => items.len(),
        _ => 0,
    };
    let count = [filter.get("formulaNodes"), filter.get("formulas")]
        .into_iter()
        .map(count)
        .find(|&len| len > 0)
        .unwrap_or_else(|| {
            if truthy(filter.get("formula")) {
                1
            } else {
                count(node.get("series"))
            }
        });
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// Python's `int(key)` for the keys a position map can hold: surrounding whitespace, a sign and
/// single underscores between digits are allowed. Out-of-range numbers count as non-numeric.
fn python_int(key: &str) -> Option<i64> {
    let trimmed = key.trim();
    let (negative, digits) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    let magnitude: i64 = digits.replace('_', "").parse().ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

/// A value-mode key parsed as a JSON object, or `None` for keys that are not one.
fn parse_value_key(key: &str) -> Option<OrderedObject> {
    match serde_json::from_str::<Ordered>(key).ok()? {
        Ordered::Object(object) => Some(object),
        _ => None,
    }
}

/// A JSON value whose objects keep their keys in document order. Value keys are the frontend's
/// `JSON.stringify` output and are matched byte for byte, so the key without `compare_label` must
/// keep the original order, which `serde_json::Map` (sorted here) would lose.
enum Ordered {
    Scalar(Value),
    Array(Vec<Ordered>),
    Object(OrderedObject),
}

/// Object entries in document order; a repeated key keeps its first position and last value,
/// as Python's `json.loads` does.
#[derive(Default)]
struct OrderedObject {
    entries: Vec<(String, Ordered)>,
    index: HashMap<String, usize>,
}

impl OrderedObject {
    fn insert(&mut self, key: String, value: Ordered) {
        match self.index.get(&key) {
            Some(&at) => self.entries[at].1 = value,
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    fn remove(&mut self, key: &str) -> Option<Ordered> {
        let at = self.index.remove(key)?;
        let (_, value) = self.entries.remove(at);
        for position in self.index.values_mut() {
            if *position > at {
                *position -= 1;
            }
        }
        Some(value)
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = Ordered;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::Bool(value)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(value)))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(value)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(value)))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::String(value.to_owned())))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::String(value)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Ordered::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
        let mut object = OrderedObject::default();
        while let Some((key, value)) = map.next_entry::<String, Ordered>()? {
            object.insert(key, value);
        }
        Ok(Ordered::Object(object))
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Ordered::Scalar(value) => value.serialize(serializer),
            Ordered::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Ordered::Object(object) => object.serialize(serializer),
        }
    }
}

impl Serialize for OrderedObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (key, value) in &self.entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}
