"""FunnelsQuery answers against an independent computation, on both storage backends.

Seeded events go in through `POST /batch/`: hand-written per-person sequences (a step exactly at
the conversion window's edge, one second and one microsecond past it, steps out of order,
repeated steps, steps in the same instant, a strict funnel broken by another event, exclusions
inside and after an attempt, a clean retry after an excluded attempt) plus random people for
volume and a breakdown with an "Other" bucket. The project's Delta table is read with the
`deltalake` package into DuckDB, which picks each person's events in the date range; Python then
evaluates every person's sequence from those rows, attempt by attempt (each first-step event
starts one; an ordered attempt takes the earliest next step within the window, a strict one needs
the very next event, an unordered one counts the steps done within the window of its first
event), and sums the steps and conversion times per breakdown value. Each node also runs through
`POST /api/projects/:id/query/`; step counts must match exactly, average and median conversion
times to a relative 1e-9.

The rules written here, as PostHog's funnel UDF has them: the window is inclusive
(`t - start <= window`); a later first-step event restarts the clock (the latest start that gets
furthest wins, the earliest to get there); events in the same instant count in step order;
conversion times of 0 s are left out of averages and medians; in a strict funnel every event of
the person in the date range counts, and any event other than the next step (or a repeat of the
step just done) ends the attempt; an exclusion event while an
attempt is between funnelFromStep and funnelToStep (within its window) spoils that attempt, and a
person whose furthest attempt is spoiled is left out entirely.

Run: `python tests/sdk/test_funnels_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import collections
import datetime
import json
import math
import os
import random
import statistics
import sys
import threading
import uuid

import duckdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
from test_posthog_sdk import Server, run_on_backends  # noqa: E402
from test_query_duckdb import capture, drain, wait_until_visible  # noqa: E402
from test_retention_duckdb import request  # noqa: E402

UTC = datetime.timezone.utc
BASE = datetime.datetime(2026, 11, 2, tzinfo=UTC)
DATE_RANGE = {"date_from": "2026-11-01", "date_to": "2026-11-20"}
RANGE_FROM_US = int(datetime.datetime(2026, 11, 1, tzinfo=UTC).timestamp()) * 1_000_000
RANGE_TO_US = int(datetime.datetime(2026, 11, 21, tzinfo=UTC).timestamp()) * 1_000_000 - 1
HOUR = 3600
STEPS = ["$pageview", "signed_up", "purchased"]
BROWSERS = ["Chrome", "Firefox", "Safari", "Edge"]


def make_events():
    """Deterministic events: hand-written sequences, then random people."""
    rng = random.Random(20261102)
    events = []

    def add(person, seconds, name, browser="Chrome", micros=0):
        moment = BASE + datetime.timedelta(seconds=seconds, microseconds=micros)
        properties = {}
        if browser is not None:
            properties["$browser"] = browser
        events.append({
            "event": name,
            "distinct_id": person,
            "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "timestamp": moment.isoformat().replace("+00:00", "Z"),
            "properties": properties,
        })

    day = 86400
    # Each person in their own day, so no two sequences share a clock.
    sequences = {
        # The last step exactly at the 1-hour edge, one second past it, one microsecond past it.
        "edge": [(0, "$pageview"), (1800, "signed_up"), (3600, "purchased")],
        "past": [(0, "$pageview"), (1800, "signed_up"), (3601, "purchased")],
        # Steps out of order: the purchase before the signup does not count.
        "order": [(0, "signed_up"), (100, "$pageview"), (200, "purchased"), (300, "signed_up")],
        # A repeated first step restarts the clock; a repeated second step keeps the first one.
        "repeat": [(0, "$pageview"), (100, "$pageview"), (150, "signed_up"), (400, "signed_up"), (500, "purchased")],
        # Another event between the steps: fine when ordered, breaks a strict funnel.
        "strict_broken": [(0, "$pageview"), (10, "clicked_button"), (20, "signed_up"), (30, "purchased")],
        "strict_ok": [(0, "$pageview"), (5, "signed_up"), (7, "purchased"), (60, "clicked_button")],
        # Exclusion ($pageleave) between steps 0 and 1; after step 1; then a clean retry.
        "excluded": [(0, "$pageview"), (50, "$pageleave"), (100, "signed_up"), (200, "purchased")],
        "excluded_late": [(0, "$pageview"), (100, "signed_up"), (150, "$pageleave"), (200, "purchased")],
        "excluded_retry": [(0, "$pageview"), (10, "$pageleave"), (20, "signed_up"),
                           (10000, "$pageview"), (10030, "signed_up")],
        # Two steps in the same instant (a 0 s conversion, left out of the averages).
        "same_instant": [(1000, "$pageview"), (1000, "signed_up"), (1005, "purchased")],
        # Every step, in reverse order: only an unordered funnel completes it.
        "reverse": [(0, "purchased"), (100, "signed_up"), (200, "$pageview")],
        # Never the first step: only in unordered funnels.
        "no_start": [(0, "signed_up"), (40, "purchased")],
        # Slow: converts within 14 days, not within an hour.
        "slow": [(0, "$pageview"), (2 * day, "signed_up"), (5 * day, "purchased")],
    }
    for index, (name, steps) in enumerate(sequences.items()):
        for seconds, event in steps:
            add(f"case-{name}", index * day + seconds, event, browser=BROWSERS[index % 3])
    # One microsecond past the edge.
    offset = len(sequences) * day
    add("case-micro", offset, "$pageview")
    add("case-micro", offset + 10, "signed_up")
    add("case-micro", offset + 3600, "purchased", micros=1)

    # Random people (no exclusion events: those stay with the hand-written cases).
    names = ["$pageview", "signed_up", "purchased", "clicked_button", "viewed_pricing"]
    weights = [40, 20, 10, 15, 15]
    for person in range(160):
        browser_roll = rng.random()
        browser = (rng.choice(BROWSERS) if browser_roll < 0.8 else None if browser_roll < 0.9 else "")
        start = rng.randrange(14 * day)
        for _ in range(rng.randrange(1, 12)):
            seconds = start + rng.randrange(0, rng.choice([600, 2 * HOUR, 3 * day]))
            # Some people switch browsers: first/last touch then differ.
            this_browser = browser if rng.random() < 0.85 else rng.choice(BROWSERS)
            add(f"random-{person:03d}", seconds, rng.choices(names, weights)[0],
                browser=this_browser, micros=rng.randrange(1_000_000))
    # A few events outside the date range: never part of any funnel.
    add("outside", -2 * day, "$pageview")
    add("outside", -2 * day + 10, "signed_up")
    return events


# ---------------------------------------------------------------------------------------------
# The independent evaluation.

def step_series(names, properties=None):
    return [{"kind": "EventsNode", "event": name, **({"properties": properties[i]} if properties and properties[i] else {})}
            for i, name in enumerate(names)]


def matches(row, entity):
    if row["event"] != entity["event"]:
        return False
    for prop in entity.get("properties", []):
        value = row["browser"]
        if prop["operator"] == "exact" and value != prop["value"]:
            return False
    return True


def masks(row, node):
    """Bit i: the row is step i. Exclusion bit s: it spoils an attempt standing at step s."""
    series = node["series"]
    steps = sum(1 << i for i, entity in enumerate(series) if matches(row, entity))
    exclusions = 0
    for exclusion in (node.get("funnelsFilter") or {}).get("exclusions", []):
        if matches(row, exclusion):
            for s in range(exclusion["funnelFromStep"], exclusion["funnelToStep"]):
                exclusions |= 1 << s
    return steps, exclusions


def lowest_step(mask):
    return (mask & -mask).bit_length() - 1 if mask else 64


def evaluate_ordered(events, count, window, strict):
    """events: sorted [(t, steps, exclusions)]. Returns None (not in the funnel) or (reached, times)."""
    attempts = []
    for start_index, (start, steps, _) in enumerate(events):
        if not steps & 1:
            continue
        times, reached_at, spoiled = [start], [start_index], False
        for index in range(start_index + 1, len(events)):
            t, steps_here, exclusions_here = events[index]
            if t - start > window:
                break
            current = len(times) - 1
            if current < count - 1 and exclusions_here >> current & 1:
                spoiled = True
            if current < count - 1 and steps_here >> (current + 1) & 1:
                times.append(t)
                reached_at.append(index)
            elif strict and not steps_here >> current & 1:
                # Strict: any other event ends the attempt (doing its current step again does not).
                break
        attempts.append((len(times) - 1, times, reached_at, start_index, spoiled))
    if not attempts:
        return None
    furthest = max(attempt[0] for attempt in attempts)
    clean = [a for a in attempts if a[0] == furthest and not a[4]]
    if not clean:
        return None
    # The first to get that far; among equals the latest start.
    reached, times, _, _, _ = min(clean, key=lambda a: (a[2][furthest], -a[3]))
    return reached, times


def evaluate_unordered(events, count, window):
    best, best_reached = None, -1
    for anchor, (start, steps, _) in enumerate(events):
        if not steps & ((1 << count) - 1):
            continue
        claimed = []
        for step in range(count):
            for index in range(anchor, len(events)):
                t, steps_here, _ = events[index]
                if t - start > window:
                    break
                if steps_here >> step & 1 and index not in claimed:
                    claimed.append(index)
                    break
        reached = len(claimed) - 1
        if len(claimed) == count:
            end = max(claimed)
        else:
            end = next((i for i in range(anchor, len(events)) if events[i][0] - start > window), len(events))
        spoiled = any(events[i][2] for i in range(anchor + 1, end))
        if reached > best_reached:
            best_reached, best = reached, None
        if reached == best_reached and best is None and not spoiled:
            best = (reached, sorted(events[i][0] for i in claimed))
    return best


def window_seconds(node):
    filters = node.get("funnelsFilter") or {}
    unit = {"second": 1, "minute": 60, "hour": HOUR, "day": 86400, "week": 7 * 86400, "month": 30 * 86400}
    return filters.get("funnelWindowInterval", 14) * unit[filters.get("funnelWindowIntervalUnit", "day")]


def expected(rows, node):
    """PostHog's steps result for `node` from DuckDB's rows (in the date range, by time)."""
    filters = node.get("funnelsFilter") or {}
    order = filters.get("funnelOrderType", "ordered")
    count = len(node["series"])
    window = window_seconds(node) * 1_000_000
    breakdown = (node.get("breakdownFilter") or {}).get("breakdown")
    limit = (node.get("breakdownFilter") or {}).get("breakdown_limit", 25)
    last_touch = filters.get("breakdownAttributionType") == "last_touch"

    per_person = collections.defaultdict(list)
    for row in rows:
        steps, exclusions = masks(row, node)
        if order != "strict" and not steps and not exclusions:
            continue
        per_person[row["person_id"]].append((row["t"], steps, exclusions, row["browser"]))

    outcomes = []  # (breakdown value, reached, conversion seconds per step)
    for events in per_person.values():
        events.sort(key=lambda e: (e[0], lowest_step(e[1]), e[1], e[2]))
        plain = [(t, s, x) for t, s, x, _ in events]
        if order == "unordered":
            result = evaluate_unordered(plain, count, window)
        else:
            result = evaluate_ordered(plain, count, window, order == "strict")
        if result is None:
            continue
        reached, times = result
        seconds = [(b - a) / 1_000_000 for a, b in zip(times, times[1:])]
        values = [e[3] for e in events if e[3] is not None]
        value = (values[-1] if last_touch else values[0]) if values else ""
        outcomes.append((value, reached, seconds))

    def steps_of(group, label):
        result = []
        for index, entity in enumerate(node["series"]):
            times = [s[index - 1] for _, reached, s in group if reached >= index and index > 0 and s[index - 1] > 0]
            step = {
                "action_id": None if order == "unordered" else entity["event"],
                "name": (f"Completed {index + 1} step{'s' if index else ''}" if order == "unordered" else entity["event"]),
                "custom_name": None,
                "order": index,
                "people": [],
                "count": sum(1 for _, reached, _ in group if reached >= index),
                "type": "events",
                "average_conversion_time": statistics.fmean(times) if times else None,
                "median_conversion_time": statistics.median(times) if times else None,
            }
            if label is not None:
                shown = [label] if isinstance(breakdown, list) else label
                step["breakdown"] = shown
                step["breakdown_value"] = shown
            result.append(step)
        return result

    if not breakdown:
        return steps_of(outcomes, None) if outcomes else []
    by_value = collections.defaultdict(list)
    for outcome in outcomes:
        by_value[outcome[0]].append(outcome)

    def rank(value):
        group = by_value[value]
        return tuple(-sum(1 for _, reached, _ in group if reached >= step) for step in reversed(range(count))) + (value,)

    ranked = sorted(by_value, key=rank)
    results = [steps_of(by_value[value], value) for value in ranked[:limit]]
    rest = [outcome for value in ranked[limit:] for outcome in by_value[value]]
    if rest:
        results.append(steps_of(rest, "Other"))
    return results


# ---------------------------------------------------------------------------------------------

PAGELEAVE = {"kind": "EventsNode", "event": "$pageleave"}

CASES = [
    ("ordered, 1 hour", {"series": step_series(STEPS),
                         "funnelsFilter": {"funnelWindowInterval": 1, "funnelWindowIntervalUnit": "hour"}}),
    ("ordered, 30 minutes", {"series": step_series(STEPS),
                             "funnelsFilter": {"funnelWindowInterval": 30, "funnelWindowIntervalUnit": "minute"}}),
    ("ordered, default 14 days", {"series": step_series(STEPS)}),
    ("ordered, exclusion 0 to 1", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelWindowInterval": 1, "funnelWindowIntervalUnit": "hour",
        "exclusions": [{**PAGELEAVE, "funnelFromStep": 0, "funnelToStep": 1}]}}),
    ("ordered, exclusion 1 to 2", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelWindowInterval": 1, "funnelWindowIntervalUnit": "hour",
        "exclusions": [{**PAGELEAVE, "funnelFromStep": 1, "funnelToStep": 2}]}}),
    ("strict, 1 hour", {"series": step_series(STEPS),
                        "funnelsFilter": {"funnelOrderType": "strict", "funnelWindowInterval": 1,
                                          "funnelWindowIntervalUnit": "hour"}}),
    ("unordered, 1 hour", {"series": step_series(STEPS),
                           "funnelsFilter": {"funnelOrderType": "unordered", "funnelWindowInterval": 1,
                                             "funnelWindowIntervalUnit": "hour"}}),
    ("unordered, full exclusion", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelOrderType": "unordered", "funnelWindowInterval": 1, "funnelWindowIntervalUnit": "hour",
        "exclusions": [{**PAGELEAVE, "funnelFromStep": 0, "funnelToStep": 2}]}}),
    ("two steps, step property", {"series": step_series(["$pageview", "signed_up"], [
        [{"key": "$browser", "value": "Chrome", "operator": "exact", "type": "event"}], None]),
        "funnelsFilter": {"funnelWindowInterval": 1, "funnelWindowIntervalUnit": "day"}}),
    ("breakdown, first touch, limit 2", {"series": step_series(STEPS),
                                         "breakdownFilter": {"breakdown": "$browser", "breakdown_limit": 2}}),
    ("breakdown list, last touch", {"series": step_series(STEPS),
                                    "funnelsFilter": {"breakdownAttributionType": "last_touch"},
                                    "breakdownFilter": {"breakdown": ["$browser"], "breakdown_type": "event"}}),
    ("strict breakdown", {"series": step_series(STEPS),
                          "funnelsFilter": {"funnelOrderType": "strict", "funnelWindowInterval": 1,
                                            "funnelWindowIntervalUnit": "day"},
                          "breakdownFilter": {"breakdown": "$browser", "breakdown_limit": 3}}),
]

INVALID = [
    ({"series": step_series(["$pageview"])}, "series"),
    ({"series": step_series(STEPS), "funnelsFilter": {"funnelWindowIntervalUnit": "fortnight"}},
     "funnelsFilter.funnelWindowIntervalUnit"),
    ({"series": step_series(STEPS), "funnelsFilter": {"exclusions": [{**PAGELEAVE, "funnelFromStep": 2, "funnelToStep": 2}]}},
     "funnelsFilter.exclusions[0].funnelFromStep"),
    ({"series": step_series(STEPS), "funnelsFilter": {"funnelOrderType": "sideways"}}, "funnelsFilter.funnelOrderType"),
]


def close(ours, want):
    if isinstance(want, float) and isinstance(ours, (int, float)):
        return math.isclose(ours, want, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(want, list) and isinstance(ours, list):
        return len(ours) == len(want) and all(close(a, b) for a, b in zip(ours, want))
    if isinstance(want, dict) and isinstance(ours, dict):
        return all(close(ours.get(key), value) for key, value in want.items())
    return ours == want


def describe(results):
    def one(steps):
        if not steps:
            return "(none)"
        label = f"{steps[0].get('breakdown_value')!r}: " if "breakdown_value" in steps[0] else ""
        return label + ", ".join(
            f"{s.get('count')} ({s.get('average_conversion_time')}/{s.get('median_conversion_time')})" for s in steps)
    if results and isinstance(results[0], list):
        return "\n      ".join(one(steps) for steps in results)
    return one(results)


def run_query(server, node):
    query = {"kind": "FunnelsQuery", "dateRange": DATE_RANGE, **node}
    return request(server, "POST", f"/api/projects/{server.project_id}/query/",
                   {"query": query, "refresh": "force_blocking"})


def check(backend, events):
    server = Server(backend)
    logs = collections.deque(maxlen=50)
    threading.Thread(target=drain, args=(server.process.stderr, logs), daemon=True).start()
    try:
        capture(server, events)
        wait_until_visible(server, len(events))
        table = server.table().to_pyarrow_table()
        assert table.num_rows == len(events), f"the Delta table has {table.num_rows} rows, {len(events)} were sent"
        connection = duckdb.connect()
        connection.execute("SET TimeZone = 'UTC'")
        connection.register("events", table)
        # A property is NULL when missing, JSON null or "".
        rows = [
            {"person_id": person, "event": event, "t": t, "browser": browser}
            for person, event, t, browser in connection.execute(
                "select person_id, event, epoch_us(timestamp), "
                "nullif(json_extract_string(properties, '$.\"$browser\"'), '') "
                "from events where epoch_us(timestamp) between ? and ? order by person_id, timestamp",
                [RANGE_FROM_US, RANGE_TO_US]).fetchall()
        ]
        failures = []
        for name, node in CASES:
            want = expected(rows, node)
            status, body = run_query(server, node)
            if status != 200:
                failures.append(f"{name}: HTTP {status}: {json.dumps(body)}")
                continue
            ours = body.get("results")
            if not close(ours, want):
                failures.append(f"{name}: results differ\n  node: {json.dumps(node)}\n"
                                f"  ours:\n      {describe(ours or [])}\n  DuckDB's:\n      {describe(want)}")
        for node, attr in INVALID:
            status, body = run_query(server, node)
            if status != 400 or (body or {}).get("attr") not in (attr, f"query.{attr}"):
                failures.append(f"invalid node {json.dumps(node)}: HTTP {status} {json.dumps(body)} (want 400 naming {attr})")
        for failure in failures:
            print(f"{backend}: MISMATCH {failure}\n")
        if failures:
            if logs:
                print(f"{backend}: the server's last log lines:\n" + "".join(logs))
            raise AssertionError(f"{len(failures)} of {len(CASES) + len(INVALID)} checks failed")
        print(f"{backend}: {len(CASES)} funnels match the per-person evaluation of DuckDB's rows, "
              f"and {len(INVALID)} invalid nodes are 400s")
    finally:
        server.stop()


def main():
    events = make_events()
    run_on_backends("funnels-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
