"""Actions (ActionsNode in TrendsQuery, FunnelsQuery, RetentionQuery and StickinessQuery, and
`matchesAction()` in SQL) against an independent computation in DuckDB, on both storage backends.

About 1,200 seeded events of 30 users between 1 and 14 March 2024 go in through `POST /batch/`:
pageviews on a few URLs, autocapture clicks carrying PostHog `elements_chain` strings (sent as
`properties.$elements_chain`), purchases with a plan. Actions are created through
`/api/projects/:id/actions/`, with steps on the event name, the URL (contains / exact / regex),
property filters, and for autocapture the selector, tag name, text and href. The project's Delta
table is read with `deltalake` into DuckDB, where each action is written again by hand as PostHog
defines it (`action_to_expr`: element fields only on `$autocapture` steps; the selector regex as
PostHog's `build_selector_regex` produces it; texts and the first href pulled out of the chain
with DuckDB's own `regexp_extract_all`), after a hand-labelled check that these DuckDB conditions
pick the chains PostHog would. Funnel, retention and stickiness answers are computed in DuckDB
from those conditions.

Run: `python tests/sdk/test_actions_duckdb.py <analytics binary> [emulator endpoint]`.
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
from node_harness import loaded, post_node, post_query, report, request, seeded_event  # noqa: E402
from test_retention_duckdb import interval_starts  # noqa: E402
from test_stickiness_lifecycle_duckdb import expected_stickiness  # noqa: E402

UTC = datetime.timezone.utc
USERS = [f"action-user-{k:02d}" for k in range(30)]
URLS = ["https://shop.example/signup", "https://shop.example/pricing",
        "https://shop.example/signup?ref=ad", "http://Shop.example/SIGNUP", "https://shop.example/pricing/"]
# PostHog chains (elements_to_string): clicked element first, attributes sorted by key.
CHAINS = {
    "buy": 'button.btn.primary:attr__class="btn primary"nth-child="1"nth-of-type="1"text="Buy now";'
           'div.card:attr__data-attr="product"nth-child="2"nth-of-type="1";body:nth-child="1"nth-of-type="1"',
    "pricing": 'a.nav:attr__href="/pricing"attr_id="pricing-link"href="/pricing"nth-child="1"nth-of-type="1"'
               'text="Pricing";nav.top:nth-child="1"nth-of-type="1"',
    "cancel": 'button.btn.secondary:nth-child="2"nth-of-type="2"text="Cancel";div.card:nth-child="2"nth-of-type="1"',
    "label": 'span.label:nth-child="1"nth-of-type="1"text="Buy NOW later";button.btn.primary:nth-child="1"'
             'nth-of-type="1";form:attr_id="checkout"nth-child="1"nth-of-type="1"',
    "docs": 'a:attr__href="https://docs.example/guide"href="https://docs.example/guide"nth-child="3"'
            'nth-of-type="1"text="Read the docs"',
}

# Each action: its steps for the API, its condition in DuckDB, and (for element steps) the
# chains PostHog's definitions pick, labelled by hand.
URL = "json_extract_string(properties, '$.\"$current_url\"')"
CHAIN = "coalesce(elements_chain, '')"
TEXTS = f"regexp_extract_all({CHAIN}, '(?::|\")text=\"(.*?)\"', 1)"
HREF = f"regexp_extract({CHAIN}, '(?::|\")href=\"(.*?)\"', 1)"
TAIL = r"[^;]*?($|;|:([^;^\s]*(;|$|\s)))"
BUTTON = r"regexp_matches(" + CHAIN + r", '(?:^|;)(?:button)(?:\.|;|:|$)')"
AUTOCAPTURE = "event = '$autocapture'"
BUY_BUTTON = f"({AUTOCAPTURE} and regexp_matches({CHAIN}, '(^|;)button.*?\\.primary{TAIL}') and {BUTTON})"
PRO = "(event = 'purchased' and json_extract_string(properties, '$.plan') = 'pro')"
ACTIONS = {
    "Signup page": ([{"event": "$pageview", "url": "/signup", "url_matching": "contains"}, {"event": "signed_up"}],
                    f"((event = '$pageview' and {URL} like '%/signup%') or event = 'signed_up')", None),
    "Pricing exact": ([{"event": "$pageview", "url": "https://shop.example/pricing", "url_matching": "exact"}],
                      f"(event = '$pageview' and {URL} = 'https://shop.example/pricing')", None),
    "Shop regex": ([{"event": "$pageview", "url": r"^https://shop\.example/(pricing|signup)$", "url_matching": "regex"}],
                   f"(event = '$pageview' and regexp_matches({URL}, '^https://shop\\.example/(pricing|signup)$'))", None),
    "Buy button": ([{"event": "$autocapture", "selector": "button.primary"}], BUY_BUTTON, {"buy", "label"}),
    "Card button": ([{"event": "$autocapture", "selector": "div.card button"}],
                    f"({AUTOCAPTURE} and regexp_matches({CHAIN}, '(^|;)button{TAIL}div.*?\\.card{TAIL}') and {BUTTON})",
                    {"buy", "cancel"}),
    "Buy text": ([{"event": "$autocapture", "text": "buy now", "text_matching": "contains"}],
                 f"({AUTOCAPTURE} and len(list_filter({TEXTS}, lambda x: x ilike '%buy now%')) > 0)", {"buy", "label"}),
    "Buy text regex": ([{"event": "$autocapture", "text": "^Buy", "text_matching": "regex"}],
                       f"({AUTOCAPTURE} and len(list_filter({TEXTS}, lambda x: regexp_matches(x, '^Buy'))) > 0)",
                       {"buy", "label"}),
    "Cancel text": ([{"event": "$autocapture", "text": "Cancel"}],
                    f"({AUTOCAPTURE} and list_contains({TEXTS}, 'Cancel'))", {"cancel"}),
    "Docs href": ([{"event": "$autocapture", "href": "DOCS.example", "href_matching": "contains"}],
                  f"({AUTOCAPTURE} and {HREF} ilike '%docs.example%')", {"docs"}),
    "Pricing href": ([{"event": "$autocapture", "href": "^/pric", "href_matching": "regex"}],
                     f"({AUTOCAPTURE} and regexp_matches({HREF}, '^/pric'))", {"pricing"}),
    "Pricing id": ([{"event": "$autocapture", "selector": "#pricing-link"}],
                   f"({AUTOCAPTURE} and list_contains(regexp_extract_all({CHAIN}, '(?::|\")attr_id=\"(.*?)\"', 1), 'pricing-link'))",
                   {"pricing"}),
    "Links": ([{"event": "$autocapture", "tag_name": "a"}],
              f"({AUTOCAPTURE} and regexp_matches({CHAIN}, '(^|;)a(\\.|$|;|:)'))", {"pricing", "docs"}),
    # Element fields on a step of another event are ignored, as PostHog ignores them.
    "Pageviews": ([{"event": "$pageview", "text": "Buy now", "selector": "button"}], "(event = '$pageview')", None),
    "Pro purchase": ([{"event": "purchased", "properties": [
        {"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]}], PRO, None),
    "Buy or pro": ([{"event": "$autocapture", "selector": "button.primary"}, {"event": "purchased", "properties": [
        {"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]}], f"({BUY_BUTTON} or {PRO})", None),
}


def make_events():
    rng = random.Random(20240301)
    start = datetime.datetime(2024, 3, 1, tzinfo=UTC)
    events = []
    while len(events) < 1200:
        moment = start + datetime.timedelta(seconds=rng.randrange(14 * 86400), microseconds=rng.randrange(1, 1_000_000))
        distinct_id = rng.choice(USERS)
        kind = rng.choices(["$pageview", "$autocapture", "purchased", "signed_up"], [45, 35, 12, 8])[0]
        properties = {"$current_url": rng.choice(URLS)}
        if kind == "$autocapture":
            properties["$elements_chain"] = CHAINS[rng.choice(sorted(CHAINS))]
        if kind == "purchased":
            properties["plan"] = rng.choice(["pro", "free", "pro"])
        events.append(seeded_event(rng, kind, distinct_id, moment, properties))
    return events


def create_actions(server):
    ids = {}
    for name, (steps, _, _) in ACTIONS.items():
        status, body = request(server, "POST", f"/api/projects/{server.project_id}/actions/",
                               {"name": name, "steps": steps})
        assert status == 201, f"creating {name}: {status} {body}"
        ids[name] = body["id"]
    return ids


def check_labels(connection, failures):
    """The DuckDB conditions pick the chains PostHog's definitions pick (hand-labelled)."""
    for name, (_, condition, labelled) in ACTIONS.items():
        if labelled is None:
            continue
        picked = set()
        for label, chain in CHAINS.items():
            row = connection.execute(
                f"select {condition} from (select '$autocapture' as event, ? as elements_chain, '{{}}' as properties)",
                [chain]).fetchall()[0]
            if row[0]:
                picked.add(label)
        if picked != labelled:
            failures.append(f"DuckDB's {name} picks {sorted(picked)}, PostHog's would pick {sorted(labelled)}")


RANGE = {"date_from": "2024-03-01", "date_to": "2024-03-14"}
LO = "TIMESTAMPTZ '2024-03-01 00:00:00+00'"
HI = "TIMESTAMPTZ '2024-03-14 23:59:59.999999+00'"


def trends_cases(server, connection, ids, failures):
    days = [(datetime.date(2024, 3, 1) + datetime.timedelta(days=k)).isoformat() for k in range(14)]
    names = list(ACTIONS)
    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "ActionsNode", "id": ids[name], "name": name} for name in names]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"trends: HTTP {status} {body}")
        return
    for index, name in enumerate(names):
        rows = dict(connection.sql(
            f"select strftime(ts, '%Y-%m-%d'), count(*) from ev where ts >= {LO} and ts <= {HI} "
            f"and ({ACTIONS[name][1]}) group by 1").fetchall())
        want = [rows.get(day, 0) for day in days]
        if sum(want) == 0:
            failures.append(f"trends {name}: DuckDB finds no event, so the case proves nothing")
        ours = body["results"][index]
        if ours.get("data") != want or ours.get("days") != days:
            failures.append(f"trends {name}: ours {ours.get('data')}, DuckDB {want}")
        action = ours.get("action") or {}
        if ours.get("label") != name or action.get("type") != "actions" or action.get("id") != ids[name]:
            failures.append(f"trends {name}: label {ours.get('label')!r}, action {action}")

    node = {"kind": "TrendsQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "ActionsNode", "id": ids["Buy or pro"], "math": "dau"}]}
    status, body = post_node(server, node)
    rows = dict(connection.sql(
        f"select strftime(ts, '%Y-%m-%d'), count(distinct person_id) from ev where ts >= {LO} and ts <= {HI} "
        f"and ({ACTIONS['Buy or pro'][1]}) group by 1").fetchall())
    want = [rows.get(day, 0) for day in days]
    if status != 200 or body["results"][0].get("data") != want:
        failures.append(f"trends dau: HTTP {status}, ours {body.get('results', [{}])[0].get('data')}, DuckDB {want}")


def funnel_cases(server, connection, ids, failures):
    steps = ["Signup page", "Buy button", "Pro purchase"]
    node = {"kind": "FunnelsQuery", "dateRange": RANGE,
            "funnelsFilter": {"funnelWindowInterval": 2, "funnelWindowIntervalUnit": "day"},
            "series": [{"kind": "ActionsNode", "id": ids[name]} for name in steps]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"funnel: HTTP {status} {body}")
        return
    ctes = ", ".join(f"s{k} as (select person_id p, ts t from ev where ts >= {LO} and ts <= {HI} "
                     f"and ({ACTIONS[name][1]}))" for k, name in enumerate(steps))
    window = "interval 2 day"
    want = [
        connection.execute(f"with {ctes} select count(distinct p) from s0").fetchall()[0][0],
        connection.execute(f"with {ctes} select count(distinct s0.p) from s0 join s1 on s1.p = s0.p "
                       f"and s1.t > s0.t and s1.t <= s0.t + {window}").fetchall()[0][0],
        connection.execute(f"with {ctes} select count(distinct s0.p) from s0 join s1 on s1.p = s0.p "
                       f"and s1.t > s0.t and s1.t <= s0.t + {window} join s2 on s2.p = s0.p "
                       f"and s2.t > s1.t and s2.t <= s0.t + {window}").fetchall()[0][0],
    ]
    ours = [step.get("count") for step in body.get("results", [])]
    if ours != want or want[-1] == 0 or want[-1] == want[0]:
        failures.append(f"funnel: ours {ours}, DuckDB {want}")
    for index, step in enumerate(body.get("results", [])):
        if (step.get("type"), step.get("action_id"), step.get("name")) != ("actions", ids[steps[index]], steps[index]):
            failures.append(f"funnel step {index}: {step.get('type')} {step.get('action_id')} {step.get('name')}")


def retention_cases(server, connection, ids, failures):
    date_range = {"date_from": "2024-03-01", "date_to": "2024-03-07"}
    total = 7
    node = {"kind": "RetentionQuery", "dateRange": date_range,
            "retentionFilter": {"period": "Day", "totalIntervals": total,
                                "targetEntity": {"type": "actions", "id": ids["Signup page"]},
                                "returningEntity": {"type": "actions", "id": ids["Buy or pro"]}}}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"retention: HTTP {status} {body}")
        return
    starts = interval_starts("Day", date_range, total)
    connection.execute("CREATE OR REPLACE TEMP TABLE intervals (idx INTEGER, start_local TIMESTAMP)")
    connection.executemany("INSERT INTO intervals VALUES (?, ?)", list(enumerate(starts)))
    bucket = "date_trunc('day', timezone('UTC', ts))"
    rows = connection.sql(f"""
        with cohorts as (select distinct person_id actor, i.idx from ev join intervals i on i.start_local = {bucket}
                         where {ACTIONS['Signup page'][1]}),
        returns as (select distinct person_id actor, i.idx from ev join intervals i on i.start_local = {bucket}
                    where {ACTIONS['Buy or pro'][1]}),
        reached as (select actor, idx cohort, 0 k from cohorts
                    union all
                    select c.actor, c.idx, r.idx - c.idx from cohorts c join returns r using (actor)
                    where r.idx > c.idx and r.idx - c.idx < {total})
        select cohort, k, count(distinct actor) from reached group by cohort, k""").fetchall()
    counts = {(cohort, k): n for cohort, k, n in rows}
    want = [{"date": start.replace(tzinfo=ZoneInfo("UTC")).isoformat(), "label": f"Day {index}",
             "values": [{"count": counts.get((index, k), 0), "label": f"Day {k}"} for k in range(total)]}
            for index, start in enumerate(starts)]
    if body.get("results") != want or not any(v["count"] for row in want for v in row["values"][1:]):
        failures.append(f"retention: ours {json.dumps(body.get('results'))[:1500]}\n  DuckDB {json.dumps(want)[:1500]}")


def stickiness_cases(server, connection, ids, failures):
    d = datetime.date
    names = ["Buy text", "Shop regex"]
    node = {"kind": "StickinessQuery", "interval": "day", "dateRange": RANGE,
            "series": [{"kind": "ActionsNode", "id": ids[name]} for name in names]}
    status, body = post_node(server, node)
    if status != 200:
        failures.append(f"stickiness: HTTP {status} {body}")
        return
    for index, name in enumerate(names):
        want = expected_stickiness(connection, "UTC", "day", d(2024, 3, 1), d(2024, 3, 14), ACTIONS[name][1])
        ours = body["results"][index]
        for key in ("data", "count", "days"):
            if ours.get(key) != want[key]:
                failures.append(f"stickiness {name} {key}: ours {ours.get(key)}, DuckDB {want[key]}")
        if ours.get("label") != name or (ours.get("action") or {}).get("type") != "actions":
            failures.append(f"stickiness {name}: label {ours.get('label')!r}, action {ours.get('action')}")


def sql_cases(server, connection, ids, failures):
    for name, (_, condition, _) in ACTIONS.items():
        want = connection.execute(f"select count(*) from ev where {condition}").fetchall()[0][0]
        for operand in (str(ids[name]), "'" + name + "'"):
            status, body = post_query(server, f"select count() from events where matchesAction({operand})")
            if status != 200 or body.get("results") != [[want]]:
                failures.append(f"matchesAction({operand}): HTTP {status} {body.get('results', body)}, DuckDB {want}")
    # Inside an expression: per event, the pageviews that are not on the signup page.
    want = connection.sql(
        f"select event, count(*) from ev where not ({ACTIONS['Signup page'][1]}) and event in ('$pageview', 'signed_up') "
        f"group by event order by event").fetchall()
    status, body = post_query(
        server, f"select event, countIf(not matchesAction({ids['Signup page']})) c from events "
                f"where event in ('$pageview', 'signed_up') group by event order by event")
    if status != 200 or [tuple(row) for row in body.get("results", [])] != [tuple(r) for r in want] + (
            [("signed_up", 0)] if len(want) == 1 else []):
        failures.append(f"countIf(not matchesAction): HTTP {status} {body.get('results', body)}, DuckDB {want}")


def refusals(server, ids, failures):
    missing = max(ids.values()) + 1000
    status, body = post_node(server, {"kind": "TrendsQuery", "dateRange": RANGE,
                                      "series": [{"kind": "ActionsNode", "id": missing}]})
    if status != 400 or body.get("attr") != "query.series[0].id":
        failures.append(f"unknown action in a series: {status} {body}")
    status, body = post_query(server, f"select count() from events where matchesAction({missing})")
    if status != 400 or f"Action with id {missing} does not exist" not in json.dumps(body):
        failures.append(f"unknown action in SQL: {status} {body}")


def check(backend, events):
    with loaded(backend, events, view=True) as (server, connection, logs):
        ids = create_actions(server)
        chains = connection.execute("select count(*) from ev where event = '$autocapture' and elements_chain like '%nth-child%'")
        assert chains.fetchall()[0][0] > 100, "capture did not keep the elements chains"

        failures = []
        check_labels(connection, failures)
        trends_cases(server, connection, ids, failures)
        funnel_cases(server, connection, ids, failures)
        retention_cases(server, connection, ids, failures)
        stickiness_cases(server, connection, ids, failures)
        sql_cases(server, connection, ids, failures)
        refusals(server, ids, failures)
        report(backend, failures, logs, "the actions")
        print(f"{backend}: every action query matches DuckDB over the Delta table")


def main():
    events = make_events()
    run_on_backends("actions-duckdb", lambda backend: check(backend, events))


if __name__ == "__main__":
    main()
