"""The SQL engine's answers against an independent computation, on both storage backends.

2,000 seeded events go in through `POST /batch/`; once `select count() from events` sees them all,
the project's Delta table is read with the `deltalake` package, registered in DuckDB, and every
query below runs twice: as HogQL through `POST /api/projects/:id/query/`, and as DuckDB SQL written
independently, spelling out the HogQL semantics (properties are nullable strings, `=`/`!=` are
null-safe, `toInt` is NULL on text that is not an integer, weeks start on Sunday...). The answers
must match exactly (floats to a relative 1e-9). Also checked: the default LIMIT with `hasMore`,
`select *` hiding the partition column `date`, and a repeated blocking request served from cache.

Run by scripts/test: `python tests/sdk/test_query_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import datetime
import decimal
import json
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
# The SDK test's server harness (same command line: binary, then the emulator endpoint).
from test_posthog_sdk import Server, run_on_backends  # noqa: E402
from node_harness import capture, duckdb_over, keep_logs, post_query, report, seeded_event, wait_until_visible  # noqa: E402

EVENT_COUNT = 2000
FIRST_COMMIT = 300
# `ANALYTICS_SHREDDING=off` (scripts/test runs this file both ways) writes and reads JSON only.
SHREDDING = os.environ.get("ANALYTICS_SHREDDING", "on").lower() != "off"
UTC = datetime.timezone.utc

EVENT_NAMES = ["$pageview", "$pageleave", "signed_up", "purchased", "clicked_button", "viewed_pricing"]
EVENT_WEIGHTS = [40, 12, 8, 8, 17, 15]
BROWSERS = ["Chrome", "Firefox", "Safari", "Edge"]
PAGES = ["/", "/pricing", "/docs/start", "/blog/post-1", "/blog/post-22", "/signup", "/account?tab=billing"]
USERS = [f"user-{k:02d}" for k in range(40)]
USER_WEIGHTS = [1 + (k * 7) % 11 for k in range(40)]


def make_events():
    """Deterministic events: the same 2,000 on every run and backend."""
    rng = random.Random(20261101)
    start = datetime.datetime(2026, 11, 1, tzinfo=UTC)
    events = []
    for i in range(EVENT_COUNT):
        distinct_id = rng.choices(USERS, USER_WEIGHTS)[0]
        properties = {"$current_url": "https://example.com" + rng.choice(PAGES)}
        roll = rng.random()
        if roll < 0.80:
            properties["$browser"] = rng.choice(BROWSERS)
        elif roll < 0.85:
            properties["$browser"] = None
        elif roll < 0.90:
            properties["$browser"] = ""
        # else: no $browser at all
        roll = rng.random()
        if roll < 0.45:
            properties["amount"] = rng.randrange(0, 500)
        elif roll < 0.73:
            properties["amount"] = round(rng.uniform(0, 500), 2)
        elif roll < 0.78:
            properties["amount"] = float(rng.randrange(0, 50))  # JSON 12.0
        elif roll < 0.86:
            properties["amount"] = rng.choice(["12", "7", "250"])
        elif roll < 0.90:
            properties["amount"] = rng.choice(["n/a", "12.5", "-3"])
        # else: no amount
        roll = rng.random()
        if roll < 0.35:
            properties["plan"] = "free"
        elif roll < 0.60:
            properties["plan"] = "pro"
        elif roll < 0.75:
            properties["plan"] = None
        properties["nested"] = {"a": {"b": i % 3}}
        if rng.random() < 0.9:
            properties["$session_id"] = f"{distinct_id}-s{rng.randrange(4)}"
        if rng.random() < 0.15:
            properties["$set"] = {"plan": rng.choice(["free", "pro"]), "company": rng.choice(["Acme", "Globex"])}
        moment = start + datetime.timedelta(
            seconds=rng.randrange(10 * 86400),
            microseconds=rng.randrange(1, 1_000_000) if rng.random() < 0.9 else 0,
        )
        events.append(seeded_event(rng, rng.choices(EVENT_NAMES, EVENT_WEIGHTS)[0], distinct_id, moment, properties))
    return events


# DuckDB spelling of the dialect's semantics, written from the documented behaviour, not the code:
# a property is its JSON value as text, NULL when missing, JSON null or ""; toInt parses integers
# only (DuckDB's own cast would round "12.5"); toFloat is NULL when the text is not a number.
# DuckDB sums integers as HUGEINT, which reaches Python as a float: such sums are cast to BIGINT.
DUCKDB_MACROS = [
    "CREATE MACRO prop(j, path) AS nullif(json_extract_string(j, path), '')",
    "CREATE MACRO to_int(x) AS CASE WHEN regexp_full_match(x, '[+-]?[0-9]+') THEN TRY_CAST(x AS BIGINT) END",
    "CREATE MACRO to_float(x) AS TRY_CAST(x AS DOUBLE)",
]

BROWSER = "prop(properties, '$.\"$browser\"')"
URL = "prop(properties, '$.\"$current_url\"')"
AMOUNT = "prop(properties, '$.amount')"
PLAN = "prop(properties, '$.plan')"

# (name, HogQL, DuckDB SQL, ordered): unordered results are compared as sorted multisets.
CASES = [
    ("events by name",
     "select event, count() from events group by event order by event",
     "select event, count(*) from events group by event order by event",
     True),
    ("browser breakdown, NULL group last",
     "select properties.$browser as b, count() c, uniq(distinct_id) u from events group by b order by b",
     f"select {BROWSER} b, count(*) c, count(distinct distinct_id) u from events group by b order by b nulls last",
     True),
    ("subscript property, descending, NULL group last (ClickHouse sorts NULLs last both ways)",
     "select properties['$browser'] as b, count() c from events group by b order by b desc",
     f"select {BROWSER} b, count(*) c from events group by b order by b desc nulls last",
     True),
    ("!= is null-safe in WHERE",
     "select count() from events where properties.plan != 'pro'",
     f"select count(*) from events where {PLAN} is distinct from 'pro'",
     True),
    ("= and != together",
     "select event, count() from events where properties.plan = 'pro' and properties['$browser'] != 'Chrome' group by event",
     f"select event, count(*) from events where {PLAN} is not distinct from 'pro' and {BROWSER} is distinct from 'Chrome' group by event",
     False),
    ("countIf with null-safe comparisons and nested properties",
     "select countIf(properties.plan = 'pro'), countIf(properties.plan = 'free'), countIf(properties.plan is null), "
     "countIf(properties.nested.a.b = '2'), countIf(properties.$browser != 'Safari'), countIf(properties.$browser = '') from events",
     f"select count(*) filter (where {PLAN} is not distinct from 'pro'), count(*) filter (where {PLAN} is not distinct from 'free'), "
     f"count(*) filter (where {PLAN} is null), count(*) filter (where prop(properties, '$.nested.a.b') is not distinct from '2'), "
     f"count(*) filter (where {BROWSER} is distinct from 'Safari'), count(*) filter (where {BROWSER} is not distinct from '') from events",
     True),
    ("nested property as text",
     "select properties.nested.a.b as b, count() from events group by b order by b",
     "select prop(properties, '$.nested.a.b') b, count(*) from events group by b order by b",
     True),
    ("sum/sumIf/avg/min/max over parsed amounts",
     "select event, sum(toInt(properties.amount)) si, sumIf(toFloat(properties.amount), properties.plan = 'pro') sp, "
     "avg(toFloat(properties.amount)) a, min(toFloat(properties.amount)) mn, max(toFloat(properties.amount)) mx, "
     "count(properties.amount) n from events group by event order by event",
     f"select event, cast(sum(to_int({AMOUNT})) as bigint), sum(to_float({AMOUNT})) filter (where {PLAN} is not distinct from 'pro'), "
     f"avg(to_float({AMOUNT})), min(to_float({AMOUNT})), max(to_float({AMOUNT})), count({AMOUNT}) "
     "from events group by event order by event",
     True),
    ("numbers come back as their JSON text; toInt/toFloat NULL when it does not parse",
     "select properties.amount a, min(toInt(properties.amount)) i, max(toFloat(properties.amount)) f, count() c from events "
     "where properties.amount in ('12', '7', '250', 'n/a', '12.5', '-3', '12.0', '3.0', '49.0') group by a order by a",
     f"select {AMOUNT} a, min(to_int({AMOUNT})) i, max(to_float({AMOUNT})) f, count(*) c from events "
     f"where {AMOUNT} in ('12', '7', '250', 'n/a', '12.5', '-3', '12.0', '3.0', '49.0') group by a order by a",
     True),
    ("GROUP BY a property and conversions of it",
     "select properties.amount a, toInt(properties.amount) i, toFloat(properties.amount) f, count() c from events "
     "where properties.amount in ('12', '7', '250', 'n/a', '12.5', '-3', '12.0', '3.0', '49.0') "
     "group by a, i, f order by a",
     f"select {AMOUNT} a, to_int({AMOUNT}) i, to_float({AMOUNT}) f, count(*) c from events "
     f"where {AMOUNT} in ('12', '7', '250', 'n/a', '12.5', '-3', '12.0', '3.0', '49.0') group by a, i, f order by a",
     True),
    ("NULL counts of the conversions",
     "select countIf(toInt(properties.amount) is null), countIf(toFloat(properties.amount) is null), "
     "countIf(properties.amount is null), sum(toFloat(properties.amount)), uniq(properties.amount) from events",
     f"select count(*) filter (where to_int({AMOUNT}) is null), count(*) filter (where to_float({AMOUNT}) is null), "
     f"count(*) filter (where {AMOUNT} is null), sum(to_float({AMOUNT})), count(distinct {AMOUNT}) from events",
     True),
    ("quantile and median are exact and interpolated",
     "select event, quantile(0.5)(toFloat(properties.amount)) q50, quantile(0.9)(toFloat(properties.amount)) q90, "
     "median(toFloat(properties.amount)) m from events group by event order by event",
     f"select event, quantile_cont(to_float({AMOUNT}), 0.5), quantile_cont(to_float({AMOUNT}), 0.9), "
     f"quantile_cont(to_float({AMOUNT}), 0.5) from events group by event order by event",
     True),
    ("toDate",
     "select toDate(timestamp) d, count() c, uniq(distinct_id) u from events group by d order by d",
     "select cast(timestamp as date) d, count(*), count(distinct distinct_id) from events group by d order by d",
     True),
    ("string literals compared with timestamps and dates",
     "select count(), uniq(distinct_id) from events where timestamp >= '2026-11-09 12:00:00' and toDate(timestamp) <= '2026-11-10'",
     "select count(*), count(distinct distinct_id) from events "
     "where timestamp >= timestamptz '2026-11-09 12:00:00+00' and cast(timestamp as date) <= date '2026-11-10'",
     True),
    ("toStartOfHour on one day",
     "select toStartOfHour(timestamp) h, count() c from events where toDate(timestamp) = toDate('2026-11-04') group by h order by h",
     "select date_trunc('hour', timestamp) h, count(*) from events where cast(timestamp as date) = date '2026-11-04' group by h order by h",
     True),
    ("toStartOfWeek (Sunday) and toStartOfMonth",
     "select toStartOfWeek(timestamp) w, toStartOfMonth(timestamp) m, count() c from events group by w, m order by w",
     "select cast(timestamp as date) - cast(dayofweek(timestamp) as integer) w, "
     "cast(date_trunc('month', timestamp) as date) m, count(*) from events group by w, m order by w",
     True),
    ("toStartOfDay, toDayOfWeek (Monday 1), toHour",
     "select toStartOfDay(timestamp) d, toDayOfWeek(timestamp) dow, countIf(toHour(timestamp) < 12) am, "
     "countIf(toHour(timestamp) >= 12) pm from events group by d, dow order by d",
     "select date_trunc('day', timestamp) d, isodow(timestamp), count(*) filter (where hour(timestamp) < 12), "
     "count(*) filter (where hour(timestamp) >= 12) from events group by all order by d",
     True),
    ("dateDiff counts boundaries crossed",
     "select distinct_id, dateDiff('day', min(timestamp), max(timestamp)) days, dateDiff('hour', min(timestamp), max(timestamp)) hours, "
     "dateDiff('minute', min(timestamp), max(timestamp)) minutes, dateDiff('second', min(timestamp), max(timestamp)) seconds "
     "from events group by distinct_id order by distinct_id",
     "select distinct_id, cast(max(timestamp) as date) - cast(min(timestamp) as date), "
     "cast(floor(epoch(max(timestamp)) / 3600) - floor(epoch(min(timestamp)) / 3600) as bigint), "
     "cast(floor(epoch(max(timestamp)) / 60) - floor(epoch(min(timestamp)) / 60) as bigint), "
     "cast(floor(epoch(max(timestamp))) - floor(epoch(min(timestamp))) as bigint) "
     "from events group by distinct_id order by distinct_id",
     True),
    ("interval arithmetic on toDateTime",
     "select count(), min(timestamp), max(timestamp) from events "
     "where timestamp >= toDateTime('2026-11-05') - interval 2 day and timestamp < toDateTime('2026-11-05')",
     "select count(*), min(timestamp), max(timestamp) from events "
     "where timestamp >= timestamptz '2026-11-03 00:00:00+00' and timestamp < timestamptz '2026-11-05 00:00:00+00'",
     True),
    ("argMax/argMin",
     "select distinct_id, argMax(event, timestamp) last_event, argMin(properties.$current_url, timestamp) first_url, "
     "max(timestamp) last_seen from events group by distinct_id order by distinct_id",
     f"select distinct_id, arg_max(event, timestamp), arg_min({URL}, timestamp), max(timestamp) "
     "from events group by distinct_id order by distinct_id",
     True),
    ("groupArray skips NULLs; arraySort, groupUniqArray, length",
     "select distinct_id, arraySort(groupArray(properties.$browser)) browsers, arraySort(groupUniqArray(event)) names, "
     "length(groupArray(event)) n from events where distinct_id in ('user-01', 'user-02', 'user-03') "
     "group by distinct_id order by distinct_id",
     f"select distinct_id, list_sort(list({BROWSER}) filter (where {BROWSER} is not null)), list_sort(list(distinct event)), "
     "count(*) from events where distinct_id in ('user-01', 'user-02', 'user-03') group by distinct_id order by distinct_id",
     True),
    ("LIMIT n BY",
     "select distinct_id, event, count() c from events group by distinct_id, event "
     "order by distinct_id, c desc, event limit 2 by distinct_id",
     "select distinct_id, event, c from (select distinct_id, event, count(*) c, "
     "row_number() over (partition by distinct_id order by count(*) desc, event) rn from events group by distinct_id, event) "
     "where rn <= 2 order by distinct_id, c desc, event",
     True),
    ("HAVING, uniq of $session_id",
     "select distinct_id, count() c, uniq($session_id) s from events group by distinct_id having c > 55 order by c desc, distinct_id",
     "select distinct_id, count(*) c, count(distinct \"$session_id\") from events group by distinct_id having count(*) > 55 "
     "order by c desc, distinct_id",
     True),
    ("WITH",
     "with per_user as (select distinct_id, count() c, sum(toFloat(properties.amount)) total from events group by distinct_id) "
     "select count() users, max(c), min(c), sum(total), avg(c) from per_user",
     f"with per_user as (select distinct_id, count(*) c, sum(to_float({AMOUNT})) total from events group by distinct_id) "
     "select count(*), max(c), min(c), sum(total), avg(c) from per_user",
     True),
    ("UNION ALL",
     "select 'pageviews' as k, count() c from events where event = '$pageview' "
     "union all select 'signups' as k, count() c from events where event = 'signed_up' "
     "union all select 'pro purchases' as k, count() c from events where event = 'purchased' and properties.plan = 'pro'",
     "select 'pageviews', count(*) from events where event = '$pageview' "
     "union all select 'signups', count(*) from events where event = 'signed_up' "
     f"union all select 'pro purchases', count(*) from events where event = 'purchased' and {PLAN} = 'pro'",
     False),
    ("INNER JOIN of two aggregates",
     "select u.distinct_id, u.c, s.first_signup from (select distinct_id, count() c from events group by distinct_id) u "
     "join (select distinct_id, min(timestamp) first_signup from events where event = 'signed_up' group by distinct_id) s "
     "on u.distinct_id = s.distinct_id order by u.distinct_id",
     "select u.distinct_id, u.c, s.first_signup from (select distinct_id, count(*) c from events group by distinct_id) u "
     "join (select distinct_id, min(timestamp) first_signup from events where event = 'signed_up' group by distinct_id) s "
     "on u.distinct_id = s.distinct_id order by u.distinct_id",
     True),
    ("LEFT JOIN: an unmatched row's columns are their type's default (ClickHouse's join_use_nulls = 0)",
     "select u.distinct_id, u.c, p.n from (select distinct_id, count() c from events group by distinct_id) u "
     "left join (select distinct_id, count() n from events where event = 'purchased' and properties.plan = 'pro' group by distinct_id) p "
     "on u.distinct_id = p.distinct_id order by u.distinct_id",
     "select u.distinct_id, u.c, coalesce(p.n, 0) from (select distinct_id, count(*) c from events group by distinct_id) u "
     f"left join (select distinct_id, count(*) n from events where event = 'purchased' and {PLAN} = 'pro' group by distinct_id) p "
     "on u.distinct_id = p.distinct_id order by u.distinct_id",
     True),
    ("window: row_number over partition",
     "select distinct_id, event, timestamp, rn from (select distinct_id, event, timestamp, "
     "row_number() over (partition by distinct_id order by timestamp) rn from events) t where rn <= 2 order by distinct_id, rn",
     "select distinct_id, event, timestamp, rn from (select distinct_id, event, timestamp, "
     "row_number() over (partition by distinct_id order by timestamp) rn from events) t where rn <= 2 order by distinct_id, rn",
     True),
    ("window: running sum and rank",
     "select event, c, rank() over (order by c desc) r, sum(c) over (order by c desc, event rows between unbounded preceding and current row) running "
     "from (select event, count() c from events group by event) t order by c desc, event",
     "select event, c, rank() over (order by c desc) r, "
     "cast(sum(c) over (order by c desc, event rows between unbounded preceding and current row) as bigint) "
     "from (select event, count(*) c from events group by event) t order by c desc, event",
     True),
    ("person properties",
     "select person.properties.plan p, person.properties.company co, count() c, uniq(person_id) from events group by p, co order by p, co",
     "select prop(person_properties, '$.plan') p, prop(person_properties, '$.company') co, count(*), count(distinct person_id) "
     "from events group by p, co order by p nulls last, co nulls last",
     True),
    ("LIKE, ILIKE, NOT LIKE, match",
     "select countIf(properties.$current_url like '%pricing%'), countIf(properties.$current_url ilike '%/DOCS/%'), "
     "countIf(properties.$current_url not like '%/blog/%'), countIf(match(properties.$current_url, 'post-[0-9]+$')), "
     "countIf(properties.$browser like 'Chr%'), countIf(properties.$browser not like 'Chr%') from events",
     f"select count(*) filter (where {URL} like '%pricing%'), count(*) filter (where {URL} ilike '%/DOCS/%'), "
     f"count(*) filter (where {URL} not like '%/blog/%'), count(*) filter (where regexp_matches({URL}, 'post-[0-9]+$')), "
     f"count(*) filter (where {BROWSER} like 'Chr%'), count(*) filter (where coalesce({BROWSER} not like 'Chr%', true)) from events",
     True),
    ("multiIf buckets",
     "select multiIf(toFloat(properties.amount) >= 100, 'big', toFloat(properties.amount) >= 10, 'mid', "
     "toFloat(properties.amount) is null, 'none', 'small') bucket, count() c from events group by bucket order by bucket",
     f"select case when to_float({AMOUNT}) >= 100 then 'big' when to_float({AMOUNT}) >= 10 then 'mid' "
     f"when to_float({AMOUNT}) is null then 'none' else 'small' end bucket, count(*) from events group by bucket order by bucket",
     True),
    ("uniq of a tuple, countDistinct, IN",
     "select uniq(distinct_id, event), uniq($session_id), countDistinct(properties.$browser), count() from events "
     "where event in ('$pageview', 'clicked_button')",
     f"select count(distinct (distinct_id, event)), count(distinct \"$session_id\"), count(distinct {BROWSER}), count(*) from events "
     "where event in ('$pageview', 'clicked_button')",
     True),
    ("latest events: uuid, timestamp with microseconds, $session_id",
     "select uuid, event, distinct_id, timestamp, $session_id from events order by timestamp desc, uuid limit 15",
     "select uuid, event, distinct_id, timestamp, \"$session_id\" from events order by timestamp desc, uuid limit 15",
     True),
    ("division is floating point, intDiv is not",
     "select event, count() / uniq(distinct_id) per_user, intDiv(count(), uniq(distinct_id)) whole from events group by event order by event",
     "select event, count(*) / count(distinct distinct_id), count(*) // count(distinct distinct_id) from events group by event order by event",
     True),
    ("toYYYYMMDD, toDayOfMonth, concat, toString",
     "select toYYYYMMDD(timestamp) ymd, toDayOfMonth(timestamp) dom, concat(event, '@', toString(toDate(timestamp))) k, count() c "
     "from events where distinct_id = 'user-05' group by ymd, dom, k order by k",
     "select cast(strftime(timestamp, '%Y%m%d') as integer) ymd, day(timestamp) dom, "
     "event || '@' || strftime(timestamp, '%Y-%m-%d') k, count(*) from events where distinct_id = 'user-05' "
     "group by ymd, dom, k order by k",
     True),
    ("an explicit LIMIT over 100",
     "select uuid, event from events order by uuid limit 120",
     "select uuid, event from events order by uuid limit 120",
     True),
]


def iso(moment):
    """A DuckDB timestamp in our response format: UTC, '+00:00', microseconds only when non-zero."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00" if moment.microsecond else "%Y-%m-%dT%H:%M:%S+00:00")


def normalize(value):
    """DuckDB (pyarrow) values as our JSON spells them."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, datetime.datetime):
        return iso(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [normalize(item) for item in value]
    if isinstance(value, dict):
        return [normalize(item) for item in value.values()]
    return value


def duck_rows(connection, sql):
    table = connection.sql(sql).to_arrow_table()
    columns = [column.to_pylist() for column in table.columns]
    return [[normalize(value) for value in row] for row in zip(*columns)]


def same(ours, theirs):
    if ours is None or theirs is None:
        return ours is None and theirs is None
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(same(a, b) for a, b in zip(ours, theirs))
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
        if isinstance(ours, int) and isinstance(theirs, int):
            return ours == theirs
        if isinstance(ours, int) != isinstance(theirs, int):
            return False  # an integer where a float is due, or the other way round
        return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)
    return type(ours) is type(theirs) and ours == theirs


def sort_key(row):
    def key(value):
        if value is None:
            return (0, "")
        if isinstance(value, (int, float)):
            return (1, f"{float(value):.9e}")
        if isinstance(value, list):
            return (2, json.dumps([key(v) for v in value]))
        return (3, str(value))
    return [key(value) for value in row]


def show(rows, limit=12):
    lines = [json.dumps(row) for row in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"... {len(rows)} rows in all")
    return "\n      ".join(lines) or "(no rows)"


def compare(name, hogql, sql, ordered, server, connection):
    """None when our answer matches DuckDB's, else a report."""
    theirs = duck_rows(connection, sql)
    status, body = post_query(server, hogql)
    if status != 200:
        return (f"{name}: HTTP {status}\n  HogQL:  {hogql}\n  DuckDB: {sql}\n"
                f"  ours:   {json.dumps(body)}\n  DuckDB's:\n      {show(theirs)}")
    ours = body["results"]
    if not theirs or not any(any(value not in (None, 0, []) for value in row) for row in theirs):
        return f"{name}: DuckDB's answer is empty, so the case proves nothing\n  DuckDB: {sql}"
    if not ordered:
        ours, theirs = sorted(ours, key=sort_key), sorted(theirs, key=sort_key)
    if body.get("hasMore") and len(theirs) > len(ours):
        theirs = theirs[:len(ours)]
    problem = None
    if len(ours) != len(theirs):
        problem = f"{len(ours)} rows, DuckDB {len(theirs)}"
    elif ours and len(ours[0]) != len(theirs[0]):
        problem = f"{len(ours[0])} columns, DuckDB {len(theirs[0])}"
    else:
        bad = [i for i, (a, b) in enumerate(zip(ours, theirs)) if not same(a, b)]
        if bad:
            problem = f"{len(bad)} rows differ, first at row {bad[0]}: ours {json.dumps(ours[bad[0]])}, DuckDB {json.dumps(theirs[bad[0]])}"
    if problem is None:
        return None
    return (f"{name}: {problem}\n  HogQL:  {hogql}\n  DuckDB: {sql}\n"
            f"  ours:\n      {show(ours)}\n  DuckDB's:\n      {show(theirs)}")


def behaviours(server, connection):
    """The response-level checks; a list of failures."""
    failures = []
    status, body = post_query(server, "select uuid, event from events")
    if status != 200 or len(body["results"]) != 100 or body.get("hasMore") is not True or body.get("limit") != 100:
        failures.append(f"no LIMIT over >100 rows: HTTP {status}, {len(body.get('results') or [])} rows, "
                        f"hasMore {body.get('hasMore')!r}, limit {body.get('limit')!r} (want 100 rows, hasMore true)")
    status, body = post_query(server, "select * from events limit 3")
    columns = body.get("columns") or []
    expected = {"uuid", "event", "distinct_id", "person_id", "person_properties", "timestamp", "created_at",
                "properties", "$session_id", "elements_chain"}
    hidden = [c for c in columns if c.startswith("p_") or c.startswith("pp_") or c == "__shred"]
    if status != 200 or "date" in columns or hidden or not expected <= set(columns):
        failures.append(f"select * from events: HTTP {status}, columns {columns} (want {sorted(expected)}, never `date` nor shredded columns)")
    text = "select event, countIf(properties.plan = 'free') free from events group by event order by event"
    first = post_query(server, text, refresh="blocking")
    second = post_query(server, text, refresh="blocking")
    theirs = duck_rows(connection, f"select event, count(*) filter (where {PLAN} = 'free') from events group by event order by event")
    if (first[0], second[0]) != (200, 200) or second[1].get("is_cached") is not True \
            or second[1].get("results") != first[1].get("results") or not same(first[1].get("results"), theirs):
        failures.append(f"a repeated blocking request: HTTP {first[0]}/{second[0]}, is_cached {second[1].get('is_cached')!r} "
                        f"(want true), results {first[1].get('results')} then {second[1].get('results')}, DuckDB {theirs}")
    return failures


def check(backend, events):
    server = Server(backend)
    logs = keep_logs(server)
    try:
        # The first 300 events are committed alone: too few for the committer to pick keys to
        # shred, so their file holds only JSON, while the later files (once enough rows were
        # seen) hold shredded columns: queries run mid-backfill, each row read from where it is.
        capture(server, events[:FIRST_COMMIT])
        wait_until_visible(server, FIRST_COMMIT)
        capture(server, events[FIRST_COMMIT:])
        wait_until_visible(server, len(events))
        table = server.table().to_pyarrow_table()
        masks = table.column("__shred").to_pylist() if "__shred" in table.column_names else []
        if SHREDDING:
            # Event codes are written from the first commit; property keys only later.
            assert len(set(masks)) > 1, \
                f"want files holding different shredded keys (mid-backfill), got masks {sorted(set(masks), key=str)}"
        else:
            assert not any(masks), "ANALYTICS_SHREDDING=off wrote shredded columns"
        table = table.select([c for c in table.column_names if not (c.startswith("p_") or c.startswith("pp_") or c == "__shred")])
        assert table.num_rows == len(events), f"the Delta table has {table.num_rows} rows, {len(events)} were sent"
        assert sorted(table.column("uuid").to_pylist()) == sorted(e["uuid"] for e in events), "the lake's uuids are not the ones sent"
        connection = duckdb_over(table, DUCKDB_MACROS)

        failures = []
        for name, hogql, sql, ordered in CASES:
            problem = compare(name, hogql, sql, ordered, server, connection)
            if problem:
                failures.append(problem)
        failures.extend(behaviours(server, connection))
        report(backend, failures, logs, len(CASES) + 3)
        print(f"{backend}: {len(CASES)} queries match DuckDB over the Delta table, and the 3 response checks pass")
    finally:
        server.stop()


def main():
    events = make_events()
    run_on_backends("query-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
