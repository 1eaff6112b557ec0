//! Configuration from environment variables, read once at start and passed down in `AppState`.

use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite file + local folder under the data dir.
    Sqlite,
    /// DynamoDB table + S3 bucket.
    Dynamodb,
}

/// Where outgoing mail goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailerKind {
    /// `.eml` files under `<data dir>/outbox/`.
    Outbox,
    /// Amazon SES.
    Ses,
    /// Nowhere: sending fails (functions that never mail).
    None,
}

#[derive(Clone)]
pub struct Config {
    pub backend: Backend,
    /// Holds `store.sqlite` and `objects/` on the embedded backend.
    pub data_dir: PathBuf,
    pub table_name: String,
    pub bucket_name: String,
    /// `AWS_ENDPOINT_URL`: set for emulators (moto, LocalStack); unset in AWS.
    pub aws_endpoint_url: Option<String>,
    pub aws_region: String,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Base64 master key for secrets at rest; embedded, generated into the data dir when unset.
    pub secret_key: Option<String>,
    pub mailer: MailerKind,
    /// The sender of every message (an SES-verified identity in the cloud).
    pub mail_from: String,
    pub query: QuerySettings,
    /// Origins allowed to call `/api/` from a browser (`ANALYTICS_CORS_ORIGINS`, comma-separated,
    /// e.g. `https://app.example.com`); empty means none. Capture answers every origin regardless.
    pub cors_origins: Vec<String>,
}

/// Bounds and services of the query engine.
#[derive(Debug, Clone)]
pub struct QuerySettings {
    /// Memory one query may use (`ANALYTICS_QUERY_MEMORY_MB`, default 1024).
    pub memory_bytes: usize,
    /// Wall-clock limit of one query (`ANALYTICS_QUERY_TIMEOUT_SECONDS`, default 60).
    pub timeout: std::time::Duration,
    /// Queries one project may run at once in one process (`ANALYTICS_QUERY_CONCURRENCY`, default 4).
    pub concurrency: usize,
    /// SQS queue for async queries (`ANALYTICS_QUEUE_URL`); unset runs them in-process.
    pub job_queue_url: Option<String>,
    /// OpenAI-compatible chat completions endpoint for `draft_sql` (`ANALYTICS_LLM_URL`,
    /// e.g. `https://api.openai.com/v1`), with `ANALYTICS_LLM_API_KEY` and `ANALYTICS_LLM_MODEL`.
    pub llm_url: Option<String>,
    pub llm_api_key: Option<String>,
    pub llm_model: String,
    /// Whether hot properties are shredded into columns at write time and read from them
    /// (`ANALYTICS_SHREDDING`, `on` by default; `off` writes and reads only the JSON).
    pub shredding: bool,
    /// Whether Parquet scans evaluate filters while decoding, reading the other columns only
    /// for the rows kept (`ANALYTICS_PARQUET_PUSHDOWN`, `off` by default).
    pub parquet_pushdown: bool,
    /// The Ballista scheduler large queries run on (`ANALYTICS_QUERY_CLUSTER`, `df://host:port`);
    /// unset runs every query in this process.
    pub cluster: Option<ClusterAddress>,
    /// Queries whose files, after pruning, count more bytes than this run on the cluster
    /// (`ANALYTICS_CLUSTER_MIN_BYTES`, default 4 GiB); a query can also ask for it.
    pub cluster_min_bytes: u64,
}

/// A Ballista scheduler's address (`df://host:port`, as Ballista's clients write it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterAddress {
    pub host: String,
    pub port: u16,
}

impl std::str::FromStr for ClusterAddress {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let invalid = || ConfigError(format!("a cluster is `df://host:port`, not `{text}`"));
        let rest = text.strip_prefix("df://").ok_or_else(invalid)?;
        let (host, port) = rest.rsplit_once(':').ok_or_else(invalid)?;
        let port = port.trim_end_matches('/').parse().map_err(|_| invalid())?;
        if host.is_empty() {
            return Err(invalid());
        }
        Ok(Self {
            host: host.to_owned(),
            port,
        })
    }
}

impl std::fmt::Display for ClusterAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "df://{}:{}", self.host, self.port)
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("backend", &self.backend)
            .field("data_dir", &self.data_dir)
            .field("table_name", &self.table_name)
            .field("bucket_name", &self.bucket_name)
            .field("aws_endpoint_url", &self.aws_endpoint_url)
            .field("aws_region", &self.aws_region)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("secret_key", &self.secret_key.as_ref().map(|_| "<set>"))
            .field("mailer", &self.mailer)
            .field("mail_from", &self.mail_from)
            .field("query", &self.query.memory_bytes)
            .field("cors_origins", &self.cors_origins)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(String);

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup`, so tests need not touch the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let backend = match get("ANALYTICS_BACKEND")
            .as_deref()
            .map(str::to_ascii_lowercase)
        {
            None => Backend::Sqlite,
            Some(value) if value == "sqlite" => Backend::Sqlite,
            Some(value) if value == "dynamodb" => Backend::Dynamodb,
            Some(other) => {
                return Err(ConfigError(format!(
                    "ANALYTICS_BACKEND must be `sqlite` or `dynamodb`, not `{other}`"
                )));
            }
        };
        let max_body_bytes = match get("ANALYTICS_MAX_BODY_BYTES") {
            None => 20 * 1024 * 1024,
            Some(value) => value.parse().map_err(|_| {
                ConfigError(format!(
                    "ANALYTICS_MAX_BODY_BYTES must be a byte count, not `{value}`"
                ))
            })?,
        };
        let mailer = match get("ANALYTICS_MAILER")
            .as_deref()
            .map(str::to_ascii_lowercase)
        {
            None if backend == Backend::Sqlite => MailerKind::Outbox,
            None => MailerKind::Ses,
            Some(value) if value == "outbox" => MailerKind::Outbox,
            Some(value) if value == "ses" => MailerKind::Ses,
            Some(value) if value == "none" => MailerKind::None,
            Some(other) => {
                return Err(ConfigError(format!(
                    "ANALYTICS_MAILER must be `outbox`, `ses` or `none`, not `{other}`"
                )));
            }
        };
        let number = |name: &str, default: u64| -> Result<u64, ConfigError> {
            match get(name) {
                None => Ok(default),
                Some(value) => value.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    ConfigError(format!("{name} must be a positive number, not `{value}`"))
                }),
            }
        };
        let switch = |name: &str, default: bool| -> Result<bool, ConfigError> {
            match get(name).map(|value| value.to_ascii_lowercase()).as_deref() {
                None => Ok(default),
                Some("on") => Ok(true),
                Some("off") => Ok(false),
                Some(other) => Err(ConfigError(format!(
                    "{name} must be `on` or `off`, not `{other}`"
                ))),
            }
        };
        let query = QuerySettings {
            memory_bytes: number("ANALYTICS_QUERY_MEMORY_MB", 1024)? as usize * 1024 * 1024,
            timeout: std::time::Duration::from_secs(number("ANALYTICS_QUERY_TIMEOUT_SECONDS", 60)?),
            concurrency: number("ANALYTICS_QUERY_CONCURRENCY", 4)? as usize,
            job_queue_url: get("ANALYTICS_QUEUE_URL"),
            llm_url: get("ANALYTICS_LLM_URL"),
            llm_api_key: get("ANALYTICS_LLM_API_KEY"),
            llm_model: get("ANALYTICS_LLM_MODEL").unwrap_or_else(|| "gpt-4o-mini".into()),
            shredding: switch("ANALYTICS_SHREDDING", true)?,
            parquet_pushdown: switch("ANALYTICS_PARQUET_PUSHDOWN", false)?,
            cluster: get("ANALYTICS_QUERY_CLUSTER")
                .map(|text| text.parse())
                .transpose()?,
            cluster_min_bytes: number("ANALYTICS_CLUSTER_MIN_BYTES", 4 << 30)?,
        };
        let cors_origins = match get("ANALYTICS_CORS_ORIGINS") {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(origin)
                .collect::<Result<_, _>>()?,
        };
        Ok(Self {
            query,
            cors_origins,
            backend,
            secret_key: get("ANALYTICS_SECRET_KEY"),
            mailer,
            mail_from: get("ANALYTICS_MAIL_FROM")
                .unwrap_or_else(|| "Analytics <no-reply@localhost>".into()),
            data_dir: PathBuf::from(
                get("ANALYTICS_DATA_DIR").unwrap_or_else(|| ".analytics".into()),
            ),
            table_name: get("ANALYTICS_TABLE").unwrap_or_else(|| "analytics".into()),
            bucket_name: get("ANALYTICS_BUCKET").unwrap_or_else(|| "analytics".into()),
            aws_endpoint_url: get("AWS_ENDPOINT_URL"),
            aws_region: get("AWS_REGION")
                .or_else(|| get("AWS_DEFAULT_REGION"))
                .unwrap_or_else(|| "us-east-1".into()),
            max_body_bytes,
        })
    }

    pub fn sqlite_path(&self) -> PathBuf {
        self.data_dir.join("store.sqlite")
    }

    pub fn objects_dir(&self) -> PathBuf {
        self.data_dir.join("objects")
    }

    pub fn outbox_dir(&self) -> PathBuf {
        self.data_dir.join("outbox")
    }

    pub fn secret_key_path(&self) -> PathBuf {
        self.data_dir.join("secret.key")
    }
}

/// One entry of `ANALYTICS_CORS_ORIGINS` as browsers send it in `Origin`: `scheme://host[:port]`,
/// lower case, no path. A trailing slash is forgiven; a path, `*` or `null` is refused, since
/// the entry would otherwise never match and the operator would not know why.
fn origin(entry: &str) -> Result<String, ConfigError> {
    let refuse = || {
        ConfigError(format!(
            "ANALYTICS_CORS_ORIGINS lists exact origins such as `https://app.example.com`, not `{entry}`"
        ))
    };
    let lowered = entry.to_ascii_lowercase();
    let (scheme, rest) = lowered.split_once("://").ok_or_else(refuse)?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match authority.rsplit_once(':') {
        // An IPv6 host (`[::1]`) has colons of its own; a port follows the bracket.
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (authority, None),
    };
    let host_fits = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-.[]:".contains(c));
    let port_fits = port.is_none_or(|port| port.parse::<u16>().is_ok());
    if !matches!(scheme, "http" | "https") || !host_fits || !port_fits {
        return Err(refuse());
    }
    Ok(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_to_the_embedded_backend() {
        let config = config(&[]).unwrap();
        assert_eq!(config.backend, Backend::Sqlite);
        assert_eq!(
            config.sqlite_path(),
            PathBuf::from(".analytics/store.sqlite")
        );
        assert!(config.aws_endpoint_url.is_none());
        assert_eq!(config.mailer, MailerKind::Outbox);
    }

    #[test]
    fn reads_the_query_cluster() {
        let unset = config(&[]).unwrap();
        assert_eq!(unset.query.cluster, None);
        assert_eq!(unset.query.cluster_min_bytes, 4 << 30);
        let set = config(&[
            ("ANALYTICS_QUERY_CLUSTER", "df://scheduler.local:50050"),
            ("ANALYTICS_CLUSTER_MIN_BYTES", "1000"),
        ])
        .unwrap();
        let address = set.query.cluster.unwrap();
        assert_eq!(
            (address.host.as_str(), address.port),
            ("scheduler.local", 50050)
        );
        assert_eq!(address.to_string(), "df://scheduler.local:50050");
        assert_eq!(set.query.cluster_min_bytes, 1000);
        for bad in [
            "scheduler:50050",
            "df://:50050",
            "df://host",
            "df://host:port",
        ] {
            let error = config(&[("ANALYTICS_QUERY_CLUSTER", bad)]).unwrap_err();
            assert!(
                error.to_string().contains("df://host:port"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn reads_the_cloud_settings() {
        let config = config(&[
            ("ANALYTICS_BACKEND", "DynamoDB"),
            ("ANALYTICS_TABLE", "t"),
            ("ANALYTICS_BUCKET", "b"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
        ])
        .unwrap();
        assert_eq!(config.backend, Backend::Dynamodb);
        assert_eq!(config.mailer, MailerKind::Ses);
        assert_eq!(config.table_name, "t");
        assert_eq!(config.bucket_name, "b");
        assert_eq!(
            config.aws_endpoint_url.as_deref(),
            Some("http://127.0.0.1:5000")
        );
    }

    #[test]
    fn reads_the_cors_origins() {
        assert!(config(&[]).unwrap().cors_origins.is_empty());
        let config = config(&[(
            "ANALYTICS_CORS_ORIGINS",
            " https://App.example.com/, http://127.0.0.1:8080 ,,http://[::1]:3000",
        )])
        .unwrap();
        assert_eq!(
            config.cors_origins,
            [
                "https://app.example.com",
                "http://127.0.0.1:8080",
                "http://[::1]:3000"
            ]
        );
    }

    #[test]
    fn refuses_what_is_not_an_origin() {
        for value in [
            "*",
            "null",
            "app.example.com",
            "https://app.example.com/path",
            "ftp://app.example.com",
            "https://app.example.com:99999",
            "https://user@app.example.com",
        ] {
            assert!(
                config(&[("ANALYTICS_CORS_ORIGINS", value)]).is_err(),
                "{value}"
            );
        }
    }

    #[test]
    fn refuses_an_unknown_backend() {
        assert!(config(&[("ANALYTICS_BACKEND", "postgres")]).is_err());
        assert!(config(&[("ANALYTICS_MAX_BODY_BYTES", "lots")]).is_err());
        assert!(config(&[("ANALYTICS_MAILER", "pigeon")]).is_err());
    }
}
