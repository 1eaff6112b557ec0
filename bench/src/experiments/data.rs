//! The events of `bench experiments`: persons exposed to one multivariate flag (a few to both
//! variants, a few before the experiment starts), their `checkout` and `purchase` events before
//! and after exposure (test converts a little more and spends a little more), calls of another
//! flag, and many unrelated events, over 30 days. The same seed and sizes give the same events
//! (timestamps relative to the given end).
//!
//! The experiment's events are planned per person up front (a few per person, kept small), sorted,
//! and merged in time order with the unrelated events, which are drawn as they are emitted.

use chrono::{DateTime, TimeDelta, Utc};
use common::staging::StagedEvent;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::load::Rng;

/// The flag the experiment runs on, and another one whose calls must not count.
pub(super) const OTHER_FLAG: &str = "bench-other-flag";
pub(super) const VARIANTS: [&str; 2] = ["control", "test"];
/// Chance that a checkout is followed by a purchase, per variant.
const CONVERSION: [f64; 2] = [0.30, 0.36];
/// Revenue multiplier per variant.
const SPEND: [f64; 2] = [1.0, 1.05];
/// Unrelated events (weight per mille); a few purchases and checkouts among them too.
const NOISE_MIX: &[(Kind, u64)] = &[
    (Kind::Pageview, 690),
    (Kind::Autocapture, 150),
    (Kind::Pageleave, 100),
    (Kind::FeatureUsed, 50),
    (Kind::Checkout, 6),
    (Kind::Purchase, 4),
];
const BROWSERS: &[&str] = &["Chrome", "Safari", "Firefox", "Microsoft Edge"];
const OPERATING_SYSTEMS: &[&str] = &["Windows", "Mac OS X", "Android", "iOS", "Linux"];
const PATHS: &[&str] = &[
    "/",
    "/pricing",
    "/features",
    "/docs",
    "/blog",
    "/checkout",
    "/cart",
];
const FEATURES: &[&str] = &["dashboards", "insights", "replay", "flags", "surveys"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `$feature_flag_called` of the experiment's flag with this variant index.
    Exposure(u8),
    /// `$feature_flag_called` of [`OTHER_FLAG`].
    OtherFlag,
    Checkout,
    /// With the revenue in cents.
    Purchase,
    Pageview,
    Autocapture,
    Pageleave,
    FeatureUsed,
}

/// One event before it gets its properties: small, so a few per exposed person fit in memory.
#[derive(Debug, Clone, Copy)]
struct Planned {
    at_us: i64,
    person: u32,
    kind: Kind,
    /// Purchases: revenue in cents (0 for noise purchases, drawn when emitted).
    cents: u32,
}

struct Person {
    distinct_id: String,
    browser: &'static str,
    os: &'static str,
}

pub(super) struct Generator {
    rng: Rng,
    flag_key: String,
    persons: Vec<Person>,
    /// The experiment's events, in time order, and the next one to emit.
    planned: Vec<Planned>,
    next_planned: usize,
    noise_weights: Vec<u64>,
    noise_total: u64,
    noise_next: u64,
    /// The next unrelated event, drawn but not emitted yet.
    noise_pending: Option<Planned>,
    start_us: i64,
    span_us: i64,
    emitted: u64,
}

impl Generator {
    /// About `events` events over the 30 days before `end`, `exposed` of whose persons call the
    /// flag `flag_key`; half as many other persons only make unrelated events.
    pub(super) fn new(
        seed: u64,
        events: u64,
        exposed: u32,
        flag_key: &str,
        end: DateTime<Utc>,
    ) -> Self {
        let mut rng = Rng(seed);
        let span = TimeDelta::days(30);
        let start_us = (end - span).timestamp_micros();
        let span_us = span.num_microseconds().unwrap_or(i64::MAX);
        let end_us = start_us + span_us - 1;
        let count = exposed as usize + (exposed as usize / 2).max(1);
        let persons = (0..count)
            .map(|_| Person {
                distinct_id: Uuid::from_u64_pair(rng.next_u64(), rng.next_u64()).to_string(),
                browser: rng.pick(BROWSERS),
                os: rng.pick(OPERATING_SYSTEMS),
            })
            .collect();
        let mut planned = Vec::with_capacity(exposed as usize * 5);
        for person in 0..exposed {
            plan_person(&mut rng, &mut planned, person, start_us, span_us, end_us);
        }
        planned.sort_by_key(|event| event.at_us);
        let noise_total = events.saturating_sub(planned.len() as u64);
        Self {
            rng,
            flag_key: flag_key.to_owned(),
            persons,
            planned,
            next_planned: 0,
            noise_weights: NOISE_MIX.iter().map(|(_, w)| *w).collect(),
            noise_total,
            noise_next: 0,
            noise_pending: None,
            start_us,
            span_us,
            emitted: 0,
        }
    }

    /// How many events there will be in all.
    pub(super) fn total(&self) -> u64 {
        self.planned.len() as u64 + self.noise_total
    }

    /// How many of them are the experiment's (exposures, other-flag calls, metric events).
    pub(super) fn experiment_events(&self) -> u64 {
        self.planned.len() as u64
    }

    pub(super) fn generated(&self) -> u64 {
        self.emitted
    }

    /// The next `n` events (fewer at the end), in time order.
    pub(super) fn chunk(&mut self, n: usize) -> Vec<StagedEvent> {
        let mut events = Vec::with_capacity(n);
        while events.len() < n {
            if self.noise_pending.is_none() && self.noise_next < self.noise_total {
                self.noise_pending = Some(self.draw_noise());
            }
            let planned = self.planned.get(self.next_planned).copied();
            let next = match (planned, self.noise_pending) {
                (Some(p), Some(q)) if q.at_us < p.at_us => self.noise_pending.take(),
                (Some(p), _) => {
                    self.next_planned += 1;
                    Some(p)
                }
                (None, Some(_)) => self.noise_pending.take(),
                (None, None) => None,
            };
            let Some(next) = next else { break };
            events.push(self.event(next));
        }
        self.emitted += events.len() as u64;
        events
    }

    /// Unrelated event `noise_next`: evenly spread in time, persons skewed towards a few.
    fn draw_noise(&mut self) -> Planned {
        let i = self.noise_next;
        self.noise_next += 1;
        let rng = &mut self.rng;
        let slot = (self.span_us as i128 * i as i128 / self.noise_total as i128) as i64;
        let step = (self.span_us as u64 / self.noise_total).max(1);
        Planned {
            at_us: self.start_us + slot + rng.below(step) as i64,
            person: rng.skewed(self.persons.len(), 1.5) as u32,
            kind: NOISE_MIX[rng.weighted(&self.noise_weights)].0,
            cents: 0,
        }
    }

    fn event(&mut self, planned: Planned) -> StagedEvent {
        let rng = &mut self.rng;
        let timestamp = DateTime::from_timestamp_micros(planned.at_us).unwrap_or_default();
        let person = &self.persons[planned.person as usize];
        let day = planned.at_us / 86_400_000_000;
        let session = Uuid::from_u64_pair(
            (planned.person as u64) << 20 | (day as u64 & 0xFFFFF),
            0x5e55_1017,
        );
        let path = rng.pick(PATHS);
        let mut properties = Map::new();
        let mut put = |key: &str, value: Value| {
            properties.insert(key.to_owned(), value);
        };
        put("$browser", person.browser.into());
        put("$os", person.os.into());
        put("$current_url", format!("https://example.com{path}").into());
        put("$pathname", path.into());
        put("$session_id", session.to_string().into());
        put("$lib", "web".into());
        let name = match planned.kind {
            Kind::Exposure(variant) => {
                put("$feature_flag", self.flag_key.as_str().into());
                put(
                    "$feature_flag_response",
                    VARIANTS[variant as usize % VARIANTS.len()].into(),
                );
                "$feature_flag_called"
            }
            Kind::OtherFlag => {
                put("$feature_flag", OTHER_FLAG.into());
                put("$feature_flag_response", "test".into());
                "$feature_flag_called"
            }
            Kind::Checkout => {
                put("cart_size", (1 + rng.below(5)).into());
                "checkout"
            }
            Kind::Purchase => {
                let cents = match planned.cents {
                    0 => revenue_cents(rng, 1.0),
                    cents => cents,
                };
                put("revenue", (cents as f64 / 100.0).into());
                put("currency", "USD".into());
                "purchase"
            }
            Kind::Pageview => "$pageview",
            Kind::Autocapture => {
                put("$event_type", "click".into());
                "$autocapture"
            }
            Kind::Pageleave => "$pageleave",
            Kind::FeatureUsed => {
                put("feature", rng.pick(FEATURES).into());
                "feature_used"
            }
        };
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
            created_at: timestamp + TimeDelta::milliseconds(rng.below(2_000) as i64),
            elements_chain: None,
        }
    }
}

/// A purchase amount: log-normal around $40, in cents (at least one).
fn revenue_cents(rng: &mut Rng, spend: f64) -> u32 {
    ((4_000.0 * spend * (0.8 * rng.gauss()).exp()).round() as u32).max(1)
}

/// One exposed person's events: 1–3 calls of the flag from the first exposure on (one in 200
/// also sees the other variant), one in ten calls another flag, 0–3 checkouts anywhere in the 30
/// days (so some before exposure) each followed by a purchase at the variant's rate, and one in
/// ten a purchase without a checkout.
fn plan_person(
    rng: &mut Rng,
    planned: &mut Vec<Planned>,
    person: u32,
    start_us: i64,
    span_us: i64,
    end_us: i64,
) {
    let variant = rng.below(2) as usize;
    let mut add = |at_us: i64, kind: Kind, cents: u32| {
        planned.push(Planned {
            at_us: at_us.min(end_us),
            person,
            kind,
            cents,
        });
    };
    let first = start_us + rng.below((span_us as u64) / 10 * 9) as i64;
    let later = |rng: &mut Rng| first + 1 + rng.below((end_us - first).max(1) as u64) as i64;
    add(first, Kind::Exposure(variant as u8), 0);
    for _ in 0..rng.below(3) {
        let at = later(rng);
        add(at, Kind::Exposure(variant as u8), 0);
    }
    if rng.below(200) == 0 {
        let at = later(rng);
        add(at, Kind::Exposure(1 - variant as u8), 0);
    }
    if rng.below(10) == 0 {
        let at = start_us + rng.below(span_us as u64) as i64;
        add(at, Kind::OtherFlag, 0);
    }
    let checkouts = rng.weighted(&[40, 35, 15, 10]);
    for _ in 0..checkouts {
        let at = start_us + rng.below(span_us as u64) as i64;
        add(at, Kind::Checkout, 0);
        if rng.unit() < CONVERSION[variant] {
            // A minute to two hours later: never at the checkout's instant.
            let after = at + 60_000_000 + rng.below(7_200_000_000) as i64;
            let cents = revenue_cents(rng, SPEND[variant]);
            add(after, Kind::Purchase, cents);
        }
    }
    if rng.below(10) == 0 {
        let at = start_us + rng.below(span_us as u64) as i64;
        let cents = revenue_cents(rng, SPEND[variant]);
        add(at, Kind::Purchase, cents);
    }
}

impl crate::generator::EventSource for Generator {
    fn total(&self) -> u64 {
        Generator::total(self)
    }

    fn generated(&self) -> u64 {
        Generator::generated(self)
    }

    fn chunk(&mut self, n: usize) -> Vec<StagedEvent> {
        Generator::chunk(self, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(generator: &mut Generator) -> Vec<StagedEvent> {
        let mut events = Vec::new();
        loop {
            let chunk = generator.chunk(1_000);
            if chunk.is_empty() {
                return events;
            }
            events.extend(chunk);
        }
    }

    #[test]
    fn events_come_in_time_order_with_the_experiment_among_them() {
        let end = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let mut generator = Generator::new(7, 20_000, 500, "exp-flag", end);
        let total = generator.total();
        let events = all(&mut generator);
        assert_eq!(events.len() as u64, total);
        assert!(total >= 20_000);
        assert!(events.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
        let exposed: std::collections::HashSet<&str> = events
            .iter()
            .filter(|e| e.properties.get("$feature_flag") == Some(&"exp-flag".into()))
            .map(|e| e.distinct_id.as_str())
            .collect();
        assert_eq!(exposed.len(), 500);
        assert!(events.iter().any(|e| e.event == "checkout"));
        assert!(
            events
                .iter()
                .filter(|e| e.event == "purchase")
                .all(|e| e.properties["revenue"].as_f64().is_some_and(|r| r > 0.0))
        );
        assert!(events.iter().all(|e| e.timestamp < end));
    }

    #[test]
    fn the_same_seed_gives_the_same_events() {
        let end = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let first = all(&mut Generator::new(3, 5_000, 100, "f", end));
        let second = all(&mut Generator::new(3, 5_000, 100, "f", end));
        assert_eq!(first, second);
    }
}
