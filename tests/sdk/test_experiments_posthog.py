"""Experiments end to end: the official posthog-python SDK exposes 2,000 people to an experiment's
flag through our `/flags`, conversions go in through capture, and every number of
`ExperimentQuery` is checked against an independent computation, on both storage backends.

An experiment is created through `/api/projects/:id/experiments/` (its flag created with it) with a
count mean, a sum mean over a float property, a winsorized sum mean with a non-ASCII name, a
two-step funnel and a ratio metric, then launched. Each metric's fingerprint is recomputed here as
PostHog computes it (reference 2.6: the metric without its identity fields, the start date, the
stats method, the exposure criteria; SHA-256 of Python's `json.dumps`) before and after launch and
after a change of stats method.

The SDK evaluates the flag for every id (`get_feature_flag`, remote) and sends
`$feature_flag_called` itself; each answer must equal the bucketing formula of reference 3.2.
Conversions follow with a known lift (control 30 %, test 40 %), with traps that must not count:
metric events before the person's exposure (before and after the launch), exposures before the
launch, exposures to another flag or to an unknown variant, and 40 people exposed to both variants
(left out: `multiple_variant_handling` defaults to `exclude`).

The project's Delta table is read with the `deltalake` package into DuckDB, which computes the
exposures (first exposure per person from the start date, `$multiple` excluded), each person's
values after their first exposure, the winsorized bounds (linear-interpolated quantiles pooled over
every exposed person, as ClickHouse's `quantile` is for fewer than 8,192 values) and the per-variant
n / sum / sum of squares, funnel step counts and ratio sums: the API's must be equal (the revenue
amounts are multiples of 1/4, so float sums are exact in any order; winsorized sums to 1e-8).
scipy then computes the statistics from DuckDB's sums as reference experiment_stats.md defines
them (relative lift with the delta-method variance; Bayesian chance to win and 95 % credible
interval; frequentist Welch t with the raw-variance df; proportions with p(1-p); ratio metrics with
the delta method; the SRM chi-square against the 50/50 split), equal to the API's to 1e-6.

Run by scripts/test: `python tests/sdk/test_experiments_posthog.py <analytics binary> [emulator endpoint]`.
"""
import copy
import datetime
import hashlib
import json
import math
import os
import random
import sys
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor

import duckdb
import requests
from posthog import Posthog
from scipy import stats

sys.dont_write_bytecode = True  # no __pycache__ next to the tests
# posthog-python 7.x deprecates get_feature_flag for evaluate_flags; the single-flag read is the point here.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=__name__)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_posthog_sdk import Server, run_on_backends  # noqa: E402
from node_harness import keep_logs, post_node, report, wait_for_lake  # noqa: E402
from test_flags_posthog import reference_variant as flag_variant  # noqa: E402

UTC = datetime.timezone.utc
FLAG_KEY = "checkout-redesign"
VARIANTS = [("control", 50), ("test", 50)]
# 2,000 ids on the embedded backend; the emulator (moto, one request at a time) takes a fifth of
# them, as every capture batch is a staged S3 object and a DynamoDB write there.
PEOPLE = 2_000
PEOPLE_BY_BACKEND = {"sqlite": 2_000, "dynamodb": 400}
CONVERSION = {"control": 0.30, "test": 0.40}
SDK_THREADS = 4
VISIBLE_TIMEOUT_SECONDS = 90
STATS_TOLERANCE = 1e-6

PURCHASE = {"kind": "EventsNode", "event": "purchase"}
REVENUE = {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "revenue"}
CHECKOUT = {"kind": "EventsNode", "event": "checkout"}
PAGEVIEW = {"kind": "EventsNode", "event": "$pageview"}

# (label, metric as sent). The labels name the DuckDB computation each one is checked against.
METRICS = [
    ("count", {"kind": "ExperimentMetric", "metric_type": "mean", "name": "Purchases", "source": PURCHASE}),
    ("revenue", {"kind": "ExperimentMetric", "metric_type": "mean", "name": "Revenue", "source": REVENUE,
                 "conversion_window": 14, "conversion_window_unit": "day"}),
    ("winsorized", {"kind": "ExperimentMetric", "metric_type": "mean", "name": "Umsatz – Größe ✓",
                    "source": REVENUE, "lower_bound_percentile": 0.05, "upper_bound_percentile": 0.95}),
    ("funnel", {"kind": "ExperimentMetric", "metric_type": "funnel", "name": "Checkout → purchase",
                "series": [CHECKOUT, PURCHASE]}),
    ("ratio", {"kind": "ExperimentMetric", "metric_type": "ratio", "name": "Revenue per pageview",
               "numerator": REVENUE, "denominator": PAGEVIEW}),
]
STATISTIC = {"count": "mean", "revenue": "mean", "winsorized": "mean", "funnel": "proportion", "ratio": "ratio"}


# --- the reference formulas, written from the references, not from the server ---

def reference_variant(identifier):
    """Reference 3.2: the experiment flag's variant of `identifier` (the flags check's formula)."""
    return flag_variant(FLAG_KEY, identifier, VARIANTS)


def fingerprint(metric, start_date, stats_method, exposure_criteria):
    """Reference 2.6, `compute_metric_fingerprint`."""
    clean = copy.deepcopy(metric)
    for field in ("uuid", "name", "kind", "fingerprint", "only_count_matured_users"):
        clean.pop(field, None)
    if "breakdownFilter" in clean and not (clean["breakdownFilter"] or {}).get("breakdowns"):
        clean.pop("breakdownFilter")
    data = {
        "metric": clean,
        "start_date": start_date.astimezone(UTC).isoformat() if start_date else None,
        "stats_method": stats_method or "bayesian",
    }
    if exposure_criteria:
        data["exposure_criteria"] = exposure_criteria
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def parse_instant(text):
    return None if text is None else datetime.datetime.fromisoformat(text)


# --- the API ---

def api(server, method, path, body=None):
    """`(status, reply)` of the experiments API; a body only when there is one."""
    response = requests.request(method, f"{server.url}/api/projects/{server.project_id}/experiments{path}",
                                json=body, headers={"Authorization": f"Bearer {server.key}"}, timeout=60)
    try:
        reply = response.json()
    except ValueError:
        reply = {"detail": response.text}
    return response.status_code, reply if isinstance(reply, dict) else {"detail": reply}


def check_fingerprints(experiment, sent, moment, failures):
    """Every metric as stored: what was sent plus `uuid` and `fingerprint`, the fingerprint as PostHog's."""
    start = parse_instant(experiment.get("start_date"))
    method = (experiment.get("stats_config") or {}).get("method")
    metrics = experiment.get("metrics") or []
    if len(metrics) != len(sent):
        failures.append(f"{moment}: {len(metrics)} metrics returned, {len(sent)} sent")
        return
    for (label, original), stored in zip(sent, metrics):
        if not stored.get("uuid") or not isinstance(stored.get("fingerprint"), str):
            failures.append(f"{moment}: {label} has no uuid or fingerprint: {json.dumps(stored)}")
            continue
        extra = {k: v for k, v in stored.items() if k not in ("uuid", "fingerprint")}
        if extra != original:
            failures.append(f"{moment}: {label} stored differs from what was sent:\n  sent {json.dumps(original)}\n"
                            f"  stored {json.dumps(stored)}")
        want = fingerprint(stored, start, method, experiment.get("exposure_criteria"))
        if stored["fingerprint"] != want:
            failures.append(f"{moment}: {label} fingerprint {stored['fingerprint']}, PostHog's {want} "
                            f"(start_date {experiment.get('start_date')!r}, method {method!r}, "
                            f"exposure_criteria {json.dumps(experiment.get('exposure_criteria'))})")


def create_and_launch(server, failures):
    body = {
        "name": "Checkout redesign – Größe ✓",
        "feature_flag_key": FLAG_KEY,
        "parameters": {"feature_flag_variants": [{"key": k, "split_percent": p} for k, p in VARIANTS]},
        "metrics": [metric for _, metric in METRICS],
        "stats_config": {"method": "bayesian"},
        "exposure_criteria": {"filterTestAccounts": False},
        # The metric events are not ingested yet (PostHog checks event definitions otherwise).
        "allow_unknown_events": True,
    }
    status, created = api(server, "POST", "/", body)
    assert status == 201, f"create: HTTP {status}: {json.dumps(created)}"
    assert isinstance(created.get("id"), int) and created.get("feature_flag_key") == FLAG_KEY, created
    flag = created.get("feature_flag") or {}
    variants = [(v.get("key"), v.get("rollout_percentage"))
                for v in ((flag.get("filters") or {}).get("multivariate") or {}).get("variants", [])]
    if flag.get("key") != FLAG_KEY or variants != VARIANTS or flag.get("active") is not False:
        failures.append(f"create: the experiment's flag is {json.dumps(flag)}, want {FLAG_KEY} "
                        f"{VARIANTS}, inactive while a draft")
    if created.get("start_date") is not None:
        failures.append(f"create: a draft with start_date {created.get('start_date')!r}")
    check_fingerprints(created, METRICS, "draft", failures)

    status, launched = api(server, "POST", f"/{created['id']}/launch/")
    assert status == 200, f"launch: HTTP {status}: {json.dumps(launched)}"
    assert launched.get("start_date"), f"launch: no start_date: {json.dumps(launched)}"
    if (launched.get("feature_flag") or {}).get("active") is not True:
        failures.append(f"launch: the flag is not active: {json.dumps(launched.get('feature_flag'))}")
    check_fingerprints(launched, METRICS, "launched", failures)
    status, read = api(server, "GET", f"/{created['id']}/")
    assert status == 200, f"get: HTTP {status}: {json.dumps(read)}"
    check_fingerprints(read, METRICS, "launched, read back", failures)
    return read


# --- the events ---

class Sent:
    """Counts what goes in, to know when all of it is in the lake."""

    def __init__(self, sdk):
        self.sdk = sdk
        self.count = 0

    def capture(self, event, distinct_id, properties=None, timestamp=None):
        captured = self.sdk.capture(event, distinct_id=distinct_id, properties=properties or {},
                                    timestamp=timestamp, uuid=str(uuid.uuid4()))
        assert captured, f"the SDK dropped {event} of {distinct_id}"
        self.count += 1


def exposure(variant, flag=FLAG_KEY):
    return {"$feature_flag": flag, "$feature_flag_response": variant}


def send_events(server, launched_at):
    """Exposes every id through the SDK, then sends the conversions; answers (ids, sdk variants, count)."""
    rng = random.Random(15_2026)
    ids = [f"user-{i:04d}" if i % 3 else f"ünï-{i}-日本" for i in range(PEOPLE)]
    sdk = Posthog(server.token, host=server.url, flush_at=250, flush_interval=0.5,
                  feature_flags_request_timeout_seconds=15, max_retries=3)
    sent = Sent(sdk)
    other = {"control": "test", "test": "control"}
    try:
        # Traps before anyone's exposure: metric events before the launch and after it, exposures
        # (to the other variant) before the launch.
        before_launch = launched_at - datetime.timedelta(hours=1)
        now = datetime.datetime.now(UTC)
        for i, distinct_id in enumerate(ids):
            if i % 10 == 3:
                sent.capture("checkout", distinct_id, {}, before_launch)
                sent.capture("purchase", distinct_id, {"revenue": 99.75}, before_launch + datetime.timedelta(seconds=1))
            if i % 10 == 7:
                sent.capture("checkout", distinct_id, {}, now)
                sent.capture("purchase", distinct_id, {"revenue": 1000.5}, now + datetime.timedelta(milliseconds=5))
                sent.capture("$pageview", distinct_id, {}, now + datetime.timedelta(milliseconds=6))
            if i % 50 == 11:
                sent.capture("$feature_flag_called", distinct_id, exposure(other[reference_variant(distinct_id)]),
                             before_launch)
        time.sleep(1.0)

        # The exposures: the SDK asks /flags and sends $feature_flag_called itself.
        with ThreadPoolExecutor(SDK_THREADS) as pool:
            variants = list(pool.map(lambda d: sdk.get_feature_flag(FLAG_KEY, d), ids))
        sent.count += len(ids)
        wrong = [(d, v, reference_variant(d)) for d, v in zip(ids, variants) if v != reference_variant(d)]
        assert not wrong, f"{len(wrong)} SDK answers differ from the bucketing formula, first: {wrong[:5]}"
        # Asked again: the SDK sends no second event for the same answer.
        for distinct_id in ids[:20]:
            sdk.get_feature_flag(FLAG_KEY, distinct_id)

        # After the exposure: 40 people see the other variant too; exposures that are not this
        # experiment's (another flag, an unknown variant) of people who are otherwise never exposed.
        for i, distinct_id in enumerate(ids):
            if i % 50 == 17:
                sent.capture("$feature_flag_called", distinct_id, exposure(other[variants[i]]))
        for i in range(10):
            sent.capture("$feature_flag_called", f"stranger-{i}", exposure("test", "another-flag"))
            sent.capture("$feature_flag_called", f"stranger-{i}", exposure("mystery"))
            sent.capture("purchase", f"stranger-{i}", {"revenue": 10.0})
        time.sleep(1.0)

        # Conversions with a known lift, a few outliers, a few revenues as text or missing.
        base = datetime.datetime.now(UTC)
        for i, (distinct_id, variant) in enumerate(zip(ids, variants)):
            moment = base + datetime.timedelta(microseconds=rng.randrange(500_000))

            def later(step_ms):
                nonlocal moment
                moment += datetime.timedelta(milliseconds=step_ms, microseconds=rng.randrange(1, 1000))
                return moment

            for _ in range(rng.randrange(0, 5)):
                sent.capture("$pageview", distinct_id, {}, later(10))
            roll = rng.random()
            if roll < CONVERSION[variant]:
                sent.capture("checkout", distinct_id, {}, later(20))
                for _ in range(rng.choice([1, 1, 1, 2, 3])):
                    quarters = rng.randrange(40, 800) + (60 if variant == "test" else 0)
                    revenue = 25_000.0 if i % 97 == 0 else quarters / 4
                    kind = rng.random()
                    properties = ({} if kind < 0.03 else {"revenue": f"{revenue}"} if kind < 0.06
                                  else {"revenue": revenue})
                    sent.capture("purchase", distinct_id, properties, later(20))
            elif roll < CONVERSION[variant] + 0.15:
                sent.capture("checkout", distinct_id, {}, later(20))  # checked out, never bought
            elif roll < CONVERSION[variant] + 0.20:
                sent.capture("purchase", distinct_id, {"revenue": rng.randrange(4, 400) / 4}, later(20))
        # The default 10 s budget is too short for the DynamoDB emulator, which takes one request at a time.
        sdk.flush(timeout_seconds=240)
    finally:
        sdk.shutdown()
    # Nothing in the future when the queries run.
    time.sleep(max(0.0, (base + datetime.timedelta(seconds=2) - datetime.datetime.now(UTC)).total_seconds()))
    return ids, variants, sent.count


# --- DuckDB: the independent counts ---

PROPERTY = "json_extract_string(properties, '$.\"{}\"')"


def duckdb_sums(server, start_us):
    """Per-variant sums of every metric, from the Delta table; also checks the test's traps landed."""
    table = server.table().to_pyarrow_table()
    db = duckdb.connect()
    db.execute("SET TimeZone = 'UTC'")
    db.register("lake", table)
    db.execute(f"""
        create table events as
        select uuid, event, person_id, epoch_us(timestamp) as t,
               {PROPERTY.format('$feature_flag')} as flag,
               {PROPERTY.format('$feature_flag_response')} as response,
               coalesce(try_cast({PROPERTY.format('revenue')} as double), 0) as revenue
        from lake""")
    # One row per person exposed since the start: the first exposure; '$multiple' if two variants.
    db.execute("""
        create table exposures as
        select person_id, min(t) as first_t,
               case when count(distinct response) > 1 then '$multiple' else min(response) end as variant
        from events
        where event = '$feature_flag_called' and flag = ? and response in ('control', 'test') and t >= ?
        group by person_id""", [FLAG_KEY, start_us])
    window_us = 14 * 86400 * 1_000_000
    db.execute("""
        create table units as
        select x.person_id, x.variant,
               count(e.uuid) filter (where e.event = 'purchase') as purchases,
               coalesce(sum(e.revenue) filter (where e.event = 'purchase'), 0) as revenue,
               coalesce(sum(e.revenue) filter (where e.event = 'purchase' and e.t < x.first_t + ?), 0) as revenue_window,
               count(e.uuid) filter (where e.event = '$pageview') as pageviews,
               min(e.t) filter (where e.event = 'checkout') as first_checkout
        from exposures x left join events e
          on e.person_id = x.person_id and e.t >= x.first_t and e.event in ('purchase', 'checkout', '$pageview')
        group by x.person_id, x.variant""", [window_us])
    db.execute("""
        create table funnel as
        select u.person_id, u.variant,
               (u.first_checkout is not null)::int as checked_out,
               (exists (select 1 from events e where e.person_id = u.person_id and e.event = 'purchase'
                        and e.t >= u.first_checkout))::int as converted
        from units u""")
    # PostHog pools every exposed person, '$multiple' ones too (its exposures keep them).
    lo, hi = db.execute("select quantile_cont(revenue, 0.05), quantile_cont(revenue, 0.95) from units").fetchone()
    # Shown beside a mismatch only: the bounds without the '$multiple' people.
    bounds_without_multiple = db.execute("select quantile_cont(revenue, 0.05), quantile_cont(revenue, 0.95) "
                                         "from units where variant <> '$multiple'").fetchone()

    def per_variant(sql, params=()):
        rows = db.execute(f"{sql} where variant <> '$multiple' group by variant", list(params)).fetchall()
        return {row[0]: row[1:] for row in rows}

    sums = {}
    for label, column in (("count", "purchases"), ("revenue", "revenue_window")):
        sums[label] = {v: {"number_of_samples": n, "sum": s, "sum_squares": ss} for v, (n, s, ss) in per_variant(
            f"select variant, count(*), sum({column})::double, sum({column} * {column})::double from units").items()}
    def winsorized(low, high):
        return {v: {"number_of_samples": n, "sum": s, "sum_squares": ss} for v, (n, s, ss) in per_variant(
            "select variant, count(*), sum(value), sum(value * value) "
            "from (select variant, least(greatest(?, revenue), ?) as value from units)", [low, high]).items()}
    sums["winsorized"] = winsorized(lo, hi)
    sums["funnel"] = {v: {"number_of_samples": n, "sum": c, "sum_squares": c, "step_counts": [s1, c]}
                      for v, (n, c, s1) in per_variant(
                          "select variant, count(*), sum(converted), sum(checked_out) from funnel").items()}
    sums["ratio"] = {v: {"number_of_samples": n, "sum": s, "sum_squares": ss, "denominator_sum": d,
                         "denominator_sum_squares": dd, "numerator_denominator_sum_product": p}
                     for v, (n, s, ss, d, dd, p) in per_variant(
                         "select variant, count(*), sum(revenue), sum(revenue * revenue), sum(pageviews)::double, "
                         "sum(pageviews * pageviews)::double, sum(revenue * pageviews) from units").items()}
    for metric in sums.values():
        for counts in metric.values():
            for key, value in counts.items():
                counts[key] = [float(x) for x in value] if isinstance(value, list) else float(value)

    facts = db.execute("""
        select (select count(*) from exposures where variant = '$multiple'),
               (select count(*) from events e join exposures x using (person_id)
                where e.event in ('purchase', 'checkout') and e.t < x.first_t),
               (select count(*) from events where event = '$feature_flag_called' and flag = ? and t < ?)""",
                       [FLAG_KEY, start_us]).fetchone()
    # The SDK's own exposures (ours carry no `locally_evaluated`): one per id, with the answer
    # in `$feature_flag_response` and `$feature/<key>`.
    sdk_exposures = db.execute(f"""
        select distinct_id, {PROPERTY.format('$feature_flag_response')}, {PROPERTY.format('$feature/' + FLAG_KEY)}
        from lake
        where event = '$feature_flag_called' and {PROPERTY.format('$feature_flag')} = ?
          and {PROPERTY.format('locally_evaluated')} = 'false'""", [FLAG_KEY]).fetchall()
    return sums, {"multiple": facts[0], "before_exposure": facts[1], "before_launch": facts[2],
                  "sdk_exposures": sdk_exposures, "bounds": (lo, hi),
                  "bounds_without_multiple": bounds_without_multiple,
                  "winsorized_without_multiple": winsorized(*bounds_without_multiple)}


# --- scipy: the independent statistics (experiment_stats.md sections 0 and 1.5-1.6) ---

def moments(kind, arm):
    n, s, ss = arm["number_of_samples"], arm["sum"], arm["sum_squares"]
    if kind == "proportion":
        p = s / n
        return p, p * (1 - p), n
    if kind == "mean":
        return s / n, (ss - s * s / n) / (n - 1), n
    d, dd, p = arm["denominator_sum"], arm["denominator_sum_squares"], arm["numerator_denominator_sum_product"]
    mu_m, mu_d = s / n, d / n
    v_m = (ss - s * s / n) / (n - 1)
    v_d = (dd - d * d / n) / (n - 1)
    cov = (p - s * d / n) / (n - 1)
    v = v_m / mu_d ** 2 + mu_m ** 2 * v_d / mu_d ** 4 - 2 * mu_m * cov / mu_d ** 3
    return s / d, v, n


def expected_stats(kind, control, test, method):
    m_a, v_a, n_a = moments(kind, control)
    m_b, v_b, n_b = moments(kind, test)
    lift = (m_b - m_a) / m_a
    sd = math.sqrt(v_b / (n_b * m_a ** 2) + v_a * m_b ** 2 / (n_a * m_a ** 4))
    if method == "bayesian":
        ctw = stats.norm.cdf(lift / sd)
        interval = [lift + sd * stats.norm.ppf(0.025), lift + sd * stats.norm.ppf(0.975)]
        return {"chance_to_win": ctw, "credible_interval": interval, "significant": bool(ctw > 0.95 or ctw < 0.05)}
    a, b = v_a / n_a, v_b / n_b
    df = (a + b) ** 2 / (a * a / (n_a - 1) + b * b / (n_b - 1))
    p_value = 2 * stats.t.sf(abs(lift / sd), df)
    half = stats.t.ppf(0.975, df) * sd
    return {"p_value": p_value, "confidence_interval": [lift - half, lift + half], "significant": bool(p_value < 0.05)}


def close(ours, want, tolerance):
    """`tolerance` 0: exactly equal; else relative and absolute."""
    if isinstance(want, bool) or isinstance(ours, bool):
        return ours is want
    if isinstance(want, list):
        return (isinstance(ours, list) and len(ours) == len(want)
                and all(close(a, b, tolerance) for a, b in zip(ours, want)))
    if not isinstance(ours, (int, float)):
        return False
    if tolerance == 0:
        return float(ours) == want
    return math.isclose(ours, want, rel_tol=tolerance, abs_tol=tolerance)


def compare_result(label, method, body, sums, failures, facts):
    """The API's counts against DuckDB's, its statistics against scipy's."""
    baseline, variants = body.get("baseline") or {}, body.get("variant_results") or []
    test = next((v for v in variants if v.get("key") == "test"), None)
    if baseline.get("key") != "control" or test is None or len(variants) != 1:
        failures.append(f"{label} ({method}): want baseline control and one variant test: {json.dumps(body)[:600]}")
        return
    for key, arm in (("control", baseline), ("test", test)):
        for field, want in sums[label][key].items():
            # Exact, except winsorized sums: the engine's quantile (DataFusion's percentile_cont) lands
            # within about 1e-9 (relative) of DuckDB's exactly interpolated quantile_cont, and every
            # entity clamped to a bound carries that difference into the sums.
            tolerance = 1e-8 if label == "winsorized" and field != "number_of_samples" else 0
            if not close(arm.get(field), want, tolerance):
                hint = ""
                if label == "winsorized":
                    hint = (f" (bounds {facts['bounds']}; without the '$multiple' people "
                            f"{facts['bounds_without_multiple']}, which give "
                            f"{facts['winsorized_without_multiple'][key].get(field)!r})")
                failures.append(f"{label} ({method}) {key}.{field}: API {arm.get(field)!r}, DuckDB {want!r}{hint}")
    want = expected_stats(STATISTIC[label], sums[label]["control"], sums[label]["test"], method)
    if test.get("method") != method:
        failures.append(f"{label}: variant method {test.get('method')!r}, want {method!r}")
    for field, value in want.items():
        if not close(test.get(field), value, STATS_TOLERANCE):
            failures.append(f"{label} ({method}) {field}: API {test.get(field)!r}, scipy {value!r}")
    srm = body.get("sample_ratio_mismatch")
    counts = [sums[label][k]["number_of_samples"] for k in ("control", "test")]
    want_p = stats.chisquare(counts, [sum(counts) / 2] * 2).pvalue
    ours_p = srm.get("p_value") if isinstance(srm, dict) else srm
    if not close(ours_p, want_p, STATS_TOLERANCE):
        failures.append(f"{label} ({method}) sample_ratio_mismatch: API {json.dumps(srm)}, scipy p {want_p!r}")
    return want


def query_all(server, experiment, method, sums, facts, failures, summary):
    for (label, _), metric in zip(METRICS, experiment["metrics"]):
        node = {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric}
        status, body = post_node(server, node)
        if status != 200:
            failures.append(f"{label} ({method}): HTTP {status}: {json.dumps(body)[:600]}")
            continue
        want = compare_result(label, method, body, sums, failures, facts)
        if want:
            key = "chance_to_win" if method == "bayesian" else "p_value"
            interval = want.get("credible_interval") or want.get("confidence_interval")
            summary.append(f"{label} {method}: {key} {want[key]:.4f}, interval [{interval[0]:+.4f}, {interval[1]:+.4f}]")


def check(backend):
    global PEOPLE
    PEOPLE = PEOPLE_BY_BACKEND.get(backend, PEOPLE)
    server = Server(backend)
    logs = keep_logs(server)
    failures, summary = [], []
    try:
        experiment = create_and_launch(server, failures)
        start = parse_instant(experiment["start_date"])
        started = time.monotonic()
        ids, variants, expected_rows = send_events(server, start)
        wait_for_lake(server, expected_rows, VISIBLE_TIMEOUT_SECONDS)
        start_us = (start - datetime.datetime(1970, 1, 1, tzinfo=UTC)) // datetime.timedelta(microseconds=1)
        sums, facts = duckdb_sums(server, start_us)

        # The test's own traps are in the data, and the SDK sent one exposure per id.
        sdk_exposures = facts["sdk_exposures"]
        assert sorted(row[0] for row in sdk_exposures) == sorted(ids), f"{len(sdk_exposures)} SDK exposures"
        wrong = [row for row in sdk_exposures if not row[1] == row[2] == reference_variant(row[0])]
        assert not wrong, f"SDK exposures with another variant: {wrong[:5]}"
        assert facts["multiple"] == PEOPLE // 50, f"{facts['multiple']} people in both variants"
        assert facts["before_exposure"] > PEOPLE * 3 // 20 and facts["before_launch"] == PEOPLE // 50, facts
        assert sums["funnel"]["control"]["number_of_samples"] + sums["funnel"]["test"]["number_of_samples"] \
            == PEOPLE - PEOPLE // 50

        query_all(server, experiment, "bayesian", sums, facts, failures, summary)
        status, patched = api(server, "PATCH", f"/{experiment['id']}/", {"stats_config": {"method": "frequentist"}})
        assert status == 200, f"PATCH stats_config: HTTP {status}: {json.dumps(patched)}"
        check_fingerprints(patched, METRICS, "frequentist", failures)
        if [m.get("fingerprint") for m in patched.get("metrics", [])] == [m["fingerprint"] for m in experiment["metrics"]]:
            failures.append("frequentist: the fingerprints did not change with the stats method")
        query_all(server, patched, "frequentist", sums, facts, failures, summary)
        # Checks: fingerprints at 4 moments, and per metric and method the counts and the statistics.
        report(backend, failures, logs, 4 + 2 * len(METRICS) * 2)
        counts = {label: {k: int(v["number_of_samples"]) for k, v in sums[label].items()} for label in ("count",)}
        print(f"{backend}: {PEOPLE} ids exposed through the SDK ({counts['count']}, {facts['multiple']} in both "
              f"variants left out, winsorized to [{facts['bounds'][0]}, {facts['bounds'][1]}]); {len(METRICS)} "
              f"metrics equal to DuckDB's counts and scipy's statistics, Bayesian and frequentist, fingerprints "
              f"equal to PostHog's ({time.monotonic() - started:.1f} s)")
        for line in summary:
            print(f"  {line}")
    finally:
        server.stop()


if __name__ == "__main__":
    run_on_backends("experiments", check)
