"""EventsQuery nodes against an independent computation (DuckDB over the project's Delta table).

About 800 seeded events (spread over the last four days, a few in the future; numeric, string,
boolean, date-like and missing properties; person properties through `$set`) go in through
`POST /batch/`, in a project whose time zone is America/New_York. Each EventsQuery node below runs
through `POST /api/projects/:id/query/` and its answer is compared with DuckDB SQL written from the
documented semantics (properties are nullable text, a missing value is "not equal", numbers compare
numerically, relative dates are wall-clock arithmetic in the project's zone...):
- every property filter operator, on event and person properties, list values, OR/AND groups,
  event_metadata and hogql filters (compared as the exact set of matching uuids);
- select lists with and without aggregation (GROUP BY the rest, aggregate `where` items as HAVING),
  `*` in PostHog's object shape, ` -- Label` comments, orderBy, limit/offset/hasMore;
- the time window: default (last 24 h, nothing from the future), relative, `dStart`, naive ISO in
  the project's zone, ISO with `Z`, `all`;
- malformed nodes are 400s naming the field.

Run: `python tests/sdk/test_events_query_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import datetime
import json
import math
import os
import random
import sys
from zoneinfo import ZoneInfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from test_posthog_sdk import run_on_backends  # noqa: E402
from test_query_duckdb import DUCKDB_MACROS  # noqa: E402
from node_harness import loaded, post_node, report, seeded_event, set_timezone  # noqa: E402

UTC = datetime.timezone.utc
ZONE_NAME = "America/New_York"
ZONE = ZoneInfo(ZONE_NAME)
EVENT_COUNT = 800
FUTURE_EVENTS = 6
USERS = [f"user-{k:02d}" for k in range(25)]
EVENT_NAMES = ["$pageview", "signed_up", "purchased", "clicked_button"]
NOW = datetime.datetime.now(UTC).replace(microsecond=0)
# Everything the server counts as "now" lies within this margin of NOW (the run takes well under
# it); no event is generated this close to a time-window boundary, so both sides agree.
MARGIN = datetime.timedelta(minutes=15)


def wall_clock_minus(delta):
    """NOW minus `delta` as a wall-clock difference in the project's zone (PostHog's relative dates)."""
    return (NOW.astimezone(ZONE) - delta).astimezone(UTC)


def local_midnight(days_ago):
    day = NOW.astimezone(ZONE).date() - datetime.timedelta(days=days_ago)
    return datetime.datetime(day.year, day.month, day.day, tzinfo=ZONE).astimezone(UTC)


NAIVE_AFTER = (NOW.astimezone(ZONE) - datetime.timedelta(days=3)).replace(tzinfo=None, minute=0, second=0)
Z_BEFORE = NOW - datetime.timedelta(days=1, hours=6)
FAR_BEFORE = NOW + datetime.timedelta(days=1)
BOUNDARIES = {
    "default after (-24h)": wall_clock_minus(datetime.timedelta(hours=24)),
    "-2d": wall_clock_minus(datetime.timedelta(days=2)),
    "dStart": local_midnight(0),
    "-1dStart": local_midnight(1),
    "midnight two days ago": local_midnight(2),
    "naive after": NAIVE_AFTER.replace(tzinfo=ZONE).astimezone(UTC),
    "Z before": Z_BEFORE,
    "now": NOW,
}


# A few dates, so that is_date_exact finds some (one is 2026-10-05T08:00:00Z).
SIGNUP_DATES = [
    (datetime.datetime(2026, 10, 1, 7, tzinfo=UTC) + datetime.timedelta(days=4 * k, hours=k % 5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for k in range(14)
]


def make_events():
    rng = random.Random(20261122)
    events = []
    while len(events) < EVENT_COUNT + FUTURE_EVENTS:
        future = len(events) >= EVENT_COUNT
        if future:
            moment = NOW + datetime.timedelta(hours=2, seconds=rng.randrange(3600))
        else:
            moment = NOW - datetime.timedelta(seconds=rng.randrange(1200, 4 * 86400), microseconds=rng.randrange(1_000_000))
            if any(abs(moment - boundary) < MARGIN for boundary in BOUNDARIES.values()):
                continue
        distinct_id = rng.choice(USERS)
        properties = {"$current_url": "https://example.com" + rng.choice(["/", "/pricing", "/docs/Start", "/blog/post-7"])}
        roll = rng.random()
        if roll < 0.7:
            properties["$browser"] = rng.choice(["Chrome", "Firefox", "Safari"])
        elif roll < 0.8:
            properties["$browser"] = None
        elif roll < 0.85:
            properties["$browser"] = ""
        roll = rng.random()
        if roll < 0.4:
            properties["amount"] = rng.randrange(0, 300)
        elif roll < 0.6:
            properties["amount"] = round(rng.uniform(0, 300), 2)
        elif roll < 0.75:
            properties["amount"] = rng.choice(["12", "150", "7.5", "n/a", "-3"])
        roll = rng.random()
        if roll < 0.4:
            properties["plan"] = "free"
        elif roll < 0.7:
            properties["plan"] = "pro"
        roll = rng.random()
        if roll < 0.3:
            properties["is_beta"] = True
        elif roll < 0.6:
            properties["is_beta"] = False
        if rng.random() < 0.6:
            properties["signup_date"] = rng.choice(SIGNUP_DATES)
        if rng.random() < 0.85:
            properties["$session_id"] = f"{distinct_id}-s{rng.randrange(3)}"
        if rng.random() < 0.25:
            number = int(distinct_id[-2:])
            domain = "Example.COM" if number % 4 == 0 else "example.com"
            properties["$set"] = {
                "email": f"{distinct_id}@{domain}",
                "age": 18 + (number * 7 + rng.randrange(3)) % 50,
                "tier": rng.choice(["gold", "silver", "bronze"]),
            }
        events.append(seeded_event(rng, rng.choice(EVENT_NAMES), distinct_id, moment, properties))
    return events


def prop(name, person=False):
    column = "person_properties" if person else "properties"
    return f"prop({column}, '$.\"{name}\"')"


BROWSER, AMOUNT, PLAN, BETA, SIGNUP, URL = (prop(k) for k in ["$browser", "amount", "plan", "is_beta", "signup_date", "$current_url"])
EMAIL, AGE, TIER = (prop(k, person=True) for k in ["email", "age", "tier"])


def ts(moment):
    return f"timestamptz '{moment.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}+00'"


# Events DuckDB sees when the node's window is `after: all` with the default `before` (now + 5 s).
PAST = f"timestamp < {ts(NOW + MARGIN)}"

# (name, property filters, DuckDB condition): compared as the exact set of matching uuids.
FILTER_CASES = [
    ("exact (default operator)", [{"key": "$browser", "value": "Chrome"}], f"{BROWSER} = 'Chrome'"),
    ("exact with a list is IN", [{"key": "$browser", "value": ["Chrome", "Safari"], "operator": "exact", "type": "event"}],
     f"{BROWSER} in ('Chrome', 'Safari')"),
    ("is_not counts missing values as not equal", [{"key": "$browser", "value": "Chrome", "operator": "is_not"}],
     f"{BROWSER} is distinct from 'Chrome'"),
    ("is_not with a list", [{"key": "plan", "value": ["free", "pro"], "operator": "is_not"}], f"{PLAN} is null"),
    ("icontains", [{"key": "$current_url", "value": "DOCS", "operator": "icontains"}], f"{URL} ilike '%docs%'"),
    ("not_icontains keeps missing values", [{"key": "$browser", "value": "fire", "operator": "not_icontains"}],
     f"coalesce({BROWSER} not ilike '%fire%', true)"),
    ("icontains with several values is any", [{"key": "$browser", "value": ["chr", "SAF"], "operator": "icontains"}],
     f"({BROWSER} ilike '%chr%' or {BROWSER} ilike '%saf%')"),
    ("regex", [{"key": "$current_url", "value": "post-[0-9]+$", "operator": "regex"}],
     f"coalesce(regexp_matches({URL}, 'post-[0-9]+$'), false)"),
    ("regex with a backslash class", [{"key": "amount", "value": "^\\d+$", "operator": "regex"}],
     f"coalesce(regexp_matches({AMOUNT}, '^[0-9]+$'), false)"),
    ("not_regex keeps missing values", [{"key": "$browser", "value": "^(Chrome|Safari)$", "operator": "not_regex"}],
     f"not coalesce(regexp_matches({BROWSER}, '^(Chrome|Safari)$'), false)"),
    ("gt with a number compares numerically", [{"key": "amount", "value": 100, "operator": "gt"}],
     f"to_float({AMOUNT}) > 100"),
    ("gte with a float", [{"key": "amount", "value": 7.5, "operator": "gte"}], f"to_float({AMOUNT}) >= 7.5"),
    ("lt with a number", [{"key": "amount", "value": 0, "operator": "lt"}], f"to_float({AMOUNT}) < 0"),
    ("lte with a string compares text", [{"key": "amount", "value": "150", "operator": "lte"}], f"{AMOUNT} <= '150'"),
    ("min and max", [{"key": "amount", "value": 10, "operator": "min"}, {"key": "amount", "value": 20, "operator": "max"}],
     f"to_float({AMOUNT}) between 10 and 20"),
    ("between", [{"key": "amount", "value": [50, "120.5"], "operator": "between"}], f"to_float({AMOUNT}) between 50 and 120.5"),
    ("not_between", [{"key": "amount", "value": [50, 120], "operator": "not_between"}],
     f"(to_float({AMOUNT}) < 50 or to_float({AMOUNT}) > 120)"),
    ("is_set", [{"key": "$browser", "operator": "is_set", "value": "is_set"}], f"{BROWSER} is not null"),
    ("is_not_set (missing, null and empty)", [{"key": "$browser", "operator": "is_not_set"}], f"{BROWSER} is null"),
    ("in", [{"key": "amount", "value": ["12", "n/a", "-3"], "operator": "in"}], f"{AMOUNT} in ('12', 'n/a', '-3')"),
    ("in with numbers compares numerically", [{"key": "amount", "value": [12, 150], "operator": "in"}],
     f"to_float({AMOUNT}) in (12, 150)"),
    ("not_in keeps missing values", [{"key": "plan", "value": ["free"], "operator": "not_in"}], f"{PLAN} is distinct from 'free'"),
    ("not_in with several values", [{"key": "$browser", "value": ["Chrome", "Firefox"], "operator": "not_in"}],
     f"({BROWSER} is null or {BROWSER} not in ('Chrome', 'Firefox'))"),
    ("boolean true is the text 'true'", [{"key": "is_beta", "value": True}], f"{BETA} = 'true'"),
    ("boolean false with is_not", [{"key": "is_beta", "value": False, "operator": "is_not"}], f"{BETA} is distinct from 'false'"),
    ("is_date_before", [{"key": "signup_date", "value": "2026-10-20", "operator": "is_date_before"}],
     f"try_cast({SIGNUP} as timestamptz) < {ts(datetime.datetime(2026, 10, 20, tzinfo=ZONE))}"),
    ("is_date_after with a Z time", [{"key": "signup_date", "value": "2026-11-10T12:00:00Z", "operator": "is_date_after"}],
     f"try_cast({SIGNUP} as timestamptz) > timestamptz '2026-11-10 12:00:00+00'"),
    ("is_date_exact", [{"key": "signup_date", "value": "2026-10-05T08:00:00Z", "operator": "is_date_exact"}],
     f"try_cast({SIGNUP} as timestamptz) = timestamptz '2026-10-05 08:00:00+00'"),
    ("person property exact", [{"key": "tier", "value": "gold", "type": "person"}], f"{TIER} = 'gold'"),
    ("person property icontains, case-insensitive", [{"key": "email", "value": "example.com", "type": "person", "operator": "icontains"}],
     f"{EMAIL} ilike '%example.com%'"),
    ("person property numeric gt", [{"key": "age", "value": 40, "type": "person", "operator": "gt"}], f"to_float({AGE}) > 40"),
    ("person property is_not_set", [{"key": "email", "type": "person", "operator": "is_not_set"}], f"{EMAIL} is null"),
    ("event_metadata columns", [{"key": "distinct_id", "value": ["user-01", "user-02", "user-03"], "type": "event_metadata"},
                                {"key": "$session_id", "operator": "is_set", "type": "event_metadata"}],
     "distinct_id in ('user-01', 'user-02', 'user-03') and \"$session_id\" is not null"),
    ("event_metadata timestamp: a naive date is midnight in the project's zone",
     [{"key": "timestamp", "value": BOUNDARIES["midnight two days ago"].astimezone(ZONE).strftime("%Y-%m-%d"),
       "operator": "gt", "type": "event_metadata"}],
     f"timestamp > {ts(BOUNDARIES['midnight two days ago'])}"),
    ("event_metadata event regex", [{"key": "event", "value": "^(signed_up|purchased)$", "type": "event_metadata", "operator": "regex"}],
     "event in ('signed_up', 'purchased')"),
    ("hogql filter", [{"key": "toFloat(properties.amount) * 2 > 300", "type": "hogql"}], f"to_float({AMOUNT}) * 2 > 300"),
    ("an empty filter and an empty list value are no-ops",
     [{}, {"key": "plan", "value": [], "operator": "exact"}, {"key": "plan", "value": "pro"}], f"{PLAN} = 'pro'"),
    ("OR group of AND groups",
     {"type": "OR", "values": [
         {"type": "AND", "values": [{"key": "plan", "value": "pro"}, {"key": "amount", "value": 200, "operator": "gt"}]},
         {"type": "AND", "values": [{"key": "tier", "value": "gold", "type": "person"}, {"key": "$browser", "operator": "is_not_set"}]},
     ]},
     f"({PLAN} = 'pro' and to_float({AMOUNT}) > 200) or ({TIER} = 'gold' and {BROWSER} is null)"),
    ("AND group nested in a list with fixedProperties",
     [{"type": "OR", "values": [{"key": "$browser", "value": "Safari"}, {"key": "is_beta", "value": "true"}]}],
     f"({BROWSER} = 'Safari' or {BETA} = 'true') and event = 'purchased'"),
]


def events_node(**fields):
    return {"kind": "EventsQuery", **fields}


def instant(value):
    """An ISO text or a datetime as an aware UTC datetime, else None."""
    if isinstance(value, datetime.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] in "T ":
        try:
            parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
    return None


def same(ours, theirs):
    if ours is None or theirs is None:
        return ours is None and theirs is None
    if isinstance(ours, list) and isinstance(theirs, (list, tuple)):
        return len(ours) == len(theirs) and all(same(a, b) for a, b in zip(ours, theirs))
    if isinstance(theirs, bool):
        return ours == int(theirs) or ours is theirs
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
        if isinstance(ours, int) and isinstance(theirs, int):
            return ours == theirs
        return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-9)
    if instant(ours) is not None and instant(theirs) is not None:
        return instant(ours) == instant(theirs)
    return ours == theirs


def duck(connection, sql):
    table = connection.sql(sql).to_arrow_table()
    columns = [column.to_pylist() for column in table.columns]
    return [list(row) for row in zip(*columns)]


def short(value, limit=6):
    text = json.dumps(value, default=str)
    return text if len(text) < 600 else text[:600] + "..."


class Checks:
    def __init__(self, server, connection):
        self.server, self.connection = server, connection
        self.failures, self.count = [], 0

    def fail(self, name, message):
        self.failures.append(f"{name}: {message}")

    def run(self, name, node, status=200):
        self.count += 1
        code, body = post_node(self.server, node)
        if code != status:
            self.fail(name, f"HTTP {code} (want {status}): {short(body)}\n  node: {json.dumps(node)}")
            return None
        return body

    def rows(self, name, node, sql, ordered=True, page=None):
        """Compares the node's results with DuckDB's rows; returns the response."""
        body = self.run(name, node)
        if body is None:
            return None
        theirs = duck(self.connection, sql)
        if not theirs:
            self.fail(name, f"DuckDB's answer is empty, so the case proves nothing\n  DuckDB: {sql}")
            return body
        ours = body["results"]
        if page is not None:
            offset, limit = page
            more = len(theirs) > offset + limit
            theirs = theirs[offset:offset + limit]
            if body.get("hasMore") is not more or body.get("limit") != limit or body.get("offset") != offset:
                self.fail(name, f"hasMore/limit/offset {body.get('hasMore')}/{body.get('limit')}/{body.get('offset')}, "
                                f"want {more}/{limit}/{offset}")
        if not ordered:
            key = lambda row: json.dumps(row, default=str)  # noqa: E731
            ours, theirs = sorted(ours, key=key), sorted(theirs, key=key)
        if not same(ours, theirs):
            bad = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if not same(a, b)), min(len(ours), len(theirs)))
            self.fail(name, f"{len(ours)} rows, DuckDB {len(theirs)}; first difference at row {bad}: "
                            f"ours {short(ours[bad] if bad < len(ours) else None)}, "
                            f"DuckDB {short(theirs[bad] if bad < len(theirs) else None)}\n"
                            f"  node: {json.dumps(node)}\n  DuckDB: {sql}")
        types = body.get("types")
        if not (isinstance(types, list) and len(types) == len(body.get("columns") or []) and all(isinstance(t, str) for t in types)):
            self.fail(name, f"types {types!r} is not a flat list of names, one per column {body.get('columns')!r}")
        return body


def run_filter_cases(checks, total):
    for name, filters, condition in FILTER_CASES:
        node = events_node(select=["uuid"], after="all", orderBy=["uuid"], limit=5000, properties=filters)
        if name.startswith("AND group nested"):
            node["fixedProperties"] = [{"key": "event", "value": "purchased", "type": "event_metadata"}]
        sql = f"select uuid from events where ({condition}) and {PAST} order by uuid"
        matched = len(duck(checks.connection, sql))
        if matched == total:
            checks.fail(name, "the condition matches every event, so the case proves nothing")
        checks.rows(f"filter: {name}", node, sql)


def run_select_cases(checks):
    window_24h = f"timestamp > {ts(BOUNDARIES['default after (-24h)'])} and {PAST}"
    checks.rows(
        "plain columns, default window (last 24 h), default order timestamp DESC, default limit 100",
        events_node(select=["uuid", "event", "timestamp", "properties.amount", "person.properties.tier -- Tier"]),
        f"select uuid, event, timestamp, {AMOUNT}, {TIER} from events where {window_24h} order by timestamp desc",
        page=(0, 100),
    )
    body = checks.rows(
        "aggregation groups by the other columns",
        events_node(select=["event", "count()", "uniq(distinct_id)", "sum(toFloat(properties.amount))",
                            "avg(toFloat(properties.amount)) as mean"],
                    after="all", orderBy=["count() DESC", "event"]),
        f"select event, count(*), count(distinct distinct_id), sum(to_float({AMOUNT})), avg(to_float({AMOUNT})) "
        f"from events where {PAST} group by event order by count(*) desc, event",
    )
    if body is not None and body.get("columns") != ["event", "count()", "uniq(distinct_id)", "sum(toFloat(properties.amount))", "mean"]:
        checks.fail("aggregation columns", f"columns {body.get('columns')}")
    body = checks.rows(
        "default order is count() DESC",
        events_node(select=["properties.plan", "count()"], after="all"),
        f"select {PLAN}, count(*) from events where {PAST} group by 1",
        ordered=False,
    )
    if body is not None:
        counts = [row[1] for row in body["results"]]
        if counts != sorted(counts, reverse=True):
            checks.fail("default order is count() DESC", f"counts {counts} are not descending")
    checks.rows(
        "aggregate where items become HAVING; NULL group last",
        events_node(select=["properties.$browser", "count()"], where=["count() > 60", "event != 'signed_up'"],
                    after="all", orderBy=["properties.$browser"]),
        f"select {BROWSER} b, count(*) from events where event != 'signed_up' and {PAST} "
        "group by b having count(*) > 60 order by b nulls last",
    )
    checks.rows(
        "person properties grouped, with filters and an event name",
        events_node(select=["person.properties.email", "count()", "max(timestamp)"], after="all", event="$pageview",
                    properties=[{"key": "email", "type": "person", "operator": "is_set"}],
                    orderBy=["person.properties.email DESC"]),
        f"select {EMAIL} e, count(*), max(timestamp) from events where event = '$pageview' and {EMAIL} is not null "
        f"and {PAST} group by e order by e desc",
    )
    checks.rows(
        "events list, where, orderBy two keys",
        events_node(select=["distinct_id", "event", "toFloat(properties.amount)"], events=["signed_up", "purchased"],
                    where=["toFloat(properties.amount) >= 100"], after="all",
                    orderBy=["toFloat(properties.amount) DESC", "distinct_id", "event"], limit=30),
        f"select distinct_id, event, to_float({AMOUNT}) a from events where event in ('signed_up', 'purchased') "
        f"and to_float({AMOUNT}) >= 100 and {PAST} order by a desc, distinct_id, event",
        page=(0, 30),
    )
    body = checks.rows(
        "labels are stripped for the query and kept as column names",
        events_node(select=["count() -- Total", "event -- Event name"], after="all", orderBy=["event"]),
        f"select count(*), event from events where {PAST} group by event order by event",
    )
    if body is not None and body.get("columns") != ["count() -- Total", "event -- Event name"]:
        checks.fail("labels", f"columns {body.get('columns')}")


def run_star_case(checks, events_by_uuid):
    name = "* is an object per row in PostHog's shape"
    node = events_node(select=["*", "event"], event="purchased", after="-2d", orderBy=["timestamp ASC"], limit=500)
    body = checks.run(name, node)
    if body is None:
        return
    sql = (f"select uuid, timestamp, distinct_id, properties from events where event = 'purchased' "
           f"and timestamp > {ts(BOUNDARIES['-2d'])} and {PAST} order by timestamp")
    theirs = duck(checks.connection, sql)
    ours = body["results"]
    if len(ours) != len(theirs) or not theirs:
        checks.fail(name, f"{len(ours)} rows, DuckDB {len(theirs)}")
        return
    if body.get("columns") != ["*", "event"]:
        checks.fail(name, f"columns {body.get('columns')}")
    for (star, event), (uid, moment, distinct_id, properties) in zip(ours, theirs):
        want = {"uuid": uid, "event": "purchased", "distinct_id": distinct_id, "properties": json.loads(properties)}
        got = {key: star.get(key) for key in want} if isinstance(star, dict) else star
        if got != want or event != "purchased" or not same(star.get("timestamp"), moment) \
                or "team_id" not in star or "elements_chain" not in star or "created_at" not in star:
            checks.fail(name, f"row {short([star, event])}, DuckDB {short([uid, moment, distinct_id])}")
            return
        if star["properties"].get("amount") != events_by_uuid[uid]["properties"].get("amount"):
            checks.fail(name, f"properties of {uid} are not the ones sent")
            return


def run_window_cases(checks):
    cases = [
        ("default window: the last 24 h, nothing from the future", {},
         f"timestamp > {ts(BOUNDARIES['default after (-24h)'])} and {PAST}"),
        ("after -2d", {"after": "-2d"}, f"timestamp > {ts(BOUNDARIES['-2d'])} and {PAST}"),
        ("after dStart (midnight in the project's zone)", {"after": "dStart"}, f"timestamp > {ts(BOUNDARIES['dStart'])} and {PAST}"),
        ("after -1dStart, before dStart", {"after": "-1dStart", "before": "dStart"},
         f"timestamp > {ts(BOUNDARIES['-1dStart'])} and timestamp < {ts(BOUNDARIES['dStart'])}"),
        ("after: a naive ISO time is in the project's zone", {"after": NAIVE_AFTER.strftime("%Y-%m-%dT%H:%M:%S")},
         f"timestamp > {ts(BOUNDARIES['naive after'])} and {PAST}"),
        ("before: an ISO time with Z", {"after": "all", "before": Z_BEFORE.strftime("%Y-%m-%dT%H:%M:%SZ")},
         f"timestamp < {ts(Z_BEFORE)}"),
        ("after all", {"after": "all"}, PAST),
        ("a later before shows future events", {"after": "all", "before": FAR_BEFORE.strftime("%Y-%m-%dT%H:%M:%SZ")}, "true"),
    ]
    for name, window, condition in cases:
        checks.rows(f"window: {name}", events_node(select=["count()", "min(timestamp)", "max(timestamp)"], **window),
                    f"select count(*), min(timestamp), max(timestamp) from events where {condition}")


def run_page_cases(checks):
    sql = f"select uuid, event from events where {PAST} order by timestamp, uuid"
    total = len(duck(checks.connection, sql))
    for offset, limit in [(0, 7), (14, 7), (total - 5, 7), (total - 7, 7)]:
        checks.rows(f"page offset {offset} limit {limit} of {total}",
                    events_node(select=["uuid", "event"], after="all", orderBy=["timestamp", "uuid"], limit=limit, offset=offset),
                    sql, page=(offset, limit))


def run_error_cases(checks):
    cases = [
        ("unknown operator", {"properties": [{"key": "a", "value": 1}, {"key": "b", "value": 1}, {"key": "c", "value": 1, "operator": "bogus"}]},
         "properties[2].operator"),
        ("between without two values", {"properties": [{"key": "a", "value": [1], "operator": "between"}]}, "properties[0].value"),
        ("a filter without a key", {"fixedProperties": [{"value": "x", "type": "event"}]}, "fixedProperties[0].key"),
        ("a cohort the project does not have", {"properties": {"type": "AND", "values": [{"key": "id", "value": 3, "type": "cohort"}]}},
         "properties.values[0].value"),
        ("an unknown event column", {"properties": [{"key": "team_id", "value": 2, "type": "event_metadata"}]}, "properties[0].key"),
        ("a select item that is not one expression", {"select": ["event", "1 from events"]}, "select[1]"),
        ("a relative date that does not parse", {"after": "-3 days"}, "after"),
    ]
    for name, fields, attr in cases:
        node = events_node(**{"select": ["count()"], **fields})
        body = checks.run(f"400: {name}", node, status=400)
        if body is not None and not str(body.get("attr") or "").endswith(attr):
            checks.fail(f"400: {name}", f"attr {body.get('attr')!r}, want {attr!r}: {short(body)}")


def check(backend, events):
    with loaded(backend, events, DUCKDB_MACROS) as (server, connection, logs):
        set_timezone(server, ZONE_NAME)
        total = len(duck(connection, f"select uuid from events where {PAST}"))

        checks = Checks(server, connection)
        run_filter_cases(checks, total)
        run_select_cases(checks)
        run_star_case(checks, {e["uuid"]: e for e in events})
        run_window_cases(checks)
        run_page_cases(checks)
        run_error_cases(checks)
        report(backend, checks.failures, logs, checks.count)
        print(f"{backend}: {checks.count} EventsQuery checks match DuckDB over the Delta table")


def main():
    events = make_events()
    run_on_backends("events-query-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
