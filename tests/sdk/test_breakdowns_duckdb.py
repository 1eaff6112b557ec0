"""Multiple and cohort breakdowns (TrendsQuery, FunnelsQuery, and the ActorsQuery of their
points) against an independent computation over the same Delta table, on both storage backends.

About 2,000 seeded events of 48 users (each with a plan set through `$set`, a usual browser and
OS that some events change or leave out, empty or missing) go in through `POST /batch/`. Two
cohorts are made through the cohorts API: a static one (a dozen persons added by id) and a
dynamic one (`plan = pro`, a person property). The project's Delta table is read with
`deltalake` into DuckDB and every expected answer is computed there (funnels in Python over
DuckDB's rows, with the per-person evaluation of `test_funnels_duckdb.py`), following PostHog's
rules as its runners have them, not our SQL:

- trends: each breakdown's value is `coalesce(nullif(text, ''), '$$_posthog_breakdown_null_$$')`;
  the top `breakdown_limit` combinations are ranked with any missing value after the others, then
  by the sum of the per-day values (by the total alone for a total-value display), then by the
  values; the rest are one "other" combination (one `$$_posthog_breakdown_other_$$` per
  breakdown) whose value is recomputed from its events (dau: distinct persons, not a sum);
  results in that order with "other" last, `breakdown_value` the list, the label the values
  joined by `::`, `hasMore` true when "other" exists and `breakdown_hide_other_aggregation` drops
  it. Cohort breakdowns: each series per cohort (its members' events; every event for `all`),
  cohort after cohort, `breakdown_value` the id or `all`, the label the cohort's name or
  `all users`; with two cohorts and no `all`, per series by total.
- funnels: each person's combination is that of their first (last) funnel event with any value
  (`''` for a missing one); the combinations with the most conversions (from the last step
  back, then by the combination's key) are kept, the rest are `["Other"]`; a cohort breakdown is
  the funnel of each cohort's persons, ordered by conversions, `breakdown_value` the id (0 for
  all users).
- actors: the person ids behind a multiple-breakdown trends point, a cohort trends point, and
  funnel steps of a multiple-breakdown and a cohort funnel.
- histogram bins (trends): per series, `n` equal bins from the least to the greatest number of
  the series' events in range (`span / n * x + low`, the last bin's high 0.01 further, in Python's
  doubles), each event's number in the first bin `[low, high)` holding it, labelled with the
  bounds as ClickHouse writes a Float64 (`[10,17.5]`); no number (missing, empty, not numeric) is
  the null label. A bin's persons: the events whose number is in it.
- path cleaning: the project's `path_cleaning_filters` replaced in order (DuckDB's
  `regexp_replace(..., 'g')`), before `normalize_url`, in trends, funnels and a trends point's
  persons.

Run: `python tests/sdk/test_breakdowns_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import collections
import datetime
import json
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
from test_posthog_sdk import run_on_backends  # noqa: E402
from node_harness import expect_refusals, loaded, post_node, report, request, seeded_event  # noqa: E402
from test_trends_duckdb import check_results, day_buckets, day_range, literal  # noqa: E402
from test_funnels_duckdb import close, describe, evaluate, lowest_step  # noqa: E402
from test_paths_actors_duckdb import actors, compare_actors  # noqa: E402

UTC = datetime.timezone.utc
OTHER = "$$_posthog_breakdown_other_$$"
NULL = "$$_posthog_breakdown_null_$$"
USERS = [f"bd-user-{k:02d}" for k in range(48)]
PLANS = ["free", "pro", None]
BROWSERS = ["Chrome", "Chrome", "Firefox", "Safari", "Edge"]
SYSTEMS = ["Mac", "Windows", "Linux"]
STEPS = ["$pageview", "signed_up", "purchased"]
FROM, TO = datetime.date(2024, 3, 2), datetime.date(2024, 3, 12)
RANGE = {"date_from": FROM.isoformat(), "date_to": TO.isoformat()}


PAGES = ["/item/{n}", "/item/{n}/reviews", "/docs/{word}?ref={n}", "/docs/{word}", "/", "/about/", "/pricing?plan={word}"]
WORDS = ["intro", "api", "faq"]


def extra_properties(rng):
    """A price (a number, or missing, empty, not a number or a number as text) and a path."""
    properties = {}
    roll = rng.random()
    if roll < 0.78:
        properties["price"] = round(rng.uniform(0.5, 249.99), 2)
    elif roll < 0.83:
        properties["price"] = ""
    elif roll < 0.87:
        properties["price"] = "n/a"
    elif roll < 0.92:
        properties["price"] = f"{rng.uniform(1, 200):.1f}"
    roll = rng.random()
    if roll < 0.85:
        properties["$pathname"] = rng.choice(PAGES).format(n=rng.randrange(1, 400), word=rng.choice(WORDS))
    elif roll < 0.9:
        properties["$pathname"] = ""
    return properties


def make_events():
    """Deterministic events: per user a few visits, each a walk towards a purchase."""
    rng = random.Random(20240302)
    extra = random.Random(77)
    events = []
    for index, distinct_id in enumerate(USERS):
        plan = PLANS[index % 3]
        browser, system = rng.choice(BROWSERS), rng.choice(SYSTEMS)
        for _ in range(rng.randrange(2, 8)):
            moment = datetime.datetime(2024, 3, 1, tzinfo=UTC) + datetime.timedelta(
                days=rng.randrange(13), seconds=rng.randrange(80000), microseconds=rng.randrange(1, 1_000_000))
            for _ in range(rng.randrange(1, 9)):
                properties = {}
                roll = rng.random()
                if roll < 0.75:
                    properties["$browser"] = browser
                elif roll < 0.85:
                    properties["$browser"] = rng.choice(BROWSERS)
                elif roll < 0.92:
                    properties["$browser"] = ""
                if rng.random() < 0.85:
                    properties["$os"] = system
                if plan is not None:
                    properties["$set"] = {"plan": plan}
                properties.update(extra_properties(extra))
                name = rng.choices(STEPS + ["clicked"], [50, 20, 12, 18])[0]
                events.append(seeded_event(rng, name, distinct_id, moment, properties))
                moment += datetime.timedelta(seconds=rng.randrange(5, 4000), microseconds=rng.randrange(1, 1_000_000))
    return events


DUCKDB_MACROS = [
    "CREATE MACRO prop(j, path) AS nullif(json_extract_string(j, path), '')",
]
# PostHog's trends values: missing or empty is the null label.
BROWSER = f"coalesce(prop(properties, '$.\"$browser\"'), '{NULL}')"
SYSTEM = f"coalesce(prop(properties, '$.\"$os\"'), '{NULL}')"
PLAN = f"coalesce(prop(person_properties, '$.plan'), '{NULL}')"
UPPER_EVENT = "upper(event)"
# The project's path cleaning rules; the last only matches once the query string is gone.
PATH_RULES = [{"alias": "/item/<id>", "regex": "/item/\\d+"}, {"alias": "", "regex": "\\?.*$"},
              {"alias": "/docs/<page>", "regex": "^/docs/[a-z]+$"}]
# Read as the dialect reads a property (an empty text is none), as BROWSER is.
PATH = "prop(properties, '$.\"$pathname\"')"
CLEAN_PATH = PATH
for _rule in PATH_RULES:
    CLEAN_PATH = f"regexp_replace({CLEAN_PATH}, '{_rule['regex']}', '{_rule['alias']}', 'g')"
# normalize_url after cleaning: trailing '/', '?' and '#' cut, '/' when nothing is left.
NORMAL_PATH = f"case when regexp_replace({CLEAN_PATH}, '[/?#]+$', '') = '' then '/' else regexp_replace({CLEAN_PATH}, '[/?#]+$', '') end"
# A price as a number: NULL when missing, empty or not a number.
PRICE = "try_cast(json_extract_string(properties, '$.price') as double)"
DAY = "strftime(ts, '%Y-%m-%d')"


# --- Trends ----------------------------------------------------------------------------------

def in_range(where="true"):
    bounds = day_range(FROM, TO, "UTC")
    return f"ts >= {literal(bounds[0])} and ts <= {literal(bounds[1])} and ({where})"


def expected_multi_trend(connection, values, where, aggregate, limit, total_value=False):
    """PostHog's results of a multiple breakdown over `values` (DuckDB expressions): one dict per
    result, in order."""
    names = [f"b{k}" for k in range(len(values))]
    columns = ", ".join(f"{value} {name}" for value, name in zip(values, names))
    joined = ", ".join(names)
    has_null = " or ".join(f"{name} = '{NULL}'" for name in names)
    ranking_order = (f"total desc, {joined}" if total_value else f"({has_null}), total desc, {joined}")
    per = ("" if total_value else f", {DAY} d")
    per_group = ("" if total_value else ", d")
    others = ", ".join(f"case when r.position <= {limit} then base.{name} else '{OTHER}' end {name}" for name in names)
    rows = connection.sql(f"""
        with base as (select {columns}{per}, person_id, uuid, properties from ev where {in_range(where)}),
        per_bucket as (select {joined}{per_group}, {aggregate} n from base group by all),
        totals as (select {joined}, sum(n) total from per_bucket group by all),
        ranking as (select {joined}, row_number() over (order by {ranking_order}) position from totals),
        labelled as (select {others}{per_group.replace(', d', ', base.d')}, base.person_id, base.uuid, base.properties
                     from base join ranking r using ({joined}))
        select {joined}{per_group}, {aggregate} from labelled group by all""").fetchall()
    per_combination = collections.defaultdict(dict)
    for row in rows:
        combination = tuple(row[:len(names)])
        if total_value:
            per_combination[combination] = row[-1]
        else:
            per_combination[combination][row[len(names)]] = row[-1]
    buckets = day_buckets(FROM, TO)

    def total(item):
        return item[1] if total_value else sum(item[1].values())

    def klass(combination):
        return 2 if OTHER in combination else 1 if NULL in combination else 0

    ordered = sorted(per_combination.items(), key=lambda item: (klass(item[0]), -total(item), item[0]))
    expected = []
    for combination, value in ordered:
        result = {"breakdown_value": list(combination), "label": "::".join(combination)}
        if total_value:
            result["aggregated_value"] = value
        else:
            result["data"] = [value.get(b, 0) for b in buckets]
            result["days"] = buckets
        expected.append(result)
    return expected


def trends_cases(server, connection, failures):
    # Two breakdowns (an event and a person property), dau, a limit that leaves "other" (those with
    # a missing value rank last, so some are shown and some are "other").
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": "$pageview", "math": "dau"}],
            "breakdownFilter": {"breakdown_limit": 10, "breakdowns": [
                {"property": "$browser", "type": "event"}, {"property": "plan", "type": "person"}]}}
    # Every complete combination (4 browsers, 2 plans) fits, then 2 with a missing value.
    want = expected_multi_trend(connection, [BROWSER, PLAN], "event = '$pageview'", "count(distinct person_id)", 10)
    if not any(OTHER in w["breakdown_value"] for w in want) or not any(NULL in w["breakdown_value"] for w in want):
        raise AssertionError("trends 2 breakdowns: the data has no 'other' or no missing value, so the case proves little")
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends 2 breakdowns: HTTP {status} {body}")
    else:
        check_results("trends 2 breakdowns", body, want, failures)
        if body.get("hasMore") is not True:
            failures.append(f"trends 2 breakdowns: hasMore {body.get('hasMore')!r}, want true")

    # The same, "other" hidden: hasMore stays true.
    hidden = json.loads(json.dumps(node))
    hidden["breakdownFilter"]["breakdown_hide_other_aggregation"] = True
    status, body = post_node(server, hidden)
    if status != 200:
        failures.append(f"trends 2 breakdowns, other hidden: HTTP {status} {body}")
    else:
        check_results("trends 2 breakdowns, other hidden", body,
                      [w for w in want if OTHER not in w["breakdown_value"]], failures)
        if body.get("hasMore") is not True:
            failures.append(f"trends other hidden: hasMore {body.get('hasMore')!r}, want true")

    # Three breakdowns (event, event, hogql), every event counted, two series: labels carry the series.
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": None}, {"kind": "EventsNode", "event": "signed_up", "math": "dau"}],
            "breakdownFilter": {"breakdown_limit": 6, "breakdowns": [
                {"property": "$browser"}, {"property": "$os"}, {"property": "upper(event)", "type": "hogql"}]}}
    values = [BROWSER, SYSTEM, UPPER_EVENT]
    first = expected_multi_trend(connection, values, "true", "count(*)", 6)
    second = expected_multi_trend(connection, values, "event = 'signed_up'", "count(distinct person_id)", 6)
    for series, results in (("All events", first), ("signed_up", second)):
        for result in results:
            result["label"] = f"{series} - {result['label']}"
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends 3 breakdowns: HTTP {status} {body}")
    else:
        check_results("trends 3 breakdowns", body, first + second, failures)

    # Three breakdowns in a total-value display: ranked by the total alone.
    node = {"kind": "TrendsQuery", "dateRange": RANGE, "trendsFilter": {"display": "ActionsPie"},
            "series": [{"kind": "EventsNode", "event": "$pageview"}],
            "breakdownFilter": {"breakdown_limit": 5, "breakdowns": [
                {"property": "$browser"}, {"property": "plan", "type": "person"}, {"property": "upper(event)", "type": "hogql"}]}}
    want = expected_multi_trend(connection, [BROWSER, PLAN, UPPER_EVENT], "event = '$pageview'", "count(*)", 5,
                                total_value=True)
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends 3 breakdowns, pie: HTTP {status} {body}")
    else:
        check_results("trends 3 breakdowns, pie", body, want, failures)

    # A single breakdown with room for every value: the missing one shows as "none".
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": "purchased"}],
            "breakdownFilter": {"breakdown": "$browser", "breakdown_limit": 10}}
    want = expected_multi_trend(connection, [BROWSER], "event = 'purchased'", "count(*)", 10)
    for result in want:
        value = result["breakdown_value"][0]
        result["breakdown_value"] = result["label"] = "none" if value == NULL else value
    if not any(w["breakdown_value"] == "none" for w in want):
        raise AssertionError("trends single breakdown: no missing value")
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends single breakdown: HTTP {status} {body}")
    else:
        check_results("trends single breakdown", body, want, failures)


def cohort_trend_values(connection, members, where, aggregate):
    """{day: value} of events in range matching `where`, of `members` (None: everyone)."""
    condition = where if members is None else f"({where}) and person_id in ({', '.join(repr(m) for m in sorted(members))})"
    rows = connection.sql(f"select {DAY} d, {aggregate} from ev where {in_range(condition)} group by d").fetchall()
    return dict(rows)


def cohort_trends_cases(server, connection, cohorts, failures):
    static, dynamic = cohorts["static"], cohorts["dynamic"]
    buckets = day_buckets(FROM, TO)
    series = [("$pageview", "event = '$pageview'", "count(*)"), ("signed_up", "event = 'signed_up'", "count(distinct person_id)")]
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": "$pageview"}, {"kind": "EventsNode", "event": "signed_up", "math": "dau"}],
            "breakdownFilter": {"breakdown_type": "cohort", "breakdown": [static["id"], dynamic["id"], "all"]}}
    want = []
    for cohort, value, name in ((static, static["id"], static["name"]), (dynamic, dynamic["id"], dynamic["name"]),
                                (None, "all", "all users")):
        for label, where, aggregate in series:
            values = cohort_trend_values(connection, None if cohort is None else cohort["members"], where, aggregate)
            if values:
                want.append({"breakdown_value": value, "label": f"{label} - {name}",
                             "data": [values.get(b, 0) for b in buckets]})
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends cohorts: HTTP {status} {body}")
    else:
        check_results("trends cohorts", body, want, failures)
        if body.get("hasMore") is not False:
            failures.append(f"trends cohorts: hasMore {body.get('hasMore')!r}, want false")

    # Two cohorts, no "all": by total, as PostHog's conjoined query orders them.
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": "purchased", "math": "dau"}],
            "breakdownFilter": {"breakdown_type": "cohort", "breakdown": [static["id"], dynamic["id"]]}}
    want = []
    for cohort in (static, dynamic):
        values = cohort_trend_values(connection, cohort["members"], "event = 'purchased'", "count(distinct person_id)")
        want.append({"breakdown_value": cohort["id"], "label": cohort["name"], "data": [values.get(b, 0) for b in buckets]})
    want.sort(key=lambda w: (-sum(w["data"]), str(w["breakdown_value"])))
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends two cohorts: HTTP {status} {body}")
    else:
        check_results("trends two cohorts", body, want, failures)


# --- Funnels ---------------------------------------------------------------------------------

def funnel_rows(connection):
    """Every event in range, by time, with the values the funnels break down by ('' when missing)."""
    bounds = day_range(FROM, TO, "UTC")
    return [
        {"person_id": person, "event": event, "t": t, "values": {"$browser": browser or "", "$os": system or ""}}
        for person, event, t, browser, system in connection.execute(f"""
            select person_id, event, epoch_us(ts), prop(properties, '$."$browser"'), prop(properties, '$."$os"')
            from ev where ts >= {literal(bounds[0])} and ts <= {literal(bounds[1])}
            order by person_id, ts""").fetchall()
    ]


def outcomes(rows, node, keys, last_touch=False):
    """{person: (combination, reached, step seconds)} of the people in the funnel."""
    per_person = collections.defaultdict(list)
    for row in rows:
        steps = sum(1 << i for i, name in enumerate(STEPS) if row["event"] == name)
        if steps:
            per_person[row["person_id"]].append((row["t"], steps, 0, tuple(row["values"][k] for k in keys)))
    found = {}
    for person, events in per_person.items():
        events.sort(key=lambda e: (e[0], lowest_step(e[1]), e[1], e[2]))
        result = evaluate(node, events)
        if result is None:
            continue
        reached, times = result
        with_value = [e[3] for e in events if any(e[3])]
        combination = (with_value[-1] if last_touch else with_value[0]) if with_value else tuple("" for _ in keys)
        found[person] = (combination, reached, [(b - a) / 1_000_000 for a, b in zip(times, times[1:])])
    return found


def steps_of(group, shown, value):
    result = []
    for index, name in enumerate(STEPS):
        times = [s[index - 1] for _, reached, s in group if reached >= index and index > 0 and s[index - 1] > 0]
        result.append({
            "action_id": name, "name": name, "custom_name": None, "order": index, "people": [],
            "count": sum(1 for _, reached, _ in group if reached >= index), "type": "events",
            "average_conversion_time": statistics.fmean(times) if times else None,
            "median_conversion_time": statistics.median(times) if times else None,
            "breakdown": shown, "breakdown_value": value,
        })
    return result


def key(combination):
    """The combination's key as the query orders ties: each value's byte length, ':', the value."""
    return "".join(f"{len(v.encode())}:{v}" for v in combination)


def conversions(group):
    return tuple(-sum(1 for _, reached, _ in group if reached >= step) for step in reversed(range(len(STEPS))))


def funnel_cases(server, connection, cohorts, failures):
    rows = funnel_rows(connection)
    base = {"kind": "FunnelsQuery", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": name} for name in STEPS],
            "funnelsFilter": {"funnelWindowInterval": 1, "funnelWindowIntervalUnit": "day"}}
    keys = ["$browser", "$os"]

    def compare(name, node, want):
        status, body = post_node(server, node)
        if status != 200:
            failures.append(f"{name}: HTTP {status}: {json.dumps(body)}")
        elif not close(body.get("results"), want):
            failures.append(f"{name}: results differ\n  ours:\n      {describe(body.get('results') or [])}"
                            f"\n  DuckDB's:\n      {describe(want)}")
        return body

    for attribution in ("first_touch", "last_touch"):
        node = json.loads(json.dumps(base))
        node["funnelsFilter"]["breakdownAttributionType"] = attribution
        node["breakdownFilter"] = {"breakdown_limit": 5, "breakdowns": [{"property": k} for k in keys]}
        found = outcomes(rows, node, keys, last_touch=attribution == "last_touch")
        by_combination = collections.defaultdict(list)
        for outcome in found.values():
            by_combination[outcome[0]].append(outcome)
        ranked = sorted(by_combination, key=lambda c: conversions(by_combination[c]) + (key(c),))
        want = [steps_of(by_combination[c], list(c), list(c)) for c in ranked[:5]]
        rest = [o for c in ranked[5:] for o in by_combination[c]]
        if not rest or not any("" in c for c in ranked):
            raise AssertionError("funnel 2 breakdowns: no 'Other' or no missing value, so the case proves little")
        want.append(steps_of(rest, ["Other"], ["Other"]))
        compare(f"funnel 2 breakdowns, {attribution}", node, want)

    # Cohorts: the funnel of each cohort's persons, by conversions (ties: the breakdown's order).
    static, dynamic = cohorts["static"], cohorts["dynamic"]
    node = dict(base, breakdownFilter={"breakdown_type": "cohort", "breakdown": [static["id"], "all", dynamic["id"]]})
    found = outcomes(rows, node, keys)
    groups = []
    for position, (members, name, value) in enumerate(((static["members"], static["name"], static["id"]),
                                                        (None, "all users", 0),
                                                        (dynamic["members"], dynamic["name"], dynamic["id"]))):
        group = [o for person, o in found.items() if members is None or person in members]
        if group:
            groups.append((conversions(group), position, steps_of(group, name, value)))
    compare("funnel cohorts", node, [steps for _, _, steps in sorted(groups, key=lambda g: g[:2])])
    return rows


# --- Actors ----------------------------------------------------------------------------------

def actors_cases(server, connection, cohorts, rows, failures):
    # A multiple-breakdown trends point: a day's persons of one combination.
    insight = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
               "series": [{"kind": "EventsNode", "event": "$pageview"}],
               "breakdownFilter": {"breakdowns": [{"property": "$browser"}, {"property": "plan", "type": "person"}]}}
    (day, browser, plan), = connection.sql(f"""
        select {DAY} d, {BROWSER} b, {PLAN} p from ev where {in_range("event = '$pageview'")}
        group by all order by count(distinct person_id) desc, d, b, p limit 1""").fetchall()
    expected = dict(connection.sql(f"""
        select person_id, count(*) from ev where {in_range("event = '$pageview'")} and {DAY} = '{day}'
        and {BROWSER} = '{browser}' and {PLAN} = '{plan}' group by person_id""").fetchall())
    compare_actors(f"trends point {day} {browser}::{plan}",
                   actors(server, insight, failures, "trends multiple", day=day, breakdown=[browser, plan]),
                   expected, failures, counts=True)
    # One with a missing value.
    (day, browser), = connection.sql(f"""
        select {DAY} d, {BROWSER} b from ev where {in_range("event = '$pageview'")} and {PLAN} = '{NULL}'
        group by all order by count(*) desc, d, b limit 1""").fetchall()
    expected = dict(connection.sql(f"""
        select person_id, count(*) from ev where {in_range("event = '$pageview'")} and {DAY} = '{day}'
        and {BROWSER} = '{browser}' and {PLAN} = '{NULL}' group by person_id""").fetchall())
    compare_actors(f"trends point {day} {browser}::<none>",
                   actors(server, insight, failures, "trends multiple null", day=day, breakdown=[browser, NULL]),
                   expected, failures, counts=True)

    # A cohort trends point: the whole range, the dynamic cohort's persons.
    static, dynamic = cohorts["static"], cohorts["dynamic"]
    insight = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
               "series": [{"kind": "EventsNode", "event": "signed_up"}],
               "breakdownFilter": {"breakdown_type": "cohort", "breakdown": [static["id"], dynamic["id"], "all"]}}
    for cohort in (static, dynamic):
        expected = dict(connection.sql(f"""
            select person_id, count(*) from ev where {in_range("event = 'signed_up'")}
            and person_id in ({', '.join(repr(m) for m in sorted(cohort['members']))}) group by person_id""").fetchall())
        compare_actors(f"trends cohort point {cohort['name']}",
                       actors(server, insight, failures, "trends cohort", breakdown=cohort["id"]), expected, failures,
                       counts=True)

    # Funnel steps of a multiple-breakdown funnel and of a cohort funnel.
    keys = ["$browser", "$os"]
    funnel = {"kind": "FunnelsQuery", "dateRange": RANGE,
              "series": [{"kind": "EventsNode", "event": name} for name in STEPS],
              "funnelsFilter": {"funnelWindowInterval": 1, "funnelWindowIntervalUnit": "day"},
              "breakdownFilter": {"breakdowns": [{"property": k} for k in keys]}}
    found = outcomes(rows, funnel, keys)
    combination = collections.Counter(o[0] for o in found.values() if o[1] >= 1).most_common(1)[0][0]
    expected = {p: 0 for p, o in found.items() if o[0] == combination and o[1] >= 1}
    compare_actors(f"funnel step 2 of {combination}",
                   actors(server, funnel, failures, "funnel multiple", funnelStep=2, funnelStepBreakdown=list(combination)),
                   expected, failures)
    expected = {p: 0 for p, o in found.items() if o[0] == combination and o[1] == 0}
    compare_actors(f"funnel drop-off before step 2 of {combination}",
                   actors(server, funnel, failures, "funnel multiple drop-off", funnelStep=-2,
                          funnelStepBreakdown=list(combination)),
                   expected, failures)
    funnel["breakdownFilter"] = {"breakdown_type": "cohort", "breakdown": [static["id"], dynamic["id"]]}
    for cohort in (static, dynamic):
        expected = {p: 0 for p, o in found.items() if p in cohort["members"] and o[1] >= 1}
        compare_actors(f"funnel step 2 of cohort {cohort['name']}",
                       actors(server, funnel, failures, "funnel cohort", funnelStep=2, funnelStepBreakdown=cohort["id"]),
                       expected, failures)


# --- Histogram bins and path cleaning -------------------------------------------------------

def clickhouse_float(number):
    """A Float64 as ClickHouse's toString writes it, for the plain numbers these bins have."""
    text = repr(number)
    if "e" in text or "n" in text:
        raise AssertionError(f"unexpected bin edge {text}")
    return text[:-2] if text.endswith(".0") else text


def bins(connection, where, count):
    """[(low, high, label)] of `count` bins over the numbers of the events in range matching `where`."""
    (low, high), = connection.sql(f"select min({PRICE}), max({PRICE}) from ev where {in_range(where)}").fetchall()
    span = high - low
    edges = [span / count * x + low + (0.01 if x == count else 0) for x in range(count + 1)]
    return [(a, b, f"[{clickhouse_float(a)},{clickhouse_float(b)}]") for a, b in zip(edges, edges[1:])]


def double(number):
    return f"cast('{number!r}' as double)"


def binned(found):
    """DuckDB's label of an event's bin: the first bin holding its number, else the null label."""
    arms = " ".join(f"when {PRICE} >= {double(a)} and {PRICE} < {double(b)} then '{label}'" for a, b, label in found)
    return f"case {arms} else '{NULL}' end"


def single(results):
    """A single breakdown's results: the value itself, `none` for the null label."""
    for result in results:
        value = result["breakdown_value"][0]
        result["breakdown_value"] = result["label"] = "none" if value == NULL else value
    return results


def histogram_cases(server, connection, failures):
    # One price histogram of every page view, by day.
    found = bins(connection, "event = '$pageview'", 4)
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": "$pageview"}],
            "breakdownFilter": {"breakdown": "price", "breakdown_histogram_bin_count": 4}}
    want = single(expected_multi_trend(connection, [binned(found)], "event = '$pageview'", "count(*)", 25))
    if len(want) != 5 or want[-1]["breakdown_value"] != "none":
        raise AssertionError(f"trends histogram: want 4 bins and the null label, have {[w['label'] for w in want]}")
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends histogram: HTTP {status} {body}")
    else:
        check_results("trends histogram", body, want, failures)
    print(f"  trends histogram: {[w['label'] for w in want]}")

    # Beside a browser, two series each binned over its own events (the second's span is its own).
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": "$pageview"},
                       {"kind": "EventsNode", "event": "purchased", "math": "dau"}],
            "breakdownFilter": {"breakdown_limit": 8, "breakdowns": [
                {"property": "$browser"}, {"property": "price", "histogram_bin_count": 3}]}}
    want = []
    edges = {}
    for label, event, aggregate in (("$pageview", "$pageview", "count(*)"),
                                    ("purchased", "purchased", "count(distinct person_id)")):
        found = bins(connection, f"event = '{event}'", 3)
        edges[event] = found
        results = expected_multi_trend(connection, [BROWSER, binned(found)], f"event = '{event}'", aggregate, 8)
        for result in results:
            result["label"] = f"{label} - {result['label']}"
        want += results
    if edges["$pageview"] == edges["purchased"]:
        raise AssertionError("trends histogram per series: both series have the same bins, so the case proves little")
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends browser and histogram: HTTP {status} {body}")
    else:
        check_results("trends browser and histogram", body, want, failures)

    # A total-value display: bins ranked by their total alone.
    node = {"kind": "TrendsQuery", "dateRange": RANGE, "trendsFilter": {"display": "ActionsBarValue"},
            "series": [{"kind": "EventsNode", "event": "signed_up", "math": "sum", "math_property": "price"}],
            "breakdownFilter": {"breakdown": "price", "breakdown_histogram_bin_count": 5}}
    found = bins(connection, "event = 'signed_up'", 5)
    want = single(expected_multi_trend(connection, [binned(found)], "event = 'signed_up'",
                                       f"coalesce(sum({PRICE}), 0)", 25, total_value=True))
    # PostHog drops a `none` result that counts nothing.
    want = [w for w in want if not (w["breakdown_value"] == "none" and w["aggregated_value"] == 0)]
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends histogram, bar value: HTTP {status} {body}")
    else:
        check_results("trends histogram, bar value", body, want, failures)


def path_cleaning_cases(server, connection, failures):
    status, body = request(server, "PATCH", f"/api/projects/{server.project_id}/", {"path_cleaning_filters": PATH_RULES})
    assert status == 200 and body.get("path_cleaning_filters") == PATH_RULES, f"{status}: {body}"
    cleaned = f"coalesce(nullif({CLEAN_PATH}, ''), '{NULL}')"
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": "$pageview"}],
            "breakdownFilter": {"breakdown": "$pathname", "breakdown_path_cleaning": True, "breakdown_limit": 6}}
    want = single(expected_multi_trend(connection, [cleaned], "event = '$pageview'", "count(*)", 6))
    labels = [w["label"] for w in want]
    if "/item/<id>" not in labels or "/docs/<page>" not in labels or OTHER not in labels:
        raise AssertionError(f"trends path cleaning: the rules changed too little: {labels}")
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends path cleaning: HTTP {status} {body}")
    else:
        check_results("trends path cleaning", body, want, failures)
    print(f"  trends path cleaning: {labels}")

    # Cleaned, then normalized, beside the OS; dau.
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": None, "math": "dau"}],
            "breakdownFilter": {"breakdown_path_cleaning": True, "breakdown_limit": 12, "breakdowns": [
                {"property": "$pathname", "normalize_url": True}, {"property": "$os"}]}}
    normal = f"coalesce(nullif({NORMAL_PATH}, ''), '{NULL}')"
    want = expected_multi_trend(connection, [normal, SYSTEM], "true", "count(distinct person_id)", 12)
    if not any(w["breakdown_value"][0] == "/about" for w in want):
        raise AssertionError("trends path cleaning and normalizing: no normalized path")
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends path cleaning and normalize_url: HTTP {status} {body}")
    else:
        check_results("trends path cleaning and normalize_url", body, want, failures)


def cleaned_funnel_case(server, connection, failures):
    """A funnel broken down by the cleaned path (the rules are the project's by now)."""
    bounds = day_range(FROM, TO, "UTC")
    rows = [
        {"person_id": person, "event": event, "t": t, "values": {"$pathname": path or ""}}
        for person, event, t, path in connection.execute(f"""
            select person_id, event, epoch_us(ts), {CLEAN_PATH}
            from ev where ts >= {literal(bounds[0])} and ts <= {literal(bounds[1])}
            order by person_id, ts""").fetchall()
    ]
    node = {"kind": "FunnelsQuery", "dateRange": RANGE,
            "series": [{"kind": "EventsNode", "event": name} for name in STEPS],
            "funnelsFilter": {"funnelWindowInterval": 1, "funnelWindowIntervalUnit": "day"},
            "breakdownFilter": {"breakdown_limit": 4, "breakdown_path_cleaning": True,
                                "breakdowns": [{"property": "$pathname"}]}}
    found = outcomes(rows, node, ["$pathname"])
    by_combination = collections.defaultdict(list)
    for outcome in found.values():
        by_combination[outcome[0]].append(outcome)
    ranked = sorted(by_combination, key=lambda c: conversions(by_combination[c]) + (key(c),))
    if not any("<" in c[0] for c in ranked[:4]) or len(ranked) <= 4:
        raise AssertionError(f"funnel path cleaning: no cleaned path among the top, or no Other: {ranked}")
    want = [steps_of(by_combination[c], list(c), list(c)) for c in ranked[:4]]
    rest = [o for c in ranked[4:] for o in by_combination[c]]
    if rest:
        want.append(steps_of(rest, ["Other"], ["Other"]))
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"funnel path cleaning: HTTP {status}: {json.dumps(body)}")
    elif not close(body.get("results"), want):
        failures.append(f"funnel path cleaning: results differ\n  ours:\n      {describe(body.get('results') or [])}"
                        f"\n  DuckDB's:\n      {describe(want)}")


def bin_and_path_actors_cases(server, connection, failures):
    # A bin's persons on its busiest day: the events whose number is in the bin.
    found = bins(connection, "event = '$pageview'", 4)
    insight = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
               "series": [{"kind": "EventsNode", "event": "$pageview"}],
               "breakdownFilter": {"breakdown": "price", "breakdown_histogram_bin_count": 4}}
    low, high, label = found[1]
    (day,), = connection.sql(f"""
        select {DAY} d from ev where {in_range("event = '$pageview'")} and {PRICE} >= {double(low)} and {PRICE} < {double(high)}
        group by d order by count(*) desc, d limit 1""").fetchall()
    expected = dict(connection.sql(f"""
        select person_id, count(*) from ev where {in_range("event = '$pageview'")} and {DAY} = '{day}'
        and {PRICE} >= {double(low)} and {PRICE} < {double(high)} group by person_id""").fetchall())
    compare_actors(f"trends bin {label} on {day}", actors(server, insight, failures, "trends bin", day=day, breakdown=label),
                   expected, failures, counts=True)
    # The null label's: events with no number.
    expected = dict(connection.sql(f"""
        select person_id, count(*) from ev where {in_range("event = '$pageview'")} and {PRICE} is null
        group by person_id""").fetchall())
    compare_actors("trends bin of no number", actors(server, insight, failures, "trends no bin", breakdown=NULL),
                   expected, failures, counts=True)

    # A cleaned path's persons.
    insight = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
               "series": [{"kind": "EventsNode", "event": "signed_up"}],
               "breakdownFilter": {"breakdown": "$pathname", "breakdown_path_cleaning": True}}
    expected = dict(connection.sql(f"""
        select person_id, count(*) from ev where {in_range("event = 'signed_up'")} and {CLEAN_PATH} = '/item/<id>'
        group by person_id""").fetchall())
    compare_actors("trends cleaned path /item/<id>",
                   actors(server, insight, failures, "trends cleaned path", breakdown="/item/<id>"),
                   expected, failures, counts=True)


INVALID = [
    ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode"}], "breakdownFilter": {"breakdowns": [
        {"property": "a"}, {"property": "b"}, {"property": "c"}, {"property": "d"}]}}, "breakdownFilter.breakdowns"),
    ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode"}],
      "breakdownFilter": {"breakdown_type": "cohort", "breakdown": [987654]}}, "breakdownFilter.breakdown[0]"),
    ({"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}],
      "breakdownFilter": {"breakdown_type": "cohort", "breakdown": 987654}}, "breakdownFilter.breakdown"),
    # PostHog's funnels have no histograms, nor bins of a hogql expression, nor binned medians.
    ({"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}],
      "breakdownFilter": {"breakdowns": [{"property": "price", "histogram_bin_count": 4}]}},
     "breakdownFilter.breakdowns[0].histogram_bin_count"),
    ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode"}],
      "breakdownFilter": {"breakdown": "toFloat(properties.price)", "breakdown_type": "hogql",
                          "breakdown_histogram_bin_count": 4}}, "breakdownFilter.breakdown_histogram_bin_count"),
    ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode"}],
      "breakdownFilter": {"breakdown": "price", "breakdown_histogram_bin_count": 0}},
     "breakdownFilter.breakdown_histogram_bin_count"),
    ({"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "math": "p90", "math_property": "price"}],
      "breakdownFilter": {"breakdown": "price", "breakdown_histogram_bin_count": 4}}, "series[0].math"),
]


def make_cohorts(server, connection):
    """A static cohort of a dozen persons and a dynamic one (`plan = pro`), with their members as
    DuckDB finds them."""
    persons = dict(connection.sql("select distinct_id, any_value(person_id) from ev group by distinct_id").fetchall())
    path = f"/api/projects/{server.project_id}/cohorts/"
    chosen = sorted(persons[d] for d in USERS[3:40:3])
    status, static = request(server, "POST", path, {"name": "Hand picked", "is_static": True})
    assert status == 201, f"{status} {static}"
    status, body = request(server, "PATCH", f"{path}{static['id']}/add_persons_to_static_cohort/", {"person_ids": chosen})
    assert status == 200, f"{status} {body}"
    status, body = request(server, "GET", f"{path}{static['id']}/", None)
    assert status == 200 and body.get("count") == len(chosen), f"the static cohort: {status} {body}"
    status, dynamic = request(server, "POST", path, {"name": "Pro plan", "filters": {"properties": {
        "type": "AND", "values": [{"type": "person", "key": "plan", "value": ["pro"], "operator": "exact"}]}}})
    assert status == 201, f"{status} {dynamic}"
    pro = {persons[d] for i, d in enumerate(USERS) if PLANS[i % 3] == "pro"}
    return {
        "static": {"id": static["id"], "name": "Hand picked", "members": set(chosen)},
        "dynamic": {"id": dynamic["id"], "name": "Pro plan", "members": pro},
    }


def check(backend, events):
    with loaded(backend, events, DUCKDB_MACROS, view=True) as (server, connection, logs):
        cohorts = make_cohorts(server, connection)

        failures = []
        trends_cases(server, connection, failures)
        cohort_trends_cases(server, connection, cohorts, failures)
        rows = funnel_cases(server, connection, cohorts, failures)
        actors_cases(server, connection, cohorts, rows, failures)
        histogram_cases(server, connection, failures)
        path_cleaning_cases(server, connection, failures)
        cleaned_funnel_case(server, connection, failures)
        bin_and_path_actors_cases(server, connection, failures)
        expect_refusals(server, INVALID, failures)
        report(backend, failures, logs, "the breakdown")
        print(f"{backend}: multiple, cohort, histogram and path-cleaned breakdowns of trends, funnels and their "
              f"actors match DuckDB over the Delta table, and {len(INVALID)} invalid nodes are 400s")


def main():
    events = make_events()
    run_on_backends("breakdowns-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
