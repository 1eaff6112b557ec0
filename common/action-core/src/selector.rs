//! A step's CSS selector as PostHog reads it (`Selector` in `posthog/models/event/event.py`) and
//! the regular expression over `elements_chain` it becomes (`build_selector_regex` in
//! `posthog/models/property/util.py`), kept faithful to PostHog's quirks so the same events match.
//!
//! The chain lists the clicked element first, then its ancestors, `;`-separated; each element is
//! `tag.class1.class2:attr="value"...` with attributes sorted by name (`attr_id`, `href`,
//! `nth-child`, `text`, `attr__<html attribute>`). Selector parts are read right to left, so the
//! regex walks the chain from the clicked element up. As in PostHog, a part after a descendant
//! combinator (` `) must be the very next element, and one after a child combinator (`>`) may be
//! followed by anything.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// Tags whose presence PostHog also checks through `elements_chain_elements`.
const USEFUL_ELEMENTS: &[&str] = &["a", "button", "input", "select", "textarea", "label"];

/// What matching a selector takes: a regex over the chain, plus PostHog's side checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorMatch {
    /// Must match somewhere in `elements_chain` (RE2 / Rust `regex` syntax).
    pub regex: String,
    /// One regex per id (`#id`, `[id="..."]`) some element of the chain must carry (PostHog's
    /// `elements_chain_ids`).
    pub id_patterns: Vec<String>,
    /// When the selector names tags among [`USEFUL_ELEMENTS`]: a regex one of them must match
    /// (PostHog's `elements_chain_elements`).
    pub useful_pattern: Option<String>,
    /// The selector is one `#id` and nothing else: PostHog tests the id alone.
    pub id_only: bool,
}

#[derive(Debug, Default, Clone, PartialEq)]
struct Part {
    direct_descendant: bool,
    tag_name: Option<String>,
    classes: Vec<String>,
    attr_id: Option<String>,
    /// Attributes the chain must show as `key="value"`, by key.
    attributes: BTreeMap<String, String>,
    /// How many kinds of condition the part has (PostHog's `len(part.data)`).
    conditions: usize,
}

/// PostHog's `tag_name_to_expr` regex: the tag (unescaped, as PostHog writes it) as a whole
/// element's tag anywhere in the chain.
pub fn tag_pattern(tag: &str) -> String {
    format!(r"(^|;){tag}(\.|$|;|:)")
}

/// Parses `selector` into its regex and side checks; `None` when it names nothing.
pub fn compile(selector: &str) -> Option<SelectorMatch> {
    let parts = parse(selector);
    if parts.is_empty() {
        return None;
    }
    let mut regex = String::new();
    let mut id_patterns = Vec::new();
    let mut useful_tags = Vec::new();
    for part in &parts {
        if let Some(tag) = part.tag_name.as_deref().filter(|tag| *tag != "*") {
            regex.push_str(&regex::escape(tag));
            if USEFUL_ELEMENTS.contains(&tag) && !useful_tags.iter().any(|t| t == tag) {
                useful_tags.push(tag.to_string());
            }
        }
        if !part.classes.is_empty() {
            let mut classes: Vec<String> = part.classes.iter().map(|c| regex::escape(c)).collect();
            classes.sort();
            regex.push_str(r".*?\.");
            regex.push_str(&classes.join(r"\..*?"));
        }
        if !part.attributes.is_empty() {
            regex.push_str(".*?");
            for (key, value) in &part.attributes {
                regex.push_str(&format!(
                    "{}=\"{}\".*?",
                    regex::escape(key),
                    regex::escape(&chain_escaped(value))
                ));
            }
        }
        regex.push_str(r"[^;]*?($|;|:([^;^\s]*(;|$|\s)))");
        if part.direct_descendant {
            regex.push_str(".*");
        }
        if let Some(id) = &part.attr_id {
            id_patterns.push(format!(r#"(?::|")attr_id="{}""#, regex::escape(id)));
        }
    }
    let id_only = parts.len() == 1 && parts[0].conditions == 1 && parts[0].attr_id.is_some();
    let useful_pattern = (!useful_tags.is_empty())
        .then(|| format!(r"(?:^|;)(?:{})(?:\.|;|:|$)", useful_tags.join("|")));
    Some(SelectorMatch {
        regex: format!("(^|;){regex}"),
        id_patterns,
        useful_pattern,
        id_only,
    })
}

/// The chain escapes a double quote in a value as `\"`; a selector may write it either way.
fn chain_escaped(value: &str) -> String {
    value.replace("\\\"", "\"").replace('"', "\\\"")
}

fn parse(selector: &str) -> Vec<Part> {
    // PostHog drops universal steps and unescapes colons before splitting.
    let cleaned = selector
        .replace("> * > ", "")
        .replace("> *", "")
        .replace("\\:", ":");
    let mut tags = split(cleaned.trim());
    tags.reverse();
    let mut parts = Vec::new();
    for (index, tag) in tags.iter().enumerate() {
        if tag == ">" || tag.is_empty() {
            continue;
        }
        let direct_descendant = index > 0 && tags[index - 1] == ">";
        parts.push(part(tag, direct_descendant));
    }
    parts
}

/// Splits on spaces outside `[...]` and quotes.
fn split(selector: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut part = String::new();
    let mut in_attribute = false;
    let mut quote: Option<char> = None;
    for c in selector.chars() {
        if c == '[' && quote.is_none() {
            in_attribute = true;
        }
        if c == ']' && quote.is_none() {
            in_attribute = false;
        }
        if c == '"' || c == '\'' {
            match quote {
                Some(open) if open == c => quote = None,
                Some(_) => {}
                None => quote = Some(c),
            }
        }
        if c == ' ' && !in_attribute {
            out.push(std::mem::take(&mut part));
        } else {
            part.push(c);
        }
    }
    out.push(part);
    out
}

/// PostHog's SELECTOR_ATTRIBUTE_REGEX: `tag[key="value"]` (one attribute; greedy).
static ATTRIBUTE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"([a-zA-Z]*)\[(.*)=['|"](.*)['|"]\]"#).expect("a valid pattern"));

fn part(tag: &str, direct_descendant: bool) -> Part {
    let mut part = Part {
        direct_descendant,
        ..Part::default()
    };
    let mut tag = tag.to_string();
    let attribute = ATTRIBUTE
        .captures(&tag)
        .map(|c| (c[1].to_string(), c[2].trim().to_string(), c[3].to_string()));
    if let Some((rest, key, value)) = attribute {
        if key == "id" {
            part.attr_id = Some(value.clone());
            part.attributes.insert("attr_id".into(), value);
        } else {
            part.attributes.insert(key, value);
        }
        part.conditions += 1;
        tag = rest;
    }
    if let Some((rest, nth)) = tag.split_once(":nth-child(") {
        part.attributes
            .insert("nth-child".into(), nth.replace(')', ""));
        part.conditions += 1;
        tag = rest.to_string();
    }
    if tag.contains('.') {
        let pieces = split_classes(&tag);
        part.classes = pieces[1..].to_vec();
        part.conditions += 1;
        tag = pieces[0].clone();
    }
    if let Some((rest, id)) = tag.clone().split_once('#') {
        part.attr_id = Some(id.to_string());
        part.attributes.insert("attr_id".into(), id.to_string());
        part.conditions += 1;
        tag = rest.to_string();
    }
    if !tag.is_empty() {
        part.tag_name = Some(tag);
        part.conditions += 1;
    }
    part
}

/// Splits on dots outside `[...]` (Tailwind's `shadow-[0_4px_rgba(0,0,0,0.1)]`).
fn split_classes(tag: &str) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut depth = 0usize;
    for c in tag.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c == '.' && depth == 0 {
            pieces.push(String::new());
        } else if let Some(last) = pieces.last_mut() {
            last.push(c);
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(selector: &str, chain: &str) -> bool {
        let compiled = compile(selector).unwrap();
        let re = regex::Regex::new(&compiled.regex).unwrap();
        let found = |pattern: &String| Regex::new(pattern).unwrap().is_match(chain);
        let id_ok = compiled.id_patterns.iter().all(found);
        let useful_ok = compiled.useful_pattern.as_ref().is_none_or(found);
        (compiled.id_only || re.is_match(chain)) && id_ok && useful_ok
    }

    const BUY: &str = r#"button.btn.primary:attr__class="btn primary"nth-child="1"nth-of-type="1"text="Buy now";div.card:attr__data-attr="product"nth-child="2"nth-of-type="1";body:nth-child="1"nth-of-type="1""#;

    #[test]
    fn posthog_regex_for_a_tag_and_classes() {
        let compiled = compile("button.primary.btn").unwrap();
        assert_eq!(
            compiled.regex,
            r"(^|;)button.*?\.btn\..*?primary[^;]*?($|;|:([^;^\s]*(;|$|\s)))"
        );
        assert_eq!(
            compiled.useful_pattern.as_deref(),
            Some(r"(?:^|;)(?:button)(?:\.|;|:|$)")
        );
    }

    #[test]
    fn selectors_against_a_chain() {
        assert!(matches("button", BUY));
        assert!(matches(".primary", BUY));
        assert!(matches("button.btn.primary", BUY));
        assert!(!matches("button.secondary", BUY));
        assert!(!matches("a", BUY));
        // The parent must be the next element in the chain for a descendant combinator.
        assert!(matches("div.card button", BUY));
        assert!(matches("div > button", BUY));
        assert!(!matches("body button", BUY));
        assert!(matches("[data-attr=\"product\"]", BUY));
        assert!(!matches("[data-attr=\"other\"]", BUY));
        assert!(matches("div[data-attr='product'] button.btn", BUY));
        let with_id = r#"a.nav:attr_id="home"href="/"nth-child="1"nth-of-type="1";nav"#;
        assert!(matches("#home", with_id));
        assert!(compile("#home").unwrap().id_only);
        assert!(matches("a#home", with_id));
        assert!(!matches("#away", with_id));
        assert!(compile("   ").is_none());
    }
}
