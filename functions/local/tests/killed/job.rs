//! The `analytics` binary killed (SIGKILL) while a job runs: the next `analytics serve` on the
//! same data dir fails the run it left `running`, and runs the next one.

use crate::support::serve;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

/// A query that runs for minutes: 10^10 rows out of a cross join.
const SLOW: &str =
    "select sum((a.number * b.number) % 7) as s from numbers(100000) a, numbers(100000) b";

/// One HTTP/1.1 request; the status and the JSON body.
fn request(
    address: &str,
    method: &str,
    path: &str,
    key: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut stream = TcpStream::connect(address).expect("connect");
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status code");
    let body = serde_json::from_str(body).unwrap_or(Value::Null);
    (status, body)
}

/// The project's runs of the `query` job once `done` holds for them.
fn runs_when(
    address: &str,
    key: &str,
    project: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let path = format!("/api/projects/{project}/jobs/?job=query");
    let mut last = Value::Null;
    for _ in 0..600 {
        let (status, listed) = request(address, "GET", &path, key, None);
        assert_eq!(status, 200, "{listed}");
        let runs = listed["results"].as_array().cloned().unwrap_or_default();
        if done(&runs) {
            return runs;
        }
        last = listed;
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the runs did not get there: {last}");
}

/// Starts an async query; answers its id.
fn async_query(address: &str, key: &str, project: &str, sql: &str) -> String {
    let body = json!({"query": {"kind": "HogQLQuery", "query": sql}, "async": true});
    let path = format!("/api/projects/{project}/query/");
    let (status, answer) = request(address, "POST", &path, key, Some(&body));
    assert!(status == 200 || status == 202, "{status} {answer}");
    answer["query_status"]["id"]
        .as_str()
        .expect("the query's id")
        .to_owned()
}

#[test]
fn a_run_of_a_killed_process_is_failed_by_the_next_serve() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut first, printed) = serve(dir.path());
    let key = printed
        .iter()
        .find_map(|line| line.split("store it now): ").nth(1))
        .expect("the bootstrap key")
        .trim()
        .to_owned();
    let project = printed
        .iter()
        .find_map(|line| line.split("(id ").nth(1))
        .and_then(|rest| rest.split(',').next())
        .expect("the bootstrap project")
        .to_owned();

    // A slow async query runs as a job; the process is killed while it runs.
    let slow = async_query(&first.address, &key, &project, SLOW);
    let runs = runs_when(&first.address, &key, &project, |runs| {
        runs.first().is_some_and(|run| run["status"] == "running")
    });
    let killed = runs[0]["id"].clone();
    first.kill();

    // The next serve on the same data dir: the run is failed, and the next query's run succeeds.
    let (second, _) = serve(dir.path());
    async_query(&second.address, &key, &project, "select 1 as n");
    let runs = runs_when(&second.address, &key, &project, |runs| {
        runs.len() == 2
            && runs
                .iter()
                .all(|run| run["status"] != "running" && run["status"] != "queued")
    });
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    assert_eq!(runs[1]["id"], killed, "{runs:?}");
    assert_eq!(runs[1]["status"], "failed", "{runs:?}");
    assert!(
        runs[1]["error"]
            .as_str()
            .is_some_and(|error| error.starts_with(common::jobs::ABANDONED)),
        "{runs:?}"
    );
    // The killed query's own status ended too: a poll gets its failure, not "running" forever.
    let path = format!("/api/projects/{project}/query/{slow}/");
    let (status, answer) = request(&second.address, "GET", &path, &key, None);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["query_status"]["complete"], true, "{answer}");
    assert!(
        answer["query_status"]["error_message"]
            .as_str()
            .is_some_and(|message| message.contains("process running it ended")),
        "{answer}"
    );
}
