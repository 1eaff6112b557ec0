"""posthog-js in headless Chromium, on a page of another origin, captures into the lake and reads
feature flags.

Starts `analytics serve` (embedded), creates two flags through the API (a boolean at 100 % with a
payload, a multivariate 20/30/50), runs `capture.mjs` (Playwright driving Debian's Chromium: the
page loads posthog-js from the npm package, reads both flags with `getFeatureFlag` once /flags has
answered, sends its `$pageview`, a custom event and `$identify`, plus one credentialed JSON fetch of
its own), then reads the project's Delta table with the `deltalake` package: every one of those
events landed, from the page, with the identified person, and `$feature_flag_called` with the
values posthog-js read. Those values are the ones /flags gives for the same distinct id and the
reference hash (section 3.2) computed here, before and after identify.

Run by scripts/test: `python tests/browser/test_browser_capture.py <analytics binary> [emulator
endpoint]` (embedded, then DynamoDB/S3 on the emulator when it is given). Needs /usr/bin/chromium
and `npm ci` done in tests/browser.
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
from test_flags_posthog import MV_VARIANTS, create_flags, reference_variant  # noqa: E402

LANDING_SECONDS = 20
FLAG_ON, FLAG_VARIANT = "browser-on", "browser-variant"
FLAG_ON_PAYLOAD = {"greeting": "hello", "items": [1, 2]}


def create_browser_flags(server):
    return create_flags(server, [
        {"key": FLAG_ON, "name": "on for everyone", "active": True, "filters": {
            "groups": [{"properties": [], "rollout_percentage": 100}],
            "payloads": {"true": json.dumps(FLAG_ON_PAYLOAD)},
        }},
        {"key": FLAG_VARIANT, "name": "three variants", "active": True, "filters": {
            "groups": [{"properties": [], "rollout_percentage": 100}],
            "multivariate": {"variants": [{"key": k, "rollout_percentage": p} for k, p in MV_VARIANTS]},
        }},
    ])


def flags_for(server, distinct_id):
    """Our /flags (v4, raw HTTP) for a distinct id, as {key: variant or enabled}."""
    body = json.dumps({"api_key": server.token, "distinct_id": distinct_id}).encode()
    request = urllib.request.Request(f"{server.url}/flags/?v=4", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        flags = json.load(response)["flags"]
    return {key: detail["variant"] or detail["enabled"] for key, detail in flags.items()}


def check_flags(server, summary):
    """posthog-js read what /flags and the reference formula give, for the visitor and for user-1."""
    anon = summary["anon_distinct_id"]
    seen = summary.get("flags") or {}
    assert seen.get("distinct_id") == anon, f"flags were read for {seen.get('distinct_id')}, not {anon}"
    expected = {FLAG_ON: True, FLAG_VARIANT: reference_variant(FLAG_VARIANT, anon, MV_VARIANTS)}
    ours = flags_for(server, anon)
    assert ours == expected, f"/flags for {anon}: {ours}, reference: {expected}"
    assert seen["values"] == expected, f"posthog-js read {seen['values']}, expected {expected}"
    payloads = seen["payloads"]
    assert payloads[FLAG_ON] == FLAG_ON_PAYLOAD and payloads[FLAG_VARIANT] is None, payloads

    after = summary.get("flags_after_identify") or {}
    expected_user = {FLAG_ON: True, FLAG_VARIANT: reference_variant(FLAG_VARIANT, "user-1", MV_VARIANTS)}
    assert flags_for(server, "user-1") == expected_user, (flags_for(server, "user-1"), expected_user)
    variants = {key: value for key, value in (after.get("variants") or {}).items() if key in expected_user}
    assert variants == expected_user, f"after identify posthog-js holds {after}, expected {expected_user}"
    return expected


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
        create_browser_flags(server)
        browser = subprocess.run(
            ["node", os.path.join(HERE, "capture.mjs"), server.url, server.token, f"{FLAG_ON},{FLAG_VARIANT}"],
            capture_output=True, text=True, timeout=120,
        )
        sys.stderr.write(browser.stderr)
        summary = json.loads(browser.stdout.strip().splitlines()[-1]) if browser.stdout.strip() else {}
        for request in summary.get("requests", []):
            print(f"  {request['method']} {request['path']} -> {request.get('status')} "
                  f"allow-origin={request.get('allow_origin')} ({request.get('content_type')})")
        assert browser.returncode == 0, f"the browser check failed (exit {browser.returncode})"
        page, anon = summary["page_origin"], summary["anon_distinct_id"]
        flag_values = check_flags(server, summary)

        wanted = {"$pageview", "browser check event", "$identify", "browser check fetch", "$feature_flag_called"}
        landed = []
        deadline = time.monotonic() + LANDING_SECONDS
        while time.monotonic() < deadline:
            landed = rows(server)
            called = [row for row in landed if row["event"] == "$feature_flag_called"]
            if wanted <= {row["event"] for row in landed} and len(called) >= len(flag_values):
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
        # getFeatureFlag told the lake which flag the visitor saw and its value.
        called = {}
        for row in landed:
            if row["event"] == "$feature_flag_called":
                properties = json.loads(row["properties"])
                assert row["distinct_id"] == anon, (row["distinct_id"], anon)
                called[properties.get("$feature_flag")] = properties.get("$feature_flag_response")
        assert called == flag_values, f"$feature_flag_called: {called}, read: {flag_values}"
        # Identify joined user-1 and the anonymous visitor into one person. The page's own fetch
        # named user-1 first, so identify merged two persons: rows written before the merge keep
        # their person id until compaction squashes the override, and queries read every row
        # through the overrides, as PostHog does. So "one person" is asked of the query engine.
        persons = query(server, "select count(distinct person_id) from events "
                                "where event in ('$pageview', 'browser check event', '$identify', "
                                "'browser check fetch', '$feature_flag_called')")
        assert persons == [[1]], f"persons seen by queries: {persons}"
        print(f"{backend}: {', '.join(events)} landed from a page on {page} (API on {server.url}); "
              f"posthog-js read {flag_values} for {anon}")
    finally:
        server.stop()


if __name__ == "__main__":
    run_on_backends("browser", check)
