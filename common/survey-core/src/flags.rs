//! The flags a survey owns (reference 1.4), planned as writes for the survey's own transaction:
//! - the internal targeting flag, always: it hides the survey from whoever answered or
//!   dismissed it (person properties `$survey_responded/<key>`, `$survey_dismissed/<key>`,
//!   and `$last_seen_survey_date` when a wait period is set);
//! - the targeting flag, from `targeting_flag_filters` (removed with `remove_targeting_flag`);
//! - the response sampling flag, while daily sampling limits are set.
//!
//! Each is active exactly while the survey is running and not archived.

use chrono::{DateTime, Utc};
use common::activity::Actor;
use common::store::{Store, StoreError, WriteOp};
use feature_flags::FeatureFlag;
use feature_flags::model::{FlagFilters, FlagGroup, Operator, PropertyFilter, PropertyKind};
use feature_flags::model::{SURVEY_FLAG_PREFIX, SURVEY_INTERNAL_SUFFIX};
use feature_flags::repository::{self as flag_repository, NewFlag, Stored as StoredFlag};
use rand::RngCore;
use serde_json::{Value, json};

use crate::Survey;
use crate::render::Flags;
use crate::validate::Targeting;

/// The flags a survey names, as read (deleted ones are absent).
#[derive(Debug, Clone, Default)]
pub struct Owned {
    pub linked: Option<FeatureFlag>,
    pub targeting: Option<StoredFlag>,
    pub internal_targeting: Option<StoredFlag>,
    pub internal_response_sampling: Option<StoredFlag>,
}

impl Owned {
    pub async fn load(store: &dyn Store, survey: &Survey) -> Result<Self, StoreError> {
        let team = survey.team_id;
        let stored = |id: Option<i64>| async move {
            match id {
                Some(id) => Ok::<_, StoreError>(
                    flag_repository::get(store, team, id)
                        .await?
                        .filter(|s| !s.flag.deleted),
                ),
                None => Ok(None),
            }
        };
        let linked = match survey.linked_flag_id {
            Some(id) => flag_repository::get_live(store, team, id).await?,
            None => None,
        };
        Ok(Self {
            linked,
            targeting: stored(survey.targeting_flag_id).await?,
            internal_targeting: stored(survey.internal_targeting_flag_id).await?,
            internal_response_sampling: stored(survey.internal_response_sampling_flag_id).await?,
        })
    }

    /// The flags `survey` names among a project's live flags (e.g. the per-process copy the SDK
    /// routes read), with no Store call.
    pub fn among<'a>(survey: &Survey, live: &'a [FeatureFlag]) -> Flags<'a> {
        let find = |id: Option<i64>| id.and_then(|id| live.iter().find(|flag| flag.id == id));
        Flags {
            linked: find(survey.linked_flag_id),
            targeting: find(survey.targeting_flag_id),
            internal_targeting: find(survey.internal_targeting_flag_id),
            internal_response_sampling: find(survey.internal_response_sampling_flag_id),
        }
    }

    /// The flags as rendering wants them.
    pub fn as_flags(&self) -> Flags<'_> {
        Flags {
            linked: self.linked.as_ref(),
            targeting: self.targeting.as_ref().map(|s| &s.flag),
            internal_targeting: self.internal_targeting.as_ref().map(|s| &s.flag),
            internal_response_sampling: self.internal_response_sampling.as_ref().map(|s| &s.flag),
        }
    }
}

/// What to do with one owned flag.
enum Want {
    /// No such flag (delete the one there is).
    None,
    /// A flag with these filters, active as the survey's flags are.
    Some {
        filters: FlagFilters,
        suffix: &'static str,
    },
}

/// Plans the writes that bring `survey`'s flags where its new state wants them, and sets the
/// flag ids on `survey` (new flags take the project's next ids). `owned` is what was read
/// before (empty for a new survey).
pub async fn plan(
    store: &dyn Store,
    survey: &mut Survey,
    owned: &Owned,
    targeting: &Targeting,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let active = survey.flags_active();
    // A body may name an existing flag as the targeting flag: the survey adopts it (PostHog).
    let adopted = match survey.targeting_flag_id {
        Some(id) if owned.targeting.as_ref().is_none_or(|s| s.flag.id != id) => {
            flag_repository::get(store, survey.team_id, id)
                .await?
                .filter(|s| !s.flag.deleted)
        }
        _ => None,
    };
    let current_targeting = adopted.as_ref().or(owned.targeting.as_ref());
    let targeting_want = match targeting {
        Targeting::Remove => Want::None,
        Targeting::Set(filters) => Want::Some {
            filters: filters.clone(),
            suffix: "",
        },
        Targeting::Keep => match current_targeting {
            Some(stored) => Want::Some {
                filters: stored.flag.filters.clone(),
                suffix: "",
            },
            None => Want::None,
        },
    };
    let internal_want = Want::Some {
        filters: internal_filters(survey),
        suffix: SURVEY_INTERNAL_SUFFIX,
    };
    let sampling_want = match &survey.response_sampling_daily_limits {
        Some(_) => Want::Some {
            filters: FlagFilters {
                groups: vec![FlagGroup {
                    rollout_percentage: Some(100.0),
                    ..Default::default()
                }],
                ..Default::default()
            },
            suffix: "-sampling",
        },
        None => Want::None,
    };

    let mut ops = Vec::new();
    let mut new_flags = Vec::new();
    let mut slots = Vec::new();
    for (slot, want, current) in [
        (Slot::Targeting, targeting_want, current_targeting),
        (
            Slot::Internal,
            internal_want,
            owned.internal_targeting.as_ref(),
        ),
        (
            Slot::Sampling,
            sampling_want,
            owned.internal_response_sampling.as_ref(),
        ),
    ] {
        match (want, current) {
            (Want::None, None) => slot.set(survey, None),
            (Want::None, Some(stored)) => {
                let mut gone = stored.flag.clone();
                gone.deleted = true;
                gone.active = false;
                ops.extend(
                    flag_repository::plan_save(survey.team_id, stored, gone, actor, at)?.ops,
                );
                slot.set(survey, None);
            }
            (Want::Some { filters, .. }, Some(stored)) => {
                if stored.flag.filters != filters || stored.flag.active != active {
                    let mut changed = stored.flag.clone();
                    changed.filters = filters;
                    changed.active = active;
                    ops.extend(
                        flag_repository::plan_save(survey.team_id, stored, changed, actor, at)?.ops,
                    );
                }
                slot.set(survey, Some(stored.flag.id));
            }
            (Want::Some { filters, suffix }, None) => {
                new_flags.push(NewFlag {
                    key: new_key(suffix),
                    name: format!("Targeting flag for survey {}", survey.name),
                    filters,
                    active,
                    ensure_experience_continuity: false,
                    evaluation_runtime: Default::default(),
                    evaluation_tags: Vec::new(),
                    created_by: survey.created_by,
                });
                slots.push(slot);
            }
        }
    }
    let (created, create_ops) =
        flag_repository::plan_create_many(store, survey.team_id, new_flags, actor, at).await?;
    for (slot, flag) in slots.into_iter().zip(&created) {
        slot.set(survey, Some(flag.id));
    }
    ops.extend(create_ops);
    Ok(ops)
}

/// The writes that soft-delete every flag the survey owns (its linked flag is not its own).
pub fn plan_delete(
    survey: &Survey,
    owned: &Owned,
    actor: &Actor,
    at: DateTime<Utc>,
) -> Result<Vec<WriteOp>, StoreError> {
    let mut ops = Vec::new();
    for stored in [
        &owned.targeting,
        &owned.internal_targeting,
        &owned.internal_response_sampling,
    ]
    .into_iter()
    .flatten()
    {
        let mut gone = stored.flag.clone();
        gone.deleted = true;
        gone.active = false;
        ops.extend(flag_repository::plan_save(survey.team_id, stored, gone, actor, at)?.ops);
    }
    Ok(ops)
}

#[derive(Clone, Copy)]
enum Slot {
    Targeting,
    Internal,
    Sampling,
}

impl Slot {
    fn set(self, survey: &mut Survey, id: Option<i64>) {
        match self {
            Slot::Targeting => survey.targeting_flag_id = id,
            Slot::Internal => survey.internal_targeting_flag_id = id,
            Slot::Sampling => survey.internal_response_sampling_flag_id = id,
        }
    }
}

/// `survey-targeting-<10 random hex><suffix>`, PostHog's slug of its internal flags.
fn new_key(suffix: &str) -> String {
    let mut bytes = [0u8; 5];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("{SURVEY_FLAG_PREFIX}{}{suffix}", hex::encode(bytes))
}

fn not_set(key: String) -> PropertyFilter {
    PropertyFilter {
        key,
        value: Value::String("is_not_set".into()),
        operator: Operator::IsNotSet,
        kind: PropertyKind::Person,
        group_type_index: None,
        negation: None,
        label: None,
        dependency_chain: None,
    }
}

/// Everyone who has neither answered nor dismissed this survey (this iteration of it); with a
/// wait period, only those who saw no survey within it.
pub fn internal_filters(survey: &Survey) -> FlagFilters {
    let key = survey.response_key();
    let base = vec![
        not_set(format!("$survey_dismissed/{key}")),
        not_set(format!("$survey_responded/{key}")),
    ];
    let wait_days = survey
        .conditions
        .as_ref()
        .and_then(|c| c.get("seenSurveyWaitPeriodInDays"))
        .and_then(Value::as_i64)
        .filter(|days| *days > 0);
    let group = |properties: Vec<PropertyFilter>| FlagGroup {
        properties,
        rollout_percentage: Some(100.0),
        ..Default::default()
    };
    let groups = match wait_days {
        None => vec![group(base)],
        Some(days) => {
            let mut never_seen = base.clone();
            never_seen.push(not_set("$last_seen_survey_date".into()));
            let mut seen_long_ago = base;
            seen_long_ago.push(PropertyFilter {
                key: "$last_seen_survey_date".into(),
                value: json!(format!("{days}d")),
                operator: Operator::IsDateBefore,
                kind: PropertyKind::Person,
                group_type_index: None,
                negation: None,
                label: None,
                dependency_chain: None,
            });
            vec![group(never_seen), group(seen_long_ago)]
        }
    };
    FlagFilters {
        groups,
        ..Default::default()
    }
}
