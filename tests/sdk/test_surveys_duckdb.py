"""Survey stats, response counts and responses against an independent computation in DuckDB,
on both storage backends.

Two surveys are created through the API; survey events go in through the official posthog-python
SDK: shown, dismissed and sent, with partial responses (`$survey_completed: false`) completed
later under one `$survey_submission_id`, resubmissions with one submission id, dismissals after a
response, legacy `$survey_response` / `$survey_response_<i>` keys, empty answers, responses
before a survey's start, and one survey's responses counted by another. The project's Delta
table is read with `deltalake` into DuckDB, where submissions are deduplicated with a window
function (the latest event of each survey and submission id, or of the event alone) and each
question's answer is its latest non-null value; the expected answers of
`GET /surveys/:id/stats/` (date windows, `exclude_archived` after archiving a response,
`include_per_question_stats`), `GET /surveys/stats/`, `GET /surveys/responses_count/` and
`GET /surveys/:id/responses/` (filters, pages) are worked out there.

Run: `python tests/sdk/test_surveys_duckdb.py <analytics binary> [emulator endpoint]`.
"""
import datetime
import json
import math
import os
import random
import sys
import urllib.parse
import uuid

import duckdb
from posthog import Posthog

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
from test_posthog_sdk import Server, run_on_backends  # noqa: E402
from node_harness import keep_logs, report, request, wait_for_lake  # noqa: E402

UTC = datetime.timezone.utc
VISIBLE_TIMEOUT_SECONDS = 120
PEOPLE = 36
EVENTS = ["survey shown", "survey dismissed", "survey sent"]
QUESTIONS = [
    {"type": "rating", "question": "How likely?", "scale": 10, "id": "q-rating"},
    {"type": "open", "question": "Why?", "id": "q-open"},
    {"type": "multiple_choice", "question": "Which?", "choices": ["a", "b", "c"], "id": "q-multi"},
]
EXTRA = {"device_type": "$device_type", "browser": "$browser", "os": "$os",
         "geoip_country_code": "$geoip_country_code", "geoip_country_name": "$geoip_country_name",
         "geoip_city_name": "$geoip_city_name", "current_url": "$current_url"}


def iso(moment):
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_instant(text):
    return None if text is None else datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def api(server, method, path, body=None):
    return request(server, method, f"/api/projects/{server.project_id}{path}", body)


def get(server, path, params=None):
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    return request(server, "GET", f"/api/projects/{server.project_id}{path}{query}", None)


# --- the events ------------------------------------------------------------------------------

def send_events(server, s_id, t_id, base, before_s):
    """Every person's survey events through the SDK, spread over `base + 30 min * i` (plus a
    few minutes); answers how many were sent."""
    rng = random.Random(16_2026)
    sdk = Posthog(server.token, host=server.url, flush_at=100, flush_interval=0.5, max_retries=3)
    sent = 0

    def capture(event, who, survey, at, properties):
        nonlocal sent
        props = {"$survey_id": survey, "$session_id": f"session-{who}", "$current_url": "https://example.com/",
                 "$browser": rng.choice(["Chrome", "Firefox", "Safari"]), "$os": "Mac OS X",
                 "$device_type": "Desktop", **properties}
        captured = sdk.capture(event, distinct_id=who, properties=props, timestamp=at, uuid=str(uuid.uuid4()))
        assert captured, f"the SDK dropped {event} of {who}"
        sent += 1

    def rating():
        value = rng.randrange(1, 11)
        return str(value) if rng.random() < 0.3 else value

    def multi():
        return rng.choice([["a"], ["b"], ["a", "c"], ["a", "b", "c"], []])

    def text():
        return rng.choice(["great", "slow", "", "love it", "meh"])

    try:
        for i in range(PEOPLE):
            who = f"person-{i:02d}"
            at = base + datetime.timedelta(minutes=30 * i)

            def minute(k):
                return at + datetime.timedelta(minutes=k, milliseconds=rng.randrange(1000))

            for k in range(1 + (i % 3 == 0)):
                capture("survey shown", who, s_id, minute(k), {"$survey_iteration": 1})
            kind = i % 6
            sub = f"sub-{i}-{rng.randrange(10**6)}"
            if kind == 0:  # one complete response, no submission id
                capture("survey sent", who, s_id, minute(3), {
                    "$survey_iteration": 1 + i % 2, "$survey_response_q-rating": rating(),
                    "$survey_response_q-open": text(), "$survey_response_q-multi": multi()})
            elif kind == 1:  # a partial response completed later
                capture("survey sent", who, s_id, minute(3), {
                    "$survey_submission_id": sub, "$survey_completed": False,
                    "$survey_response_q-rating": rating()})
                capture("survey sent", who, s_id, minute(5), {
                    "$survey_submission_id": sub, "$survey_completed": True,
                    "$survey_response_q-open": text(), "$survey_response_q-multi": multi()})
            elif kind == 2:  # a resubmission under the same id
                for k in (3, 6):
                    capture("survey sent", who, s_id, minute(k), {
                        "$survey_submission_id": sub, "$survey_completed": True,
                        "$survey_response_q-rating": rating(), "$survey_response_q-open": text(),
                        "$survey_response_q-multi": multi()})
            elif kind == 3:  # answered, then dismissed
                capture("survey sent", who, s_id, minute(3), {
                    "$survey_submission_id": sub, "$survey_response_q-rating": rating()})
                capture("survey dismissed", who, s_id, minute(4), {
                    "$survey_submission_id": sub, "$survey_partially_completed": True})
            elif kind == 4:  # legacy keys, by question index
                capture("survey sent", who, s_id, minute(3), {
                    "$survey_response": rating(), "$survey_response_1": text(), "$survey_response_2": multi()})
            elif i % 12 == 5:  # dismissed without answering
                capture("survey dismissed", who, s_id, minute(2), {"$survey_partially_completed": False})
            # (the other kind-5 people only saw it)
            if i % 4 == 1:  # the other survey
                capture("survey shown", who, t_id, minute(8), {})
                capture("survey sent", who, t_id, minute(9), {"$survey_response_q-rating": rating()})
        # Before S's start (after T's): counted by responses_count, not by S's stats.
        for k in range(3):
            who = f"early-{k}"
            capture("survey shown", who, s_id, before_s + datetime.timedelta(minutes=k), {})
            capture("survey sent", who, s_id, before_s + datetime.timedelta(minutes=k, seconds=30),
                    {"$survey_response_q-rating": rating()})
        sdk.flush(timeout_seconds=240)
    finally:
        sdk.shutdown()
    return sent


# --- DuckDB: the independent answers -----------------------------------------------------------

def prop(key):
    return f"nullif(json_extract_string(properties, '$.\"{key}\"'), '')"


def raw(key):
    """A property's JSON text, NULL for missing, null, "" and []."""
    text = f"json_extract(properties, '$.\"{key}\"')::varchar"
    return f"case when {text} in ('null', '\"\"', '[]') then null else {text} end"


def answer_sql(index, question):
    legacy = "$survey_response" if index == 0 else f"$survey_response_{index}"
    return f"coalesce({raw('$survey_response_' + question['id'])}, {raw(legacy)})"


def load(server):
    table = server.table().to_pyarrow_table()
    db = duckdb.connect()
    db.execute("SET TimeZone = 'UTC'")
    db.register("lake", table)
    answers = ", ".join(f"{answer_sql(i, q)} as a{i}" for i, q in enumerate(QUESTIONS))
    extras = ", ".join(f"{prop(key)} as x_{name}" for name, key in EXTRA.items())
    db.execute(f"""
        create table ev as
        select uuid, event, distinct_id, person_id, cast(timestamp as timestamptz) as ts,
               nullif("$session_id", '') as session_id,
               {prop('$survey_id')} as survey_id,
               coalesce({prop('$survey_submission_id')}, uuid) as submission,
               {prop('$survey_iteration')} as iteration,
               {extras}, {answers}
        from lake""")
    return db


def bounds_sql(window):
    conditions = []
    if window[0] is not None:
        conditions.append(f"ts >= TIMESTAMPTZ '{window[0].isoformat()}'")
    if window[1] is not None:
        conditions.append(f"ts <= TIMESTAMPTZ '{window[1].isoformat()}'")
    return " and ".join(conditions) or "true"


def in_list(values):
    return "(" + ", ".join(f"'{v}'" for v in values) + ")" if values else "(NULL)"


def submissions(db, surveys, window, archived=()):
    """One row per submission in the window: the latest event's fields and each question's latest
    non-null answer (answers over the window's events only), archived representatives dropped."""
    answers = ", ".join(
        f"last_value(a{i} ignore nulls) over w as m{i}" for i in range(len(QUESTIONS)))
    dropped = f"and uuid not in {in_list(archived)}" if archived else ""
    relation = db.sql(f"""
        select * from (
            select *, row_number() over (partition by survey_id, submission order by ts desc) as rank,
                   {answers}
            from ev
            where event = 'survey sent' and survey_id in {in_list(surveys)} and {bounds_sql(window)}
            window w as (partition by survey_id, submission order by ts
                         rows between unbounded preceding and unbounded following)
        ) where rank = 1 {dropped}
        order by ts desc, uuid desc""")
    return relation.fetchall(), relation.columns


def expected_stats(db, surveys, window, archived=()):
    rows, columns = submissions(db, surveys, window, archived)
    col = {name: k for k, name in enumerate(columns)}
    sent = rows
    seen = db.sql(f"""
        select event, count(*), count(distinct person_id), min(ts), max(ts) from ev
        where event in ('survey shown', 'survey dismissed') and survey_id in {in_list(surveys)}
          and {bounds_sql(window)}
        group by event""").fetchall()
    stats = {event: {"total_count": 0, "unique_persons": 0, "first_seen": None, "last_seen": None}
             for event in EVENTS}
    for event, total, persons, first, last in seen:
        stats[event] = {"total_count": total, "unique_persons": persons, "first_seen": first, "last_seen": last}
    if sent:
        times = [row[col["ts"]] for row in sent]
        stats["survey sent"] = {"total_count": len(sent),
                                "unique_persons": len({row[col["person_id"]] for row in sent}),
                                "first_seen": min(times), "last_seen": max(times)}
    dismissers = {row[0] for row in db.sql(f"""
        select distinct person_id from ev where event = 'survey dismissed'
          and survey_id in {in_list(surveys)} and {bounds_sql(window)}""").fetchall()}
    both = len(dismissers & {row[col["person_id"]] for row in sent})
    shown, dismissed, answered = (stats[event] for event in EVENTS)
    dismissed["unique_persons"] = max(0, dismissed["unique_persons"] - both)
    for entry in stats.values():
        entry["unique_persons_only_seen"] = 0
        entry["total_count_only_seen"] = 0
    shown["unique_persons_only_seen"] = max(
        0, shown["unique_persons"] - dismissed["unique_persons"] - answered["unique_persons"])
    shown["total_count_only_seen"] = max(
        0, shown["total_count"] - dismissed["total_count"] - answered["total_count"])

    def rate(part, whole):
        return round(part / whole * 100, 2) if whole else 0.0

    rates = {"response_rate": 0.0, "dismissal_rate": 0.0,
             "unique_users_response_rate": 0.0, "unique_users_dismissal_rate": 0.0}
    if shown["total_count"]:
        rates = {
            "response_rate": rate(answered["total_count"], shown["total_count"]),
            "dismissal_rate": rate(dismissed["total_count"], shown["total_count"]),
            "unique_users_response_rate": rate(answered["unique_persons"], shown["unique_persons"]),
            "unique_users_dismissal_rate": rate(dismissed["unique_persons"], shown["unique_persons"]),
        }
    return {"stats": stats, "rates": rates}, rows, col


def expected_per_question(rows, col):
    out = []
    for index, question in enumerate(QUESTIONS):
        answers = [json.loads(row[col[f"m{index}"]]) for row in rows if row[col[f"m{index}"]] is not None]
        distribution, numbers = {}, []
        if question["type"] != "open":
            for answer in answers:
                labels = set(answer) if isinstance(answer, list) else {answer}
                for label in labels:
                    key = label if isinstance(label, str) else json.dumps(label)
                    distribution[key] = distribution.get(key, 0) + 1
                if question["type"] == "rating":
                    try:
                        numbers.append(float(answer))
                    except (TypeError, ValueError):
                        pass
        out.append({"question_id": question["id"], "question_index": index,
                    "question_text": question["question"], "question_type": question["type"],
                    "response_count": len(answers), "distribution": distribution,
                    "average": sum(numbers) / len(numbers) if numbers else None})
    return out


# --- comparing -----------------------------------------------------------------------------------

def same(ours, want):
    if isinstance(want, datetime.datetime):
        return isinstance(ours, str) and parse_instant(ours) == want.astimezone(UTC)
    if isinstance(want, float) and isinstance(ours, (int, float)):
        return math.isclose(ours, want, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(want, dict) and isinstance(ours, dict):
        return want.keys() == ours.keys() and all(same(ours[k], want[k]) for k in want)
    if isinstance(want, list) and isinstance(ours, list):
        return len(want) == len(ours) and all(same(a, b) for a, b in zip(ours, want))
    return ours == want


def compare(label, ours, want, failures):
    if not same(ours, want):
        failures.append(f"{label}:\n  ours {json.dumps(ours, default=str, sort_keys=True)}\n"
                        f"  want {json.dumps(want, default=str, sort_keys=True)}")


def check_stats(server, db, survey, params, archived, failures, label):
    status, body = get(server, f"/surveys/{survey['id']}/stats/", params)
    if status != 200:
        failures.append(f"{label}: HTTP {status} {body}")
        return
    start = max(filter(None, [parse_instant(params.get("date_from")), parse_instant(survey["start_date"])]))
    window = (start, parse_instant(params.get("date_to")))
    want, rows, col = expected_stats(db, [survey["id"]], window, archived)
    compare(f"{label} stats", body.get("stats"), want["stats"], failures)
    compare(f"{label} rates", body.get("rates"), want["rates"], failures)
    compare(f"{label} survey_id", body.get("survey_id"), survey["id"], failures)
    if params.get("include_per_question_stats") == "true":
        compare(f"{label} per_question_stats", body.get("per_question_stats"),
                expected_per_question(rows, col), failures)
    elif "per_question_stats" in body:
        failures.append(f"{label}: per_question_stats without asking")


def expected_page(db, survey_id, params, archived=()):
    window = (parse_instant(params.get("since")), parse_instant(params.get("until")))
    rows, columns = submissions(db, [survey_id], window, archived)
    col = {name: k for k, name in enumerate(columns)}
    question = params.get("question_id")
    if question:
        index = next(i for i, q in enumerate(QUESTIONS) if q["id"] == question)

        def score(row):
            text = row[col[f"m{index}"]]
            try:
                return float(json.loads(text))
            except (TypeError, ValueError):
                return None

        rows = [row for row in rows if row[col[f"m{index}"]] is not None]
        if "score_gte" in params:
            rows = [row for row in rows if score(row) is not None and score(row) >= float(params["score_gte"])]
        if "score_lte" in params:
            rows = [row for row in rows if score(row) is not None and score(row) <= float(params["score_lte"])]
    limit, offset = int(params.get("limit", 100)), int(params.get("offset", 0))
    page = rows[offset:offset + limit]

    def iteration(value):
        try:
            return json.loads(value) if value is not None else None
        except ValueError:
            return value

    results = [{
        "uuid": row[col["uuid"]],
        "distinct_id": row[col["distinct_id"]],
        "session_id": row[col["session_id"]],
        "submitted_at": row[col["ts"]],
        "answers": [{"question_id": q["id"], "question_index": i, "question_text": q["question"],
                     "question_type": q["type"],
                     "answer": None if row[col[f"m{i}"]] is None else json.loads(row[col[f"m{i}"]])}
                    for i, q in enumerate(QUESTIONS)],
        "extra": {**{name: row[col[f"x_{name}"]] for name in EXTRA}, "iteration": iteration(row[col["iteration"]])},
    } for row in page]
    return {"results": results, "has_more": len(rows) > offset + limit, "limit": limit, "offset": offset}, rows, col


def check_page(server, db, survey_id, params, archived, failures, label):
    status, body = get(server, f"/surveys/{survey_id}/responses/", params)
    if status != 200:
        failures.append(f"{label}: HTTP {status} {body}")
        return
    want, _, _ = expected_page(db, survey_id, params, archived)
    compare(label, body, want, failures)


def check(backend):
    server = Server(backend)
    logs = keep_logs(server)
    try:
        failures = []
        now = datetime.datetime.now(UTC).replace(microsecond=0)
        base = (now - datetime.timedelta(days=2)).replace(minute=0, second=0)
        s_start, t_start = base - datetime.timedelta(days=1), base - datetime.timedelta(days=3)
        created = {}
        for name, start in (("S", s_start), ("T", t_start)):
            status, body = api(server, "POST", "/surveys/", {
                "name": f"survey {name}", "type": "popover", "questions": QUESTIONS, "start_date": iso(start)})
            assert status == 201, f"create survey {name}: {status} {body}"
            created[name] = body
        s, t = created["S"], created["T"]
        sent = send_events(server, s["id"], t["id"], base, base - datetime.timedelta(days=2))
        wait_for_lake(server, sent, VISIBLE_TIMEOUT_SECONDS)
        db = load(server)

        # One survey: from its start; a window inside it.
        check_stats(server, db, s, {}, (), failures, "S")
        inner = {"date_from": iso(base + datetime.timedelta(hours=5, minutes=20)),
                 "date_to": iso(base + datetime.timedelta(hours=12, minutes=20))}
        check_stats(server, db, s, inner, (), failures, "S, 5h20 to 12h20")
        check_stats(server, db, t, {"include_per_question_stats": "true"}, (), failures, "T")

        # Archive one submission's representative, and a partial event that represents nothing.
        rows, columns = submissions(db, [s["id"]], (parse_instant(s["start_date"]), None))
        col = {name: k for k, name in enumerate(columns)}
        representative = rows[len(rows) // 2][col["uuid"]]
        partial = db.sql("""
            select uuid from (select uuid, row_number() over (partition by survey_id, submission
                                                              order by ts desc) r from ev
                              where event = 'survey sent') where r = 2 limit 1""").fetchall()[0][0]
        for response in (representative, partial):
            status, body = api(server, "POST", f"/surveys/{s['id']}/responses/{response}/archive/")
            assert status == 200, f"archive {response}: {status} {body}"
        status, archived = api(server, "GET", f"/surveys/{s['id']}/archived-response-uuids/")
        assert status == 200 and sorted(archived) == sorted([representative, partial]), f"{status} {archived}"
        for label, params, dropped in [
            ("S archived kept", {"include_per_question_stats": "true"}, ()),
            ("S exclude_archived", {"exclude_archived": "true", "include_per_question_stats": "true"}, archived),
        ]:
            check_stats(server, db, s, params, dropped, failures, label)

        # Every survey together, only the date window applies.
        status, body = get(server, "/surveys/stats/")
        if status != 200:
            failures.append(f"global stats: HTTP {status} {body}")
        else:
            want, _, _ = expected_stats(db, [s["id"], t["id"]], (None, None))
            compare("global stats", body, want, failures)
        status, body = get(server, "/surveys/stats/", inner)
        want, _, _ = expected_stats(db, [s["id"], t["id"]],
                                    (parse_instant(inner["date_from"]), parse_instant(inner["date_to"])))
        compare("global stats, 5h20 to 12h20", body if status == 200 else {"status": status}, want, failures)

        # Counts since the earliest start (T's), so S's early responses count.
        earliest = min(parse_instant(s["start_date"]), parse_instant(t["start_date"]))
        for label, params, dropped in [
            ("responses_count", {}, ()),
            ("responses_count exclude_archived", {"exclude_archived": "true"}, archived),
            ("responses_count of T", {"survey_ids": t["id"]}, ()),
        ]:
            surveys = [t["id"]] if "survey_ids" in params else [s["id"], t["id"]]
            rows, columns = submissions(db, surveys, (earliest, None), dropped)
            survey_col = columns.index("survey_id")
            want = {}
            for row in rows:
                want[row[survey_col]] = want.get(row[survey_col], 0) + 1
            status, body = get(server, "/surveys/responses_count/", params)
            compare(label, body if status == 200 else {"status": status, "body": body}, want, failures)

        # The responses list (no window but since / until): pages, filters, archived.
        total = len(submissions(db, [s["id"]], (None, None))[0])
        for label, params, dropped in [
            ("responses", {}, ()),
            ("responses page 2", {"limit": "4", "offset": "4"}, ()),
            ("responses last page", {"limit": "5", "offset": str(total - 3)}, ()),
            ("responses rated 7+", {"question_id": "q-rating", "score_gte": "7"}, ()),
            ("responses rated 2 to 5", {"question_id": "q-rating", "score_gte": "2", "score_lte": "5"}, ()),
            ("responses answering why", {"question_id": "q-open"}, ()),
            ("responses in a window", {"since": inner["date_from"], "until": inner["date_to"]}, ()),
            ("responses exclude_archived", {"exclude_archived": "true"}, archived),
        ]:
            check_page(server, db, s["id"], params, dropped, failures, label)
        status, body = get(server, f"/surveys/{s['id']}/responses/", {"score_gte": "3"})
        if status != 400 or body.get("attr") != "question_id":
            failures.append(f"score without question_id: {status} {body}")

        report(backend, failures, logs, "the survey")
        print(f"{backend}: survey stats, responses_count and responses match DuckDB over the Delta table")
    finally:
        server.stop()


def main():
    run_on_backends("surveys-duckdb", check)


if __name__ == "__main__":
    main()
