"""StickinessQuery and LifecycleQuery answers against an independent computation in DuckDB, on
both storage backends.

About 850 seeded events of 40 users between 15 January and 31 March 2024 go in through
`POST /batch/`, in time order, so each person is created at their first event: ten users start
before the ranges asked about, thirty inside them. The project's Delta table is read with
`deltalake` into DuckDB; each event's interval (day, Sunday week, month) comes from DuckDB's own
time-zone conversion, the interval lists and range bounds from Python's zoneinfo. Stickiness is
counted in DuckDB (distinct intervals per person, then persons per count); lifecycle statuses
are classified here in Python from each person's active intervals and first event, following
PostHog's runner (new / returning / resurrecting / dormant), not our SQL. Covered: day, week and
month intervals, several series, series and node property filters, cumulative stickiness,
stickinessCriteria, compare with the previous period, toggled lifecycles, UTC and
America/New_York (across the 10 March DST change), and 400s naming the field.

Run: `python tests/sdk/test_stickiness_lifecycle_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import datetime
import json
import os
import random
import sys
import uuid
import zoneinfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
from test_posthog_sdk import run_on_backends  # noqa: E402
from node_harness import loaded, post_node, post_query, report, set_timezone  # noqa: E402

UTC = datetime.timezone.utc
NEW_YORK = "America/New_York"
USERS = [f"sticky-user-{k:02d}" for k in range(40)]
BROWSERS = ["Chrome", "Chrome", "Firefox", "Safari"]
CHROME = [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}]
STATUSES = ["new", "returning", "resurrecting", "dormant"]


def make_events():
    """Deterministic events in time order: users 0-9 start in January or February, the others
    in March; each is active on some days (a few events each) until the end of March."""
    rng = random.Random(20240301)
    events = []
    for index, distinct_id in enumerate(USERS):
        if index < 10:
            first_day = datetime.date(2024, 1, 15) + datetime.timedelta(days=rng.randrange(36))
        else:
            first_day = datetime.date(2024, 3, 1) + datetime.timedelta(days=rng.randrange(25))
        activity = rng.uniform(0.1, 0.6)
        day = first_day
        while day <= datetime.date(2024, 3, 31):
            if day == first_day or rng.random() < activity:
                for _ in range(rng.randrange(1, 4)):
                    moment = datetime.datetime.combine(day, datetime.time(), UTC) + datetime.timedelta(
                        seconds=rng.randrange(86400), microseconds=rng.randrange(1, 1_000_000))
                    events.append({
                        "event": rng.choices(["$pageview", "signed_up", "purchased"], [70, 10, 20])[0],
                        "distinct_id": distinct_id,
                        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                        "timestamp": moment.isoformat().replace("+00:00", "Z"),
                        "properties": {"$browser": rng.choice(BROWSERS)},
                    })
            day += datetime.timedelta(days=1)
    events.sort(key=lambda event: event["timestamp"])
    return events


# --- Intervals, independently of the server: zoneinfo for bounds, Python dates for lists -----

def local_midnight(day, tz):
    return datetime.datetime.combine(day, datetime.time(), zoneinfo.ZoneInfo(tz)).astimezone(UTC)


def interval_start(day, interval):
    if interval == "day":
        return day
    if interval == "week":  # weeks start on Sunday
        return day - datetime.timedelta(days=(day.weekday() + 1) % 7)
    return day.replace(day=1)


def next_start(day, interval):
    if interval == "day":
        return day + datetime.timedelta(days=1)
    if interval == "week":
        return day + datetime.timedelta(days=7)
    return (day.replace(day=28) + datetime.timedelta(days=4)).replace(day=1)


def interval_list(date_from, date_to, interval):
    """Starts of every interval from the one holding date_from through the one holding date_to."""
    starts, start = [], interval_start(date_from, interval)
    while start <= date_to:
        starts.append(start)
        start = next_start(start, interval)
    return starts


def literal(moment):
    return f"TIMESTAMPTZ '{moment.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}+00'"


def interval_key(tz, interval, column="ts"):
    """DuckDB text of the interval start holding `column`, in the project's zone."""
    local = f"timezone('{tz}', {column})"
    if interval == "day":
        return f"strftime({local}, '%Y-%m-%d')"
    if interval == "week":  # DuckDB: dayofweek(Sunday) = 0
        return f"strftime(cast({local} as date) - cast(dayofweek({local}) as integer), '%Y-%m-%d')"
    if interval == "month":
        return f"strftime({local}, '%Y-%m-01')"
    raise ValueError(interval)


# --- Expected answers --------------------------------------------------------------------------

def expected_stickiness(connection, tz, interval, date_from, date_to, where, cumulative=False, min_count=None):
    """PostHog's stickiness result for one series, computed in DuckDB."""
    starts = interval_list(date_from, date_to, interval)
    lo = local_midnight(starts[0], tz)
    hi = local_midnight(date_to + datetime.timedelta(days=1), tz) - datetime.timedelta(microseconds=1)
    having = f"having count(*) >= {min_count}" if min_count else ""
    rows = connection.sql(f"""
        select n, count(*) from (
            select person_id, count(*) n from (
                select person_id, {interval_key(tz, interval)} k from ev
                where ts >= {literal(lo)} and ts <= {literal(hi)} and ({where})
                group by person_id, k {having})
            group by person_id)
        group by n""").fetchall()
    counts = dict(rows)
    data = [counts.get(n, 0) for n in range(1, len(starts) + 1)]
    count = sum(data)
    if cumulative:
        data = [sum(data[k:]) for k in range(len(data))]
    unit = lambda n: f"{n} {interval}{'' if n == 1 else 's'}" + (" or more" if cumulative else "")
    return {"data": data, "count": count, "days": list(range(1, len(starts) + 1)),
            "labels": [unit(n) for n in range(1, len(starts) + 1)]}


def expected_lifecycle(connection, tz, interval, date_from, date_to, where):
    """PostHog's four lifecycle results, classified here from DuckDB's active intervals."""
    starts = interval_list(date_from, date_to, interval)
    before = interval_start(starts[0] - datetime.timedelta(days=1), interval)
    after = next_start(starts[-1], interval)
    lo, hi = local_midnight(before, tz), local_midnight(after, tz)
    keys = [before.isoformat()] + [s.isoformat() for s in starts] + [after.isoformat()]
    position = {key: k for k, key in enumerate(keys)}
    active = {}
    for person, key in connection.sql(f"""
            select distinct person_id, {interval_key(tz, interval)} from ev
            where ts >= {literal(lo)} and ts < {literal(hi)} and ({where})""").fetchall():
        active.setdefault(person, []).append(position[key])
    created = dict(connection.sql(f"select person_id, {interval_key(tz, interval, 'min(ts)')} from ev group by person_id").fetchall())
    counts = {status: [0] * len(keys) for status in STATUSES}
    for person, periods in active.items():
        periods.sort()
        created_at = position.get(created[person])  # None: created outside the intervals read
        for k, current in enumerate(periods):
            previous = created_at if k == 0 else periods[k - 1]
            if previous == current:
                status = "new"
            elif k > 0 and previous == current - 1:
                status = "returning"
            else:
                status = "resurrecting"
            counts[status][current] += 1
            following = periods[k + 1] if k + 1 < len(periods) else None
            if following != current + 1 and current + 1 < len(keys):
                counts["dormant"][current + 1] -= 1
    days = [s.isoformat() for s in starts]
    return [{"status": status, "days": days, "data": [float(n) for n in counts[status][1:-1]],
             "count": float(sum(counts[status][1:-1]))} for status in STATUSES]


# --- Comparing -----------------------------------------------------------------------------

def check_results(name, body, expected, failures):
    results = body.get("results") or []
    if len(results) != len(expected):
        failures.append(f"{name}: {len(results)} results, expected {len(expected)}: {json.dumps(body)[:1500]}")
        return
    for index, (ours, theirs) in enumerate(zip(results, expected)):
        for key, value in theirs.items():
            if ours.get(key) != value:
                failures.append(f"{name}: result {index} {key}: ours {json.dumps(ours.get(key))}, DuckDB {json.dumps(value)}")


def run(server, name, node, failures):
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"{name}: HTTP {status} {body}")
        return None
    return body


def expect_400(server, name, node, attr, failures):
    status, body = post_node(server, node)
    if status != 400 or body.get("attr") != attr:
        failures.append(f"{name}: want a 400 on {attr}, got {status} {body}")


# --- Cases -----------------------------------------------------------------------------------

def stickiness_cases(server, connection, tz, failures):
    d = datetime.date
    # Two series, days; the second filtered to Chrome.
    node = {"kind": "StickinessQuery", "interval": "day",
            "dateRange": {"date_from": "2024-03-04", "date_to": "2024-03-17"},
            "series": [{"kind": "EventsNode", "event": "$pageview"},
                       {"kind": "EventsNode", "event": "purchased", "properties": CHROME}]}
    body = run(server, f"{tz} stickiness days", node, failures)
    if body:
        first = expected_stickiness(connection, tz, "day", d(2024, 3, 4), d(2024, 3, 17), "event = '$pageview'")
        second = expected_stickiness(connection, tz, "day", d(2024, 3, 4), d(2024, 3, 17),
                                     "event = 'purchased' and json_extract_string(properties, '$.\"$browser\"') = 'Chrome'")
        assert first["count"] > 10 and max(first["data"][2:]) > 0, f"too little data for a real check: {first}"
        check_results(f"{tz} stickiness days", body, [dict(first, label="$pageview"), dict(second, label="purchased")], failures)
        action = body["results"][1].get("action")
        if action != {"order": 1, "type": "events", "name": "purchased", "id": "purchased"}:
            failures.append(f"{tz} stickiness days: action {action}")

    # Weeks, all events, cumulative.
    node = {"kind": "StickinessQuery", "interval": "week", "stickinessFilter": {"computedAs": "cumulative"},
            "dateRange": {"date_from": "2024-02-07", "date_to": "2024-03-30"},
            "series": [{"kind": "EventsNode", "event": None}]}
    body = run(server, f"{tz} stickiness weeks cumulative", node, failures)
    if body:
        check_results(f"{tz} stickiness weeks cumulative", body, [dict(
            expected_stickiness(connection, tz, "week", d(2024, 2, 7), d(2024, 3, 30), "true", cumulative=True),
            label="All events")], failures)

    # Months, node property filter, and an interval needing two events (stickinessCriteria).
    node = {"kind": "StickinessQuery", "interval": "month", "properties": CHROME,
            "dateRange": {"date_from": "2024-01-01", "date_to": "2024-03-31"},
            "stickinessFilter": {"stickinessCriteria": {"operator": "gte", "value": 2}},
            "series": [{"kind": "EventsNode", "event": "$pageview"}]}
    body = run(server, f"{tz} stickiness months", node, failures)
    if body:
        check_results(f"{tz} stickiness months", body, [expected_stickiness(
            connection, tz, "month", d(2024, 1, 1), d(2024, 3, 31),
            "event = '$pageview' and json_extract_string(properties, '$.\"$browser\"') = 'Chrome'", min_count=2)], failures)

    # Compare with the previous seven days.
    node = {"kind": "StickinessQuery", "compareFilter": {"compare": True},
            "dateRange": {"date_from": "2024-03-15", "date_to": "2024-03-21"},
            "series": [{"kind": "EventsNode", "event": "$pageview"}]}
    body = run(server, f"{tz} stickiness compare", node, failures)
    if body:
        check_results(f"{tz} stickiness compare", body, [
            dict(expected_stickiness(connection, tz, "day", d(2024, 3, 15), d(2024, 3, 21), "event = '$pageview'"),
                 compare_label="current"),
            dict(expected_stickiness(connection, tz, "day", d(2024, 3, 8), d(2024, 3, 14), "event = '$pageview'"),
                 compare_label="previous"),
        ], failures)


def lifecycle_cases(server, connection, tz, failures):
    d = datetime.date
    for interval, date_from, date_to in (("day", d(2024, 3, 1), d(2024, 3, 14)),
                                         ("week", d(2024, 2, 4), d(2024, 3, 30)),
                                         ("month", d(2024, 1, 1), d(2024, 3, 31))):
        name = f"{tz} lifecycle {interval}s"
        node = {"kind": "LifecycleQuery", "interval": interval,
                "dateRange": {"date_from": date_from.isoformat(), "date_to": date_to.isoformat()},
                "series": [{"kind": "EventsNode", "event": "$pageview"}]}
        body = run(server, name, node, failures)
        if body:
            expected = expected_lifecycle(connection, tz, interval, date_from, date_to, "event = '$pageview'")
            if interval == "day" and not all(any(r["data"]) for r in expected):
                raise AssertionError(f"{name}: a status never occurs, so the case proves little: {expected}")
            for result in expected:
                result["label"] = f"$pageview - {result['status']}"
            check_results(name, body, expected, failures)

    # Toggled lifecycles only hide statuses in PostHog's frontend: all four come back.
    name = f"{tz} lifecycle toggled, Chrome only"
    node = {"kind": "LifecycleQuery", "interval": "day", "properties": CHROME,
            "lifecycleFilter": {"toggledLifecycles": ["new", "dormant"]},
            "dateRange": {"date_from": "2024-03-05", "date_to": "2024-03-18"},
            "series": [{"kind": "EventsNode", "event": None}]}
    body = run(server, name, node, failures)
    if body:
        expected = expected_lifecycle(connection, tz, "day", d(2024, 3, 5), d(2024, 3, 18),
                                      "json_extract_string(properties, '$.\"$browser\"') = 'Chrome'")
        for result in expected:
            result["label"] = f"All events - {result['status']}"
        check_results(name, body, expected, failures)


def refusals(server, failures):
    base = {"kind": "StickinessQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}]}
    expect_400(server, "computedAs", dict(base, stickinessFilter={"computedAs": "often"}),
               "query.stickinessFilter.computedAs", failures)
    # An action that is not the project's (actions themselves are checked by test_actions_duckdb.py).
    expect_400(server, "unknown action", dict(base, series=[{"kind": "ActionsNode", "id": 987654}]), "query.series[0].id", failures)
    expect_400(server, "unknown field", dict(base, stickinesFilter={}), "query.stickinesFilter", failures)
    lifecycle = {"kind": "LifecycleQuery", "series": [{"kind": "EventsNode", "event": "$pageview"}]}
    expect_400(server, "toggledLifecycles", dict(lifecycle, lifecycleFilter={"toggledLifecycles": ["new", "gone"]}),
               "query.lifecycleFilter.toggledLifecycles[1]", failures)
    expect_400(server, "lifecycle all", dict(lifecycle, dateRange={"date_from": "all"}), "query.dateRange.date_from", failures)


def check_persons_created_at_first_event(server, connection, failures):
    """The lifecycle oracle takes a person's first event as their creation: check the premise."""
    status, body = post_query(server, "select id, created_at from persons limit 1000")
    if status != 200:
        failures.append(f"persons: HTTP {status} {body}")
        return
    ours = {row[0]: datetime.datetime.fromisoformat(row[1]).astimezone(UTC) for row in body["results"]}
    first = {person: moment.astimezone(UTC) for person, moment in
             connection.sql("select person_id, min(ts) from ev group by person_id").fetchall()}
    if ours != first:
        different = [p for p in first if ours.get(p) != first[p]][:3]
        failures.append(f"persons: created_at is not the first event's time for {different}: "
                        f"{[(ours.get(p), first[p]) for p in different]}")


def check(backend, events):
    with loaded(backend, events, view=True) as (server, connection, logs):
        failures = []
        check_persons_created_at_first_event(server, connection, failures)
        stickiness_cases(server, connection, "UTC", failures)
        lifecycle_cases(server, connection, "UTC", failures)
        refusals(server, failures)
        set_timezone(server, NEW_YORK)
        stickiness_cases(server, connection, NEW_YORK, failures)
        lifecycle_cases(server, connection, NEW_YORK, failures)
        report(backend, failures, logs, "the stickiness and lifecycle")
        print(f"{backend}: every StickinessQuery and LifecycleQuery matches DuckDB over the Delta table")


def main():
    events = make_events()
    run_on_backends("stickiness-lifecycle-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
