"""Failures of the query cluster (a Ballista scheduler and two executors, each its own process),
on both storage backends: what a user sees must be the right answer or a clear error, never a
wrong answer.

- an executor killed while a query runs on the cluster: the answer equals the local one, or the
  query fails with an error that says so;
- `DELETE /query/:id/` of an async query running on the cluster cancels the cluster's job;
- the scheduler gone: a query that may run here (no `modifiers.engine`) does, with the right
  answer; one that asks for the cluster gets a 503 `cluster_unavailable`.

Run by scripts/test: `python tests/sdk/test_cluster.py <analytics binary> [emulator endpoint]`.
"""
import json
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["ANALYTICS_TEST_CLUSTER"] = "on"
# A lost executor is noticed within the scheduler's 30 s; the query may outlive that.
os.environ["ANALYTICS_QUERY_TIMEOUT_SECONDS"] = "150"
from test_posthog_sdk import Server, run_on_backends  # noqa: E402

EVENTS = 12_000
PEOPLE = 3
# Every pair of one person's events: about 24M rows joined, seconds of work on the cluster.
SLOW = ("select count(), sum(toInt(a.properties.n) * toInt(b.properties.n) % 7) from events a "
        "join events b on a.distinct_id = b.distinct_id where a.timestamp < b.timestamp")


def request(server, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    call = urllib.request.Request(
        f"{server.url}/api/projects/{server.project_id}/{path}", data=data, method=method,
        headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(call, timeout=200) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, {"detail": text.decode(errors="replace")}


def query(server, text, engine=None, **extra):
    node = {"kind": "HogQLQuery", "query": text}
    if engine:
        node["modifiers"] = {"engine": engine}
    return request(server, "POST", "query/", {"query": node, "refresh": "force_blocking", **extra})


def load(server):
    rng = random.Random(7)
    events = [{"event": "tick", "distinct_id": f"p{i % PEOPLE}", "uuid": str(uuid.uuid4()),
               "timestamp": f"2026-10-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i // 60) % 60:02d}Z",
               "properties": {"n": rng.randrange(100)}} for i in range(EVENTS)]
    for start in range(0, len(events), 1000):
        body = json.dumps({"api_key": server.token, "batch": events[start:start + 1000]}).encode()
        call = urllib.request.Request(f"{server.url}/batch/", data=body, method="POST",
                                      headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(call, timeout=30):
            pass
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, body = query(server, "select count() from events", engine="local")
        if status == 200 and body["results"] == [[EVENTS]]:
            return
        time.sleep(0.25)
    raise AssertionError("the events did not become visible")


def wait_for_job(cluster, states=("Running",), timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = [job for job in cluster.jobs() if job["status"] in states]
        if running:
            return running
        time.sleep(0.05)
    raise AssertionError(f"no cluster job reached {states} in {timeout} s")


def executor_killed_mid_query(server, expected):
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(answer=query(server, SLOW, engine="cluster")))
    thread.start()
    wait_for_job(server.cluster)
    time.sleep(0.3)
    server.cluster.executors[0].kill()
    # The kill must land mid-job, or this checks nothing.
    assert any(job["status"] == "Running" for job in server.cluster.jobs()), "the job ended before the kill"
    started = time.monotonic()
    thread.join(timeout=200)
    status, body = outcome["answer"]
    if status == 200:
        assert body["results"] == expected, f"an executor killed mid-query: {body['results']}, not {expected}"
        return f"answered right {time.monotonic() - started:.1f} s later"
    assert status >= 500 and body.get("detail"), f"an executor killed mid-query: HTTP {status} {body}"
    return f"failed clearly (HTTP {status}: {body['detail'][:120]})"


def cancel_stops_the_job(server):
    node = {"kind": "HogQLQuery", "query": SLOW + " and a.uuid != b.uuid", "modifiers": {"engine": "cluster"}}
    status, body = request(server, "POST", "query/", {"query": node, "refresh": "force_async"})
    assert status in (200, 202), f"async query: HTTP {status} {body}"
    query_id = body["query_status"]["id"]
    job = wait_for_job(server.cluster)[0]
    status, _ = request(server, "DELETE", f"query/{query_id}/")
    assert status in (200, 204), f"cancel: HTTP {status}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        jobs = server.cluster.jobs()
        live = [listed for listed in jobs if listed["status"] in ("Queued", "Running")]
        if not live:
            ended = next(listed for listed in jobs if listed["job_id"] == job["job_id"])
            assert ended["status"] != "Completed", f"the cancelled job completed: {ended}"
            return
        time.sleep(0.1)
    raise AssertionError(f"the cluster job still runs 20 s after the cancel: {live}")


def scheduler_gone(server, expected_count):
    server.cluster.scheduler.kill()
    server.cluster.scheduler.wait()
    status, body = query(server, "select count() from events")
    assert status == 200 and body["results"] == [[expected_count]], \
        f"with the scheduler gone, a query that may run here: HTTP {status} {body}"
    status, body = query(server, "select count() from events", engine="cluster")
    assert status == 503 and body.get("code") == "cluster_unavailable", \
        f"with the scheduler gone, a query asking for the cluster: HTTP {status} {body}"


def check(backend):
    server = Server(backend)
    try:
        load(server)
        status, body = query(server, SLOW, engine="local")
        assert status == 200, f"the local answer: HTTP {status} {body}"
        expected = body["results"]
        status, body = query(server, SLOW, engine="cluster")
        assert status == 200 and body["results"] == expected, f"cluster {status} {body} != local {expected}"
        cancel_stops_the_job(server)
        killed = executor_killed_mid_query(server, expected)
        scheduler_gone(server, EVENTS)
        print(f"{backend}: the cluster answers as the local engine; a cancel stops its job; "
              f"an executor killed mid-query {killed}; with the scheduler gone, queries that may "
              f"run here do and those asking for the cluster get a 503")
    finally:
        server.stop()


if __name__ == "__main__":
    run_on_backends("cluster", check)
