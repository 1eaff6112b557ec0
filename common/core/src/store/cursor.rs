//! Opaque pagination cursors: the key of the last item returned, base64url-encoded JSON.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::{Index, Item, StoreError};

/// Where the next page starts: strictly after this key, in the walked index's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub pk: String,
    pub sk: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsi1pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsi1sk: Option<String>,
}

impl Cursor {
    pub fn after(item: &Item, index: Index) -> Self {
        let gsi = index == Index::Gsi1;
        Self {
            pk: item.pk.clone(),
            sk: item.sk.clone(),
            gsi1pk: if gsi { item.gsi1pk.clone() } else { None },
            gsi1sk: if gsi { item.gsi1sk.clone() } else { None },
        }
    }

    pub fn encode(&self) -> String {
        // Serializing a struct of strings cannot fail.
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    /// Decodes a cursor and checks it belongs to the partition being walked.
    pub fn decode(text: &str, partition: &str, index: Index) -> Result<Self, StoreError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| StoreError::InvalidCursor)?;
        let cursor: Cursor =
            serde_json::from_slice(&bytes).map_err(|_| StoreError::InvalidCursor)?;
        let belongs = match index {
            Index::Primary => cursor.pk == partition && cursor.gsi1pk.is_none(),
            Index::Gsi1 => cursor.gsi1pk.as_deref() == Some(partition) && cursor.gsi1sk.is_some(),
        };
        if belongs {
            Ok(cursor)
        } else {
            Err(StoreError::InvalidCursor)
        }
    }
}
