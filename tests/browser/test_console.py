"""The console, end to end, in Debian's headless Chromium, on both storage backends.

Starts `analytics serve`, sets the project's time zone to one whose days are not UTC's, sends a
known set of events through `/batch/` (some older than 30 days), and checks the API's answers to
the Home page's own queries (`console/src/queries.json`) against that set. Then `console.mjs`
drives the page: a wrong password shows "Invalid email or password.", the right one opens Home,
whose numbers (totals, events per day, top events, top pages) must be the API's answers; one more
event must appear first in the live tail; the page must fit a phone's width; logging out ends the
session. Two-factor authentication is then turned on through the API with the personal API key
(the TOTP code computed here, RFC 6238), and logging in again asks for the code: a wrong one shows
"Invalid authentication code", the right one opens Home. Screenshots of every step land in
`.tmp/console-screenshots/<backend>/`.

Run by scripts/test: `python tests/browser/test_console.py <analytics binary> [emulator endpoint]`.
Needs /usr/bin/chromium and `npm ci` done in tests/browser.
"""
import base64
import datetime
import hashlib
import hmac
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import zoneinfo

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "sdk"))
sys.dont_write_bytecode = True  # no __pycache__ next to the tests
# The SDK test's server harness, same command line: the binary, then (optional) the emulator.
from test_posthog_sdk import Server, run_on_backends  # noqa: E402

QUERIES = json.load(open(os.path.join(ROOT, "console", "src", "queries.json")))
SHOTS = os.path.join(ROOT, ".tmp", "console-screenshots")
# Days are the project's: midnight here is 18:30 UTC, so UTC days would count differently.
TIME_ZONE = "Asia/Kolkata"
LANDING_SECONDS = 20
BROWSER_SECONDS = 240
SECTIONS_SECONDS = 900
TOTP_STEP = 30

# What the page must show. Inside the last 30 days: 4 people, 18 events.
PAGES = [("/pricing", 5), ("/docs", 3), ("/blog", 2)]
CHECKOUT_URL = "https://shop.test/checkout?step=1"  # a pageview with a URL and no $pathname
OTHERS = [("button clicked", 4), ("signed_up", 2), ("purchased", 1)]
PEOPLE = ["ada", "bob", "cyd", "dee"]
DAY_OFFSETS = [0, 1, 3, 6, 10, 15, 21, 28]
# Outside them: 31 to 40 days old.
OLD = [("$pageview", "/old", 35), ("$pageview", "/old", 40), ("ancient", None, 31)]


def api(server, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{server.url}{path}", data=data, method=method, headers={
        "Authorization": f"Bearer {server.key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        raise AssertionError(f"{method} {path}: {error.code} {error.read().decode()}") from None


def query(server, name):
    return api(server, "POST", f"/api/projects/{server.project_id}/query/",
               {"query": {"kind": "HogQLQuery", "query": QUERIES[name]}, "refresh": "force_blocking"})


def known_events(now):
    """The events sent, each with its timestamp: spread over the window's days, and a few older."""
    events, index = [], 0

    def add(event, properties, days_ago, person=None):
        nonlocal index
        when = now - datetime.timedelta(days=days_ago, minutes=5 + index)
        events.append({"event": event, "distinct_id": person or PEOPLE[index % len(PEOPLE)],
                       "properties": properties, "timestamp": when.isoformat(), "uuid": str(uuid.uuid4())})
        index += 1

    for path, views in PAGES:
        for _ in range(views):
            add("$pageview", {"$pathname": path, "$current_url": f"https://shop.test{path}"},
                DAY_OFFSETS[index % len(DAY_OFFSETS)])
    add("$pageview", {"$current_url": CHECKOUT_URL}, DAY_OFFSETS[index % len(DAY_OFFSETS)])
    for event, count in OTHERS:
        for _ in range(count):
            add(event, {}, DAY_OFFSETS[index % len(DAY_OFFSETS)])
    for event, path, days_ago in OLD:
        add(event, {"$pathname": path} if path else {}, days_ago, person="old-visitor")
    return events


def expected(events, now, zone):
    """What the Home page must show, computed from the events sent (not by the API)."""
    today = now.astimezone(zone).date()
    days = [today - datetime.timedelta(days=back) for back in range(29, -1, -1)]
    inside = [e for e in events if datetime.datetime.fromisoformat(e["timestamp"]).astimezone(zone).date() in days]
    per_day = {day: 0 for day in days}
    events_by_name, pages = {}, {}
    for e in inside:
        per_day[datetime.datetime.fromisoformat(e["timestamp"]).astimezone(zone).date()] += 1
        events_by_name[e["event"]] = events_by_name.get(e["event"], 0) + 1
        if e["event"] == "$pageview":
            page = e["properties"].get("$pathname") or e["properties"].get("$current_url")
            pages[page] = pages.get(page, 0) + 1
    ranked = lambda counts: sorted(([k, v] for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))  # noqa: E731
    return {
        "events": len(inside),
        "users": len({e["distinct_id"] for e in inside}),
        "daily": [[day.isoformat(), per_day[day]] for day in days],
        "top_events": ranked(events_by_name)[:10],
        "top_pages": ranked(pages)[:10],
    }


def api_answers(server):
    summary = query(server, "summary")["results"]
    daily = query(server, "daily")["results"]
    return {
        "events": summary[0][0],
        "users": summary[0][1],
        "daily": [[day[:10], count] for day, count in daily],
        "top_events": query(server, "top_events")["results"],
        "top_pages": query(server, "top_pages")["results"],
    }


def capture(server, events):
    body = json.dumps({"api_key": server.token, "batch": events}).encode()
    request = urllib.request.Request(f"{server.url}/batch/", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.load(response).get("status") == 1


def wait_for_events(server, count):
    deadline = time.monotonic() + LANDING_SECONDS
    while True:
        landed = api(server, "POST", f"/api/projects/{server.project_id}/query/", {
            "query": {"kind": "HogQLQuery", "query": "SELECT count() FROM events"}, "refresh": "force_blocking"})
        if landed["results"][0][0] >= count or time.monotonic() > deadline:
            assert landed["results"][0][0] == count, f"{landed['results'][0][0]} of {count} events landed"
            return
        time.sleep(0.2)


def totp(secret, step):
    """RFC 6238 (HOTP of the 30 s step, SHA-1, 6 digits)."""
    key = base64.b32decode(secret.upper() + "=" * (-len(secret) % 8))
    digest = hmac.new(key, struct.pack(">Q", step), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return f"{(struct.unpack('>I', digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000:06d}"


def check_screen(screen, answers, where):
    """The page shows exactly the API's answers, as numbers and as the text a person reads."""
    def same(shown, value, what):
        digits = "".join(c for c in shown["text"] if c.isdigit())
        assert shown["value"] == value and digits == str(value), f"{where}: {what} shows {shown}, the API says {value}"

    same(screen["events"], answers["events"], "total events")
    same(screen["users"], answers["users"], "unique users")
    assert [row["value"] for row in screen["daily"]] == [count for _, count in answers["daily"]], \
        f"{where}: events per day {[r['value'] for r in screen['daily']]}, the API says {answers['daily']}"
    for name in ("top_events", "top_pages"):
        shown = [[row["label"], row["value"]] for row in screen[name]]
        assert shown == answers[name], f"{where}: {name} shows {shown}, the API says {answers[name]}"
        for row, (_, value) in zip(screen[name], answers[name]):
            same(row, value, f"{name} {row['label']}")


class Browser:
    """console.mjs, talked to in JSON lines."""

    def __init__(self, server, email, password, shots):
        self.process = subprocess.Popen(
            ["node", os.path.join(HERE, "console.mjs"), server.url, email, password, shots],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.watchdog = threading.Timer(BROWSER_SECONDS, self.process.kill)
        self.watchdog.start()

    def next(self, expected_step):
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(f"the browser check ended before {expected_step} (exit {self.process.wait()})")
        message = json.loads(line)
        if message["step"] != expected_step:
            raise AssertionError(f"the browser check: {message}")
        return message

    def answer(self, **reply):
        self.process.stdin.write(json.dumps(reply) + "\n")
        self.process.stdin.flush()

    def finish(self):
        self.watchdog.cancel()
        try:
            self.process.stdin.close()
        except OSError:
            pass
        return self.process.wait(timeout=30)


def run_sections(server, shots, code=None, only=()):
    """console_pages.mjs: every section's check (or those named) on this server, logged in with
    the console password (and `code`, a backup code, when 2FA is on)."""
    env = dict(os.environ, CONSOLE_EMAIL=server.email, CONSOLE_PASSWORD=server.password,
               ANALYTICS_KEY=server.key, ANALYTICS_PROJECT=str(server.project_id), ANALYTICS_TOKEN=server.token)
    if code:
        env["CONSOLE_CODE"] = code
    finished = subprocess.run(["node", os.path.join(HERE, "console_pages.mjs"), server.url, shots, *only],
                              env=env, stdout=subprocess.PIPE, text=True, timeout=SECTIONS_SECONDS)
    lines = finished.stdout.strip().splitlines()
    report = json.loads(lines[-1]) if lines else {"sections": [], "screenshots": [], "failures": ["no report"]}
    for section in report["sections"]:
        print(f"  {section['section']}: {'ok' if section['ok'] else 'FAILED'} ({section['seconds']:.1f} s)")
    for path in report["screenshots"]:
        print(f"  {os.path.relpath(path, ROOT)}")
    assert finished.returncode == 0 and not report["failures"], \
        "the console's sections failed:\n" + "\n".join(report["failures"])
    return report


def check_sections_only(backend, only):
    """A quicker loop while working on a section: a fresh server, no Home or 2FA checks."""
    server = Server(backend)
    try:
        shots = os.path.join(SHOTS, backend)
        run_sections(server, shots, only=only)
    finally:
        server.stop()


def check(backend):
    server = Server(backend)
    browser = None
    try:
        email, password = server.email, server.password
        api(server, "PATCH", f"/api/projects/{server.project_id}/", {"timezone": TIME_ZONE})
        zone = zoneinfo.ZoneInfo(TIME_ZONE)
        now = datetime.datetime.now(datetime.timezone.utc)
        events = known_events(now)
        capture(server, events)
        wait_for_events(server, len(events))
        want = expected(events, now, zone)
        answers = api_answers(server)
        assert answers == want, f"the API answers {answers}, the events sent give {want}"

        shots = os.path.join(SHOTS, backend)
        shutil.rmtree(shots, ignore_errors=True)  # this run's screenshots only
        browser = Browser(server, email, password, shots)
        home = browser.next("home")
        assert home["path"] == "/", home["path"]
        check_screen(home["screen"], answers, "Home at 1280 px")
        assert home["screen"]["user_email"] == email, home["screen"]["user_email"]
        assert home["screen"]["overflow"] <= 0, f"Home is {home['screen']['overflow']} px too wide at 1280 px"

        live = {"event": "console live check", "distinct_id": f"live-{uuid.uuid4().hex[:8]}",
                "properties": {"$current_url": "https://shop.test/live"}}
        capture(server, [live])
        browser.answer(distinct_id=live["distinct_id"])

        logged_out = browser.next("logged_out")
        first = logged_out["live_first"]
        assert first == {"event": live["event"], "distinct_id": live["distinct_id"], "url": "https://shop.test/live"}, \
            f"the newest row of the live tail: {first}"
        assert logged_out["phone"]["overflow"] <= 0, f"Home is {logged_out['phone']['overflow']} px too wide at 390 px"
        check_screen(logged_out["phone"], answers, "Home at 390 px")
        assert logged_out["me_after_logout"] == 401, f"/api/users/@me/ after logout: {logged_out['me_after_logout']}"

        # 2FA on, through the API with the personal API key.
        secret = api(server, "GET", "/api/users/@me/two_factor_start_setup/")["secret"]
        enabled_step = int(time.time()) // TOTP_STEP
        enabled = api(server, "POST", "/api/users/@me/two_factor_validate/", {"token": totp(secret, enabled_step)})
        assert enabled.get("success") is True, enabled
        around = {totp(secret, enabled_step + delta) for delta in range(-2, 4)}
        wrong = next(code for code in (f"{n:06d}" for n in range(123456, 10**6)) if code not in around)
        browser.answer(wrong_code=wrong)

        browser.next("code_step")
        # A code is good once: the one that enabled 2FA is spent, so the next step's if need be
        # (the server accepts one step either side of its own).
        now_step = int(time.time()) // TOTP_STEP
        browser.answer(code=totp(secret, max(now_step, enabled_step + 1)))

        done = browser.next("done")
        assert done["path"] == "/", done["path"]
        assert done["screen"]["user_email"] == email, done["screen"]["user_email"]
        status = browser.finish()
        browser = None
        assert status == 0 and not done["failures"], f"the browser check failed: {done['failures']}"
        for path in done["screenshots"]:
            print(f"  {os.path.relpath(path, ROOT)}")

        # Every section, logged in with a backup code this time (2FA is on).
        codes = api(server, "POST", "/api/users/@me/two_factor_backup_codes/")["backup_codes"]
        report = run_sections(server, shots, code=codes[0])
        print(f"{backend}: the console showed the API's numbers ({answers['events']} events, "
              f"{answers['users']} users in {TIME_ZONE}), the live tail, and logged in with a password "
              f"and with a second factor; {len(report['sections'])} sections checked; "
              f"{len(done['screenshots']) + len(report['screenshots'])} screenshots in {os.path.relpath(shots, ROOT)}")
    finally:
        if browser is not None:
            # The harness failed mid-way: the script screenshots where the page is, then stops.
            try:
                browser.answer(error="the harness failed")
                browser.finish()
            except (OSError, subprocess.TimeoutExpired):
                browser.process.kill()
                browser.finish()
        server.stop()


if __name__ == "__main__":
    # CONSOLE_SECTIONS=sql,flags: only those sections' checks, on a fresh server each backend.
    sections = [name for name in os.environ.get("CONSOLE_SECTIONS", "").split(",") if name]
    if sections:
        run_on_backends("console sections", lambda backend: check_sections_only(backend, sections))
    else:
        run_on_backends("console", check)
