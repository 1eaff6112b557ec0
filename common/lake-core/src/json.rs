//! Reading JSON property text with jiter, as PostHog reads properties: the one walk the query
//! functions (`hogql_prop`, `JSONExtract*` in the `engine` crate) and shredding's writer (the
//! `lake` crate) both use, so a shredded column always holds what a query would have read from
//! the JSON.

use jiter::{Jiter, JiterResult, Peek};

/// One JSON path step: an object key or a 1-based array index (negative counts from the end).
pub enum Step {
    Key(String),
    Index(i64),
}

/// Walks to the value at `path`; true when it exists (the jiter then sits before the value).
pub fn seek(jiter: &mut Jiter, path: &[Step]) -> JiterResult<bool> {
    for step in path {
        let peek = jiter.peek()?;
        match (step, peek) {
            (Step::Key(wanted), Peek::Object) => {
                let mut key = jiter.next_object()?;
                let mut found = false;
                while let Some(current) = key {
                    if current == wanted {
                        found = true;
                        break;
                    }
                    jiter.next_skip()?;
                    key = jiter.next_key()?;
                }
                if !found {
                    return Ok(false);
                }
            }
            (Step::Index(wanted), Peek::Array) => {
                // Count first when indexing from the end.
                let target = if *wanted < 0 {
                    let mut probe = jiter.clone();
                    let mut count = 0i64;
                    let mut next = probe.next_array()?;
                    while let Some(peek) = next {
                        probe.known_skip(peek)?;
                        count += 1;
                        next = probe.array_step()?;
                    }
                    count + wanted
                } else {
                    wanted - 1
                };
                if target < 0 {
                    return Ok(false);
                }
                let mut next = jiter.next_array()?;
                let mut position = 0;
                loop {
                    match next {
                        None => return Ok(false),
                        Some(_) if position == target => break,
                        Some(peek) => {
                            jiter.known_skip(peek)?;
                            position += 1;
                            next = jiter.array_step()?;
                        }
                    }
                }
            }
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// The raw JSON text of the value the jiter sits before, skipping it.
pub fn raw_value<'a>(jiter: &mut Jiter<'_>, text: &'a str) -> JiterResult<&'a str> {
    let peek = jiter.peek()?;
    let start = jiter.current_index();
    jiter.known_skip(peek)?;
    let end = jiter.current_index();
    Ok(text.get(start..end).unwrap_or(""))
}

/// PostHog's property rules for the value the jiter sits before: JSON null and "" are NULL,
/// strings lose their quotes, anything else is its JSON text (borrowed: no copy per row).
pub fn property_text<'a>(jiter: &'a mut Jiter<'_>, text: &'a str) -> JiterResult<Option<&'a str>> {
    Ok(match jiter.peek()? {
        Peek::Null => None,
        Peek::String => Some(jiter.known_str()?).filter(|value| !value.is_empty()),
        _ => Some(raw_value(jiter, text)?),
    })
}

/// Told each top-level key reached: its name, its value's kind, its raw JSON text.
pub type KeySeen<'s> = dyn FnMut(&str, Peek, Option<&str>) + 's;

/// Top-level positions whose last key is remembered, at most.
const REMEMBERED_POSITIONS: usize = 256;

/// The keys a walk looks for, each with its index. Rows written by one SDK list their keys in the
/// same order, so the key last met at each position is compared first: a match spares hashing.
pub struct WantedKeys<'k> {
    by_name: foldhash::HashMap<&'k str, usize>,
    /// The key last met at each position, and its index.
    by_position: Vec<(String, Option<usize>)>,
}

impl<'k> WantedKeys<'k> {
    /// `keys[i]` has index `i`; a key listed twice keeps its first index.
    pub fn new(keys: impl IntoIterator<Item = &'k str>) -> Self {
        let mut by_name = foldhash::HashMap::default();
        for (index, key) in keys.into_iter().enumerate() {
            by_name.entry(key).or_insert(index);
        }
        Self {
            by_name,
            by_position: Vec::new(),
        }
    }

    fn index(&mut self, position: usize, key: &str) -> Option<usize> {
        match self.by_position.get_mut(position) {
            Some((last, index)) if last == key => *index,
            Some((last, index)) => {
                last.clear();
                last.push_str(key);
                *index = self.by_name.get(key).copied();
                *index
            }
            None => {
                let index = self.by_name.get(key).copied();
                if position == self.by_position.len() && position < REMEMBERED_POSITIONS {
                    self.by_position.push((key.to_owned(), index));
                }
                index
            }
        }
    }
}

/// One walk over a JSON object's top-level keys, for the writers that shred properties into
/// columns: for the first occurrence of each key in `wanted`, `found(index, value)` gets exactly
/// what `hogql_prop(text, key)` gives for it (`None` for NULL), so a shredded column always holds
/// what the query would have read from the JSON (the caller takes a key not `done` as NULL).
/// `seen` gets every key reached with its value's kind and raw JSON text. A document that stops
/// parsing ends the walk, as it ends `seek` for later keys.
pub fn property_values(
    text: &str,
    wanted: &mut WantedKeys,
    done: &mut [bool],
    mut found: impl FnMut(usize, Option<&str>),
    mut seen: Option<&mut KeySeen>,
) {
    let mut jiter = Jiter::new(text.as_bytes());
    if !matches!(jiter.peek(), Ok(Peek::Object)) {
        return;
    }
    // A key `seen` is told is copied into one buffer: the jiter lends it only until its next step.
    let mut current = String::new();
    let mut next = jiter.next_object();
    let mut position = 0;
    while let Ok(Some(key)) = next {
        let index = wanted.index(position, key).filter(|i| !done[*i]);
        position += 1;
        if seen.is_some() {
            current.clear();
            current.push_str(key);
        }
        let Ok(peek) = jiter.peek() else { return };
        let start = jiter.current_index();
        match index {
            Some(index) if peek != Peek::Null => {
                let Ok(value) = property_text(&mut jiter, text) else {
                    return;
                };
                done[index] = true;
                found(index, value);
            }
            // Other values are skipped as `seek` skips them, so later keys are reached (or not)
            // as it would; a JSON null is NULL, which `property_text` says without reading it.
            _ => {
                if jiter.known_skip(peek).is_err() {
                    return;
                }
                if let Some(index) = index {
                    done[index] = true;
                    found(index, None);
                }
            }
        }
        if let Some(seen) = seen.as_mut() {
            seen(&current, peek, text.get(start..jiter.current_index()));
        }
        next = jiter.next_key();
    }
}
