#!/usr/bin/env python3
"""DuckDB side of `analytics-bench import`: the same PostHog export converted to Parquet.

Reads one JSON object on stdin:

    {"file": "/abs/path/export.ndjson.gz", "output": "/abs/path/out.parquet", "threads": 2}

runs `COPY (SELECT * FROM read_json(file, ...)) TO output (FORMAT parquet)` with DuckDB limited to
`threads` threads (default: DuckDB's own, one per core), and prints one JSON object on stdout:

    {"duckdb_version": "...", "threads": 2, "rows": ..., "seconds": ..., "parquet_bytes": ...,
     "peak_rss_bytes": ...}

or {"error": "..."}. `seconds` is the COPY alone (not starting Python or DuckDB). Needs `duckdb`
(scripts/requirements-test.txt).
"""
import json
import os
import sys
import time

# Run as a script, this folder is on sys.path: one VmHWM reader and one SQL quoting for both benches.
from bench_query_duckdb import import_duckdb, peak_rss_bytes, quote

# Every field of a PostHog export line, typed as our importer stores them: properties stays JSON
# text (as in the export and our table), timestamps are parsed into TIMESTAMPTZ (UTC, microseconds;
# our table's `timestamp` and `created_at` are UTC timestamps too), the rest is text. Given
# columns, read_json reads only those: other fields of real exports (e.g. `$set`) are left out.
COLUMNS = {
    "uuid": "VARCHAR",
    "event": "VARCHAR",
    "distinct_id": "VARCHAR",
    "properties": "VARCHAR",
    "elements_chain": "VARCHAR",
    "timestamp": "TIMESTAMPTZ",
    "created_at": "TIMESTAMPTZ",
}
# ClickHouse-style, as PostHog's batch exports (and `bench import`) write them.
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


def compression_of(path):
    """'gzip' when the file starts with gzip's magic bytes, else 'none': DuckDB's 'auto' goes by
    the file name only, and `--file` may name a gzip export without `.gz`."""
    with open(path, "rb") as file:
        return "gzip" if file.read(2) == b"\x1f\x8b" else "none"


def copy_sql(path, output):
    columns = ", ".join(f"{quote(name)}: {quote(kind)}" for name, kind in COLUMNS.items())
    return (
        f"COPY (SELECT * FROM read_json({quote(path)}, format = 'newline_delimited', "
        f"compression = {quote(compression_of(path))}, columns = {{{columns}}}, "
        f"timestampformat = {quote(TIMESTAMP_FORMAT)})) "
        f"TO {quote(output)} (FORMAT parquet)"
    )


def main():
    request = json.load(sys.stdin)
    duckdb = import_duckdb()
    if duckdb is None:
        return 0
    path, output = request["file"], request["output"]
    connection = duckdb.connect(":memory:")
    # The export's timestamps are UTC.
    connection.execute("SET TimeZone = 'UTC'")
    if request.get("threads"):
        connection.execute(f"SET threads = {int(request['threads'])}")
    threads = connection.execute("SELECT current_setting('threads')").fetchall()[0][0]
    try:
        sql = copy_sql(path, output)
        started = time.perf_counter()
        # COPY answers with the number of rows it wrote.
        rows = connection.execute(sql).fetchall()[0][0]
        seconds = time.perf_counter() - started
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        return 0
    print(json.dumps({
        "duckdb_version": duckdb.__version__,
        "threads": threads,
        "rows": rows,
        "seconds": seconds,
        "parquet_bytes": os.path.getsize(output),
        "peak_rss_bytes": peak_rss_bytes(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
