#!/usr/bin/env python3
"""ClickHouse side of `analytics-bench query` and `import`: the same PostHog export loaded into
chDB (ClickHouse embedded) in PostHog's own layout, then the same questions as PostHog's HogQL
prints them for ClickHouse.

Reads one JSON object on stdin:

    {"file": "/abs/path/export.ndjson.gz", "path": "/abs/path/chdb", "reuse": false,
     "team_id": 1, "materialized": ["$browser", ...],
     "queries": [{"name": "...", "sql": "..."}, ...], "runs": 3, "warmup": 1}

and prints one JSON object on stdout:

    {"clickhouse_version": "...", "chdb_version": "...", "threads": 2,
     "load": {"rows", "seconds", "events_per_s", "peak_rss_bytes", "parts", "bytes_on_disk",
              "reused"},
     "peak_rss_bytes": ...,   # the query phase's own peak (the load's is in "load")
     "results": [{"name", "best_ms", "runs_ms", "rows", "results"} | {"name", "error"}, ...]}

or {"error": "..."}. The table is PostHog's `sharded_events` with the columns the export fills:
a MergeTree partitioned by month and ordered by `(team_id, toDate(timestamp), event,
cityHash64(distinct_id), cityHash64(uuid))`, one `mat_<key>` column per property in
`materialized`, written as PostHog materializes a property
(`replaceRegexpAll(JSONExtractRaw(properties, key), '^"|"$', '')`), and `$session_id` as PostHog's
events table has it. `person_id` is derived from the distinct id (one person per distinct id, as
our importer makes them for events without `$identify`), as persons-on-events ingestion stamps it.
The load (the export parsed, the materialized columns computed, and `OPTIMIZE TABLE ... FINAL`
merging every part of a month into one) is timed as one figure. With `reuse` and a table already
loaded in `path`, the load is skipped and reported as `reused`. `queries` may be empty (the import
bench only loads). Each query is run `warmup` times untimed, then `runs` times; `best_ms` is the
wall time of the fastest run, answer formatted included (JSONCompact, a few rows).
Needs `chdb` (scripts/requirements-test.txt).
"""
import json
import os
import shutil
import sys
import time

# Run as a script, this folder is on sys.path: one VmHWM reader and one SQL quoting for every bench.
from bench_query_duckdb import peak_rss_bytes, quote
from bench_timing import best_of

# PostHog's HogQLGlobalSettings that change answers, the project's zone (UTC, as the bench
# project's), and JSON that keeps 64-bit numbers numbers.
SESSION_SETTINGS = [
    "SET session_timezone = 'UTC'",
    "SET transform_null_in = 1",
    "SET output_format_json_quote_64bit_integers = 0",
    "SET output_format_json_quote_decimals = 0",
]

# What a PostHog export line holds (bench/src/import.rs writes it), typed as sharded_events is.
EXPORT_STRUCTURE = (
    "uuid UUID, event String, distinct_id String, properties String, elements_chain String, "
    "timestamp DateTime64(6, 'UTC'), created_at DateTime64(6, 'UTC')"
)


def identifier(name):
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def create_sql(materialized):
    """PostHog's sharded_events (posthog/models/event/sql.py), the columns an export fills, as a
    plain MergeTree (PostHog's is replicated and replacing; one table here)."""
    columns = [
        "uuid UUID",
        "event String",
        "properties String CODEC(ZSTD(3))",
        "timestamp DateTime64(6, 'UTC')",
        "team_id Int64",
        "distinct_id String",
        "elements_chain String",
        "created_at DateTime64(6, 'UTC')",
        "person_id UUID",
        "person_properties String CODEC(ZSTD(3))",
        "`$session_id` String MATERIALIZED JSONExtractString(properties, '$session_id')",
    ]
    for key in materialized:
        # As PostHog materializes a property: the raw JSON value with its quotes trimmed ('' when
        # missing); HogQL reads it as nullIf(nullIf(mat_<key>, ''), 'null').
        columns.append(
            f"{identifier('mat_' + key)} String MATERIALIZED "
            f"replaceRegexpAll(JSONExtractRaw(properties, {quote(key)}), '^\"|\"$', '')"
        )
    return (
        "CREATE TABLE events (\n    " + ",\n    ".join(columns) + "\n) ENGINE = MergeTree "
        "PARTITION BY toYYYYMM(timestamp) "
        "ORDER BY (team_id, toDate(timestamp), event, cityHash64(distinct_id), cityHash64(uuid)) "
        "SAMPLE BY cityHash64(distinct_id)"
    )


def compression_of(path):
    """ClickHouse goes by the file name; `--file` may name a gzip export without `.gz`."""
    with open(path, "rb") as file:
        return "gzip" if file.read(2) == b"\x1f\x8b" else "none"


def insert_sql(path, team_id):
    source = (
        f"file({quote(path)}, 'JSONEachRow', {quote(EXPORT_STRUCTURE)}, "
        f"{quote(compression_of(path))})"
    )
    # The person id persons-on-events would stamp: one person per distinct id.
    person = f"reinterpretAsUUID(MD5(concat('{int(team_id)}:', distinct_id)))"
    return (
        "INSERT INTO events (uuid, event, properties, timestamp, team_id, distinct_id, "
        "elements_chain, created_at, person_id) "
        f"SELECT uuid, event, properties, timestamp, {int(team_id)}, distinct_id, elements_chain, "
        f"created_at, {person} FROM {source}"
    )


def scalar(session, sql):
    return json.loads(session.query(sql, "JSONCompact").bytes())["data"][0][0]


def loaded_rows(session):
    exists = scalar(session, "SELECT count() FROM system.tables "
                             "WHERE database = currentDatabase() AND name = 'events'")
    return scalar(session, "SELECT count() FROM events") if exists else 0


def load(session, request):
    """Loads the export into a fresh `events` table (unless `reuse` finds one): its figures."""
    if request.get("reuse"):
        rows = loaded_rows(session)
        if rows:
            return {"rows": rows, "reused": True, **table_figures(session)}
    session.query("DROP TABLE IF EXISTS events SYNC")
    session.query(create_sql(request.get("materialized", [])))
    started = time.perf_counter()
    session.query(insert_sql(request["file"], request.get("team_id", 1)))
    # PostHog's parts are merged in the background over time; the bench times the merge to one
    # part per month so the queries read the table in its settled layout.
    session.query("OPTIMIZE TABLE events FINAL")
    seconds = time.perf_counter() - started
    rows = scalar(session, "SELECT count() FROM events")
    return {
        "rows": rows,
        "seconds": seconds,
        "events_per_s": rows / max(seconds, 1e-9),
        "peak_rss_bytes": peak_rss_bytes(),
        "reused": False,
        **table_figures(session),
    }


def table_figures(session):
    data = json.loads(session.query(
        "SELECT count(), sum(bytes_on_disk) FROM system.parts "
        "WHERE database = currentDatabase() AND table = 'events' AND active",
        "JSONCompact",
    ).bytes())["data"][0]
    return {"parts": data[0], "bytes_on_disk": data[1]}


def run_query(session, sql):
    result = session.query(sql, "JSONCompact")
    return json.loads(result.bytes())["data"]


def time_queries(session, request):
    runs = max(1, int(request.get("runs", 3)))
    warmup = max(0, int(request.get("warmup", 1)))
    results = []
    for query in request.get("queries", []):
        name, sql = query["name"], query["sql"]
        try:
            timings, rows = best_of(lambda: run_query(session, sql), warmup, runs)
            results.append({
                "name": name,
                "best_ms": min(timings),
                "runs_ms": timings,
                "rows": len(rows),
                "results": rows,
            })
        except Exception as error:  # one bad query does not hide the others' figures
            results.append({"name": name, "error": f"{type(error).__name__}: {error}"})
    return results


def main():
    request = json.load(sys.stdin)
    try:
        import chdb
        from chdb import session as chdb_session
    except ImportError:
        print(json.dumps({"error": "the chdb package is not installed "
                                   "(pip install -r scripts/requirements-test.txt)"}))
        return 0
    path = request["path"]
    if not request.get("reuse") and os.path.exists(path):
        shutil.rmtree(path)
    try:
        session = chdb_session.Session(path)
        for statement in SESSION_SETTINGS:
            session.query(statement)
        figures = load(session, request)
        # Reset the high-water mark (Linux: clear_refs 5), so the queries get their own peak.
        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
        except OSError:
            pass
        results = time_queries(session, request)
        version = scalar(session, "SELECT version()")
        threads = scalar(session, "SELECT getSetting('max_threads')")
        session.close()
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        return 0
    print(json.dumps({
        "clickhouse_version": version,
        "chdb_version": chdb.__version__,
        "threads": threads,
        "load": figures,
        "peak_rss_bytes": peak_rss_bytes(),
        "results": results,
    }, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
