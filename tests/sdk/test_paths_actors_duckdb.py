"""PathsQuery and ActorsQuery (over an InsightActorsQuery) answers against an independent
computation over the same Delta table, read into DuckDB, on both storage backends.

About 1,000 seeded events of 36 users in March 2024 go in through `POST /batch/`: browsing
sessions of `$pageview`s (URLs with and without a trailing slash, ids in them), `$screen`s and
custom events, with gaps over and under 30 minutes. Paths are computed here in Python from the
events DuckDB reads, following PostHog's runner step by step (path items, sessions cut at 30
minutes, runs compacted, start/end points, step limit, cleaning rules, groupings, exclusions,
edge weights and limit, reachability from a first step), not our SQL. Each actors list is
compared, as a set of person ids, with the persons DuckDB (or Python over DuckDB's rows) finds
for the same point: a trends day (with a breakdown value) and the whole range, funnel steps
reached and dropped off, lifecycle statuses on several days (in UTC, then again with the project
in America/New_York, across the 10 March DST change), a stickiness count, a paths edge and a
drop-off, a retention cohort row, and every person searched by distinct id, paged and ordered.

Run: `python tests/sdk/test_paths_actors_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import collections
import datetime
import json
import os
import random
import re
import sys
import zoneinfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
from test_posthog_sdk import run_on_backends  # noqa: E402
from node_harness import loaded, post_node, report, request, seeded_event, set_timezone  # noqa: E402

UTC = datetime.timezone.utc
USERS = [f"path-user-{k:02d}" for k in range(36)]
PAGES = ["/", "/pricing/", "/pricing", "/docs/intro", "/docs/api/", "/product/12", "/product/345/", "/signup"]
SCREENS = ["Home", "Settings", "Checkout"]
CUSTOM = ["signed_up", "purchased", "clicked"]
BROWSERS = ["Chrome", "Chrome", "Firefox", "Safari"]
RANGE = {"date_from": "2024-03-01", "date_to": "2024-03-31"}
SESSION_GAP = 30 * 60
# The project's path cleaning rules, applied (before the node's own) when a node asks for
# `pathReplacements`.
PROJECT_RULES = [{"alias": "/docs/<page>", "regex": "/docs/[a-z]+$"}]


def make_events():
    """Deterministic events: per user a few sessions on random days, each a walk over pages
    (sometimes staying on one), screens and custom events, seconds apart; the gap between two
    events of a session is sometimes just under or over 30 minutes."""
    rng = random.Random(20240315)
    events = []
    for distinct_id in USERS:
        browser = rng.choice(BROWSERS)
        for _ in range(rng.randrange(2, 7)):
            moment = datetime.datetime(2024, 3, 1, tzinfo=UTC) + datetime.timedelta(
                days=rng.randrange(28), seconds=rng.randrange(80000))
            for _ in range(rng.randrange(2, 12)):
                kind = rng.choices(["page", "screen", "custom"], [75, 10, 15])[0]
                if kind == "page":
                    event, properties = "$pageview", {"$current_url": rng.choice(PAGES)}
                elif kind == "screen":
                    event, properties = "$screen", {"$screen_name": rng.choice(SCREENS)}
                else:
                    event, properties = rng.choice(CUSTOM), {}
                properties["$browser"] = browser
                events.append(seeded_event(rng, event, distinct_id, moment, properties))
                gap = rng.choices([rng.randrange(5, 300), SESSION_GAP - 1, SESSION_GAP, rng.randrange(4000, 9000)],
                                  [85, 5, 5, 5])[0]
                moment += datetime.timedelta(seconds=gap)
    events.sort(key=lambda event: event["timestamp"])
    return events


# --- Paths, as PostHog's runner computes them ------------------------------------------------

def path_item(row, paths_filter):
    """PostHog's `path_item` of one event, or None when the event is not read."""
    event, url, screen = row["event"], row["url"], row["screen"]
    types = paths_filter.get("includeEventTypes") or []
    excluded = paths_filter.get("excludeEvents") or []
    if types and not (("$pageview" in types and event == "$pageview") or ("$screen" in types and event == "$screen")
                      or ("custom_event" in types and not event.startswith("$"))):
        return None

    def reads(kind):
        return kind in types if types else kind not in excluded

    item = event
    if reads("$pageview") and event == "$pageview":
        item = re.sub(r"(.)/$", r"\1", url or "")
    if reads("$screen") and event == "$screen":
        item = screen
    item = item or ""
    project_rules = PROJECT_RULES if paths_filter.get("pathReplacements") else []
    for rule in project_rules + (paths_filter.get("localPathCleaningFilters") or []):
        item = re.sub(rule["regex"], rule["alias"], item)
    for grouping in paths_filter.get("pathGroupings") or []:
        if re.search(re.escape(grouping).replace("\\*", ".*"), item):
            item = grouping
            break
    return None if item in excluded else item


def limited_sessions(rows, paths_filter):
    """Per person and session: the limited path and its times (seconds), as PostHog's arrays."""
    limit = paths_filter.get("stepLimit") or 5
    start, end = paths_filter.get("startPoint"), paths_filter.get("endPoint")
    target = end or start
    if target and len(target) > 1 and target.endswith("/"):
        target = target[:-1]
    per_person = collections.defaultdict(list)
    for row in rows:
        item = path_item(row, paths_filter)
        if item is not None:
            per_person[row["person_id"]].append((row["ts"], item))
    out = []
    for person, items in per_person.items():
        items.sort()
        sessions, current, previous = [], [], None
        for moment, item in items:
            if previous is not None and (moment - previous).total_seconds() >= SESSION_GAP:
                sessions.append(current)
                current = []
            current.append((moment, item))
            previous = moment
        sessions.append(current)
        for session in sessions:
            paths = [item for _, item in session]
            following = paths[1:] + [""]
            compact = [(m, p) for (m, p), after in zip(session, following) if p != after]
            path = [p for _, p in compact]
            times = [m.timestamp() for m, _ in compact]
            if start and end:
                if start not in path:
                    continue
                s = path.index(start)
                path, times = path[s:], times[s:]
                if end not in path:
                    continue
                e = path.index(end) + 1
                path, times = path[:e], times[:e]
                if len(path) > limit:
                    half = limit // 2
                    tail = slice(len(path) - half, len(path)) if half else slice(0, 0)
                    path = path[:half] + ["..."] + path[tail]
                    times = times[:half] + [times[half]] + times[tail]
            elif end:
                if target not in path:
                    continue
                e = path.index(target) + 1
                path, times = path[:e][-limit:], times[:e][-limit:]
            elif start:
                if target not in path:
                    continue
                s = path.index(target)
                path, times = path[s:][:limit], times[s:][:limit]
            else:
                path, times = path[:limit], times[:limit]
            out.append((person, path, times))
    return out


def expected_paths(rows, paths_filter):
    edges = collections.defaultdict(list)
    for _, path, times in limited_sessions(rows, paths_filter):
        for k in range(1, len(path)):
            edges[(f"{k}_{path[k - 1]}", f"{k + 1}_{path[k]}")].append(times[k] - times[k - 1])
    weighted = [(source, target, len(gaps), sum(gaps) / len(gaps)) for (source, target), gaps in edges.items()]
    low, high = paths_filter.get("minEdgeWeight"), paths_filter.get("maxEdgeWeight")
    weighted = [e for e in weighted if (not low or e[2] >= low) and (not high or e[2] <= high)]
    weighted.sort(key=lambda e: (-e[2], e[0], e[1]))
    weighted = weighted[:paths_filter.get("edgeLimit") or 50]
    following = collections.defaultdict(list)
    for source, target, _, _ in weighted:
        following[source].append(target)
    stack = [source for source, _, _, _ in weighted if source.startswith("1_")]
    seen = set()
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(following[node])
    return [{"source": s, "target": t, "value": v, "average_conversion_time": c * 1000.0}
            for s, t, v, c in weighted if s in seen]


def check_paths(name, body, expected, failures):
    ours = body.get("results")
    if not isinstance(ours, list) or len(ours) != len(expected):
        failures.append(f"{name}: {len(ours or [])} edges, expected {len(expected)}:\n ours {json.dumps(ours)[:1500]}\n"
                        f" want {json.dumps(expected)[:1500]}")
        return
    for index, (mine, theirs) in enumerate(zip(ours, expected)):
        same = (mine.get("source"), mine.get("target"), mine.get("value")) == \
               (theirs["source"], theirs["target"], theirs["value"])
        if not same or abs((mine.get("average_conversion_time") or 0) - theirs["average_conversion_time"]) > 1e-6:
            failures.append(f"{name}: edge {index}: ours {mine}, expected {theirs}")
            return


def paths_cases(server, rows, failures):
    cases = {
        "plain": {},
        "pageviews, step limit 3": {"includeEventTypes": ["$pageview"], "stepLimit": 3},
        "start point": {"includeEventTypes": ["$pageview", "$screen"], "startPoint": "/pricing/", "stepLimit": 4},
        "end point": {"includeEventTypes": ["$pageview"], "endPoint": "/signup", "stepLimit": 3},
        "start and end, cut in the middle": {"startPoint": "/", "endPoint": "/signup", "stepLimit": 4},
        "cleaning and groupings": {
            "includeEventTypes": ["$pageview", "custom_event"],
            "localPathCleaningFilters": [{"alias": "/product/<id>", "regex": "/product/\\d+"}],
            "pathGroupings": ["/docs/*"], "excludeEvents": ["clicked"]},
        "edge limit and weights": {"edgeLimit": 6, "minEdgeWeight": 2, "maxEdgeWeight": 40},
        "custom events only": {"includeEventTypes": ["custom_event"], "stepLimit": 6},
        "project rules, then the node's": {
            "includeEventTypes": ["$pageview"], "pathReplacements": True,
            "localPathCleaningFilters": [{"alias": "/product/<id>", "regex": "/product/\\d+"}]},
    }
    status, body = request(server, "PATCH", f"/api/projects/{server.project_id}/",
                           {"path_cleaning_filters": PROJECT_RULES})
    assert status == 200 and body.get("path_cleaning_filters") == PROJECT_RULES, f"{status}: {body}"
    for name, paths_filter in cases.items():
        node = {"kind": "PathsQuery", "dateRange": RANGE, "pathsFilter": paths_filter}
        status, body = post_node(server, node)
        if status != 200:
            failures.append(f"paths {name}: HTTP {status} {body}")
            continue
        expected = expected_paths(rows, paths_filter)
        if name in ("plain", "start and end, cut in the middle") and len(expected) < 5:
            raise AssertionError(f"paths {name}: too few edges for a real check: {expected}")
        if name.startswith("project rules") and not any("/docs/<page>" in e["target"] for e in expected):
            raise AssertionError(f"paths {name}: the project's rule changed no item: {expected}")
        if name == "start and end, cut in the middle" and not any("_..." in e["target"] for e in expected):
            raise AssertionError(f"paths {name}: no path is long enough to be cut: {expected}")
        check_paths(f"paths {name}", body, expected, failures)
        print(f"  paths {name}: {len(expected)} edges, {sum(e['value'] for e in expected)} steps")
    bad = {"kind": "PathsQuery", "pathsFilter": {"stepLimt": 3}}
    status, body = post_node(server, bad)
    if status != 400 or body.get("attr") != "query.pathsFilter.stepLimt":
        failures.append(f"paths misspelt field: want a 400 on query.pathsFilter.stepLimt, got {status} {body}")


# --- Actors: the persons behind one point ----------------------------------------------------

def actors(server, insight, failures, name, **point):
    """`{person id: event_count}` of an ActorsQuery over `insight` at `point`, every page read."""
    found, offset = {}, 0
    while True:
        node = {"kind": "ActorsQuery", "select": ["actor", "event_count"], "limit": 40, "offset": offset,
                "source": dict({"kind": "InsightActorsQuery", "source": insight}, **point)}
        status, body = post_node(server, node)
        if status != 200:
            failures.append(f"actors {name}: HTTP {status} {body}")
            return None
        for person, count in body["results"]:
            if not person.get("distinct_ids") or "created_at" not in person:
                failures.append(f"actors {name}: person object {person}")
            found[person["id"]] = count
        if not body.get("hasMore"):
            return found
        offset += 40


def compare_actors(name, ours, expected, failures, counts=False):
    if ours is None:
        return
    if not expected:
        raise AssertionError(f"actors {name}: nobody is behind the point, so the case proves little")
    print(f"  actors {name}: {len(expected)} persons")
    if set(ours) != set(expected):
        failures.append(f"actors {name}: ours minus DuckDB's {sorted(set(ours) - set(expected))[:5]}, "
                        f"DuckDB's minus ours {sorted(set(expected) - set(ours))[:5]}")
    elif counts and ours != expected:
        different = {p: (ours[p], expected[p]) for p in ours if ours[p] != expected[p]}
        failures.append(f"actors {name}: event counts differ (ours, DuckDB): {list(different.items())[:5]}")


def furthest_step(moments_per_step, window_seconds):
    """0-based furthest step of an ordered funnel (-1: never did step 1), from each step-1 event
    the earliest following step events within the window."""
    best = -1
    for start in moments_per_step[0]:
        reached, at = 0, start
        for later in moments_per_step[1:]:
            following = [m for m in later if m > at and (m - start).total_seconds() <= window_seconds]
            if not following:
                break
            reached, at = reached + 1, min(following)
        best = max(best, reached)
    return best


def zoned_actors_cases(server, connection, tz, failures):
    """The points that are intervals of the project's time zone: a trends day, lifecycle days."""
    zone = zoneinfo.ZoneInfo(tz)
    local_day = f"strftime(timezone('{tz}', ts), '%Y-%m-%d')"
    browser = "json_extract_string(properties, '$.\"$browser\"')"
    # The day with the most Chrome pageviews, so the point has persons behind it.
    day = connection.sql(f"select {local_day} d from ev where event = '$pageview' and {browser} = 'Chrome' "
                         "group by d order by count(distinct person_id) desc, d limit 1").fetchall()[0][0]
    trends = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
              "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "signed_up"}],
              "breakdownFilter": {"breakdown": "$browser", "breakdown_type": "event"}}
    expected = dict(connection.sql(f"select person_id, count(*) from ev where event = '$pageview' and {local_day} = '{day}' "
                                   f"and {browser} = 'Chrome' group by person_id").fetchall())
    compare_actors(f"{tz} trends day {day}, Chrome",
                   actors(server, trends, failures, "trends", day=day, series=0, breakdown="Chrome"),
                   expected, failures, counts=True)

    lifecycle = {"kind": "LifecycleQuery", "interval": "day",
                 "dateRange": {"date_from": "2024-03-05", "date_to": "2024-03-20"},
                 "series": [{"kind": "EventsNode", "event": "$pageview"}]}
    active = collections.defaultdict(set)
    for person, moment in connection.sql("select person_id, ts from ev where event = '$pageview'").fetchall():
        local = moment.astimezone(zone).date()
        if datetime.date(2024, 3, 4) <= local <= datetime.date(2024, 3, 20):
            active[person].add(local)
    created = {person: moment.astimezone(zone).date() for person, moment in
               connection.sql("select person_id, min(ts) from ev group by person_id").fetchall()}
    seen_any = False
    for point in ("2024-03-08", "2024-03-10", "2024-03-14", "2024-03-19"):
        d = datetime.date.fromisoformat(point)
        yesterday = d - datetime.timedelta(days=1)
        status_of = {}
        for person, days in active.items():
            now, before = d in days, yesterday in days
            earlier = any(x < d for x in days)
            if now and not earlier and created[person] == d:
                status_of[person] = "new"
            elif now and before:
                status_of[person] = "returning"
            elif now:
                status_of[person] = "resurrecting"
            elif before:
                status_of[person] = "dormant"
        for status in ("new", "returning", "resurrecting", "dormant"):
            expected = {p: 0 for p, s in status_of.items() if s == status}
            name = f"{tz} lifecycle {point} {status}"
            ours = actors(server, lifecycle, failures, name, day=point, status=status)
            if not expected:
                if ours:
                    failures.append(f"actors {name}: ours {sorted(ours)}, DuckDB none")
                continue
            seen_any = True
            compare_actors(name, ours, expected, failures)
    assert seen_any, "no lifecycle status has persons"


def actors_cases(server, connection, rows, failures):
    expected = dict(connection.sql("select person_id, count(*) from ev where event = 'signed_up' "
                                   "and ts >= TIMESTAMPTZ '2024-03-01 00:00:00+00' group by person_id").fetchall())
    no_breakdown = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
                    "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "signed_up"}]}
    compare_actors("trends whole range, second series", actors(server, no_breakdown, failures, "trends total", series=1),
                   expected, failures, counts=True)

    steps = ["$pageview", "signed_up", "purchased"]
    funnel = {"kind": "FunnelsQuery", "dateRange": RANGE, "funnelsFilter": {"funnelWindowInterval": 1},
              "series": [{"kind": "EventsNode", "event": event} for event in steps]}
    moments = collections.defaultdict(lambda: [[] for _ in steps])
    for person, event, moment in connection.sql(
            "select person_id, event, ts from ev where event in ('$pageview', 'signed_up', 'purchased')").fetchall():
        moments[person][steps.index(event)].append(moment)
    reached = {person: furthest_step(per_step, 86400) for person, per_step in moments.items()}
    for step, want in ((2, lambda r: r >= 1), (3, lambda r: r >= 2), (-2, lambda r: r == 0), (-3, lambda r: r == 1)):
        expected = {p: 0 for p, r in reached.items() if want(r)}
        compare_actors(f"funnel step {step}", actors(server, funnel, failures, f"funnel {step}", funnelStep=step),
                       expected, failures)

    stickiness = {"kind": "StickinessQuery", "interval": "day", "dateRange": RANGE,
                  "series": [{"kind": "EventsNode", "event": "$pageview"}]}
    expected = dict(connection.sql(
        "select person_id, sum(n) from (select person_id, cast(ts as date) d, count(*) n from ev "
        "where event = '$pageview' group by all) group by person_id having count(*) = 2").fetchall())
    compare_actors("stickiness 2 days", actors(server, stickiness, failures, "stickiness", day=2), expected, failures,
                   counts=True)

    # A retention cohort row: persons active on that day, each with the row's days they were
    # active on (the first included), as the recurring retention counts them.
    first_day, days = datetime.date(2024, 3, 5), 7
    retention = {"kind": "RetentionQuery", "dateRange": {"date_from": "2024-03-05", "date_to": "2024-03-11"},
                 "retentionFilter": {"period": "Day", "totalIntervals": days, "retentionType": "retention_recurring",
                                     "targetEntity": {"id": "$pageview", "type": "events"},
                                     "returningEntity": {"id": "$pageview", "type": "events"}}}
    active = collections.defaultdict(set)
    for person, day in connection.sql(
            "select distinct person_id, cast(ts at time zone 'UTC' as date) from ev where event = '$pageview'").fetchall():
        active[person].add(day)
    for cohort in (0, 3):
        start = first_day + datetime.timedelta(days=cohort)
        expected = {p: sum(1 for k in range(days - cohort) if start + datetime.timedelta(days=k) in seen)
                    for p, seen in active.items() if start in seen}
        compare_actors(f"retention cohort {cohort}", actors(server, retention, failures, f"retention {cohort}",
                                                            interval=cohort), expected, failures, counts=True)

    paths_filter = {"includeEventTypes": ["$pageview"], "stepLimit": 4}
    edges = expected_paths(rows, paths_filter)
    source, target = edges[0]["source"], edges[0]["target"]
    on_edge, dropped = {}, {}
    for person, path, _ in limited_sessions(rows, paths_filter):
        keys = [f"{k + 1}_{item}" for k, item in enumerate(path)]
        on_edge[person] = on_edge.get(person, 0) + sum(1 for a, b in zip(keys, keys[1:]) if (a, b) == (source, target))
        if keys[-1] == target:
            dropped[person] = dropped.get(person, 0) + 1
    on_edge = {p: n for p, n in on_edge.items() if n}
    paths = {"kind": "PathsQuery", "dateRange": RANGE,
             "pathsFilter": dict(paths_filter, pathStartKey=source, pathEndKey=target)}
    compare_actors(f"paths edge {source} -> {target}", actors(server, paths, failures, "paths edge"), on_edge, failures,
                   counts=True)
    paths = {"kind": "PathsQuery", "dateRange": RANGE, "pathsFilter": dict(paths_filter, pathDropoffKey=target)}
    compare_actors(f"paths drop-off at {target}", actors(server, paths, failures, "paths drop-off"), dropped, failures,
                   counts=True)

    # Every person, searched by distinct id and paged by id.
    expected = {p for (p,) in connection.sql("select distinct person_id from ev where distinct_id ilike '%path-user-1%'").fetchall()}
    pages, offset = [], 0
    while True:
        status, body = post_node(server, {"kind": "ActorsQuery", "select": ["id", "person"], "search": "path-user-1",
                                          "orderBy": ["id DESC"], "limit": 4, "offset": offset})
        if status != 200:
            failures.append(f"actors search: HTTP {status} {body}")
            break
        pages.extend(row[0] for row in body["results"])
        if not body["hasMore"]:
            break
        offset += 4
    print(f"  actors search: {len(expected)} persons")
    if pages != sorted(expected, reverse=True):
        failures.append(f"actors search: ours {pages}, DuckDB {sorted(expected, reverse=True)}")

    bad = {"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "source": funnel, "funnelStep": 9}}
    status, body = post_node(server, bad)
    if status != 400 or body.get("attr") != "query.source.funnelStep":
        failures.append(f"actors bad funnelStep: want a 400 on query.source.funnelStep, got {status} {body}")


def check(backend, events):
    with loaded(backend, events, view=True) as (server, connection, logs):
        rows = [{"person_id": person, "ts": moment, "event": event, "url": url, "screen": screen}
                for person, moment, event, url, screen in connection.sql(
                    "select person_id, ts, event, json_extract_string(properties, '$.\"$current_url\"'), "
                    "json_extract_string(properties, '$.\"$screen_name\"') from ev").fetchall()]
        failures = []
        paths_cases(server, rows, failures)
        actors_cases(server, connection, rows, failures)
        zoned_actors_cases(server, connection, "UTC", failures)
        set_timezone(server, "America/New_York")
        zoned_actors_cases(server, connection, "America/New_York", failures)
        report(backend, failures, logs, "the paths and actors")
        print(f"{backend}: every PathsQuery and ActorsQuery matches DuckDB over the Delta table")


def main():
    events = make_events()
    run_on_backends("paths-actors-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
