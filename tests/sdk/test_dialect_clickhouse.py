"""The SQL dialect against ClickHouse itself (chDB, ClickHouse embedded in Python), on both backends.

The corpus is `tests/dialect/*.test`, one file per function family, sqllogictest-style:

    # a comment
    query
    SELECT round(2.5), concat('a', NULL)
    ----
    [2, null]

A case is a query, `----`, and ClickHouse's answer: one JSON array per row, in the form our API
answers (date-times as UTC `YYYY-MM-DD HH:MM:SS[.ffffff]`, booleans as 0/1, numbers compared to a
relative 1e-9). A case where we deliberately differ says so on its first line, with the reason:

    query refused: <why>       we answer a 400; ClickHouse's answer is still recorded
    query differs: <why>       we answer something else, recorded after `---- ours`
    query posthog: <why>       a PostHog extension ClickHouse lacks: our recorded answer is checked

Where HogQL spells a query otherwise than ClickHouse (`toInt`, `properties.$browser`), the case
gives PostHog's translation after `---- clickhouse`, before the answer's `----`.

Every run checks three things, and fails on any unmarked difference:
1. chDB still gives the recorded answer (the corpus says what ClickHouse says, not what we hope);
2. `POST /api/projects/:id/query/` on `analytics serve` gives it too, on SQLite and on
   DynamoDB/S3, over the same fixture events (`FIXTURE` below, also loaded into chDB as `events`);
3. every function of the allow-list (`docs/sql-functions.md`, generated from it) has a case,
   and every marked difference's reason is listed in `docs/sql-dialect.md`.

Run by scripts/test: `python tests/sdk/test_dialect_clickhouse.py <analytics binary> [emulator endpoint]`.
`--record` (after the arguments) rewrites the corpus' ClickHouse answers from chDB, and the
`---- ours` answers of `differs` cases from the SQLite server; `--only <file stem>` narrows a run.
"""
import concurrent.futures
import datetime
import json
import math
import os
import re
import sys
import time
import urllib.error
import urllib.request
import zoneinfo

import chdb
from chdb import session as chdb_session

RECORD = "--record" in sys.argv
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
# The server harness reads the binary and the emulator endpoint from the positional arguments.
sys.argv = [arg for i, arg in enumerate(sys.argv)
            if arg != "--record" and arg != "--only" and (i == 0 or sys.argv[i - 1] != "--only")]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from test_posthog_sdk import Server, run_on_backends  # noqa: E402
from node_harness import keep_logs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "dialect")
FUNCTION_LIST = os.path.join(ROOT, "docs", "sql-functions.md")
DIALECT_PAGE = os.path.join(ROOT, "docs", "sql-dialect.md")
# PostHog's HogQLGlobalSettings that change answers (`transform_null_in`), the project's zone,
# and JSON output that keeps numbers numbers.
CLICKHOUSE_SETTINGS = (
    "SETTINGS session_timezone = 'UTC', transform_null_in = 1, "
    "output_format_json_quote_64bit_integers = 0, output_format_json_quote_decimals = 0"
)

# The rows every `FROM events` case reads, on both sides.
FIXTURE = [
    {"uuid": "018f0a4e-0000-7000-8000-000000000001", "event": "$pageview", "distinct_id": "alice",
     "timestamp": "2024-03-10T09:15:00.250000Z",
     "properties": {"$browser": "Chrome", "$current_url": "https://example.com/pricing?plan=pro", "amount": 12,
                    "price": 9.99, "tags": ["a", "b"], "ok": True, "name": "Zoë"}},
    {"uuid": "018f0a4e-0000-7000-8000-000000000002", "event": "$pageview", "distinct_id": "bob",
     "timestamp": "2024-03-10T23:59:59Z",
     "properties": {"$browser": "Firefox", "$current_url": "https://example.com/", "amount": "7",
                    "price": 20, "tags": [], "ok": False, "name": "bob"}},
    {"uuid": "018f0a4e-0000-7000-8000-000000000003", "event": "signed_up", "distinct_id": "alice",
     "timestamp": "2024-03-11T00:00:00Z",
     "properties": {"$browser": "Chrome", "amount": "n/a", "plan": "pro", "name": ""}},
    {"uuid": "018f0a4e-0000-7000-8000-000000000004", "event": "purchased", "distinct_id": "carol",
     "timestamp": "2024-03-31T01:30:00Z",
     "properties": {"$browser": "Safari", "amount": 250, "price": -3.5, "plan": "free", "name": "Ĉarol"}},
    {"uuid": "018f0a4e-0000-7000-8000-000000000005", "event": "purchased", "distinct_id": "alice",
     "timestamp": "2024-10-27T00:45:00Z",
     "properties": {"amount": 12.5, "price": 0, "plan": "pro", "ok": True}},
    {"uuid": "018f0a4e-0000-7000-8000-000000000006", "event": "$pageleave", "distinct_id": "dave",
     "timestamp": "2024-12-31T23:00:00Z",
     "properties": {"$browser": "Chrome", "$current_url": "https://example.com/docs/start", "amount": None,
                    "quote": 'say "hi"', "nested": {"a": 1, "b": [1, 2]}}},
]

# An action of the fixture's project: a pricing pageview, or a purchase on the pro plan.
FIXTURE_ACTION = {"name": "Pricing or pro purchase", "steps": [
    {"event": "$pageview", "url": "/pricing", "url_matching": "contains"},
    {"event": "purchased", "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]},
]}

CASE_HEAD = re.compile(r"^query(?: (refused|differs|posthog): (.+))?$")


class Case:
    def __init__(self, path, line, mark, reason, sql):
        self.path, self.line, self.mark, self.reason, self.sql = path, line, mark, reason, sql
        self.clickhouse_sql = sql  # PostHog's translation to ClickHouse, when HogQL spells it otherwise
        self.expected = []  # ClickHouse's rows
        self.ours = None  # our rows, for `differs`

    def where(self):
        return f"{os.path.relpath(self.path, ROOT)}:{self.line}"


def parse_corpus(path):
    """`(text lines before the first case, cases)`; comments between cases stay with the case after."""
    cases, lines = [], open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        head = CASE_HEAD.match(lines[i].strip())
        if not head:
            i += 1
            continue
        start = i + 1
        sql = []
        i += 1
        while i < len(lines) and lines[i].strip() != "----":
            sql.append(lines[i])
            i += 1
        case = Case(path, start, head.group(1), head.group(2), "\n".join(sql).strip())
        if "---- clickhouse" in case.sql:
            case.sql, case.clickhouse_sql = (part.strip() for part in case.sql.split("---- clickhouse"))
        i += 1  # ----
        target = case.expected
        while i < len(lines) and lines[i].strip():
            if lines[i].strip() == "---- ours":
                case.ours = target = []
            else:
                target.append(json.loads(lines[i]))
            i += 1
        cases.append(case)
    return cases


def corpus_files():
    files = sorted(f for f in os.listdir(CORPUS) if f.endswith(".test"))
    if ONLY:
        files = [f for f in files if f.startswith(ONLY)]
    return [os.path.join(CORPUS, f) for f in files]


def rewrite_corpus(path, cases):
    """Writes the recorded answers back in place, keeping every other line as it is."""
    lines = open(path, encoding="utf-8").read().split("\n")
    by_line = {case.line: case for case in cases}
    out, i = [], 0
    while i < len(lines):
        case = by_line.get(i + 1)
        if case is None:
            out.append(lines[i])
            i += 1
            continue
        out.append(lines[i])  # the query line
        i += 1
        while i < len(lines) and lines[i].strip() != "----":
            out.append(lines[i])
            i += 1
        i += 1
        while i < len(lines) and lines[i].strip():
            i += 1
        out.append("----")
        out.extend(json.dumps(row, ensure_ascii=False) for row in case.expected)
        if case.mark == "differs":
            out.append("---- ours")
            out.extend(json.dumps(row, ensure_ascii=False) for row in case.ours or [])
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


# ---- the canonical form of an answer -------------------------------------------------------

def split_types(text):
    """`UInt8, Array(String), DateTime('UTC')` → its parts, respecting parentheses and quotes."""
    parts, depth, quoted, current = [], 0, False, ""
    for ch in text:
        if ch == "'" :
            quoted = not quoted
        if not quoted and ch == "(":
            depth += 1
        if not quoted and ch == ")":
            depth -= 1
        if not quoted and depth == 0 and ch == ",":
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def unwrap(kind, wrapper):
    if kind.startswith(wrapper + "(") and kind.endswith(")"):
        return kind[len(wrapper) + 1:-1]
    return None


def zone_of(kind):
    found = re.search(r"'([^']+)'", kind)
    return found.group(1) if found else "UTC"


def utc_text(moment):
    moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment.isoformat(sep=" ", timespec="microseconds" if moment.microsecond else "seconds")


def canonical(value, kind):
    """A value of ClickHouse type `kind` (ours name their types as ClickHouse does) in the one
    form both sides are compared in."""
    for wrapper in ("Nullable", "LowCardinality"):
        inner = unwrap(kind, wrapper)
        if inner is not None:
            kind = inner
    if value is None:
        return None
    inner = unwrap(kind, "Array")
    if inner is not None and isinstance(value, list):
        return [canonical(v, inner) for v in value]
    inner = unwrap(kind, "Tuple")
    if inner is not None and isinstance(value, (list, dict)):
        values = list(value.values()) if isinstance(value, dict) else value
        kinds = [re.sub(r"^[A-Za-z_][A-Za-z0-9_]* (?=[A-Z])", "", k) for k in split_types(inner)]
        return [canonical(v, k) for v, k in zip(values, kinds)]
    if kind.startswith("DateTime") and isinstance(value, str):
        if "T" in value:  # ours: ISO 8601 with its offset
            return utc_text(datetime.datetime.fromisoformat(value.replace("Z", "+00:00")))
        local = datetime.datetime.fromisoformat(value)
        return utc_text(local.replace(tzinfo=zoneinfo.ZoneInfo(zone_of(kind))))
    if isinstance(value, bool):
        return int(value)
    if kind.startswith("Decimal") and isinstance(value, (int, float, str)):
        return float(value)
    return value


def same(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def rows_of(values, kinds):
    return [[canonical(v, k) for v, k in zip(row, kinds)] for row in values]


# ---- ClickHouse ---------------------------------------------------------------------------

def clickhouse_session():
    session = chdb_session.Session()
    session.query("CREATE DATABASE IF NOT EXISTS dialect")
    session.query("USE dialect")
    session.query(
        "CREATE TABLE events (uuid UUID, event String, distinct_id String, "
        "timestamp DateTime64(6, 'UTC'), properties String, elements_chain String) ENGINE = Memory"
    )
    for event in FIXTURE:
        moment = event["timestamp"].replace("T", " ").replace("Z", "")
        session.query(
            "INSERT INTO events VALUES ({}, {}, {}, {}, {}, '')".format(
                quote(event["uuid"]), quote(event["event"]), quote(event["distinct_id"]),
                quote(moment), quote(json.dumps(event["properties"], ensure_ascii=False)),
            )
        )
    return session


def quote(text):
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def clickhouse(session, sql):
    """ClickHouse's rows in canonical form, or `("error", message)`."""
    try:
        result = session.query(f"{sql} {CLICKHOUSE_SETTINGS}", "JSONCompactEachRowWithNamesAndTypes")
    except Exception as error:  # noqa: BLE001: chDB raises its own RuntimeError subclasses
        return ("error", str(error).splitlines()[0][:300])
    lines = [json.loads(line) for line in result.bytes().decode().splitlines() if line.strip()]
    return rows_of(lines[2:], lines[1])


# ---- ours ---------------------------------------------------------------------------------

def ours(server, sql):
    """Our rows in canonical form, or `("error", status, detail)`."""
    body = json.dumps({"query": {"kind": "HogQLQuery", "query": sql}, "refresh": "force_blocking"}).encode()
    request = urllib.request.Request(
        f"{server.url}/api/projects/{server.project_id}/query/", data=body, method="POST",
        headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            reply = json.load(response)
    except urllib.error.HTTPError as error:
        try:
            detail = json.loads(error.read()).get("detail")
        except ValueError:
            detail = None
        return ("error", error.code, detail)
    kinds = [kind for _, kind in reply["types"]]
    return rows_of(reply["results"], kinds)


def load_fixture(server):
    batch = [
        {"event": e["event"], "distinct_id": e["distinct_id"], "uuid": e["uuid"],
         "timestamp": e["timestamp"], "properties": e["properties"]}
        for e in FIXTURE
    ]
    body = json.dumps({"api_key": server.token, "batch": batch}).encode()
    request = urllib.request.Request(f"{server.url}/batch/", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200, response.status
    # The action `matchesAction` cases name (posthog.test).
    action = json.dumps(FIXTURE_ACTION).encode()
    request = urllib.request.Request(
        f"{server.url}/api/projects/{server.project_id}/actions/", data=action, method="POST",
        headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201, response.status
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ours(server, "select count() from events") == [[len(FIXTURE)]]:
            return
        time.sleep(0.2)
    raise AssertionError("the fixture events did not become visible within 60 s")


def verdict(case, answer):
    """None when our answer is what the case says it should be, else what is wrong."""
    refused = isinstance(answer, tuple)
    if case.mark == "refused":
        if refused and answer[1] == 400:
            return None
        return f"marked refused, but we answered {answer}"
    if refused:
        return f"we refused ({answer[1]}: {answer[2]}); ClickHouse answers {case.expected}"
    if case.mark == "posthog":  # no ClickHouse answer: ours, recorded
        if same(answer, case.expected):
            return None
        return f"PostHog extension: recorded {case.expected}, we answered {answer}"
    if case.mark == "differs":
        if case.ours is not None and same(answer, case.ours):
            return None
        return f"marked differs with ours {case.ours}, but we answered {answer} (ClickHouse {case.expected})"
    if same(answer, case.expected):
        return None
    return f"we answered {answer}; ClickHouse answers {case.expected}"


# ---- the run ------------------------------------------------------------------------------

def all_cases():
    return [(path, parse_corpus(path)) for path in corpus_files()]


def check_clickhouse(files):
    """chDB still gives every recorded answer (or, with --record, records it)."""
    session = clickhouse_session()
    failures = []
    for path, cases in files:
        for case in cases:
            if case.mark == "posthog":
                continue
            answer = clickhouse(session, case.clickhouse_sql)
            if isinstance(answer, tuple):
                failures.append(f"{case.where()}: ClickHouse refuses: {answer[1]}\n  {case.sql}")
                continue
            if RECORD:
                case.expected = answer
            elif not same(answer, case.expected):
                failures.append(f"{case.where()}: recorded {case.expected}, ClickHouse answers {answer}\n  {case.sql}")
    return failures


def check_coverage(files):
    """Every allow-listed function appears in some case."""
    listed = re.findall(r"^\| `([A-Za-z0-9_]+)` \|", open(FUNCTION_LIST, encoding="utf-8").read(), re.M)
    assert len(listed) > 100, f"{FUNCTION_LIST} lists only {len(listed)} functions"
    text = "\n".join(case.sql for _, cases in files for case in cases)
    called = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", text))
    lowered = {name.lower() for name in called}
    return [f"no case calls {name}" for name in listed if name not in called and name.lower() not in lowered]


def check_documented(files):
    """Every deliberate difference (a `refused` or `differs` case's reason) is listed in the
    dialect's page, so no difference is silent."""
    page = open(DIALECT_PAGE, encoding="utf-8").read()
    return [
        f"{case.where()}: the reason '{case.reason}' is not in docs/sql-dialect.md"
        for _, cases in files for case in cases
        if case.mark in ("refused", "differs") and case.reason not in page
    ]


def run_ours(server, files):
    cases = [case for _, cs in files for case in cs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda case: ours(server, case.sql), cases))
    return list(zip(cases, answers))


def summary(label, results):
    marked = sum(1 for case, _ in results if case.mark == "differs")
    refused = sum(1 for case, _ in results if case.mark == "refused")
    agreeing = sum(1 for case, answer in results if case.mark is None and verdict(case, answer) is None)
    print(f"{label}: {len(results)} cases, {agreeing} agree with ClickHouse, "
          f"{marked} marked differences, {refused} marked refusals")


def main():
    files = all_cases()
    failures = check_clickhouse(files)
    if not ONLY:
        failures += check_coverage(files) + check_documented(files)
    if RECORD and not os.path.exists(sys.argv[1]):
        print(f"{sys.argv[1]} does not exist: recording ClickHouse's answers only")
    elif RECORD:
        server = Server("sqlite")
        try:
            load_fixture(server)
            for case, answer in run_ours(server, files):
                if case.mark == "differs":
                    case.ours = answer if not isinstance(answer, tuple) else []
                if case.mark == "posthog" and not isinstance(answer, tuple):
                    case.expected = answer
        finally:
            server.stop()
    if RECORD:
        for path, cases in files:
            rewrite_corpus(path, cases)
        for failure in failures:
            print(failure)
        print(f"recorded {sum(len(c) for _, c in files)} cases")
        return
    for failure in failures:
        print(f"corpus: {failure}")
    print(f"corpus: {sum(len(c) for _, c in files)} cases, {len(failures)} problems with the corpus itself")

    def check(backend):
        server = Server(backend)
        logs = keep_logs(server)
        try:
            load_fixture(server)
            results = run_ours(server, files)
        finally:
            server.stop()
        wrong = [(case, verdict(case, answer)) for case, answer in results]
        wrong = [(case, why) for case, why in wrong if why]
        for case, why in wrong:
            print(f"{backend}: {case.where()}: {why}\n  {case.sql}\n")
        summary(backend, results)
        if wrong:
            if logs:
                print("".join(list(logs)[-10:]))
            raise AssertionError(f"{len(wrong)} of {len(results)} cases differ from the corpus")
        if failures:
            raise AssertionError(f"{len(failures)} problems with the corpus")

    run_on_backends("dialect against ClickHouse", check)


if __name__ == "__main__":
    main()
