"""The official posthog-python SDK against `analytics serve`, on both storage backends.

Events go in through the SDK (batched + gzip, and one request per event), identify and alias
join people, and an independent reader (the `deltalake` Python package) checks the Delta table:
every event exactly once, each with the right person, queryable within 2 s embedded.

Run by scripts/test: `python tests/sdk/test_posthog_sdk.py <analytics binary> [emulator endpoint]`.
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

import deltalake
from posthog import Posthog

BINARY = sys.argv[1]
ENDPOINT = sys.argv[2] if len(sys.argv) > 2 else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, key):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


class Server:
    def __init__(self, backend):
        self.backend = backend
        self.data_dir = tempfile.mkdtemp(prefix="analytics-sdk-")
        self.env = dict(os.environ, ANALYTICS_DATA_DIR=self.data_dir, RUST_LOG="warn")
        if backend == "dynamodb":
            # A bucket of its own: project ids restart at 1 with every new table.
            import boto3
            self.bucket = f"sdk-{uuid.uuid4().hex[:12]}"
            boto3.client("s3", endpoint_url=ENDPOINT, region_name="us-east-1",
                         aws_access_key_id="test", aws_secret_access_key="test").create_bucket(Bucket=self.bucket)
            self.env.update(
                ANALYTICS_BACKEND="dynamodb",
                ANALYTICS_TABLE=f"sdk-{uuid.uuid4().hex}",
                ANALYTICS_BUCKET=self.bucket,
                AWS_ENDPOINT_URL=ENDPOINT,
                ANALYTICS_SECRET_KEY=base64.b64encode(os.urandom(32)).decode(),
                ANALYTICS_MAILER="outbox",
            )
        init = subprocess.run([BINARY, "admin", "init"], env=self.env, capture_output=True, text=True, check=True)
        created = json.loads(init.stdout.strip().splitlines()[-1])
        self.key = created["personal_api_key"]
        # The first user's console login, printed once by `admin init`.
        self.email, self.password = created["email"], created["password"]
        self.cluster = Cluster(self.env) if os.environ.get("ANALYTICS_TEST_CLUSTER") == "on" else None
        serve_env = self.env
        if self.cluster:
            # Every query that reads a file runs on the cluster.
            serve_env = dict(self.env, ANALYTICS_QUERY_CLUSTER=self.cluster.address, ANALYTICS_CLUSTER_MIN_BYTES="1")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [BINARY, "serve", "--bind", f"127.0.0.1:{self.port}"], env=serve_env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{self.url}/_health", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("analytics serve did not start: " + (self.process.stderr.read() or ""))
        project = get_json(f"{self.url}/api/projects/@current/", self.key)
        self.project_id = project["id"]
        self.token = project["api_token"]

    def table(self):
        path = f"lake/team_id={self.project_id}/events"
        if self.backend == "dynamodb":
            options = {
                "AWS_ENDPOINT_URL": ENDPOINT, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
            }
            return deltalake.DeltaTable(f"s3://{self.bucket}/{path}", storage_options=options)
        return deltalake.DeltaTable(os.path.join(self.data_dir, "objects", path))

    def rows(self):
        try:
            return self.table().to_pyarrow_table(
                columns=["uuid", "event", "distinct_id", "person_id", "person_properties", "timestamp"]
            ).sort_by("timestamp").to_pylist()
        except Exception:  # the table does not exist before the first commit
            return []

    def engines(self):
        """Queries of the query log by the engine that ran them."""
        body = json.dumps({"query": {"kind": "HogQLQuery", "modifiers": {"engine": "local"},
                                     "query": "select engine, count() from query_log group by engine"}}).encode()
        request = urllib.request.Request(
            f"{self.url}/api/projects/{self.project_id}/query/", data=body, method="POST",
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return dict(json.load(response)["results"])

    def stop(self):
        try:
            if self.cluster and self.process.poll() is None:
                ran = self.engines()
                assert ran.get("cluster", 0) > 0, f"no query ran on the cluster: {ran}"
                print(f"{self.backend}: queries by engine: {ran}")
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # do not let a slow stop hide the check's own error
                self.process.kill()
                self.process.wait()
            if self.cluster:
                self.cluster.stop()
            shutil.rmtree(self.data_dir, ignore_errors=True)


class Cluster:
    """A Ballista scheduler and two executors of `analytics cluster`, each its own process on
    loopback, over the same lake (the environment `env` names) as the server."""

    def __init__(self, env, executors=2):
        self.env = dict(env, RUST_LOG="warn")
        port = free_port()
        self.address = f"df://127.0.0.1:{port}"
        self.rest = f"http://127.0.0.1:{port}"
        self.work = tempfile.mkdtemp(prefix="analytics-cluster-")
        self.scheduler = self.spawn(["scheduler", "--bind", f"127.0.0.1:{port}", "--advertise-host", "127.0.0.1"])
        self.executors = [
            self.spawn(["executor", "--scheduler", f"127.0.0.1:{port}", "--bind-host", "127.0.0.1",
                        "--advertise-host", "127.0.0.1", "--port", str(free_port()),
                        "--grpc-port", str(free_port()), "--concurrent-tasks", "2", "--memory-mb", "512",
                        "--work-dir", os.path.join(self.work, f"executor-{i}")])
            for i in range(executors)
        ]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(self.live_executors()) >= executors:
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("the cluster's executors did not register")

    def spawn(self, arguments):
        return subprocess.Popen([BINARY, "cluster", *arguments], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def live_executors(self):
        try:
            with urllib.request.urlopen(f"{self.rest}/api/executors", timeout=2) as response:
                return json.load(response)
        except OSError:
            return []

    def jobs(self):
        with urllib.request.urlopen(f"{self.rest}/api/jobs", timeout=5) as response:
            return json.load(response)

    def stop(self):
        for process in [*self.executors, self.scheduler]:
            process.kill()
            process.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def check(backend):
    server = Server(backend)
    try:
        sent = []

        def remember(capture_result):
            assert capture_result, "the SDK dropped an event"
            sent.append(str(capture_result))

        batched = Posthog(server.token, host=server.url, gzip=True, flush_at=25, flush_interval=0.2, max_retries=0)
        for i in range(90):
            remember(batched.capture("$pageview", distinct_id=f"anon-{i % 3}", uuid=str(uuid.uuid4()),
                                     properties={"$current_url": f"https://example.com/{i}", "i": i}))
        remember(batched.capture("$identify", distinct_id="user-1", uuid=str(uuid.uuid4()),
                                 properties={"$anon_distinct_id": "anon-0", "$set": {"email": "ada@example.com"}}))
        remember(batched.alias("anon-1", "user-1", uuid=str(uuid.uuid4())))
        batched.flush()
        batched.shutdown()

        single = Posthog(server.token, host=server.url, sync_mode=True, max_retries=0)
        remember(single.capture("purchased", distinct_id="user-1", uuid=str(uuid.uuid4()),
                                properties={"$set": {"plan": "pro"}}))
        single.shutdown()
        flushed = time.monotonic()

        rows = []
        deadline = flushed + 20
        while time.monotonic() < deadline:
            rows = server.rows()
            if len(rows) >= len(sent):
                break
            time.sleep(0.05)
        # Reported, not asserted: a latency bound belongs in a benchmark, and a loaded machine
        # would fail it while nothing is wrong.
        landed = time.monotonic() - flushed

        landed_uuids = sorted(row["uuid"] for row in rows)
        assert landed_uuids == sorted(sent), f"{len(landed_uuids)} rows for {len(sent)} events sent"
        time.sleep(1.0)
        assert len(server.rows()) == len(sent), "rows appeared twice"

        # Each row carries the person its distinct id had when the event was processed
        # (persons on events): identify joins user-1 to anon-0's person, then the alias
        # merges that person into anon-1's, as PostHog merges them.
        def person_of(event, distinct_id=None):
            return next(row["person_id"] for row in rows
                        if row["event"] == event and (distinct_id is None or row["distinct_id"] == distinct_id))
        anon0, anon1, anon2 = (person_of("$pageview", f"anon-{i}") for i in range(3))
        assert len({anon0, anon1, anon2}) == 3, "three anonymous people"
        assert person_of("$identify") == anon0, "identify joined user-1 to anon-0's person"
        assert person_of("$create_alias") == anon1, "the alias ran as anon-1"
        assert person_of("purchased") == anon1, "after the alias, user-1 is anon-1's person"
        purchase = next(row for row in rows if row["event"] == "purchased")
        properties = json.loads(purchase["person_properties"])
        assert properties.get("plan") == "pro" and properties.get("email") == "ada@example.com", properties
        print(f"{backend}: {len(sent)} events landed exactly once, people joined, queryable {landed:.2f} s after the flush")
    finally:
        server.stop()


def run_on_backends(label, check):
    """Runs `check(backend)` on every backend (the emulator's when it is given), reports each,
    and exits non-zero when any failed."""
    backends = ["sqlite"] + (["dynamodb"] if ENDPOINT else [])
    passed, failed = 0, 0
    for backend in backends:
        try:
            check(backend)
            passed += 1
        except Exception as error:  # report every backend, then fail
            failed += 1
            print(f"{backend}: FAILED: {error!r}")
    print(f"{label}: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def main():
    run_on_backends("sdk", check)


if __name__ == "__main__":
    main()
