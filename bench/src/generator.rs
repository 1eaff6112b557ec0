//! The deterministic events generator `bench query` and `bench import` share: the same seed and
//! event count give the same events (timestamps relative to the given end).

use chrono::{DateTime, TimeDelta, Utc};
use common::staging::StagedEvent;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use std::time::{Duration, Instant};

use common::AppState;
use indicatif::{ProgressBar, ProgressStyle};
use lake::import::{ImportReport, Importer};
use lake::rows::ParsedRows;

use super::load::Rng;

/// (event, weight in per mille)
pub(super) const EVENT_MIX: &[(&str, u64)] = &[
    ("$pageview", 600),
    ("$autocapture", 160),
    ("$pageleave", 120),
    ("feature_used", 80),
    ("purchase", 25),
    ("signed_up", 15),
];
const BROWSERS: &[(&str, u64)] = &[
    ("Chrome", 62),
    ("Safari", 20),
    ("Firefox", 7),
    ("Microsoft Edge", 6),
    ("Samsung Internet", 3),
    ("Opera", 2),
];
const OPERATING_SYSTEMS: &[(&str, &str, u64)] = &[
    ("Windows", "Desktop", 35),
    ("Mac OS X", "Desktop", 20),
    ("Android", "Mobile", 22),
    ("iOS", "Mobile", 17),
    ("Linux", "Desktop", 6),
];
const PLANS: &[(&str, u64)] = &[("free", 70), ("starter", 18), ("pro", 9), ("enterprise", 3)];
/// None: no utm_source on the person's events.
const UTM_SOURCES: &[(Option<&str>, u64)] = &[
    (None, 45),
    (Some("google"), 25),
    (Some("twitter"), 8),
    (Some("newsletter"), 8),
    (Some("linkedin"), 6),
    (Some("facebook"), 5),
    (Some("producthunt"), 3),
];
const FEATURES: &[&str] = &[
    "dashboards",
    "insights",
    "session-replay",
    "feature-flags",
    "experiments",
    "surveys",
    "notebooks",
    "data-warehouse",
    "cohorts",
    "annotations",
    "exports",
    "webhooks",
];
const PRODUCTS: &[&str] = &[
    "starter-monthly",
    "pro-monthly",
    "pro-yearly",
    "addon-seats",
];
const BUTTONS: &[&str] = &[
    "Sign up",
    "Get started",
    "Buy now",
    "Learn more",
    "Next",
    "Save",
];
const PATHS_COUNT: usize = 200;

fn weights<T>(table: &[(T, u64)]) -> Vec<u64> {
    table.iter().map(|(_, w)| *w).collect()
}

/// About 200 paths of a product site, most visited first.
fn paths() -> Vec<String> {
    let mut paths: Vec<String> = [
        "/",
        "/pricing",
        "/features",
        "/signup",
        "/login",
        "/docs",
        "/blog",
        "/about",
        "/contact",
        "/careers",
        "/changelog",
        "/customers",
        "/integrations",
        "/security",
        "/status",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    let sections = [
        "getting-started",
        "api",
        "sdks",
        "self-host",
        "product",
        "data",
    ];
    let mut k = 0;
    while paths.len() < PATHS_COUNT {
        paths.push(match k % 3 {
            0 | 1 => format!("/docs/{}/page-{}", sections[k % sections.len()], k / 3),
            _ => format!("/blog/post-{}", k / 3),
        });
        k += 1;
    }
    paths
}

struct Person {
    distinct_id: String,
    browser: &'static str,
    os: &'static str,
    device: &'static str,
    screen_width: u64,
    plan: &'static str,
    email: String,
    utm_source: Option<&'static str>,
    /// Whether an event of theirs was generated yet (the first one carries `$set`).
    seen: bool,
}

pub(crate) struct Generator {
    rng: Rng,
    persons: Vec<Person>,
    paths: Vec<String>,
    event_weights: Vec<u64>,
    start_us: i64,
    span_us: i64,
    total: u64,
    next: u64,
}

impl Generator {
    pub(crate) fn new(seed: u64, total: u64, end: DateTime<Utc>) -> Self {
        let mut rng = Rng(seed);
        let count = (total / 100).max(1) as usize;
        let (browser_weights, os_weights) = (
            weights(BROWSERS),
            OPERATING_SYSTEMS.iter().map(|o| o.2).collect::<Vec<_>>(),
        );
        let (plan_weights, utm_weights) = (weights(PLANS), weights(UTM_SOURCES));
        let persons = (0..count)
            .map(|i| {
                let id = Uuid::from_u64_pair(rng.next_u64(), rng.next_u64());
                let (os, device, _) = OPERATING_SYSTEMS[rng.weighted(&os_weights)];
                let browser = match os {
                    "iOS" => "Mobile Safari",
                    _ => BROWSERS[rng.weighted(&browser_weights)].0,
                };
                Person {
                    distinct_id: id.to_string(),
                    browser,
                    os,
                    device,
                    screen_width: match device {
                        "Mobile" => rng.pick(&[375, 390, 412, 430]),
                        _ => rng.pick(&[1280, 1440, 1536, 1920, 2560]),
                    },
                    plan: PLANS[rng.weighted(&plan_weights)].0,
                    email: format!("user{i}@example{}.com", i % 97),
                    utm_source: UTM_SOURCES[rng.weighted(&utm_weights)].0,
                    seen: false,
                }
            })
            .collect();
        let span = TimeDelta::days(30);
        Self {
            rng,
            persons,
            paths: paths(),
            event_weights: weights(EVENT_MIX),
            start_us: (end - span).timestamp_micros(),
            span_us: span.num_microseconds().unwrap_or(i64::MAX),
            total,
            next: 0,
        }
    }

    /// The next `n` events (fewer at the end), in time order as capture would see them.
    pub(crate) fn chunk(&mut self, n: usize) -> Vec<StagedEvent> {
        let end = (self.next + n as u64).min(self.total);
        let events = (self.next..end).map(|i| self.event(i)).collect();
        self.next = end;
        events
    }

    /// How many events were generated so far.
    pub(crate) fn generated(&self) -> u64 {
        self.next
    }

    fn event(&mut self, i: u64) -> StagedEvent {
        let rng = &mut self.rng;
        let slot = (self.span_us as i128 * i as i128 / self.total as i128) as i64;
        let step = (self.span_us as u64 / self.total).max(1);
        let timestamp_us = self.start_us + slot + rng.below(step) as i64;
        let timestamp = DateTime::from_timestamp_micros(timestamp_us).unwrap_or_default();
        let created_at = timestamp + TimeDelta::milliseconds(rng.below(2_000) as i64);
        let person_index = rng.skewed(self.persons.len(), 2.0);
        let name = EVENT_MIX[rng.weighted(&self.event_weights)].0;
        let path = &self.paths[rng.skewed(self.paths.len(), 2.5)];
        let day = timestamp_us / 86_400_000_000;
        let session = Uuid::from_u64_pair(
            (person_index as u64) << 20 | (day as u64 & 0xFFFFF),
            rng.below(3) ^ 0x5e55_1017,
        );

        let person = &mut self.persons[person_index];
        let mut properties = Map::new();
        let mut put = |key: &str, value: Value| {
            properties.insert(key.to_owned(), value);
        };
        put("$browser", person.browser.into());
        put("$os", person.os.into());
        put("$device_type", person.device.into());
        put("$screen_width", person.screen_width.into());
        put("$current_url", format!("https://example.com{path}").into());
        put("$host", "example.com".into());
        put("$pathname", path.as_str().into());
        put("$session_id", session.to_string().into());
        put("$lib", "web".into());
        put("$lib_version", "1.200.0".into());
        if let Some(source) = person.utm_source {
            put("utm_source", source.into());
        }
        let mut elements_chain = None;
        match name {
            "$autocapture" => {
                let label = rng.pick(BUTTONS);
                put("$event_type", "click".into());
                elements_chain = Some(format!(
                    "button.btn.btn-primary:attr__class=\"btn btn-primary\"nth-child=\"2\"\
                     nth-of-type=\"1\"text=\"{label}\";div.container:nth-child=\"1\"nth-of-type=\"1\""
                ));
            }
            "feature_used" => put("feature", rng.pick(FEATURES).into()),
            "purchase" => {
                let amount = (40.0 * (0.8 * rng.gauss()).exp() * 100.0).round() / 100.0;
                put("amount", amount.into());
                put("currency", "USD".into());
                put("product", rng.pick(PRODUCTS).into());
            }
            "signed_up" => put("method", rng.pick(&["email", "google", "github"]).into()),
            _ => {}
        }
        if !person.seen {
            person.seen = true;
            put("$set", json!({"email": person.email, "plan": person.plan}));
        }
        let mut random = [0u8; 10];
        random[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
        StagedEvent {
            uuid: uuid::Builder::from_unix_timestamp_millis(
                timestamp.timestamp_millis().max(0) as u64,
                &random,
            )
            .into_uuid(),
            event: name.to_owned(),
            distinct_id: person.distinct_id.clone(),
            properties,
            timestamp,
            created_at,
            elements_chain,
        }
    }
}

/// Events generated a chunk at a time: what the benches load.
pub(crate) trait EventSource {
    /// How many events there will be in all.
    fn total(&self) -> u64;
    /// How many were handed out so far.
    fn generated(&self) -> u64;
    /// The next `n` events (fewer at the end), in time order.
    fn chunk(&mut self, n: usize) -> Vec<StagedEvent>;
}

impl EventSource for Generator {
    fn total(&self) -> u64 {
        self.total
    }

    fn generated(&self) -> u64 {
        Generator::generated(self)
    }

    fn chunk(&mut self, n: usize) -> Vec<StagedEvent> {
        Generator::chunk(self, n)
    }
}

/// Events generated and handed to the importer at a time. Generated events are maps of
/// properties, several times their row's size: 50,000 at a time added 130 MB to the load's peak.
const CHUNK: usize = 8_192;

/// Every event of `source` through the bulk importer into `project`'s table, with a progress
/// bar; the importer's report and how much of its time went to generating.
/// [`import`], then one line saying how long it took.
pub(crate) async fn import_and_report(
    state: &AppState,
    project: i64,
    source: &mut impl EventSource,
) -> anyhow::Result<()> {
    let (report, generating) = import(state, project, source).await?;
    println!(
        "loaded {} events in {:.1} s ({} commits; {:.1} s of it generating)",
        report.rows,
        report.seconds,
        report.commits,
        generating.as_secs_f64(),
    );
    Ok(())
}

pub(crate) async fn import(
    state: &AppState,
    project: i64,
    source: &mut impl EventSource,
) -> anyhow::Result<(ImportReport, Duration)> {
    let bar = ProgressBar::new(source.total()).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} events ({per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut importer = Importer::new(state.clone(), project).await?;
    let mut generating = Duration::ZERO;
    loop {
        let started = Instant::now();
        let chunk = source.chunk(CHUNK);
        generating += started.elapsed();
        if chunk.is_empty() {
            break;
        }
        importer.push(ParsedRows::from_staged(chunk)).await?;
        bar.set_position(source.generated());
    }
    let report = importer.finish().await?;
    bar.finish_and_clear();
    Ok((report, generating))
}
