"""TrendsQuery answers against an independent computation in DuckDB, on both storage backends.

About 1,500 seeded events between 2024-03-01 and 2024-03-20 (none from 5 to 7 March UTC, so a
whole day is empty in UTC and in New York) go in through `POST /batch/`. The project's Delta table
is read with `deltalake` into DuckDB, and each TrendsQuery's expected series is computed there:
buckets come from DuckDB's own time-zone conversion and date_trunc, the bucket lists and range
bounds from Python's zoneinfo, and the breakdown "other" bucket from a window-ranked join (not
the compiler's IN/NOT IN). Covered: day/hour/week buckets in UTC and in America/New_York (across
the 10 March DST change), empty buckets, dau, weekly_active, a property math (sum, p90, avg),
a breakdown with "other" (the missing value ranked last), formulas, compare with the previous period, a total-value
display, and 400s naming the field.

Run: `python tests/sdk/test_trends_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import datetime
import json
import math
import os
import random
import sys
import zoneinfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
from test_posthog_sdk import run_on_backends  # noqa: E402
from node_harness import loaded, post_node, report, seeded_event, set_timezone  # noqa: E402

UTC = datetime.timezone.utc
NEW_YORK = "America/New_York"
OTHER = "$$_posthog_breakdown_other_$$"
NULL_SENTINEL = "$$_posthog_breakdown_null_$$"
USERS = [f"trend-user-{k:02d}" for k in range(30)]
BROWSERS = ["Chrome", "Chrome", "Chrome", "Firefox", "Firefox", "Safari", "Edge", "Opera"]


def make_events():
    """Deterministic events; 5-7 March UTC (all of 5 March in New York) stay empty."""
    rng = random.Random(20240310)
    start = datetime.datetime(2024, 3, 1, tzinfo=UTC)
    gap = (datetime.datetime(2024, 3, 5, tzinfo=UTC), datetime.datetime(2024, 3, 7, tzinfo=UTC))
    events = []
    while len(events) < 1500:
        moment = start + datetime.timedelta(seconds=rng.randrange(20 * 86400), microseconds=rng.randrange(1, 1_000_000))
        if gap[0] <= moment < gap[1]:
            continue
        distinct_id = rng.choice(USERS)
        properties = {"$session_id": f"{distinct_id}-{rng.randrange(3)}"}
        roll = rng.random()
        if roll < 0.8:
            properties["$browser"] = rng.choice(BROWSERS)
        elif roll < 0.87:
            properties["$browser"] = ""
        elif roll < 0.93:
            properties["$browser"] = None
        roll = rng.random()
        if roll < 0.5:
            properties["amount"] = rng.randrange(0, 300)
        elif roll < 0.8:
            properties["amount"] = round(rng.uniform(0, 300), 2)
        elif roll < 0.87:
            properties["amount"] = rng.choice(["12", "n/a", "7.5"])
        name = rng.choices(["$pageview", "signed_up", "purchased"], [70, 12, 18])[0]
        events.append(seeded_event(rng, name, distinct_id, moment, properties))
    return events


DUCKDB_MACROS = [
    "CREATE MACRO prop(j, path) AS nullif(json_extract_string(j, path), '')",
    "CREATE MACRO to_float(x) AS TRY_CAST(x AS DOUBLE)",
]
BROWSER = "prop(properties, '$.\"$browser\"')"
AMOUNT = "to_float(prop(properties, '$.amount'))"


# --- Dates, independently of the server: zoneinfo for bounds and bucket lists ---------------

def local_midnight(day, tz):
    return datetime.datetime.combine(day, datetime.time(), zoneinfo.ZoneInfo(tz))


def day_range(date_from, date_to, tz):
    """Bounds of whole local days, as UTC instants: [from 00:00, to 23:59:59.999999]."""
    start = local_midnight(date_from, tz).astimezone(UTC)
    end = (local_midnight(date_to + datetime.timedelta(days=1), tz) - datetime.timedelta(microseconds=1)).astimezone(UTC)
    return start, end


def day_buckets(date_from, date_to):
    return [(date_from + datetime.timedelta(days=k)).isoformat() for k in range((date_to - date_from).days + 1)]


def sunday_of(day):
    return day - datetime.timedelta(days=(day.weekday() + 1) % 7)


def literal(moment):
    return f"TIMESTAMPTZ '{moment.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}+00'"


def local_key(tz, interval):
    """DuckDB text of an event's bucket, in the project's zone."""
    local = f"timezone('{tz}', ts)"
    if interval == "day":
        return f"strftime({local}, '%Y-%m-%d')"
    if interval == "hour":
        return f"strftime(date_trunc('hour', {local}), '%Y-%m-%d %H:%M:%S')"
    if interval == "week":  # weeks start on Sunday (DuckDB: dayofweek(Sunday) = 0)
        return f"strftime(cast({local} as date) - cast(dayofweek({local}) as integer), '%Y-%m-%d')"
    raise ValueError(interval)


def series_by_bucket(connection, tz, interval, bounds, where, aggregate):
    """{bucket text: value} over events in bounds (inclusive) that match `where`."""
    rows = connection.sql(
        f"select {local_key(tz, interval)} b, {aggregate} v from ev "
        f"where ts >= {literal(bounds[0])} and ts <= {literal(bounds[1])} and ({where}) group by b"
    ).fetchall()
    return {b: v for b, v in rows}


def zero_filled(values, buckets):
    return [values.get(b, 0) for b in buckets]


# --- Comparing -----------------------------------------------------------------------------

def close(a, b, rel=1e-9):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b))
    return a == b


def check_results(name, body, expected, failures, fields=("breakdown_value", "days", "data", "aggregated_value", "compare_label", "label")):
    """`expected`: one dict per result, in order, with any of `fields`."""
    results = body.get("results") or []
    if len(results) != len(expected):
        failures.append(f"{name}: {len(results)} results, expected {len(expected)}\n  ours: "
                        f"{json.dumps([{k: r.get(k) for k in fields} for r in results])[:2000]}\n  DuckDB: {json.dumps(expected)[:2000]}")
        return
    for index, (ours, theirs) in enumerate(zip(results, expected)):
        for key, value in theirs.items():
            if key == "rel":
                continue
            if not close(ours.get(key), value, theirs.get("rel", 1e-9) if key != "rel" else 1e-9):
                failures.append(f"{name}: result {index} {key}: ours {json.dumps(ours.get(key))}, DuckDB {json.dumps(value)}")


# --- Cases -----------------------------------------------------------------------------------

def utc_cases(server, connection, failures):
    d = datetime.date
    # Two series, day buckets in UTC, the empty 5-6 March and the empty days after the data.
    date_from, date_to = d(2024, 3, 2), d(2024, 3, 22)
    bounds = day_range(date_from, date_to, "UTC")
    buckets = day_buckets(date_from, date_to)
    node = {"kind": "TrendsQuery", "interval": "day",
            "dateRange": {"date_from": "2024-03-02", "date_to": "2024-03-22"},
            "series": [{"kind": "EventsNode", "event": "$pageview"},
                       {"kind": "EventsNode", "event": None, "math": "dau"},
                       {"kind": "EventsNode", "event": "purchased", "math": "unique_session"}]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"utc day series: HTTP {status} {body}")
    else:
        pageviews = zero_filled(series_by_bucket(connection, "UTC", "day", bounds, "event = '$pageview'", "count(*)"), buckets)
        dau = zero_filled(series_by_bucket(connection, "UTC", "day", bounds, "true", "count(distinct person_id)"), buckets)
        sessions = zero_filled(series_by_bucket(connection, "UTC", "day", bounds, "event = 'purchased'",
                                                "count(distinct \"$session_id\")"), buckets)
        assert pageviews[3] == 0 and pageviews[4] == 0 and pageviews[-1] == 0, "the seeded gap is missing"
        check_results("utc day series", body, [
            {"days": buckets, "data": pageviews, "label": "$pageview", "count": float(sum(pageviews))},
            {"days": buckets, "data": dau, "label": "All events"},
            {"days": buckets, "data": sessions, "label": "purchased"},
        ], failures)
        first = body["results"][0]
        if first.get("labels", [None])[0] != "2-Mar-2024" or body.get("hasMore") is not False:
            failures.append(f"utc day series: labels {first.get('labels', [])[:2]}, hasMore {body.get('hasMore')!r}")

    # Breakdown by $browser, dau, top 3 + "other" (other = distinct persons of every other value). As
    # PostHog ranks them, the missing value ("none") comes after every real value, so with five
    # browsers it is part of "other" (test_breakdowns_duckdb.py shows it with a larger limit).
    date_from, date_to = d(2024, 3, 8), d(2024, 3, 14)
    bounds = day_range(date_from, date_to, "UTC")
    buckets = day_buckets(date_from, date_to)
    node = {"kind": "TrendsQuery", "interval": "day",
            "dateRange": {"date_from": "2024-03-08", "date_to": "2024-03-14"},
            "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
            "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event", "breakdown_limit": 3}}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"breakdown dau: HTTP {status} {body}")
    else:
        rows = connection.sql(f"""
            with base as (
                select coalesce({BROWSER}, '{NULL_SENTINEL}') bv, {local_key('UTC', 'day')} b, person_id
                from ev where event = '$pageview' and ts >= {literal(bounds[0])} and ts <= {literal(bounds[1])}),
            per_bucket as (select bv, b, count(distinct person_id) n from base group by bv, b),
            ranking as (select bv, row_number() over (order by bv = '{NULL_SENTINEL}', sum(n) desc, bv) position
                        from per_bucket group by bv),
            labelled as (select case when r.position <= 3 then base.bv else '{OTHER}' end bv, base.b, base.person_id
                         from base join ranking r on r.bv = base.bv)
            select bv, b, count(distinct person_id) from labelled group by bv, b""").fetchall()
        per_value = {}
        for bv, b, n in rows:
            per_value.setdefault(bv, {})[b] = n
        ordered = sorted(per_value.items(), key=lambda item: (
            {OTHER: 2, NULL_SENTINEL: 1}.get(item[0], 0), -sum(item[1].values()), item[0]))
        expected = [{"breakdown_value": "none" if bv == NULL_SENTINEL else bv, "data": zero_filled(values, buckets)}
                    for bv, values in ordered]
        if OTHER not in per_value:
            failures.append(f"breakdown dau: the data has no 'other' value, so the case proves little: {sorted(per_value)}")
        check_results("breakdown dau", body, expected, failures)
        if body.get("hasMore") is not True:
            failures.append(f"breakdown dau: hasMore {body.get('hasMore')!r}, want true")

    # Formulas over two series (division by zero gives 0) and compare with the previous week.
    node = {"kind": "TrendsQuery", "interval": "day",
            "dateRange": {"date_from": "2024-03-12", "date_to": "2024-03-18"},
            "series": [{"kind": "EventsNode", "event": "purchased"}, {"kind": "EventsNode", "event": "signed_up"}],
            "trendsFilter": {"formulaNodes": [{"formula": "(A - B) / B * 100"}, {"formula": "A + 2 * B", "custom_name": "weighted"}]},
            "compareFilter": {"compare": True}}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"formula + compare: HTTP {status} {body}")
    else:
        expected = []
        for formula in ("ratio", "weighted"):
            for label, (date_from, date_to) in (("current", (d(2024, 3, 12), d(2024, 3, 18))),
                                                ("previous", (d(2024, 3, 5), d(2024, 3, 11)))):
                bounds = day_range(date_from, date_to, "UTC")
                buckets = day_buckets(date_from, date_to)
                a = zero_filled(series_by_bucket(connection, "UTC", "day", bounds, "event = 'purchased'", "count(*)"), buckets)
                b = zero_filled(series_by_bucket(connection, "UTC", "day", bounds, "event = 'signed_up'", "count(*)"), buckets)
                if formula == "ratio":
                    data = [(x - y) / y * 100 if y else 0.0 for x, y in zip(a, b)]
                else:
                    data = [x + 2 * y for x, y in zip(a, b)]
                expected.append({"days": buckets, "data": data, "compare_label": label,
                                 "label": "Formula ((A - B) / B * 100)" if formula == "ratio" else "weighted"})
        check_results("formula + compare", body, expected, failures)

    # Series and node property filters.
    date_from, date_to = d(2024, 3, 8), d(2024, 3, 14)
    bounds = day_range(date_from, date_to, "UTC")
    buckets = day_buckets(date_from, date_to)
    node = {"kind": "TrendsQuery", "dateRange": {"date_from": "2024-03-08", "date_to": "2024-03-14"},
            "properties": [{"key": "amount", "operator": "is_set", "type": "event"}],
            "series": [{"kind": "EventsNode", "event": "$pageview",
                        "properties": [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}]}]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"property filters: HTTP {status} {body}")
    else:
        counts = zero_filled(series_by_bucket(connection, "UTC", "day", bounds,
                                              f"event = '$pageview' and {BROWSER} = 'Chrome' and prop(properties, '$.amount') is not null",
                                              "count(*)"), buckets)
        check_results("property filters", body, [{"days": buckets, "data": counts}], failures)

    # A total-value display: one average per series over the range.
    bounds = day_range(d(2024, 3, 1), d(2024, 3, 20), "UTC")
    node = {"kind": "TrendsQuery", "dateRange": {"date_from": "2024-03-01", "date_to": "2024-03-20"},
            "trendsFilter": {"display": "BoldNumber"},
            "series": [{"kind": "EventsNode", "event": "purchased", "math": "avg", "math_property": "amount"}]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"BoldNumber avg: HTTP {status} {body}")
    else:
        (average,) = connection.sql(f"select coalesce(avg({AMOUNT}), 0) from ev where event = 'purchased' "
                                    f"and ts >= {literal(bounds[0])} and ts <= {literal(bounds[1])}").fetchall()[0]
        check_results("BoldNumber avg", body, [{"aggregated_value": average, "data": []}], failures)

    # Invalid nodes: 400s naming the field.
    for node, attr in (
        ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "math": "sum"}]},
         "series[1].math_property"),
        ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode"}], "dateRange": {"date_from": "last week"}},
         "dateRange.date_from"),
        ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "math": "bogus"}]}, "series[0].math"),
    ):
        status, body = post_node(server, node)
        if status != 400 or not str((body or {}).get("attr", "")).endswith(attr):
            failures.append(f"invalid node {json.dumps(node)}: HTTP {status} {body}, want 400 naming {attr}")


def new_york_cases(server, connection, failures):
    d = datetime.date
    tz = NEW_YORK
    # Day buckets at local midnight across the 10 March DST change; sum and p90 of a property.
    date_from, date_to = d(2024, 3, 4), d(2024, 3, 12)
    bounds = day_range(date_from, date_to, tz)
    buckets = day_buckets(date_from, date_to)
    node = {"kind": "TrendsQuery", "interval": "day",
            "dateRange": {"date_from": "2024-03-04", "date_to": "2024-03-12"},
            "series": [{"kind": "EventsNode", "event": "$pageview"},
                       {"kind": "EventsNode", "event": "purchased", "math": "sum", "math_property": "amount"},
                       {"kind": "EventsNode", "event": None, "math": "p90", "math_property": "amount", "math_multiplier": 2}]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"new york days: HTTP {status} {body}")
    else:
        pageviews = zero_filled(series_by_bucket(connection, tz, "day", bounds, "event = '$pageview'", "count(*)"), buckets)
        sums = zero_filled(series_by_bucket(connection, tz, "day", bounds, "event = 'purchased'",
                                            f"coalesce(sum({AMOUNT}), 0)"), buckets)
        p90 = zero_filled(series_by_bucket(connection, tz, "day", bounds, "true",
                                           f"coalesce(quantile_cont({AMOUNT}, 0.9), 0) * 2"), buckets)
        assert pageviews[1] == 0, "5 March (New York) should be empty"
        check_results("new york days", body, [
            {"days": buckets, "data": pageviews}, {"days": buckets, "data": sums},
            # DataFusion's percentile_cont truncates the interpolation weight to 6 decimals.
            {"days": buckets, "data": p90, "rel": 1e-6},
        ], failures)
        want = {"date_from": "2024-03-04T00:00:00-05:00", "date_to": "2024-03-12T23:59:59.999999-04:00"}
        if body.get("resolved_date_range") != want:
            failures.append(f"new york days: resolved_date_range {body.get('resolved_date_range')}, want {want}")

    # Hour buckets on the DST day: 02:00 does not exist locally.
    start = datetime.datetime(2024, 3, 10, 0, 0, tzinfo=zoneinfo.ZoneInfo(tz)).astimezone(UTC)
    end = datetime.datetime(2024, 3, 10, 5, 59, 59, tzinfo=zoneinfo.ZoneInfo(tz)).astimezone(UTC)
    hours, moment = [], start
    while moment <= end:
        hours.append(moment.astimezone(zoneinfo.ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M:%S"))
        moment += datetime.timedelta(hours=1)
    node = {"kind": "TrendsQuery", "interval": "hour",
            "dateRange": {"date_from": "2024-03-10T00:00:00", "date_to": "2024-03-10T05:59:59"},
            "series": [{"kind": "EventsNode", "event": None}]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"new york hours: HTTP {status} {body}")
    else:
        counts = zero_filled(series_by_bucket(connection, tz, "hour", (start, end), "true", "count(*)"), hours)
        assert "2024-03-10 02:00:00" not in hours and len(hours) == 5
        check_results("new york hours", body, [{"days": hours, "data": counts}], failures)

    # Week buckets (Sunday) in New York, cumulative display.
    date_from, date_to = d(2024, 3, 6), d(2024, 3, 20)
    filter_from = sunday_of(date_from)
    bounds = day_range(filter_from, date_to, tz)
    weeks = [(filter_from + datetime.timedelta(days=7 * k)).isoformat() for k in range(3)]
    node = {"kind": "TrendsQuery", "interval": "week", "trendsFilter": {"display": "ActionsLineGraphCumulative"},
            "dateRange": {"date_from": "2024-03-06", "date_to": "2024-03-20"},
            "series": [{"kind": "EventsNode", "event": "signed_up"}]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"new york weeks: HTTP {status} {body}")
    else:
        counts = zero_filled(series_by_bucket(connection, tz, "week", bounds, "event = 'signed_up'", "count(*)"), weeks)
        running = [sum(counts[:k + 1]) for k in range(len(counts))]
        check_results("new york weeks", body, [{"days": weeks, "data": running}], failures)

    # Weekly active users: per local day, distinct persons in the 7 days ending at the next local midnight.
    date_from, date_to = d(2024, 3, 8), d(2024, 3, 14)
    bounds = day_range(date_from, date_to, tz)
    buckets = day_buckets(date_from, date_to)
    windows = []
    for k, day in enumerate(buckets):
        window_end = local_midnight(d.fromisoformat(day) + datetime.timedelta(days=1), tz)
        window_start = local_midnight(d.fromisoformat(day) - datetime.timedelta(days=6), tz)
        windows.append(f"({k}, {literal(window_start)}, {literal(window_end)})")
    rows = connection.sql(
        f"select w.k, count(distinct ev.person_id) from (values {', '.join(windows)}) w(k, lo, hi) "
        f"join ev on ev.ts > w.lo and ev.ts <= w.hi and ev.ts <= {literal(bounds[1])} group by w.k"
    ).fetchall()
    active = [dict(rows).get(k, 0) for k in range(len(buckets))]
    node = {"kind": "TrendsQuery", "interval": "day",
            "dateRange": {"date_from": "2024-03-08", "date_to": "2024-03-14"},
            "series": [{"kind": "EventsNode", "event": None, "math": "weekly_active"}]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"weekly active: HTTP {status} {body}")
    else:
        check_results("weekly active", body, [{"days": buckets, "data": active}], failures)


def check(backend, events):
    with loaded(backend, events, DUCKDB_MACROS, view=True) as (server, connection, logs):
        failures = []
        utc_cases(server, connection, failures)
        set_timezone(server, NEW_YORK)
        new_york_cases(server, connection, failures)
        report(backend, failures, logs, "the trends")
        print(f"{backend}: every TrendsQuery matches DuckDB over the Delta table")


def main():
    events = make_events()
    run_on_backends("trends-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
