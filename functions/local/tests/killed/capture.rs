//! `analytics serve` killed (SIGKILL) while `/batch/` requests pour in, a torn record left at a
//! staging log segment's end as a power loss would, then served again on the same data dir: once
//! the committer has run, the table holds every acknowledged event exactly once, nothing that was
//! not sent, and the torn bytes are set aside, not committed.

use crate::support::serve;

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CLIENTS: usize = 8;
const REQUESTS_PER_CLIENT: usize = 100;
const EVENTS_PER_REQUEST: usize = 50;
/// Acknowledged requests before the kill: well inside the load.
const KILL_AFTER: usize = 400;

/// One HTTP/1.1 request; its status, or `None` when the connection failed before one came.
fn request(address: &str, path: &str, key: Option<&str>, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(address).ok()?;
    let auth = key
        .map(|key| format!("Authorization: Bearer {key}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

fn query(address: &str, key: &str, project: &str, sql: &str) -> Value {
    let body = json!({"query": {"kind": "HogQLQuery", "query": sql}}).to_string();
    let path = format!("/api/projects/{project}/query/");
    let (status, answer) = request(address, &path, Some(key), &body).expect("a query answer");
    assert_eq!(status, 200, "{answer}");
    serde_json::from_str(&answer).expect("JSON")
}

/// What one client sent and which of it was acknowledged.
#[derive(Default)]
struct Sent {
    sent: Vec<String>,
    acknowledged: Vec<String>,
}

/// Sends `/batch/` requests of fresh uuids until the server stops answering.
fn client(address: String, token: String, client: usize, acks: Arc<AtomicUsize>) -> Sent {
    let mut outcome = Sent::default();
    for n in 0..REQUESTS_PER_CLIENT {
        let uuids: Vec<String> = (0..EVENTS_PER_REQUEST)
            .map(|_| uuid::Uuid::new_v4().to_string())
            .collect();
        let batch: Vec<Value> = uuids
            .iter()
            .map(|uuid| {
                json!({"event": "$pageview", "distinct_id": format!("user-{client}-{}", n % 7),
                       "uuid": uuid, "properties": {"$current_url": "https://example.com", "n": n}})
            })
            .collect();
        let body = json!({"api_key": token, "batch": batch}).to_string();
        outcome.sent.extend(uuids.iter().cloned());
        match request(&address, "/batch/", None, &body) {
            Some((200, _)) => {
                outcome.acknowledged.extend(uuids);
                acks.fetch_add(1, Ordering::SeqCst);
            }
            Some((status, answer)) => panic!("/batch/ answered {status}: {answer}"),
            // Killed: this request may or may not have been staged, and nothing more is sent.
            None => break,
        }
    }
    outcome
}

/// A staging log segment of the project's to tear: the newest, or a new one.
fn segment_to_tear(data_dir: &Path, project: &str) -> std::path::PathBuf {
    let folder = data_dir.join(format!("staging-log/team_id={project}"));
    std::fs::create_dir_all(&folder).unwrap();
    let mut segments: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .collect();
    segments.sort();
    segments
        .pop()
        .unwrap_or_else(|| folder.join("ffffffff-ffff-7fff-bfff-ffffffffffff.log"))
}

#[test]
fn acknowledged_events_survive_a_kill_exactly_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut first, printed) = serve(dir.path());
    let key = printed
        .iter()
        .find_map(|line| line.split("store it now): ").nth(1))
        .expect("the bootstrap key")
        .trim()
        .to_owned();
    let project_line = printed
        .iter()
        .find(|line| line.contains("(id "))
        .expect("the bootstrap project");
    let project = project_line
        .split("(id ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("the project id")
        .to_owned();
    let token = project_line
        .split("token ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the project token")
        .to_owned();

    let acks = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|n| {
            let (address, token, acks) = (first.address.clone(), token.clone(), acks.clone());
            std::thread::spawn(move || client(address, token, n, acks))
        })
        .collect();
    let waiting = Instant::now();
    while acks.load(Ordering::SeqCst) < KILL_AFTER {
        assert!(
            waiting.elapsed() < Duration::from_secs(120),
            "too few acknowledgements"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    first.kill();
    let mut sent = HashSet::new();
    let mut acknowledged = Vec::new();
    for client in clients {
        let outcome = client.join().expect("a client");
        sent.extend(outcome.sent);
        acknowledged.extend(outcome.acknowledged);
    }
    assert!(
        acknowledged.len() < CLIENTS * REQUESTS_PER_CLIENT * EVENTS_PER_REQUEST,
        "the kill came after the load"
    );

    // What a power loss mid-write leaves: the start of a record that was never synced.
    let torn = segment_to_tear(dir.path(), &project);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&torn)
        .unwrap();
    file.write_all(&[200, 0, 0, 0, 1, 2, 3, 4, b'{', b'"'])
        .unwrap();
    drop(file);

    let (second, _) = serve(dir.path());
    let acknowledged_set: HashSet<&String> = acknowledged.iter().collect();
    let waiting = Instant::now();
    let uuids = loop {
        let answer = query(
            &second.address,
            &key,
            &project,
            "select toString(uuid) from events limit 50000",
        );
        let uuids: Vec<String> = answer["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|row| row[0].as_str().expect("a uuid").to_owned())
            .collect();
        let present: HashSet<&String> = uuids.iter().collect();
        if acknowledged_set.iter().all(|uuid| present.contains(uuid)) {
            break uuids;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(120),
            "{} of {} acknowledged events committed",
            acknowledged_set.intersection(&present).count(),
            acknowledged_set.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!(
        "{} events sent, {} acknowledged before the kill, {} in the table",
        sent.len(),
        acknowledged.len(),
        uuids.len()
    );
    let distinct: HashSet<&String> = uuids.iter().collect();
    assert_eq!(distinct.len(), uuids.len(), "an event committed twice");
    assert!(
        uuids.iter().all(|uuid| sent.contains(uuid)),
        "an event that was never sent"
    );
    let totals = query(
        &second.address,
        &key,
        &project,
        "select count(), count(distinct uuid) from events",
    );
    assert_eq!(
        totals["results"][0],
        json!([uuids.len(), uuids.len()]),
        "{totals}"
    );

    // The torn tail was set aside, and no segment is left over once the committer has run.
    let rejected = dir
        .path()
        .join(format!("objects/staging-rejected/team_id={project}"));
    let waiting = Instant::now();
    loop {
        let aside = std::fs::read_dir(&rejected).map_or(0, |listed| listed.count());
        let folder = dir.path().join(format!("staging-log/team_id={project}"));
        let left = std::fs::read_dir(&folder).map_or(0, |listed| listed.count());
        if aside >= 1 && left == 0 {
            break;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "{aside} set aside, {left} segments left"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
