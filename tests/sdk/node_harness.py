"""What the checks against DuckDB share: a server loaded with events and a DuckDB connection over
its Delta table, sending and waiting for events, the server's last log lines, the failure report,
calling the API as the project's owner, posting a node or HogQL, refused nodes, and moving the
project to another time zone."""
import collections
import contextlib
import json
import threading
import time
import urllib.error
import urllib.request
import uuid

import duckdb

from test_posthog_sdk import Server

BATCH_SIZE = 500
VISIBLE_TIMEOUT_SECONDS = 60


@contextlib.contextmanager
def loaded(backend, events, macros=(), view=False):
    """A server of `backend` holding `events` (sent through `POST /batch/`, every one visible to
    its queries and in its Delta table), and a DuckDB connection in UTC over that table, after
    `macros`: yields `(server, connection, logs)`, and stops the server on the way out. The table
    is `events`, or with `view` the view `ev`: every column and `ts`, the timestamp as a
    timestamptz (over the table registered as `events_arrow`)."""
    server = Server(backend)
    logs = keep_logs(server)
    try:
        capture(server, events)
        wait_until_visible(server, len(events))
        table = server.table().to_pyarrow_table()
        assert table.num_rows == len(events), f"the Delta table has {table.num_rows} rows, {len(events)} were sent"
        yield server, duckdb_over(table, macros, view), logs
    finally:
        server.stop()


def duckdb_over(table, macros=(), view=False):
    """A DuckDB connection in UTC over the Arrow `table`, as `loaded` makes it."""
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    for statement in macros:
        connection.execute(statement)
    if view:
        connection.register("events_arrow", table)
        connection.execute("create view ev as select *, cast(timestamp as timestamptz) ts from events_arrow")
    else:
        connection.register("events", table)
    return connection


def seeded_event(rng, name, distinct_id, moment, properties):
    """One event for `POST /batch/`, its uuid drawn from the seeded `rng`."""
    return {
        "event": name,
        "distinct_id": distinct_id,
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "timestamp": moment.isoformat().replace("+00:00", "Z"),
        "properties": properties,
    }


def capture(server, events):
    for start in range(0, len(events), BATCH_SIZE):
        body = json.dumps({"api_key": server.token, "batch": events[start:start + BATCH_SIZE]}).encode()
        request = urllib.request.Request(f"{server.url}/batch/", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.load(response)
            assert response.status == 200 and reply == {"status": 1}, reply


def wait_until_visible(server, expected):
    """Until the server's `select count() from events` answers `expected`."""
    deadline = time.monotonic() + VISIBLE_TIMEOUT_SECONDS
    seen = None
    while time.monotonic() < deadline:
        status, body = post_query(server, "select count() from events")
        if status == 200:
            seen = body["results"]
            if seen == [[expected]]:
                return
        else:
            seen = body
        time.sleep(0.25)
    raise AssertionError(f"after {VISIBLE_TIMEOUT_SECONDS} s, select count() answers {seen}, not [[{expected}]]")


def wait_for_lake(server, expected, timeout):
    """Until the Delta table, read with `deltalake`, holds `expected` rows (within `timeout` s)."""
    deadline = time.monotonic() + timeout
    rows = -1
    while time.monotonic() < deadline:
        try:
            rows = server.table().to_pyarrow_table(columns=["uuid"]).num_rows
        except Exception:  # the table does not exist before the first commit
            rows = -1
        if rows >= expected:
            break
        time.sleep(0.5)
    assert rows == expected, f"the Delta table has {rows} rows, {expected} events were sent"


def keep_logs(server):
    """The server's last 50 stderr lines, kept while it runs (shown when a check fails)."""
    logs = collections.deque(maxlen=50)

    def drain():
        for line in server.process.stderr:
            logs.append(line)

    threading.Thread(target=drain, daemon=True).start()
    return logs


def report(backend, failures, logs, checks):
    """Prints every mismatch, with the server's log, and fails when there is any."""
    for failure in failures:
        print(f"{backend}: MISMATCH {failure}\n")
    if failures:
        if logs:
            print(f"{backend}: the server's last log lines:\n" + "".join(logs))
        raise AssertionError(f"{len(failures)} of {checks} checks failed")


def request(server, method, path, body):
    """`(status, reply)`; the reply is the JSON object answered, else `{"detail": <text>}`."""
    data = json.dumps(body).encode()
    req = urllib.request.Request(
        f"{server.url}{path}", data=data, method=method,
        headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            reply = json.loads(text)
        except ValueError:
            reply = text.decode(errors="replace")
        return error.code, reply if isinstance(reply, dict) else {"detail": reply}


def post_node(server, node):
    """Runs `node` now (never from cache)."""
    return request(server, "POST", f"/api/projects/{server.project_id}/query/",
                   {"query": node, "refresh": "force_blocking"})


def post_query(server, text, refresh="force_blocking"):
    """Runs the HogQL `text` (now, unless `refresh` says otherwise)."""
    return request(server, "POST", f"/api/projects/{server.project_id}/query/",
                   {"query": {"kind": "HogQLQuery", "query": text}, "refresh": refresh})


def expect_refusals(server, cases, failures, run=post_node):
    """Each `(node, attr)` of `cases`, through `run(server, node)`, is a 400 naming `attr` (the
    query API may name it inside its `query` body)."""
    for node, attr in cases:
        status, body = run(server, node)
        if status != 400 or (body or {}).get("attr") not in (attr, f"query.{attr}"):
            failures.append(f"invalid node {json.dumps(node)}: HTTP {status} {json.dumps(body)} (want 400 naming {attr})")


def set_timezone(server, zone):
    status, body = request(server, "PATCH", f"/api/projects/{server.project_id}/", {"timezone": zone})
    assert status == 200 and body.get("timezone") == zone, f"{status}: {body}"
