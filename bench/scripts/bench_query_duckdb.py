#!/usr/bin/env python3
"""DuckDB side of `analytics-bench query`: the same queries over the same Parquet files.

Reads one JSON object on stdin:

    {"files": ["/abs/path/part-0.parquet", ...],
     "queries": [{"name": "...", "sql": "..."}, ...],
     "runs": 3, "warmup": 1}

makes `events` a view over `read_parquet([...], hive_partitioning = true)` (so the Delta
partition column `date` is there too), runs each query `warmup` times untimed, then `runs` times,
and prints one JSON object on stdout:

    {"duckdb_version": "...", "threads": 2, "peak_rss_bytes": ...,
     "results": [{"name", "best_ms", "runs_ms", "rows", "results"} | {"name", "error"}, ...]}

Each timed run materializes the whole answer as an Arrow table (no Python object per value, and
no pytz for TIMESTAMPTZ columns); without pyarrow it falls back to `fetchall()`. `results` holds
the rows of the last run (numbers as numbers, everything else as text), for the caller's
cross-check. Needs `duckdb` and `pyarrow` (scripts/requirements-test.txt).
"""
import json
import sys

from bench_timing import best_of


def peak_rss_bytes():
    """VmHWM of this process. (Not ru_maxrss: Linux carries that over from the parent through
    fork and exec, so it would report the analytics process's peak.)"""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def quote(text):
    return "'" + text.replace("'", "''") + "'"


def arrow_fetcher():
    """`run(connection, sql)` -> Arrow table, or None without pyarrow."""
    try:
        import pyarrow  # noqa: F401  (duckdb needs it for Arrow results)
    except ImportError:
        return None

    def run(connection, sql):
        relation = connection.sql(sql)
        # duckdb 2.x: to_arrow_table(); 1.x: fetch_arrow_table().
        fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
        return fetch()

    return run


def rows_of(table):
    """An Arrow table as a list of rows: numbers as numbers, the rest as text (None stays)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for column in table.columns:
        kind = column.type
        if pa.types.is_decimal(kind):
            column = pc.cast(column, pa.float64())
        elif not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)):
            column = pc.cast(column, pa.string())
        columns.append(column.to_pylist())
    return [list(row) for row in zip(*columns)]


def import_duckdb():
    """The duckdb module, or None after printing the error answer (both benches' scripts)."""
    try:
        import duckdb
    except ImportError:
        print(json.dumps({"error": "the duckdb package is not installed "
                                   "(pip install -r scripts/requirements-test.txt)"}))
        return None
    return duckdb


def main():
    request = json.load(sys.stdin)
    duckdb = import_duckdb()
    if duckdb is None:
        return 0
    files = request["files"]
    runs = max(1, int(request.get("runs", 3)))
    warmup = max(0, int(request.get("warmup", 1)))
    connection = duckdb.connect(":memory:")
    # Day boundaries and now() in UTC, as the service's default project timezone.
    connection.execute("SET TimeZone = 'UTC'")
    if files:
        listing = ", ".join(quote(f) for f in files)
        connection.execute(
            f"CREATE VIEW events AS SELECT * FROM read_parquet([{listing}], hive_partitioning = true)"
        )
    arrow = arrow_fetcher()
    fetch = arrow or (lambda connection, sql: connection.execute(sql).fetchall())
    threads = connection.execute("SELECT current_setting('threads')").fetchall()[0][0]
    results = []
    for query in request["queries"]:
        name, sql = query["name"], query["sql"]
        try:
            timings, answer = best_of(lambda: fetch(connection, sql), warmup, runs)
            rows = rows_of(answer) if arrow else [list(row) for row in answer]
            results.append({
                "name": name,
                "best_ms": min(timings),
                "runs_ms": timings,
                "rows": len(rows),
                "results": rows,
            })
        except Exception as error:  # one bad query does not hide the others' figures
            results.append({"name": name, "error": f"{type(error).__name__}: {error}"})
    peak = peak_rss_bytes()
    print(json.dumps({
        "duckdb_version": duckdb.__version__,
        "threads": threads,
        "peak_rss_bytes": peak,
        "results": results,
    }, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
