"""The query cluster against the local engine (docs/benchmarks.md): best and median of 5 runs per
query, wall clock of POST /query (force_blocking), `modifiers.engine` local then cluster, checking
both give the same answers.

Usage: start `analytics cluster local` and `analytics serve --cluster df://...` over a bench data
folder (`analytics-bench import` makes one), then
`python bench/scripts/cluster_vs_local.py http://127.0.0.1:8000 <personal API key>`.
"""
import json, statistics, sys, time, urllib.request
URL, KEY = sys.argv[1], sys.argv[2]
QUERIES = {
    "top_events": "select event, count() as c from events group by event order by c desc limit 10",
    "top_browsers_pageviews": "select properties.$browser as browser, count() as c from events where event = '$pageview' group by browser order by c desc limit 10",
    "revenue_by_day": "select toStartOfDay(timestamp) as day, sum(toFloat(properties.amount)) as revenue from events where event = 'purchase' group by day order by day",
    "purchase_amount_total": "select sum(toFloat(properties.amount)) from events where event = 'purchase'",
    "daily_active_users": "select toStartOfDay(timestamp) as day, uniq(distinct_id) as users from events group by day order by day",
    "sessions_per_day": "select toStartOfDay(timestamp) as day, uniq($session_id) as sessions from events group by day order by day",
    "distinct_users": "select count(distinct person_id) from events",
}
def run(sql, engine):
    body = json.dumps({"query": {"kind": "HogQLQuery", "query": sql, "modifiers": {"engine": engine}}, "refresh": "force_blocking"}).encode()
    req = urllib.request.Request(URL + "/api/projects/1/query/", data=body, method="POST", headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.load(r)
    return time.perf_counter() - start, out["results"]
print("| query | local best | local median | cluster best | cluster median | cluster / local (best) |")
print("|---|---|---|---|---|---|")
for name, sql in QUERIES.items():
    times, answers = {}, {}
    for engine in ("local", "cluster"):
        run(sql, engine)  # warm
        ts = []
        for _ in range(5):
            t, res = run(sql, engine)
            ts.append(t)
        times[engine], answers[engine] = ts, res
    def close(a, b):
        if isinstance(a, float) and isinstance(b, float):
            return abs(a - b) <= 1e-9 * max(1.0, abs(a))
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
        return a == b
    # Float sums may differ in their last bits: the rows are added in another order.
    assert close(answers["local"], answers["cluster"]), (name, answers)
    lb, lm = min(times["local"]), statistics.median(times["local"])
    cb, cm = min(times["cluster"]), statistics.median(times["cluster"])
    print(f"| {name} | {lb:.3f} s | {lm:.3f} s | {cb:.3f} s | {cm:.3f} s | {cb/lb:.2f}x |", flush=True)
