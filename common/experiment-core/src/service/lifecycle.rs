//! The lifecycle actions `POST /experiments/:id/<action>` (reference 2.5): each checks the
//! derived status and changes the experiment, its flag, or both.

use chrono::{DateTime, Utc};
use common::error::ApiError;
use feature_flags::FeatureFlag;
use feature_flags::model::{FlagGroup, Variant};
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::launchable;
use crate::validate::{self, Conclusion};
use crate::{Experiment, Status};

/// `ship_variant`'s body.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShipVariant {
    pub variant_key: String,
    #[serde(default)]
    pub release_to_everyone: bool,
    pub conclusion: Option<Conclusion>,
    pub conclusion_comment: Option<String>,
    /// A GitHub clean-up PR: not something this service opens.
    pub open_cleanup_pr: Option<IgnoredAny>,
}

/// `end`'s body.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct End {
    pub conclusion: Option<Conclusion>,
    pub conclusion_comment: Option<String>,
    pub open_cleanup_pr: Option<IgnoredAny>,
}

/// `archive`'s body.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Archive {
    #[serde(default)]
    pub disable_feature_flag: bool,
}

#[derive(Debug, Clone)]
pub enum Action {
    Launch,
    Pause,
    Resume,
    End(End),
    ShipVariant(ShipVariant),
    Reset,
    Archive(Archive),
    Unarchive,
}

/// The experiment after `action`, and the flag's new state when the action changes it.
pub fn apply(
    action: Action,
    current: &Experiment,
    flag: Option<&FeatureFlag>,
    at: DateTime<Utc>,
) -> Result<(Experiment, Option<FeatureFlag>), ApiError> {
    let status = current.status(flag);
    let mut next = current.clone();
    let mut next_flag = flag.cloned();
    match action {
        Action::Launch => {
            if status != Status::Draft {
                return Err(validate::invalid("Experiment has already been launched."));
            }
            launchable(flag)?;
            next.start_date = Some(at);
            validate::fingerprints(&mut next);
            if let Some(flag) = next_flag.as_mut() {
                flag.active = true;
            }
        }
        Action::Pause | Action::Resume => {
            let pausing = matches!(action, Action::Pause);
            match status {
                Status::Draft => {
                    return Err(validate::invalid("Experiment has not been launched yet."));
                }
                Status::Stopped => return Err(validate::invalid("Experiment has already ended.")),
                Status::Paused if pausing => {
                    return Err(validate::invalid("Experiment is already paused."));
                }
                Status::Running if !pausing => {
                    return Err(validate::invalid("Experiment is not paused."));
                }
                _ => {}
            }
            let Some(flag) = next_flag.as_mut().filter(|flag| !flag.deleted) else {
                return Err(validate::invalid(
                    "Experiment's feature flag has been deleted.",
                ));
            };
            flag.active = !pausing;
        }
        Action::End(body) => {
            match status {
                Status::Draft => {
                    return Err(validate::invalid("Experiment has not been launched yet."));
                }
                Status::Stopped => return Err(validate::invalid("Experiment has already ended.")),
                _ => {}
            }
            next.end_date = Some(at);
            if let Some(conclusion) = body.conclusion {
                next.conclusion = Some(conclusion.name().to_owned());
            }
            if body.conclusion_comment.is_some() {
                next.conclusion_comment = body.conclusion_comment;
            }
        }
        Action::ShipVariant(body) => {
            if status == Status::Draft {
                return Err(validate::invalid("Experiment has not been launched yet."));
            }
            let Some(flag) = next_flag.as_mut().filter(|flag| !flag.deleted) else {
                return Err(validate::invalid(
                    "Experiment's feature flag has been deleted.",
                ));
            };
            ship(flag, &body)?;
            if next.end_date.is_none() {
                next.end_date = Some(at);
            }
            if let Some(conclusion) = body.conclusion {
                next.conclusion = Some(conclusion.name().to_owned());
            }
            if body.conclusion_comment.is_some() {
                next.conclusion_comment = body.conclusion_comment;
            }
        }
        Action::Reset => {
            if status == Status::Draft {
                return Err(validate::invalid("Experiment is already in draft state."));
            }
            next.start_date = None;
            next.end_date = None;
            next.archived = false;
            next.conclusion = None;
            next.conclusion_comment = None;
            validate::fingerprints(&mut next);
        }
        Action::Archive(body) => {
            if current.archived {
                return Err(validate::invalid("Experiment is already archived."));
            }
            if status != Status::Stopped {
                return Err(validate::invalid(
                    "Experiment must be ended before it can be archived.",
                ));
            }
            next.archived = true;
            if body.disable_feature_flag
                && let Some(flag) = next_flag.as_mut().filter(|flag| !flag.deleted)
            {
                flag.active = false;
            }
        }
        Action::Unarchive => {
            if !current.archived {
                return Err(validate::invalid("Experiment is not archived."));
            }
            next.archived = false;
        }
    }
    let changed_flag = next_flag.filter(|after| Some(after) != flag);
    Ok((next, changed_flag))
}

/// The flag rewritten to serve one variant: it at 100%, the others at 0; payloads and the
/// aggregation kept; optionally a first condition releasing it to everyone.
fn ship(flag: &mut FeatureFlag, body: &ShipVariant) -> Result<(), ApiError> {
    let Some(multivariate) = flag.filters.multivariate.as_mut() else {
        return Err(not_found_variant(&body.variant_key));
    };
    if !multivariate
        .variants
        .iter()
        .any(|variant| variant.key == body.variant_key)
    {
        return Err(not_found_variant(&body.variant_key));
    }
    multivariate.variants = multivariate
        .variants
        .iter()
        .map(|variant| Variant {
            rollout_percentage: if variant.key == body.variant_key {
                100.0
            } else {
                0.0
            },
            ..variant.clone()
        })
        .collect();
    if body.release_to_everyone {
        flag.filters.groups.insert(
            0,
            FlagGroup {
                rollout_percentage: Some(100.0),
                description: Some(
                    "Added automatically when the experiment was ended to keep only one variant."
                        .into(),
                ),
                ..FlagGroup::default()
            },
        );
    }
    Ok(())
}

fn not_found_variant(key: &str) -> ApiError {
    validate::invalid(format!("Variant '{key}' not found on feature flag."))
}
