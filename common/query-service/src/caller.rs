//! Who asked, for the query log and an async job.

/// Who asked: the user and the personal API key of the request (none for the service's own
/// reads and for the console's session).
#[derive(Debug, Clone, Default)]
pub struct Caller {
    pub user: Option<String>,
    pub api_key_label: Option<String>,
    pub api_key_mask: Option<String>,
}

impl Caller {
    pub fn of(auth: &common::Authenticated) -> Self {
        Self {
            user: Some(auth.user.uuid.to_string()),
            api_key_label: auth.key.as_ref().map(|key| key.label.clone()),
            api_key_mask: auth.key.as_ref().map(|key| key.mask_value.clone()),
        }
    }
}
