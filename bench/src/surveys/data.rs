//! The events of `bench surveys`: one survey's `survey shown`, `survey dismissed` and
//! `survey sent` events (about 50 / 15 / 35 %) merged in time order into the unrelated events of
//! `bench query`'s generator, over 30 days. The same seed and sizes give the same events
//! (timestamps relative to the given end; the survey id is whatever the API gave).
//!
//! The survey's events are planned per visit up front (a few bytes each, so a million fit),
//! sorted, and merged with the unrelated events as those are generated.

use std::collections::VecDeque;

use chrono::{DateTime, TimeDelta, Utc};
use common::staging::StagedEvent;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::generator::Generator as Noise;
use crate::load::Rng;

/// The survey's only question (a 0–10 rating); its answers are `$survey_response_q-rating`.
pub(super) const QUESTION_ID: &str = "q-rating";
pub(super) const SHOWN: &str = "survey shown";
pub(super) const DISMISSED: &str = "survey dismissed";
pub(super) const SENT: &str = "survey sent";
/// Per visit after the survey is shown: dismissed, answered, or left alone (per mille).
const OUTCOMES: [u64; 3] = [300, 600, 100];
/// One answer in this many is sent again under the same submission id (a resubmission).
const RESUBMITTED_ONE_IN: u64 = 6;
/// One answer in this many has no `$survey_submission_id` (older posthog-js): its uuid groups it.
const WITHOUT_SUBMISSION_ONE_IN: u64 = 10;
/// No submission id: `Planned::submission` for the answers of older clients.
const NO_SUBMISSION: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shown,
    Dismissed,
    Sent,
}

/// One survey event before it gets its properties.
#[derive(Debug, Clone, Copy)]
struct Planned {
    at_us: i64,
    person: u32,
    kind: Kind,
    /// The submission's index (its id is derived from it), or [`NO_SUBMISSION`].
    submission: u32,
    rating: u8,
}

pub(super) struct Generator {
    rng: Rng,
    survey_id: String,
    survey_name: String,
    /// Distinct ids of the persons who see the survey (none of them makes unrelated events).
    persons: Vec<String>,
    planned: Vec<Planned>,
    next_planned: usize,
    noise: Noise,
    noise_total: u64,
    /// Unrelated events generated but not emitted yet, in time order.
    noise_pending: VecDeque<StagedEvent>,
    noise_drawn: u64,
    emitted: u64,
}

impl Generator {
    /// `events` events over the 30 days before `end`, `survey_events` of which are the survey
    /// `survey_id`'s (from `survey_events / 4` persons, so many see it more than once).
    pub(super) fn new(
        seed: u64,
        events: u64,
        survey_events: u64,
        survey_id: Uuid,
        survey_name: &str,
        end: DateTime<Utc>,
    ) -> Self {
        let mut rng = Rng(seed ^ 0x5_0b7e_u64);
        let span = TimeDelta::days(30);
        let start_us = (end - span).timestamp_micros();
        // Visits start early enough that their follow-ups (minutes later) are still before `end`.
        let visit_span = span.num_microseconds().unwrap_or(i64::MAX) / 100 * 98;
        let people = (survey_events / 4).clamp(1, u32::MAX as u64 - 1) as u32;
        let persons = (0..people)
            .map(|_| Uuid::from_u64_pair(rng.next_u64(), rng.next_u64()).to_string())
            .collect();
        let mut planned = Vec::with_capacity(survey_events as usize + 4);
        let mut submissions = 0u32;
        while (planned.len() as u64) < survey_events {
            let visit = Visit {
                at_us: start_us + rng.below(visit_span as u64) as i64,
                person: rng.below(people as u64) as u32,
            };
            visit.plan(&mut rng, &mut planned, &mut submissions);
        }
        planned.truncate(survey_events as usize);
        planned.sort_by_key(|event| event.at_us);
        let noise_total = events.saturating_sub(survey_events);
        Self {
            rng,
            survey_id: survey_id.to_string(),
            survey_name: survey_name.to_owned(),
            persons,
            planned,
            next_planned: 0,
            noise: Noise::new(seed, noise_total, end),
            noise_total,
            noise_pending: VecDeque::new(),
            noise_drawn: 0,
            emitted: 0,
        }
    }

    /// How many events there will be in all.
    pub(super) fn total(&self) -> u64 {
        self.planned.len() as u64 + self.noise_total
    }

    pub(super) fn generated(&self) -> u64 {
        self.emitted
    }

    /// The next `n` events (fewer at the end), in time order.
    pub(super) fn chunk(&mut self, n: usize) -> Vec<StagedEvent> {
        let mut events = Vec::with_capacity(n);
        while events.len() < n {
            if self.noise_pending.is_empty() && self.noise_drawn < self.noise_total {
                let more = self.noise.chunk(n);
                self.noise_drawn += more.len() as u64;
                self.noise_pending.extend(more);
            }
            let planned = self.planned.get(self.next_planned).copied();
            let noise_at = self
                .noise_pending
                .front()
                .map(|e| e.timestamp.timestamp_micros());
            let event = match (planned, noise_at) {
                (Some(p), Some(at)) if at < p.at_us => self.noise_pending.pop_front(),
                (Some(p), _) => {
                    self.next_planned += 1;
                    Some(self.event(p))
                }
                (None, Some(_)) => self.noise_pending.pop_front(),
                (None, None) => None,
            };
            let Some(event) = event else { break };
            events.push(event);
        }
        self.emitted += events.len() as u64;
        events
    }

    fn event(&mut self, planned: Planned) -> StagedEvent {
        let rng = &mut self.rng;
        let timestamp = DateTime::from_timestamp_micros(planned.at_us).unwrap_or_default();
        let day = planned.at_us / 86_400_000_000;
        let session = Uuid::from_u64_pair(
            (planned.person as u64) << 20 | (day as u64 & 0xFFFFF),
            0x5a4e_7e11,
        );
        let mut properties = Map::new();
        let mut put = |key: &str, value: Value| {
            properties.insert(key.to_owned(), value);
        };
        put("$survey_id", self.survey_id.as_str().into());
        put("$survey_name", self.survey_name.as_str().into());
        put("$current_url", "https://example.com/pricing".into());
        put("$pathname", "/pricing".into());
        put("$session_id", session.to_string().into());
        put("$lib", "web".into());
        let name = match planned.kind {
            Kind::Shown => SHOWN,
            Kind::Dismissed => {
                put("$survey_partially_completed", false.into());
                DISMISSED
            }
            Kind::Sent => {
                if planned.submission != NO_SUBMISSION {
                    put(
                        "$survey_submission_id",
                        submission_id(planned.submission).into(),
                    );
                }
                put(
                    &format!("$survey_response_{QUESTION_ID}"),
                    planned.rating.into(),
                );
                put(
                    "$survey_questions",
                    json!([{"id": QUESTION_ID, "question": "How?", "response": planned.rating}]),
                );
                put("$survey_completed", true.into());
                SENT
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
            distinct_id: self.persons[planned.person as usize].clone(),
            properties,
            timestamp,
            created_at: timestamp + TimeDelta::milliseconds(rng.below(2_000) as i64),
            elements_chain: None,
        }
    }
}

/// The `$survey_submission_id` of submission `index` (a uuid, as posthog-js makes one).
fn submission_id(index: u32) -> String {
    Uuid::from_u64_pair(0x5b31_0000_0000_0000 | index as u64, 0x5b31).to_string()
}

/// A person seeing the survey once.
struct Visit {
    at_us: i64,
    person: u32,
}

impl Visit {
    /// `survey shown`, then seconds later a dismissal, an answer (minutes later sent again
    /// under the same submission id, one in [`RESUBMITTED_ONE_IN`]), or nothing.
    fn plan(&self, rng: &mut Rng, planned: &mut Vec<Planned>, submissions: &mut u32) {
        let mut add = |at_us: i64, kind: Kind, submission: u32, rating: u8| {
            planned.push(Planned {
                at_us,
                person: self.person,
                kind,
                submission,
                rating,
            });
        };
        add(self.at_us, Kind::Shown, NO_SUBMISSION, 0);
        let later = self.at_us + 2_000_000 + rng.below(120_000_000) as i64;
        match rng.weighted(&OUTCOMES) {
            0 => add(later, Kind::Dismissed, NO_SUBMISSION, 0),
            1 => {
                let submission = match rng.below(WITHOUT_SUBMISSION_ONE_IN) {
                    0 => NO_SUBMISSION,
                    _ => {
                        *submissions = submissions.wrapping_add(1) % NO_SUBMISSION;
                        *submissions
                    }
                };
                add(later, Kind::Sent, submission, rng.below(11) as u8);
                if submission != NO_SUBMISSION && rng.below(RESUBMITTED_ONE_IN) == 0 {
                    // Always strictly later: the latest event of a submission is unambiguous.
                    let again = later + 1_000_000 + rng.below(600_000_000) as i64;
                    add(again, Kind::Sent, submission, rng.below(11) as u8);
                }
            }
            _ => {}
        }
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
    use std::collections::HashMap;

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

    fn end() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
    }

    #[test]
    fn the_survey_events_come_in_time_order_among_the_others_in_the_asked_mix() {
        let survey = Uuid::from_u64_pair(1, 2);
        let mut generator = Generator::new(7, 40_000, 10_000, survey, "s", end());
        assert_eq!(generator.total(), 40_000);
        let events = all(&mut generator);
        assert_eq!(events.len(), 40_000);
        assert!(events.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
        assert!(events.iter().all(|e| e.timestamp < end()));
        let mut per_kind: HashMap<&str, usize> = HashMap::new();
        for event in &events {
            if event.properties.get("$survey_id") == Some(&survey.to_string().into()) {
                *per_kind.entry(event.event.as_str()).or_default() += 1;
            }
        }
        assert_eq!(per_kind.values().sum::<usize>(), 10_000);
        let share = |kind: &str| per_kind[kind] as f64 / 10_000.0;
        assert!((share(SHOWN) - 0.50).abs() < 0.03, "{per_kind:?}");
        assert!((share(DISMISSED) - 0.15).abs() < 0.03, "{per_kind:?}");
        assert!((share(SENT) - 0.35).abs() < 0.03, "{per_kind:?}");
    }

    #[test]
    fn some_submissions_are_sent_twice_and_some_have_no_id() {
        let mut generator = Generator::new(3, 5_000, 5_000, Uuid::nil(), "s", end());
        let sent: Vec<StagedEvent> = all(&mut generator)
            .into_iter()
            .filter(|e| e.event == SENT)
            .collect();
        let mut per_submission: HashMap<&Value, Vec<&StagedEvent>> = HashMap::new();
        for event in &sent {
            if let Some(id) = event.properties.get("$survey_submission_id") {
                per_submission.entry(id).or_default().push(event);
            }
        }
        assert!(per_submission.len() < sent.len());
        let resent: Vec<_> = per_submission.values().filter(|e| e.len() > 1).collect();
        assert!(!resent.is_empty());
        // The same person, later.
        assert!(resent.iter().all(|events| {
            events
                .windows(2)
                .all(|w| w[0].distinct_id == w[1].distinct_id && w[0].timestamp < w[1].timestamp)
        }));
        assert!(sent.iter().all(|e| {
            e.properties
                .contains_key(&format!("$survey_response_{QUESTION_ID}"))
        }));
    }

    #[test]
    fn the_same_seed_gives_the_same_events() {
        let first = all(&mut Generator::new(
            3,
            5_000,
            1_000,
            Uuid::nil(),
            "s",
            end(),
        ));
        let second = all(&mut Generator::new(
            3,
            5_000,
            1_000,
            Uuid::nil(),
            "s",
            end(),
        ));
        assert_eq!(first, second);
    }
}
