//! Outgoing e-mail: Amazon SES in the cloud; embedded, an outbox folder of RFC 5322 `.eml` files.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use lettre::message::{Mailbox, header::ContentType};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("invalid address {0}")]
    Address(String),
    #[error("cannot send: {0}")]
    Send(String),
}

#[async_trait]
pub trait Mailer: Send + Sync + 'static {
    async fn send(&self, mail: Mail) -> Result<(), MailError>;
}

/// Formats a message as RFC 5322 bytes.
pub fn format(from: &str, mail: &Mail) -> Result<Vec<u8>, MailError> {
    let from: Mailbox = from
        .parse()
        .map_err(|_| MailError::Address(from.to_owned()))?;
    let to: Mailbox = mail
        .to
        .parse()
        .map_err(|_| MailError::Address(mail.to.clone()))?;
    let message = lettre::Message::builder()
        .from(from)
        .to(to)
        .subject(mail.subject.clone())
        .header(ContentType::TEXT_PLAIN)
        .body(mail.text.clone())
        .map_err(|e| MailError::Send(e.to_string()))?;
    Ok(message.formatted())
}

/// Writes each message to `<dir>/<uuidv7>.eml`; the file appears whole (written, then renamed).
pub struct OutboxMailer {
    dir: PathBuf,
    from: String,
}

impl OutboxMailer {
    pub fn new(dir: &Path, from: &str) -> Self {
        Self {
            dir: dir.to_owned(),
            from: from.to_owned(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[async_trait]
impl Mailer for OutboxMailer {
    async fn send(&self, mail: Mail) -> Result<(), MailError> {
        let bytes = format(&self.from, &mail)?;
        let id = uuid::Uuid::now_v7();
        let failure = |e: std::io::Error| MailError::Send(e.to_string());
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(failure)?;
        let partial = self.dir.join(format!(".{id}.eml.partial"));
        let path = self.dir.join(format!("{id}.eml"));
        tokio::fs::write(&partial, bytes).await.map_err(failure)?;
        tokio::fs::rename(&partial, &path).await.map_err(failure)?;
        // The body may hold a code: the log names the message, the file holds it.
        tracing::info!(to = %mail.to, subject = %mail.subject, file = %path.display(), "mail written to the outbox");
        Ok(())
    }
}

/// Amazon SES (v2 API) with a verified sender.
#[cfg(feature = "ses")]
pub struct SesMailer {
    client: aws_sdk_sesv2::Client,
    from: String,
}

#[cfg(feature = "ses")]
impl SesMailer {
    /// A client on the process's shared AWS configuration (`AppState::aws`).
    pub fn new(aws: &aws_config::SdkConfig, from: &str) -> Self {
        Self {
            client: aws_sdk_sesv2::Client::new(aws),
            from: from.to_owned(),
        }
    }
}

#[cfg(feature = "ses")]
#[async_trait]
impl Mailer for SesMailer {
    async fn send(&self, mail: Mail) -> Result<(), MailError> {
        use aws_sdk_sesv2::types::{EmailContent, RawMessage};
        let bytes = format(&self.from, &mail)?;
        let raw = RawMessage::builder()
            .data(aws_sdk_sesv2::primitives::Blob::new(bytes))
            .build()
            .map_err(|e| MailError::Send(e.to_string()))?;
        self.client
            .send_email()
            .content(EmailContent::builder().raw(raw).build())
            .send()
            .await
            .map_err(|e| {
                MailError::Send(aws_sdk_sesv2::error::DisplayErrorContext(e).to_string())
            })?;
        tracing::info!(to = %mail.to, subject = %mail.subject, "mail sent through SES");
        Ok(())
    }
}

/// For functions that send no mail: anything that tries is logged and refused.
pub struct NoMailer;

#[async_trait]
impl Mailer for NoMailer {
    async fn send(&self, mail: Mail) -> Result<(), MailError> {
        tracing::error!(to = %mail.to, subject = %mail.subject, "this function has no mailer");
        Err(MailError::Send(
            "no mailer is configured in this function".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_outbox_holds_rfc5322_messages() {
        let dir = tempfile::tempdir().unwrap();
        let mailer = OutboxMailer::new(dir.path(), "Analytics <no-reply@example.com>");
        mailer
            .send(Mail {
                to: "ada@example.com".into(),
                subject: "Your code".into(),
                text: "Code: 123456".into(),
            })
            .await
            .unwrap();
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].extension().unwrap(), "eml");
        let text = std::fs::read_to_string(&files[0]).unwrap();
        assert!(text.contains("To: ada@example.com\r\n"), "{text}");
        assert!(text.contains("Subject: Your code\r\n"), "{text}");
        assert!(text.contains("Date: "), "{text}");
        assert!(text.contains("Code: 123456"), "{text}");
        let error = mailer
            .send(Mail {
                to: "not an address".into(),
                subject: "x".into(),
                text: "x".into(),
            })
            .await;
        assert!(matches!(error, Err(MailError::Address(_))));
    }
}
