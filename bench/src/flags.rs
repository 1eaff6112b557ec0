//! `analytics-bench flags`: `/flags/` evaluation requests/s and latency on `analytics serve` with a
//! project of 50 flags, driven the way posthog-python calls it (`POST /flags/?v=4`), one random
//! distinct id and person properties per request.
//!
//! The flags are created through the CRUD API with a personal API key, so the figure includes
//! whatever the SDK path does with flags written that way (definitions cache, evaluation).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use common::AppState;
use common::config::{Backend, Config};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use serde::Deserialize;
use serde_json::{Value, json};

use super::load::{Request, Rng, connect, load};

/// The aim of issue 14 (release build, 2 cores, 50 flags).
const AIM: &str = "20,000 req/s and p99 under 5 ms";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A running `analytics serve` (`http://host:port`); without it one is started in-process on a
    /// temporary data dir (always the embedded backend).
    #[arg(long, requires = "key")]
    url: Option<String>,
    /// Personal API key for `--url` (`feature_flag:write` and `project:read`).
    #[arg(long)]
    key: Option<String>,
    /// Project for `--url`: an id or `@current` (the key's user's current project).
    #[arg(long, default_value = "@current")]
    project: String,
    /// Flags to create before the load.
    #[arg(long, default_value_t = 50)]
    flags: usize,
    /// Keep-alive connections sending requests back to back.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// How long the load lasts.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Distinct ids are drawn at random from this many (`user-<n>`).
    #[arg(long, default_value_t = 1_000_000)]
    persons: u64,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.connections == 0 || args.seconds == 0 || args.persons == 0 {
        bail!("--connections, --seconds and --persons must be at least 1");
    }
    let _temporary;
    let target = match (&args.url, &args.key) {
        (Some(url), Some(key)) => Target::resolve(url, key).await?,
        _ => {
            let dir = tempfile::tempdir()?;
            let target = start_embedded(dir.path().to_path_buf()).await?;
            println!(
                "flags: analytics serve in-process on {}",
                dir.path().display()
            );
            _temporary = dir;
            target
        }
    };
    let project = match (&args.url, target.project) {
        (None, Some(id)) => id.to_string(),
        _ => args.project.clone(),
    };
    let mut client = target.connect().await?;
    let project: Project = client
        .json(
            hyper::Method::GET,
            &format!("/api/projects/{project}/"),
            Some(&target.key),
            None,
        )
        .await
        .context("reading the project")?;

    // Keys unique to this run, so a rerun against the same server creates its own set.
    let run = format!("{:08x}", rand_seed() as u32);
    let started = Instant::now();
    let mut created = Vec::with_capacity(args.flags);
    for index in 0..args.flags {
        let flag: CreatedFlag = client
            .json(
                hyper::Method::POST,
                &format!("/api/projects/{}/feature_flags/", project.id),
                Some(&target.key),
                Some(flag_body(&run, index)),
            )
            .await
            .with_context(|| format!("creating flag {index}"))?;
        created.push(flag);
    }
    println!(
        "flags: created {} flags in project {} in {:.2} s ({run}: boolean rollouts, multivariate, \
         person-property conditions, a holdout, icontains and regex)",
        created.len(),
        project.id,
        started.elapsed().as_secs_f64()
    );

    // One checked request first: the answer must carry every flag, with no evaluation errors.
    let mut rng = Rng(rand_seed());
    let probe: Value = client
        .json(
            hyper::Method::POST,
            "/flags/?v=4",
            None,
            Some(sdk_body(&project.api_token, &mut rng, args.persons)),
        )
        .await
        .context("the first /flags/ request")?;
    let evaluated = probe["flags"].as_object().map_or(0, |flags| {
        created
            .iter()
            .filter(|flag| flags.contains_key(&flag.key))
            .count()
    });
    if evaluated != created.len() || probe["errorsWhileComputingFlags"] != false {
        bail!(
            "the first /flags/ answer evaluates {evaluated} of the {} flags: {probe}",
            created.len()
        );
    }

    println!(
        "flags: POST /flags/?v=4 from {} connections for {} s, distinct ids from {} persons",
        args.connections, args.seconds, args.persons
    );
    let report = load(
        target.address,
        args.connections,
        Duration::from_secs(args.seconds),
        || {
            let (host, token, persons) =
                (target.host.clone(), project.api_token.clone(), args.persons);
            let mut rng = Rng(rand_seed());
            move || sdk_request(&host, &token, &mut rng, persons)
        },
    )
    .await?;
    println!("flags: {report}");
    println!("flags: aim {AIM} (release build, 2 cores, 50 flags)");

    // A shared server keeps its flags otherwise; the temporary one is dropped with its dir.
    if args.url.is_some() {
        for flag in &created {
            let _: Value = client
                .json(
                    hyper::Method::PATCH,
                    &format!("/api/projects/{}/feature_flags/{}/", project.id, flag.id),
                    Some(&target.key),
                    Some(json!({"deleted": true})),
                )
                .await
                .with_context(|| format!("deleting flag {}", flag.key))?;
        }
        println!("flags: the {} bench flags are deleted", created.len());
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
struct Project {
    id: i64,
    api_token: String,
}

#[derive(Debug, Deserialize)]
struct CreatedFlag {
    id: i64,
    key: String,
}

/// Where the load goes.
struct Target {
    address: SocketAddr,
    /// The `host` header (`host:port` as given).
    host: String,
    key: String,
    /// The bootstrap project of an in-process server.
    project: Option<i64>,
}

impl Target {
    async fn resolve(url: &str, key: &str) -> anyhow::Result<Self> {
        let uri: hyper::Uri = url.parse().with_context(|| format!("--url {url}"))?;
        if uri.scheme_str().is_some_and(|scheme| scheme != "http") {
            bail!("--url {url}: only plain http (a local `analytics serve`)");
        }
        let host = uri.host().context("--url names no host")?;
        let port = uri.port_u16().unwrap_or(80);
        let address = tokio::net::lookup_host((host, port))
            .await?
            .next()
            .with_context(|| format!("{host} resolves to no address"))?;
        Ok(Self {
            address,
            host: format!("{host}:{port}"),
            key: key.to_owned(),
            project: None,
        })
    }

    async fn connect(&self) -> anyhow::Result<Client> {
        Ok(Client {
            sender: connect(self.address).await?,
            host: self.host.clone(),
        })
    }
}

/// `analytics serve` on an ephemeral port over a fresh embedded data dir.
async fn start_embedded(data_dir: PathBuf) -> anyhow::Result<Target> {
    let mut config = Config::from_env()?;
    config.backend = Backend::Sqlite;
    config.data_dir = data_dir;
    let state = AppState::from_config(config)
        .await
        .context("cannot open the embedded store")?;
    let (address, bootstrap) = super::serve_fresh(state).await?;
    Ok(Target {
        address,
        host: address.to_string(),
        key: bootstrap.key_secret,
        project: Some(bootstrap.project.id),
    })
}

/// One keep-alive connection for the setup requests.
struct Client {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

impl Client {
    /// Sends a JSON request; a non-2xx answer is an error quoting the body.
    async fn json<T: serde::de::DeserializeOwned>(
        &mut self,
        method: hyper::Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> anyhow::Result<T> {
        self.sender.ready().await?;
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.host)
            .header("content-type", "application/json");
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        let body = body.map_or_else(Bytes::new, |body| Bytes::from(body.to_string()));
        let response = self
            .sender
            .send_request(request.body(Full::new(body))?)
            .await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!("{path}: {status} {}", String::from_utf8_lossy(&bytes));
        }
        serde_json::from_slice(&bytes)
            .with_context(|| format!("{path}: {}", String::from_utf8_lossy(&bytes)))
    }
}

/// Flag `index` of the mix: each tenth of the flags has the same shape with its own numbers.
fn flag_body(run: &str, index: usize) -> Value {
    let key = format!("bench-{run}-{index:02}");
    let rollout = 10 + (index * 17) % 91;
    let variants = json!({"variants": [
        {"key": "control", "rollout_percentage": 34},
        {"key": "test", "rollout_percentage": 33},
        {"key": "test-2", "rollout_percentage": 33},
    ]});
    let everyone = |rollout: usize| json!([{"properties": [], "rollout_percentage": rollout}]);
    let person = |key: &str, operator: &str, value: Value| json!({"key": key, "type": "person", "operator": operator, "value": value});
    let filters = match index % 10 {
        // Boolean with a rollout.
        0..=2 => json!({"groups": everyone(rollout)}),
        // Multivariate, with payloads; the first one with a holdout.
        3 | 4 => {
            let mut filters = json!({
                "groups": everyone(100),
                "multivariate": variants,
                "payloads": {"test": "{\"color\": \"blue\"}"},
            });
            if index == 3 {
                filters["holdout"] = json!({"id": 1, "exclusion_percentage": 10});
            }
            filters
        }
        // Person properties given in the request.
        5 => json!({"groups": [{
            "properties": [person("plan", "exact", json!(["pro", "enterprise"]))],
            "rollout_percentage": rollout,
        }]}),
        6 => json!({"groups": [
            {"properties": [person("country", "is_not", json!(["FR"])),
                            person("age", "gt", json!("30"))], "rollout_percentage": 100},
            {"properties": [], "rollout_percentage": 5},
        ]}),
        7 => json!({"groups": [{
            "properties": [person("email", "icontains", json!("@example.com"))],
            "rollout_percentage": rollout,
        }]}),
        8 => json!({"groups": [{
            "properties": [person("email", "regex", json!(r"^user-\d*7@corp\.io$"))],
            "rollout_percentage": 100,
        }]}),
        // Multivariate behind a condition, with a variant override for enterprise.
        _ => json!({
            "groups": [
                {"properties": [person("plan", "exact", json!(["enterprise"]))],
                 "rollout_percentage": 100, "variant": "test"},
                {"properties": [person("app_version", "regex", json!(r"^2\."))],
                 "rollout_percentage": rollout},
            ],
            "multivariate": variants,
        }),
    };
    json!({"key": key, "name": format!("bench flag {index}"), "active": true, "filters": filters})
}

/// posthog-python's `POST /flags/?v=4` for a random person.
fn sdk_request(host: &str, token: &str, rng: &mut Rng, persons: u64) -> anyhow::Result<Request> {
    let body = Bytes::from(sdk_body(token, rng, persons).to_string());
    Ok(hyper::Request::builder()
        .method(hyper::Method::POST)
        .uri("/flags/?v=4")
        .header("host", host)
        .header("content-type", "application/json")
        .header("user-agent", "posthog-python/7.91.1")
        .body(Full::new(body))?)
}

/// A posthog-python 7.x `/flags/?v=4` body for a random person.
fn sdk_body(token: &str, rng: &mut Rng, persons: u64) -> Value {
    let person = rng.below(persons);
    let distinct_id = format!("user-{person}");
    let domain = rng.pick(&["example.com", "corp.io", "mail.test"]);
    let plan = rng.pick(&["free", "pro", "enterprise"]);
    let country = rng.pick(&["FR", "DE", "US", "BR", "JP"]);
    let app_version = rng.pick(&["1.9.3", "2.0.0", "2.4.1"]);
    let age = 18 + rng.below(60);
    json!({
        "distinct_id": distinct_id,
        "groups": {},
        "person_properties": {
            "distinct_id": distinct_id,
            "email": format!("user-{person}@{domain}"),
            "plan": plan,
            "country": country,
            "age": age,
            "app_version": app_version,
        },
        "group_properties": {},
        "geoip_disable": true,
        "device_id": null,
        "sent_at": "2026-11-22T10:00:00.000000+00:00",
        "api_key": token,
    })
}

/// A different seed per call (per worker): a fresh v4 uuid's random bits.
fn rand_seed() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_has_every_shape_the_issue_names() {
        let bodies: Vec<Value> = (0..50).map(|index| flag_body("run", index)).collect();
        let text: Vec<String> = bodies.iter().map(Value::to_string).collect();
        let count = |needle: &str| text.iter().filter(|t| t.contains(needle)).count();
        assert_eq!(count("\"holdout\""), 1);
        assert_eq!(count("\"multivariate\""), 15);
        assert!(count("\"icontains\"") >= 5);
        assert!(count("\"regex\"") >= 5);
        assert!(count("\"type\":\"person\"") >= 25);
        let mut keys: Vec<&str> = bodies.iter().filter_map(|b| b["key"].as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 50);
    }

    #[test]
    fn sdk_bodies_look_like_posthog_python() {
        let mut rng = Rng(7);
        let body = sdk_body("phc_x", &mut rng, 10);
        let id = body["distinct_id"].as_str().unwrap();
        assert!(id.starts_with("user-") && id[5..].parse::<u64>().unwrap() < 10);
        assert_eq!(body["person_properties"]["distinct_id"], id);
        assert_eq!(body["api_key"], "phc_x");
        assert_eq!(body["groups"], json!({}));
    }
}
