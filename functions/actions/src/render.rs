//! PostHog's `ActionSerializer` JSON (`action_core::render`), with the creator read from the
//! Store.

use action_core::Action;
use common::error::ApiResult;
use common::models::User;
use common::store::Store;
use serde_json::Value;

pub async fn action(store: &dyn Store, action: &Action) -> ApiResult<Value> {
    let creator = match action.created_by {
        Some(uuid) => User::load(store, uuid).await?,
        None => None,
    };
    let creator = creator
        .as_ref()
        .map_or(Value::Null, feature_flags::render::user_basic);
    Ok(action_core::render::action(action, creator))
}
