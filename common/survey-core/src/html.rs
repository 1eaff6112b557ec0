//! The HTML sanitiser for survey texts posthog-js may render as HTML (PostHog's
//! `nh3_clean_with_allow_list`, on ammonia, the library nh3 wraps). A text is cleaned only when it
//! holds markup (a tag, comment or doctype), as PostHog's `nh3.is_html` gate does, so plain text
//! such as `Q&A` or `1 < 2` is stored as sent.
//!
//! The allow-list is PostHog's: formatting, structure, tables, `a` and `img`; on any element
//! `style`, `lang`, `title`, `width`, `height`; links get `rel="noopener"`. URLs keep ammonia's
//! default schemes (http, https, mailto, tel, ...: never `javascript:` or `data:`). Scripts,
//! styles, iframes, SVG, forms and event handlers go. One step past PostHog: a `style` value that
//! could load or run something (`url(`, `expression(`, CSS escapes, `@import`, ...) is dropped.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use serde_json::{Map, Value};

/// Question fields cleaned (PostHog's `validate_questions`), in the question and its translations.
pub const QUESTION_FIELDS: &[&str] = &["question", "description"];

/// Appearance fields cleaned: PostHog's three thank-you texts, and the intro screen texts
/// posthog-js renders the same way. Survey translations carry the same keys.
pub const APPEARANCE_FIELDS: &[&str] = &[
    "thankYouMessageHeader",
    "thankYouMessageDescription",
    "thankYouMessageCloseButtonText",
    "introScreenHeader",
    "introScreenDescription",
];

const TAGS: &[&str] = &[
    "a",
    "abbr",
    "acronym",
    "area",
    "article",
    "aside",
    "b",
    "bdi",
    "bdo",
    "blockquote",
    "br",
    "caption",
    "center",
    "cite",
    "code",
    "col",
    "colgroup",
    "data",
    "dd",
    "del",
    "details",
    "dfn",
    "div",
    "dl",
    "dt",
    "em",
    "figcaption",
    "figure",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "i",
    "img",
    "ins",
    "kbd",
    "li",
    "map",
    "mark",
    "nav",
    "ol",
    "p",
    "pre",
    "q",
    "rp",
    "rt",
    "rtc",
    "ruby",
    "s",
    "samp",
    "small",
    "span",
    "strike",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "time",
    "tr",
    "tt",
    "u",
    "ul",
    "var",
    "wbr",
];

const GENERIC_ATTRIBUTES: &[&str] = &["style", "lang", "title", "width", "height"];

const CELL: &[&str] = &[
    "abbr", "align", "axis", "bgcolor", "char", "charoff", "colspan", "headers", "height",
    "nowrap", "rowspan", "scope", "valign", "width",
];
const ROWS: &[&str] = &["align", "char", "charoff", "valign"];
const COLUMNS: &[&str] = &["align", "char", "charoff", "span"];

const TAG_ATTRIBUTES: &[(&str, &[&str])] = &[
    ("a", &["href", "hreflang", "target"]),
    ("bdo", &["dir"]),
    ("blockquote", &["cite"]),
    ("col", COLUMNS),
    ("colgroup", COLUMNS),
    ("del", &["cite", "datetime"]),
    ("hr", &["align", "size", "width"]),
    ("img", &["align", "alt", "height", "src", "width"]),
    ("ins", &["cite", "datetime"]),
    ("ol", &["start", "type"]),
    ("q", &["cite"]),
    (
        "table",
        &[
            "align",
            "bgcolor",
            "border",
            "cellpadding",
            "cellspacing",
            "frame",
            "rules",
            "summary",
            "width",
        ],
    ),
    ("tbody", ROWS),
    ("td", CELL),
    ("tfoot", ROWS),
    ("th", CELL),
    ("thead", ROWS),
    ("tr", &["align", "bgcolor", "char", "charoff", "valign"]),
];

/// What a `style` value may not contain once lowercased, without whitespace and comments.
const UNSAFE_STYLE: &[&str] = &[
    "\\",
    "url(",
    "image(",
    "image-set(",
    "element(",
    "expression(",
    "javascript:",
    "vbscript:",
    "behavior:",
    "-moz-binding",
    "@import",
    "<",
];

static CLEANER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut builder = ammonia::Builder::default();
    builder
        .tags(TAGS.iter().copied().collect())
        .generic_attributes(GENERIC_ATTRIBUTES.iter().copied().collect())
        .tag_attributes(
            TAG_ATTRIBUTES
                .iter()
                .map(|(tag, attributes)| (*tag, attributes.iter().copied().collect()))
                .collect::<HashMap<_, HashSet<_>>>(),
        )
        .link_rel(Some("noopener"))
        .attribute_filter(|_, attribute, value| {
            if attribute == "style" && !safe_style(value) {
                None
            } else {
                Some(Cow::Borrowed(value))
            }
        });
    builder
});

/// Whether `text` holds markup (PostHog's `nh3.is_html`).
pub fn is_html(text: &str) -> bool {
    ammonia::is_html(text)
}

/// `text` through the allow-list, whatever it holds.
pub fn clean(text: &str) -> String {
    CLEANER.clean(text).to_string()
}

/// `text` cleaned if it holds markup, else as sent.
pub fn clean_if_html(text: &str) -> Option<String> {
    is_html(text).then(|| clean(text))
}

/// Cleans the string values of `fields` in `map` that hold markup; other values are left.
pub fn clean_fields(map: &mut Map<String, Value>, fields: &[&str]) {
    for field in fields {
        if let Some(Value::String(text)) = map.get_mut(*field)
            && let Some(cleaned) = clean_if_html(text)
        {
            *text = cleaned;
        }
    }
}

fn safe_style(value: &str) -> bool {
    let mut normalized = String::with_capacity(value.len());
    let mut rest = value;
    // Comments split words (`expr/**/ession(`): drop them before looking.
    while let Some(start) = rest.find("/*") {
        normalized.push_str(&rest[..start]);
        rest = match rest[start + 2..].find("*/") {
            Some(end) => &rest[start + 2 + end + 2..],
            None => "",
        };
    }
    normalized.push_str(rest);
    let normalized: String = normalized
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .flat_map(char::to_lowercase)
        .collect();
    !UNSAFE_STYLE.iter().any(|bad| normalized.contains(bad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Payloads whose cleaned form must carry no script, handler or scripted URL.
    const XSS: &[&str] = &[
        "<script>alert(1)</script>",
        "<SCRIPT SRC=https://evil.example/x.js></SCRIPT>",
        "<img src=x onerror=alert(1)>",
        "<IMG SRC=x OnErRoR=alert(1)>",
        r#"<a href="javascript:alert(1)">x</a>"#,
        r#"<a href="JaVaScRiPt:alert(1)">x</a>"#,
        r#"<a href="&#106;avascript:alert(1)">x</a>"#,
        r#"<a href="&#x6A;avascript&colon;alert(1)">x</a>"#,
        r#"<a href=" javascript:alert(1)">x</a>"#,
        "<a href=\"java\tscript:alert(1)\">x</a>",
        r#"<a href="vbscript:msgbox(1)">x</a>"#,
        r#"<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>"#,
        r#"<img src="data:image/svg+xml,<svg onload=alert(1)>">"#,
        "<svg onload=alert(1)>",
        "<svg><script>alert(1)</script></svg>",
        r#"<iframe src="https://evil.example"></iframe>"#,
        r#"<iframe srcdoc="<script>alert(1)</script>"></iframe>"#,
        r#"<object data="javascript:alert(1)"></object>"#,
        r#"<embed src="javascript:alert(1)">"#,
        "<body onload=alert(1)>",
        r#"<div onclick="alert(1)">x</div>"#,
        r#"<p onmouseover="alert(1)">x</p>"#,
        r#"<form action="javascript:alert(1)"><button>x</button></form>"#,
        r#"<input autofocus onfocus=alert(1)>"#,
        r#"<details open ontoggle=alert(1)>x</details>"#,
        r#"<math><mtext><a href="javascript:alert(1)">x</a></mtext></math>"#,
        "<style>body{background:url(javascript:alert(1))}</style>",
        r#"<div style="width: expression(alert(1))">x</div>"#,
        r#"<div style="width: expr/**/ession(alert(1))">x</div>"#,
        r#"<div style="background:url('javascript:alert(1)')">x</div>"#,
        r#"<div style="background:\75rl(x)">x</div>"#,
        r#"<div style="-moz-binding:url(https://evil.example/x.xml#x)">x</div>"#,
        r#"<meta http-equiv="refresh" content="0;url=javascript:alert(1)">"#,
        r#"<link rel="stylesheet" href="javascript:alert(1)">"#,
        r#"<base href="javascript:alert(1)//">"#,
        "<!--<img src=x onerror=alert(1)>-->",
        "<<script>script>alert(1)<</script>/script>",
        "<scr<script>ipt>alert(1)</script>",
        r#"<img src="x" alt="" onerror="alert(1)">"#,
        r#"<a href="https://ok.example" onclick="alert(1)">x</a>"#,
    ];

    /// What no cleaned payload may contain (lowercased).
    const FORBIDDEN: &[&str] = &[
        "<script",
        "<svg",
        "<iframe",
        "<object",
        "<embed",
        "<style",
        "<meta",
        "<link",
        "<base",
        "<form",
        "<input",
        "<math",
        "onerror",
        "onload",
        "onclick",
        "onmouseover",
        "onfocus",
        "ontoggle",
        "javascript:",
        "vbscript:",
        "data:",
        "expression(",
        "url(",
        "binding",
        "srcdoc",
    ];

    #[test]
    fn payloads_lose_every_script() {
        for payload in XSS {
            assert!(is_html(payload), "{payload} is HTML");
            let cleaned = clean(payload).to_lowercase();
            for bad in FORBIDDEN {
                assert!(
                    !cleaned.contains(bad),
                    "{payload} cleaned to {cleaned}, which holds {bad}"
                );
            }
        }
    }

    #[test]
    fn formatting_survives() {
        assert_eq!(
            clean(
                r#"<p><b>Bold</b> and <i>it</i><br><a href="https://posthog.com/docs">docs</a></p>"#
            ),
            r#"<p><b>Bold</b> and <i>it</i><br><a href="https://posthog.com/docs" rel="noopener">docs</a></p>"#
        );
        assert_eq!(
            clean(r#"<span style="color: red; font-weight: bold" title="t">x</span>"#),
            r#"<span style="color: red; font-weight: bold" title="t">x</span>"#
        );
        assert_eq!(
            clean(r#"<img src="https://example.com/a.png" alt="a" width="10">"#),
            r#"<img src="https://example.com/a.png" alt="a" width="10">"#
        );
        assert_eq!(
            clean(r#"<a href="mailto:hi@example.com" target="_blank">mail</a>"#),
            r#"<a href="mailto:hi@example.com" target="_blank" rel="noopener">mail</a>"#
        );
        assert_eq!(
            clean("<ul><li>one</li></ul><h2>Title</h2>"),
            "<ul><li>one</li></ul><h2>Title</h2>"
        );
    }

    #[test]
    fn unsafe_markup_keeps_its_text() {
        assert_eq!(clean("<script>alert(1)</script>Hi"), "Hi");
        assert_eq!(clean(r#"<div onclick="x()">Hi</div>"#), "<div>Hi</div>");
        assert_eq!(
            clean(r#"<a href="javascript:alert(1)">Hi</a>"#),
            r#"<a rel="noopener">Hi</a>"#
        );
        assert_eq!(clean("<marquee>Hi</marquee>"), "Hi");
    }

    #[test]
    fn plain_text_is_stored_as_sent() {
        for text in [
            "Q&A: how likely is 1 < 2?",
            "Tom & Jerry's \"quote\"",
            "&#106;avascript:alert(1)",
            "",
        ] {
            assert!(!is_html(text), "{text} is not HTML");
            assert_eq!(clean_if_html(text), None);
        }
        assert_eq!(
            clean_if_html("<b>x</b> & y").as_deref(),
            Some("<b>x</b> &amp; y")
        );
    }

    #[test]
    fn fields_are_cleaned_in_place() {
        let Value::Object(mut map) = json!({
            "thankYouMessageHeader": "<b onclick=x()>Thanks</b>",
            "thankYouMessageDescription": "Plain & simple",
            "introScreenDescription": null,
            "backgroundColor": "<script>not a rendered text</script>",
        }) else {
            unreachable!("an object literal");
        };
        clean_fields(&mut map, APPEARANCE_FIELDS);
        assert_eq!(
            Value::Object(map),
            json!({
                "thankYouMessageHeader": "<b>Thanks</b>",
                "thankYouMessageDescription": "Plain & simple",
                "introScreenDescription": null,
                "backgroundColor": "<script>not a rendered text</script>",
            })
        );
    }

    #[test]
    fn style_values_that_load_or_run_are_dropped() {
        assert!(safe_style("color: #333; font-size: 12px; margin: 0 auto"));
        assert!(safe_style("color: rgb(1, 2, 3)"));
        for style in [
            "width: expression(alert(1))",
            "width: EXPRESSION (alert(1))",
            "width: expr/**/ession(alert(1))",
            "background: url(https://evil.example/x.png)",
            "background: u\\rl(x)",
            "behavior: url(x.htc)",
            "-moz-binding: url(x)",
            "@import 'x'",
            "background-image: image-set('x' 1x)",
            "x: java\nscript:alert(1)",
        ] {
            assert!(!safe_style(style), "{style}");
        }
    }
}
