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

The other two views are checked the same way. Funnel trends (`funnelVizType: trends`): per
interval of the project's time zone (UTC, then America/New_York across its DST change, with day,
week and hour intervals), the people who opened an attempt there (a first-step event in it, any
step in an unordered funnel) are evaluated on the attempts opened in that interval only, with the
funnel cut after funnelToStep; the rate is round(to / from * 100, 2), 0 for intervals nobody
entered, and every interval of the range is listed. Time to convert: the people who reached
funnelToStep, their summed step times from funnelFromStep, binned as PostHog's UDF variant does
(ceil(cbrt(n)) bins clamped to 1..60, or binCount clamped to 1..90; bins of width
ceil((ceil(max) - floor(min)) / bins), 60 when that is 0, from floor(min); one bin more than
`bins`), with the plain mean as the average.

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
import zoneinfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
from test_posthog_sdk import run_on_backends  # noqa: E402
from node_harness import expect_refusals, loaded, post_node, report, seeded_event, set_timezone  # noqa: E402

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
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
        events.append(seeded_event(rng, name, person, moment, properties))

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


def evaluate_ordered(events, count, window, strict, may_start=None):
    """events: sorted [(t, steps, exclusions)]. Returns None (not in the funnel) or (reached, times)."""
    attempts = []
    for start_index, (start, steps, _) in enumerate(events):
        if not steps & 1 or (may_start and not may_start(start_index)):
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


def evaluate_unordered(events, count, window, may_start=None):
    best, best_reached = None, -1
    for anchor, (start, steps, _) in enumerate(events):
        if not steps & ((1 << count) - 1) or (may_start and not may_start(anchor)):
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


def person_events(rows, node):
    """{person: [(t, step mask, exclusion mask, browser)]} sorted as the engine sorts them."""
    order = (node.get("funnelsFilter") or {}).get("funnelOrderType", "ordered")
    per_person = collections.defaultdict(list)
    for row in rows:
        steps, exclusions = masks(row, node)
        if order != "strict" and not steps and not exclusions:
            continue
        per_person[row["person_id"]].append((row["t"], steps, exclusions, row["browser"]))
    for events in per_person.values():
        events.sort(key=lambda e: (e[0], lowest_step(e[1]), e[1], e[2]))
    return per_person


def evaluate(node, events, may_start=None):
    """One person's (reached, step times) or None; `may_start(index)`: can that event open an attempt."""
    filters = node.get("funnelsFilter") or {}
    order = filters.get("funnelOrderType", "ordered")
    count = len(node["series"])
    window = window_seconds(node) * 1_000_000
    plain = [(t, s, x) for t, s, x, _ in events]
    if order == "unordered":
        return evaluate_unordered(plain, count, window, may_start)
    return evaluate_ordered(plain, count, window, order == "strict", may_start)


def person_outcomes(rows, node):
    """[(breakdown value, reached, conversion seconds per step)] of the people in the funnel."""
    last_touch = (node.get("funnelsFilter") or {}).get("breakdownAttributionType") == "last_touch"
    outcomes = []
    for events in person_events(rows, node).values():
        result = evaluate(node, events)
        if result is None:
            continue
        reached, times = result
        seconds = [(b - a) / 1_000_000 for a, b in zip(times, times[1:])]
        values = [e[3] for e in events if e[3] is not None]
        value = (values[-1] if last_touch else values[0]) if values else ""
        outcomes.append((value, reached, seconds))
    return outcomes


def expected(rows, node):
    """PostHog's steps result for `node` from DuckDB's rows (in the date range, by time)."""
    filters = node.get("funnelsFilter") or {}
    order = filters.get("funnelOrderType", "ordered")
    count = len(node["series"])
    breakdown = (node.get("breakdownFilter") or {}).get("breakdown")
    limit = (node.get("breakdownFilter") or {}).get("breakdown_limit", 25)
    outcomes = person_outcomes(rows, node)

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


def local_time(micros, zone):
    return (EPOCH + datetime.timedelta(microseconds=micros)).astimezone(zone)


def bucket_of(micros, interval, zone):
    """The start (an aware local datetime) of the interval bucket holding the instant."""
    moment = local_time(micros, zone)
    if interval == "hour":
        # Whole-hour offsets: the local hour starts where the UTC hour does.
        return moment.replace(minute=0, second=0, microsecond=0)
    day = moment.date()
    if interval == "week":  # weeks start on Sunday
        day -= datetime.timedelta(days=(day.weekday() + 1) % 7)
    return datetime.datetime(day.year, day.month, day.day, tzinfo=zone)


def bucket_list(start_us, end_us, interval, zone):
    """Every bucket from the one holding start_us through the one holding end_us."""
    buckets, moment = [], bucket_of(start_us, interval, zone)
    end = local_time(end_us, zone)
    while moment <= end:
        buckets.append(moment)
        if interval == "hour":
            moment = (moment.astimezone(UTC) + datetime.timedelta(hours=1)).astimezone(zone)
        else:
            day = moment.date() + datetime.timedelta(days=7 if interval == "week" else 1)
            moment = datetime.datetime(day.year, day.month, day.day, tzinfo=zone)
    return buckets


def expected_trends(rows, node, zone, start_us, end_us):
    """Funnel trends: per interval, the people who opened an attempt there (a step 0 event, any
    step in an unordered funnel), evaluated on the attempts opened in that interval only (the
    funnel cut after funnelToStep); the rate is round(reached to / reached from * 100, 2)."""
    filters = node.get("funnelsFilter") or {}
    interval = node.get("interval", "day")
    count = len(node["series"])
    from_step = filters.get("funnelFromStep") or 0
    to_step = filters.get("funnelToStep") or count - 1
    cut = {**node, "series": node["series"][:to_step + 1]}
    opening = (1 << (to_step + 1)) - 1 if filters.get("funnelOrderType") == "unordered" else 1
    reached = collections.defaultdict(lambda: [0, 0])
    for events in person_events(rows, cut).values():
        periods = {bucket_of(t, interval, zone) for t, steps, _, _ in events if steps & opening}
        for period in periods:
            result = evaluate(cut, events, lambda i: bucket_of(events[i][0], interval, zone) == period)
            if result is None:
                continue
            if result[0] >= from_step:
                reached[period][0] += 1
            if result[0] >= to_step:
                reached[period][1] += 1
    buckets = bucket_list(start_us, end_us, interval, zone)
    assert set(reached) <= set(buckets), "an attempt outside the buckets"
    data = []
    for bucket in buckets:
        entered, converted = reached.get(bucket, (0, 0))
        data.append(round(converted / entered * 100 * 100) / 100 if entered else 0.0)
    day_format = "%Y-%m-%d %H:%M:%S" if interval == "hour" else "%Y-%m-%d"
    return [{
        "count": len(buckets),
        "data": data,
        "days": [bucket.strftime(day_format) for bucket in buckets],
        "labels": [bucket.strftime("%-d-%b-%Y") for bucket in buckets],
    }]


def expected_time_to_convert(rows, node):
    """Time to convert: the people who reached funnelToStep, their summed step times from
    funnelFromStep; ceil(cbrt(n)) bins (1..60) unless binCount (1..90); bins of width
    ceil((ceil(max) - floor(min)) / bins) (60 when 0) from floor(min), one more than `bins`."""
    filters = node.get("funnelsFilter") or {}
    count = len(node["series"])
    from_step = filters.get("funnelFromStep") or 0
    to_step = filters.get("funnelToStep") or count - 1
    timings = []
    for _, reached, seconds in person_outcomes(rows, node):
        if reached >= to_step:
            total = seconds[from_step]
            for value in seconds[from_step + 1:to_step]:
                total += value
            timings.append(total)
    if "binCount" in filters:
        bins = min(90, max(1, filters["binCount"]))
    else:
        bins = 1
        while bins < 60 and bins ** 3 < len(timings):
            bins += 1
    if not timings:
        return {"average_conversion_time": None, "bins": [[0, 0], [60, 0]]}
    low, high = math.floor(min(timings)), math.ceil(max(timings))
    width = math.ceil((high - low) / bins) or 60
    counts = [0] * (bins + 1)
    for timing in timings:
        counts[math.floor((timing - low) / width)] += 1
    return {
        "average_conversion_time": statistics.fmean(timings),
        "bins": [[round(low + n * width), counts[n]] for n in range(bins + 1)],
    }


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

HOUR_WINDOW = {"funnelWindowInterval": 1, "funnelWindowIntervalUnit": "hour"}

# (name, node): funnelVizType trends, in UTC. The range starts on a day without events (Nov 1).
TRENDS_CASES = [
    ("trends, ordered, day, 1 hour", {"series": step_series(STEPS),
                                      "funnelsFilter": {"funnelVizType": "trends", **HOUR_WINDOW}}),
    ("trends, ordered, day, default window, 1 to 2", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "trends", "funnelFromStep": 1, "funnelToStep": 2}}),
    ("trends, ordered, cut at step 1", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "trends", "funnelToStep": 1, **HOUR_WINDOW}}),
    ("trends, strict, week", {"series": step_series(STEPS), "interval": "week", "funnelsFilter": {
        "funnelVizType": "trends", "funnelOrderType": "strict", **HOUR_WINDOW}}),
    ("trends, unordered, day", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "trends", "funnelOrderType": "unordered", **HOUR_WINDOW}}),
    ("trends, exclusion 0 to 1", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "trends", **HOUR_WINDOW,
        "exclusions": [{**PAGELEAVE, "funnelFromStep": 0, "funnelToStep": 1}]}}),
    ("trends, hour, two days", {"series": step_series(STEPS), "interval": "hour",
                                "dateRange": {"date_from": "2026-11-02T00:00:00", "date_to": "2026-11-03T23:59:59"},
                                "funnelsFilter": {"funnelVizType": "trends", **HOUR_WINDOW}}),
]

# The same in America/New_York: its DST ends on 2026-11-01 (a 25-hour day, two 01:00 hours).
NEW_YORK = "America/New_York"
TRENDS_CASES_NEW_YORK = [
    ("New York trends, ordered, day", {"series": step_series(STEPS),
                                       "funnelsFilter": {"funnelVizType": "trends", **HOUR_WINDOW}}),
    ("New York trends, unordered, day, 1 day", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "trends", "funnelOrderType": "unordered", "funnelWindowInterval": 1}}),
    ("New York trends, hour over the DST change", {
        "series": step_series(STEPS), "interval": "hour",
        "dateRange": {"date_from": "2026-11-01T00:00:00", "date_to": "2026-11-02T23:59:59"},
        "funnelsFilter": {"funnelVizType": "trends", **HOUR_WINDOW}}),
]

TIME_TO_CONVERT_CASES = [
    ("time to convert, ordered, automatic bins", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "time_to_convert"}}),
    ("time to convert, 0 to 1, 1 hour", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "time_to_convert", "funnelToStep": 1, **HOUR_WINDOW}}),
    ("time to convert, 1 to 2, 7 bins", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "time_to_convert", "funnelFromStep": 1, "binCount": 7}}),
    ("time to convert, strict, 200 bins (90)", {"series": step_series(STEPS), "funnelsFilter": {
        "funnelVizType": "time_to_convert", "funnelOrderType": "strict", "binCount": 200, **HOUR_WINDOW}}),
    ("time to convert, unordered, breakdown ignored", {
        "series": step_series(STEPS), "breakdownFilter": {"breakdown": "$browser"},
        "funnelsFilter": {"funnelVizType": "time_to_convert", "funnelOrderType": "unordered", **HOUR_WINDOW}}),
    ("time to convert, nobody converts", {"series": step_series(["purchased", "$pageleave"]), "funnelsFilter": {
        "funnelVizType": "time_to_convert", "funnelWindowInterval": 1, "funnelWindowIntervalUnit": "second"}}),
]

INVALID = [
    ({"series": step_series(STEPS), "funnelsFilter": {"funnelVizType": "trends", "funnelToStep": 3}},
     "funnelsFilter.funnelToStep"),
    ({"series": step_series(STEPS), "funnelsFilter": {"funnelVizType": "time_to_convert", "funnelFromStep": 2}},
     "funnelsFilter.funnelFromStep"),
    ({"series": step_series(STEPS), "funnelsFilter": {"funnelVizType": "sideways"}}, "funnelsFilter.funnelVizType"),
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


VIEW_CASES = TRENDS_CASES + TRENDS_CASES_NEW_YORK + TIME_TO_CONVERT_CASES


def range_micros(date_range, interval, zone):
    """The instants (µs) a dateRange of absolute dates covers in `zone`: from the start of
    date_from's day (hour for the hour interval); to the end of date_to's day, or date_to itself
    for the hour interval (an absolute date_to is not rounded up there)."""
    def local(text):
        moment = datetime.datetime.fromisoformat(text)
        return moment.replace(tzinfo=zone) if moment.tzinfo is None else moment
    start, end = local(date_range["date_from"]), local(date_range["date_to"])
    if interval == "hour":
        start = start.replace(minute=0, second=0, microsecond=0)
    else:
        start = start.replace(hour=0, minute=0, second=0, microsecond=0)
        day = end.date() + datetime.timedelta(days=1)
        end = datetime.datetime(day.year, day.month, day.day, tzinfo=zone) - datetime.timedelta(microseconds=1)

    def micros(moment):
        delta = moment.astimezone(UTC) - EPOCH
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros(start), micros(end)


def run_query(server, node):
    query = {"kind": "FunnelsQuery", "dateRange": DATE_RANGE, **node}
    return post_node(server, query)


def check(backend, events):
    with loaded(backend, events) as (server, connection, logs):
        # A property is NULL when missing, JSON null or "".
        all_rows = [
            {"person_id": person, "event": event, "t": t, "browser": browser}
            for person, event, t, browser in connection.execute(
                "select person_id, event, epoch_us(timestamp), "
                "nullif(json_extract_string(properties, '$.\"$browser\"'), '') "
                "from events order by person_id, timestamp").fetchall()
        ]
        rows = [row for row in all_rows if RANGE_FROM_US <= row["t"] <= RANGE_TO_US]
        failures = []

        def compare(name, node, want, show=describe):
            status, body = run_query(server, node)
            if status != 200:
                failures.append(f"{name}: HTTP {status}: {json.dumps(body)}")
                return
            ours = body.get("results")
            if not close(ours, want):
                failures.append(f"{name}: results differ\n  node: {json.dumps(node)}\n"
                                f"  ours:\n      {show(ours or [])}\n  DuckDB's:\n      {show(want)}")

        for name, node in CASES:
            compare(name, node, expected(rows, node))
        for name, node in TIME_TO_CONVERT_CASES:
            compare(name, node, expected_time_to_convert(rows, node), json.dumps)

        def trends_cases(cases, zone):
            for name, node in cases:
                date_range = node.get("dateRange", DATE_RANGE)
                start_us, end_us = range_micros(date_range, node.get("interval", "day"), zone)
                in_range = [row for row in all_rows if start_us <= row["t"] <= end_us]
                want = expected_trends(in_range, node, zone, start_us, end_us)
                compare(name, node, want, json.dumps)
                if node.get("interval") != "week" and (not any(want[0]["data"]) or all(want[0]["data"])):
                    failures.append(f"{name}: the case should have both empty and non-empty intervals")

        trends_cases(TRENDS_CASES, UTC)
        set_timezone(server, NEW_YORK)
        trends_cases(TRENDS_CASES_NEW_YORK, zoneinfo.ZoneInfo(NEW_YORK))
        expect_refusals(server, INVALID, failures, run=run_query)
        report(backend, failures, logs, len(CASES) + len(VIEW_CASES) + len(INVALID))
        print(f"{backend}: {len(CASES)} funnels, {len(TRENDS_CASES) + len(TRENDS_CASES_NEW_YORK)} funnel trends "
              f"and {len(TIME_TO_CONVERT_CASES)} times to convert match the per-person evaluation of DuckDB's rows, "
              f"and {len(INVALID)} invalid nodes are 400s")


def main():
    events = make_events()
    run_on_backends("funnels-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
