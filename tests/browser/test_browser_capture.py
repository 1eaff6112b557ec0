"""posthog-js in headless Chromium, on a page of another origin, captures into the lake.

Starts `analytics serve` (embedded), runs `capture.mjs` (Playwright driving Debian's Chromium: the
page loads posthog-js from the npm package, sends its `$pageview`, a custom event and `$identify`,
plus one credentialed JSON fetch of its own), then reads the project's Delta table with the
`deltalake` package: every one of those events landed, from the page, with the identified person.

Run by scripts/test: `python tests/browser/test_browser_capture.py <analytics binary>` (embedded;
an emulator endpoint after it adds the DynamoDB/S3 backend). Needs /usr/bin/chromium and
`npm ci` done in tests/browser.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk"))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
# The SDK test's server harness, same command line: the binary, then (optional) the emulator.
from test_posthog_sdk import Server, run_on_backends  # noqa: E402

LANDING_SECONDS = 20


def query(server, sql):
    """Runs SQL through the query API (persons read through their overrides) and answers rows."""
    body = json.dumps({"query": {"kind": "HogQLQuery", "query": sql}, "refresh": "force_blocking"}).encode()
    request = urllib.request.Request(
        f"{server.url}/api/projects/{server.project_id}/query/", data=body, method="POST",
        headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["results"]


def rows(server):
    try:
        table = server.table().to_pyarrow_table(
            columns=["event", "distinct_id", "person_id", "properties", "timestamp"])
    except Exception:  # the table does not exist before the first commit
        return []
    return table.sort_by("timestamp").to_pylist()


def check(backend):
    server = Server(backend)
    try:
        browser = subprocess.run(
            ["node", os.path.join(HERE, "capture.mjs"), server.url, server.token],
            capture_output=True, text=True, timeout=120,
        )
        sys.stderr.write(browser.stderr)
        summary = json.loads(browser.stdout.strip().splitlines()[-1]) if browser.stdout.strip() else {}
        for request in summary.get("requests", []):
            print(f"  {request['method']} {request['path']} -> {request.get('status')} "
                  f"allow-origin={request.get('allow_origin')} ({request.get('content_type')})")
        assert browser.returncode == 0, f"the browser check failed (exit {browser.returncode})"
        page, anon = summary["page_origin"], summary["anon_distinct_id"]

        wanted = {"$pageview", "browser check event", "$identify", "browser check fetch"}
        landed = []
        deadline = time.monotonic() + LANDING_SECONDS
        while time.monotonic() < deadline:
            landed = rows(server)
            if wanted <= {row["event"] for row in landed}:
                break
            time.sleep(0.1)
        events = sorted({row["event"] for row in landed})
        assert wanted <= set(events), f"landed: {events}, missing {sorted(wanted - set(events))}"

        def one(event):
            return next(row for row in landed if row["event"] == event)

        pageview, custom, identify = one("$pageview"), one("browser check event"), one("$identify")
        pageview_properties = json.loads(pageview["properties"])
        assert pageview_properties.get("$current_url", "").startswith(page), pageview_properties
        assert pageview["distinct_id"] == anon, (pageview["distinct_id"], anon)
        custom_properties = json.loads(custom["properties"])
        assert (custom_properties.get("plan"), custom_properties.get("items")) == ("pro", 3), custom_properties
        assert custom_properties.get("$lib") == "web", custom_properties
        identify_properties = json.loads(identify["properties"])
        assert identify["distinct_id"] == "user-1", identify["distinct_id"]
        assert identify_properties.get("$anon_distinct_id") == anon, identify_properties
        # Identify joined user-1 and the anonymous visitor into one person. The page's own fetch
        # named user-1 first, so identify merged two persons: rows written before the merge keep
        # their person id until compaction squashes the override, and queries read every row
        # through the overrides, as PostHog does. So "one person" is asked of the query engine.
        persons = query(server, "select count(distinct person_id) from events "
                                "where event in ('$pageview', 'browser check event', '$identify', 'browser check fetch')")
        assert persons == [[1]], f"persons seen by queries: {persons}"
        print(f"{backend}: {', '.join(events)} landed from a page on {page} (API on {server.url})")
    finally:
        server.stop()


if __name__ == "__main__":
    run_on_backends("browser", check)
