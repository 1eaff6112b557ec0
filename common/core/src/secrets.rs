//! Secrets at rest: authenticated encryption (ChaCha20-Poly1305) for values we must read back,
//! such as TOTP seeds, and keyed hashes (HMAC-SHA256) for values we only compare, such as
//! e-mail codes, so a leaked table reveals neither.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// Bytes in the master key.
pub const KEY_BYTES: usize = 32;
const NONCE_BYTES: usize = 12;

#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("the secret key must be {KEY_BYTES} bytes, base64-encoded")]
    BadKey,
    #[error("cannot read or create the key file {path}: {cause}")]
    KeyFile { path: String, cause: String },
    #[error("a stored secret does not decrypt with this key")]
    Undecryptable,
}

pub struct Secrets {
    cipher: ChaCha20Poly1305,
    mac_key: [u8; 32],
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(..)")
    }
}

type HmacSha256 = Hmac<Sha256>;

/// A purpose-specific subkey, so the cipher and the MAC never share key material.
fn derive(master: &[u8], purpose: &str) -> [u8; 32] {
    let mut mac = <HmacSha256 as Mac>::new_from_slice(master).expect("HMAC takes any key length");
    mac.update(purpose.as_bytes());
    mac.finalize().into_bytes().into()
}

impl Secrets {
    pub fn from_key(master: &[u8]) -> Result<Self, SecretsError> {
        if master.len() != KEY_BYTES {
            return Err(SecretsError::BadKey);
        }
        let cipher_key = derive(master, "analytics/encrypt/v1");
        Ok(Self {
            cipher: ChaCha20Poly1305::new(Key::from_slice(&cipher_key)),
            mac_key: derive(master, "analytics/mac/v1"),
        })
    }

    /// From a base64 key (`ANALYTICS_SECRET_KEY`).
    pub fn from_base64(text: &str) -> Result<Self, SecretsError> {
        let bytes = BASE64
            .decode(text.trim())
            .map_err(|_| SecretsError::BadKey)?;
        Self::from_key(&bytes)
    }

    /// The key in `path`, generated (readable by the owner only) on first use.
    pub fn from_key_file(path: &Path) -> Result<Self, SecretsError> {
        let failure = |cause: std::io::Error| SecretsError::KeyFile {
            path: path.display().to_string(),
            cause: cause.to_string(),
        };
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_base64(&text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let mut key = [0u8; KEY_BYTES];
                rand::thread_rng().fill_bytes(&mut key);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(failure)?;
                }
                write_private(path, &BASE64.encode(key)).map_err(failure)?;
                // Another process may have won the race to create it: use whatever is there.
                let text = std::fs::read_to_string(path).map_err(failure)?;
                Self::from_base64(&text)
            }
            Err(error) => Err(failure(error)),
        }
    }

    /// A random key, for tests.
    pub fn random() -> Self {
        let mut key = [0u8; KEY_BYTES];
        rand::thread_rng().fill_bytes(&mut key);
        Self::from_key(&key).expect("a key of the right length")
    }

    /// `base64(nonce || ciphertext)`.
    pub fn encrypt(&self, plaintext: &[u8]) -> String {
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ciphertext = self
            .cipher
            .encrypt(&nonce, plaintext)
            .expect("ChaCha20-Poly1305 encrypts any length we store");
        let mut sealed = nonce.to_vec();
        sealed.extend(ciphertext);
        BASE64.encode(sealed)
    }

    pub fn decrypt(&self, sealed: &str) -> Result<Vec<u8>, SecretsError> {
        let bytes = BASE64
            .decode(sealed)
            .map_err(|_| SecretsError::Undecryptable)?;
        if bytes.len() < NONCE_BYTES {
            return Err(SecretsError::Undecryptable);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        self.cipher
            .decrypt(Nonce::from_slice(nonce), ciphertext)
            .map_err(|_| SecretsError::Undecryptable)
    }

    fn keyed(&self, purpose: &str, value: &str) -> HmacSha256 {
        let mut mac =
            <HmacSha256 as Mac>::new_from_slice(&self.mac_key).expect("HMAC takes any key length");
        mac.update(purpose.as_bytes());
        mac.update(&[0]);
        mac.update(value.as_bytes());
        mac
    }

    /// A keyed hash of `value` in the context `purpose`, hex-encoded.
    pub fn mac(&self, purpose: &str, value: &str) -> String {
        hex::encode(self.keyed(purpose, value).finalize().into_bytes())
    }

    /// Compares `value` with a stored `mac` in constant time.
    pub fn verify_mac(&self, purpose: &str, value: &str, expected_hex: &str) -> bool {
        match hex::decode(expected_hex) {
            Ok(expected) => self.keyed(purpose, value).verify_slice(&expected).is_ok(),
            Err(_) => false,
        }
    }
}

#[cfg(unix)]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => file.write_all(text.as_bytes()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(not(unix))]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key() {
        let secrets = Secrets::random();
        let sealed = secrets.encrypt(b"JBSWY3DPEHPK3PXP");
        assert!(!sealed.contains("JBSWY3DP"));
        assert_eq!(secrets.decrypt(&sealed).unwrap(), b"JBSWY3DPEHPK3PXP");
        assert_ne!(
            secrets.encrypt(b"same"),
            secrets.encrypt(b"same"),
            "fresh nonce each time"
        );
        assert!(Secrets::random().decrypt(&sealed).is_err());
        assert!(secrets.decrypt("not base64!").is_err());
        assert!(secrets.decrypt("AAAA").is_err());
    }

    #[test]
    fn macs_are_keyed_and_purpose_bound() {
        let secrets = Secrets::random();
        let mac = secrets.mac("email-code", "123456");
        assert!(secrets.verify_mac("email-code", "123456", &mac));
        assert!(!secrets.verify_mac("email-code", "123457", &mac));
        assert!(!secrets.verify_mac("backup-code", "123456", &mac));
        assert!(!Secrets::random().verify_mac("email-code", "123456", &mac));
        assert!(!secrets.verify_mac("email-code", "123456", "zz"));
    }

    #[test]
    fn the_key_file_is_created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let first = Secrets::from_key_file(&path).unwrap();
        let second = Secrets::from_key_file(&path).unwrap();
        assert_eq!(second.decrypt(&first.encrypt(b"x")).unwrap(), b"x");
        assert!(Secrets::from_base64("c2hvcnQ=").is_err());
    }
}
