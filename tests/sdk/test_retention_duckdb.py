"""RetentionQuery answers against an independent computation in DuckDB.

About 1,600 seeded events (Sept-Nov 2026, clustered around midnight UTC so that the project's
time zone decides the day) go in through `POST /batch/`; the project's Delta table is read with
the `deltalake` package into DuckDB, and each RetentionQuery below runs through
`POST /api/projects/:id/query/` and is recomputed in DuckDB from PostHog's documented rules:

- the range's intervals run from `date_from` rounded down to its interval up to the end of the
  interval holding `date_to` (without `date_from`: `totalIntervals` intervals before that end);
  weeks start on Sunday; days and weeks follow the project time zone;
- recurring: a cohort per interval in which the actor did the target event; first time: the
  actor's first target event ever (no date bound, node filters applied) picks the one cohort,
  and it must lie in the range;
- interval 0 is the whole cohort; interval k > 0 counts the cohort's actors who did the
  returning event (at least `minimumOccurrences` times) k intervals later, inside the range,
  for k < totalIntervals; cumulative counts an actor in every interval up to their last return;
- the response has one row per cohort, `totalIntervals` values each, zero-filled, labelled
  "Day 3", dated at the cohort's local start with its UTC offset.

The time zone cases PATCH the project to Europe/Paris (spanning the October DST change).
Run: `python tests/sdk/test_retention_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import datetime
import json
import os
import random
import sys
from zoneinfo import ZoneInfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
from test_posthog_sdk import run_on_backends  # noqa: E402
from node_harness import expect_refusals, loaded, post_node, report, seeded_event, set_timezone  # noqa: E402

UTC = datetime.timezone.utc
USERS = [f"user-{k:02d}" for k in range(70)]


def make_events():
    """Deterministic events: each user starts on some day, then comes back less and less."""
    rng = random.Random(20260925)
    events = []

    def add(name, distinct_id, day, plan):
        # Mostly within three hours of midnight UTC: Paris and UTC disagree on the day.
        if rng.random() < 0.6:
            moment = datetime.datetime.combine(day, datetime.time(21), UTC) + datetime.timedelta(
                seconds=rng.randrange(6 * 3600))
        else:
            moment = datetime.datetime.combine(day, datetime.time(0), UTC) + datetime.timedelta(
                seconds=rng.randrange(86400))
        events.append(seeded_event(rng, name, distinct_id, moment, {"plan": plan} if plan else {}))

    for index, user in enumerate(USERS):
        plan = rng.choice(["free", "pro", None])
        # A few users were active well before the ranges below (not first-timers there).
        first_day = datetime.date(2026, 9, 1 if index % 9 == 0 else 20) + datetime.timedelta(days=rng.randrange(30))
        add("signed_up", user, first_day, plan)
        if rng.random() < 0.15:  # signed up again later: only the first one counts as first time
            add("signed_up", user, first_day + datetime.timedelta(days=rng.randrange(1, 12)), plan)
        for offset in range(0, 45):
            if rng.random() < 0.65 * (0.93 ** offset):
                day = first_day + datetime.timedelta(days=offset)
                for _ in range(rng.randrange(1, 4)):
                    add("$pageview", user, day, rng.choice([plan, "free", "pro"]))
                if rng.random() < 0.3:
                    add("purchased", user, day, plan)
    return events


# (name, project time zone, node): the node's own fields say the rest.
CASES = [
    ("day recurring, default totalIntervals", "UTC", {
        "retentionFilter": {"period": "Day", "targetEntity": {"id": "$pageview", "type": "events"},
                            "returningEntity": {"id": "$pageview", "type": "events"}},
        "dateRange": {"date_from": "2026-10-01", "date_to": "2026-10-10"}}),
    ("day first time, signed_up then purchased", "UTC", {
        "retentionFilter": {"period": "Day", "totalIntervals": 5, "retentionType": "retention_first_time",
                            "targetEntity": {"id": "signed_up", "type": "events"},
                            "returningEntity": {"id": "purchased", "type": "events"}},
        "dateRange": {"date_from": "2026-09-28", "date_to": "2026-10-09"}}),
    ("day recurring with an event property filter and minimumOccurrences 2", "UTC", {
        "retentionFilter": {"period": "Day", "totalIntervals": 6, "minimumOccurrences": 2,
                            "targetEntity": {"id": "$pageview", "type": "events"},
                            "returningEntity": {"id": "$pageview", "type": "events"}},
        "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}],
        "dateRange": {"date_from": "2026-10-02", "date_to": "2026-10-12"}}),
    ("day recurring without date_from: totalIntervals days up to date_to", "UTC", {
        "retentionFilter": {"period": "Day", "totalIntervals": 6, "cumulative": True},
        "dateRange": {"date_to": "2026-10-12"}}),
    ("week recurring, pageview then purchased", "UTC", {
        "retentionFilter": {"period": "Week", "totalIntervals": 4,
                            "targetEntity": {"id": "$pageview", "type": "events"},
                            "returningEntity": {"id": "purchased", "type": "events"}},
        "dateRange": {"date_from": "2026-09-09", "date_to": "2026-10-28"}}),
    ("week first time", "UTC", {
        "retentionFilter": {"period": "Week", "retentionType": "retention_first_time",
                            "targetEntity": {"id": "$pageview", "type": "events"},
                            "returningEntity": {"id": "$pageview", "type": "events"}},
        "dateRange": {"date_from": "2026-09-20", "date_to": "2026-11-07"}}),
    ("Paris: day recurring across the DST change", "Europe/Paris", {
        "retentionFilter": {"period": "Day", "totalIntervals": 7},
        "dateRange": {"date_from": "2026-10-20", "date_to": "2026-10-29"}}),
    ("Paris: day first time", "Europe/Paris", {
        "retentionFilter": {"period": "Day", "totalIntervals": 5, "retentionType": "retention_first_time",
                            "targetEntity": {"id": "signed_up", "type": "events"},
                            "returningEntity": {"id": "$pageview", "type": "events"}},
        "dateRange": {"date_from": "2026-09-27", "date_to": "2026-10-08"}}),
    ("day first time, cumulative, with an event property filter", "UTC", {
        "retentionFilter": {"period": "Day", "totalIntervals": 8, "cumulative": True,
                            "retentionType": "retention_first_time",
                            "targetEntity": {"id": "$pageview", "type": "events"},
                            "returningEntity": {"id": "$pageview", "type": "events"}},
        "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}],
        "dateRange": {"date_from": "2026-10-01", "date_to": "2026-10-08"}}),
    ("week first time, minimumOccurrences 2", "UTC", {
        "retentionFilter": {"period": "Week", "totalIntervals": 5, "minimumOccurrences": 2,
                            "retentionType": "retention_first_time",
                            "targetEntity": {"id": "signed_up", "type": "events"},
                            "returningEntity": {"id": "$pageview", "type": "events"}},
        "dateRange": {"date_from": "2026-09-13", "date_to": "2026-10-31"}}),
    ("Paris: week recurring, cumulative", "Europe/Paris", {
        "retentionFilter": {"period": "Week", "totalIntervals": 5, "cumulative": True},
        "dateRange": {"date_from": "2026-09-13", "date_to": "2026-11-01"}}),
]


def interval_starts(period, date_range, total):
    """Local (naive) starts of the cohorts' intervals, from the documented rounding rules."""
    step = datetime.timedelta(days=1 if period == "Day" else 7)

    def round_down(day):
        return day if period == "Day" else day - datetime.timedelta(days=(day.weekday() + 1) % 7)

    end = round_down(datetime.date.fromisoformat(date_range["date_to"]) + step)
    if date_range.get("date_from"):
        start = round_down(datetime.date.fromisoformat(date_range["date_from"]))
    else:
        start = round_down(end - total * step)
    starts = []
    while start < end:
        starts.append(datetime.datetime.combine(start, datetime.time()))
        start += step
    return starts


def expected(connection, timezone, node):
    """PostHog's response, computed in DuckDB from the rules in the module docstring."""
    flt = node["retentionFilter"]
    period = flt.get("period", "Day")
    total = flt.get("totalIntervals", 8)
    target = (flt.get("targetEntity") or {}).get("id", "$pageview")
    returning = (flt.get("returningEntity") or {}).get("id", "$pageview")
    minimum = flt.get("minimumOccurrences", 1)
    starts = interval_starts(period, node["dateRange"], total)
    connection.execute("CREATE OR REPLACE TEMP TABLE intervals (idx INTEGER, start_local TIMESTAMP)")
    connection.executemany("INSERT INTO intervals VALUES (?, ?)", list(enumerate(starts)))
    local = f"timezone('{timezone}', timestamp::TIMESTAMPTZ)"
    bucket = (f"date_trunc('day', {local})" if period == "Day"
              else f"date_trunc('week', {local} + INTERVAL 1 DAY) - INTERVAL 1 DAY")
    where = "true"
    for prop in node.get("properties", []):
        where += f" AND json_extract_string(properties, '$.{prop['key']}') = '{prop['value']}'"
    if flt.get("retentionType") == "retention_first_time":
        cohorts = f"""
            SELECT f.actor, i.idx FROM (
                SELECT person_id AS actor, min(timestamp) AS first_ts FROM events
                WHERE event = $target AND {where} GROUP BY person_id) f
            JOIN intervals i ON i.start_local = {bucket.replace('timestamp', 'f.first_ts')}"""
    else:
        cohorts = f"""
            SELECT DISTINCT person_id AS actor, i.idx FROM events
            JOIN intervals i ON i.start_local = {bucket}
            WHERE event = $target AND {where}"""
    sql = f"""
        WITH cohorts AS ({cohorts}),
        returns AS (
            SELECT person_id AS actor, i.idx FROM events JOIN intervals i ON i.start_local = {bucket}
            WHERE event = $returning AND {where} GROUP BY person_id, i.idx HAVING count(*) >= $minimum),
        reached AS (
            SELECT actor, idx AS cohort, 0 AS k FROM cohorts
            UNION ALL
            SELECT c.actor, c.idx, r.idx - c.idx FROM cohorts c JOIN returns r USING (actor)
            WHERE r.idx > c.idx AND r.idx - c.idx < $total)
        SELECT cohort, k, count(DISTINCT actor) FROM (
            {"SELECT actor, cohort, unnest(range(0, last + 1)) AS k FROM "
             "(SELECT actor, cohort, max(k) AS last FROM reached GROUP BY actor, cohort)"
             if flt.get("cumulative") else "SELECT * FROM reached"})
        GROUP BY cohort, k"""
    counts = {(cohort, k): n for cohort, k, n in connection.execute(
        sql, {"target": target, "returning": returning, "minimum": minimum, "total": total}).fetchall()}
    zone = ZoneInfo(timezone)
    return [{
        "date": start.replace(tzinfo=zone).isoformat(),
        "label": f"{period} {index}",
        "values": [{"count": counts.get((index, k), 0), "label": f"{period} {k}"} for k in range(total)],
    } for index, start in enumerate(starts)]


def run_query(server, node):
    query = {"kind": "RetentionQuery", **node}
    return post_node(server, query)


def describe(results, limit=6):
    rows = [f"{row.get('date')} {row.get('label')}: {[v.get('count') for v in row.get('values', [])]}"
            for row in results[:limit]]
    if len(results) > limit:
        rows.append(f"... {len(results)} rows in all")
    return "\n      ".join(rows) or "(no rows)"


def compare(name, timezone, node, server, connection):
    want = expected(connection, timezone, node)
    if not any(v["count"] for row in want for v in row["values"][1:]):
        return f"{name}: DuckDB finds no returning actor, so the case proves nothing"
    status, body = run_query(server, node)
    if status != 200:
        return f"{name}: HTTP {status}: {json.dumps(body)}"
    ours = body.get("results")
    if ours == want:
        return None
    return (f"{name}: results differ\n  node: {json.dumps(node)}\n"
            f"  ours:\n      {describe(ours or [])}\n  DuckDB's:\n      {describe(want)}")


INVALID = [
    ({"retentionFilter": {"period": "Year"}}, "retentionFilter.period"),
    ({"retentionFilter": {"totalIntervals": -1}}, "retentionFilter.totalIntervals"),
    ({"retentionFilter": {"retentionType": "sometimes"}}, "retentionFilter.retentionType"),
]


def check(backend, events):
    with loaded(backend, events) as (server, connection, logs):
        failures = []
        zone = "UTC"
        for name, timezone, node in CASES:
            if timezone != zone:
                set_timezone(server, timezone)
                zone = timezone
            problem = compare(name, timezone, node, server, connection)
            if problem:
                failures.append(problem)
        expect_refusals(server, INVALID, failures, run=run_query)
        report(backend, failures, logs, len(CASES) + len(INVALID))
        print(f"{backend}: {len(CASES)} retention queries match DuckDB over the Delta table, "
              f"and {len(INVALID)} invalid nodes are 400s")


def main():
    events = make_events()
    run_on_backends("retention-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
