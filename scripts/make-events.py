#!/usr/bin/env python3
"""Writes the API Gateway v2 sample events under events/<family>/ (one or more per route).

Run it after adding a route; tests/tests/api/lambda_events.rs replays every HTTP sample through the
Lambda adapter, and the worker's tests read its samples. `phx_REPLACE_WITH_YOUR_KEY` is the
placeholder for a personal API key, `phc_REPLACE_WITH_YOUR_PROJECT_TOKEN` for a project token."""
import base64
import gzip
import json
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "events"
HOST = "abc123.execute-api.us-east-1.amazonaws.com"
SAMPLE_UUID = "0192f0a1-7c3e-7b2a-9d41-3f5e6a7b8c9d"


def event(method, path, route, *, query="", body=None, stage="$default", auth=True, path_params=None,
          content_type="application/json", raw_body=None, extra_headers=None):
    prefix = "" if stage == "$default" else f"/{stage}"
    headers = {
        "accept": "application/json",
        "host": HOST,
        "user-agent": "curl/8.5.0",
        "x-forwarded-proto": "https",
    }
    if auth:
        headers["authorization"] = "Bearer phx_REPLACE_WITH_YOUR_KEY"
    if body is not None or raw_body is not None:
        headers["content-type"] = content_type
    headers.update(extra_headers or {})
    result = {
        "version": "2.0",
        "routeKey": route,
        "rawPath": prefix + path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": HOST,
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": prefix + path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "curl/8.5.0",
            },
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "routeKey": route,
            "stage": stage,
            "time": "22/Nov/2026:04:30:00 +0000",
            "timeEpoch": 1795228200000,
        },
        "isBase64Encoded": False,
    }
    if query:
        result["queryStringParameters"] = dict(pair.split("=", 1) for pair in query.split("&"))
    if path_params:
        result["pathParameters"] = path_params
    if body is not None:
        result["body"] = json.dumps(body)
    if raw_body is not None:
        # Binary bodies reach Lambda base64-encoded.
        result["body"] = base64.b64encode(raw_body).decode()
        result["isBase64Encoded"] = True
    return result


USERS = "ANY /api/users/{proxy+}"
PROJECTS = "ANY /api/projects/{proxy+}"


def me(action=""):
    path = f"/api/users/@me/{action + '/' if action else ''}"
    return path, {"proxy": path.removeprefix("/api/users/")}


# `CAPTURE_TOKEN=phc_... scripts/make-events.py` writes samples for your own project.
TOKEN = os.environ.get("CAPTURE_TOKEN", "phc_REPLACE_WITH_YOUR_PROJECT_TOKEN")
CAPTURE = "$default"


def sdk_event(name, distinct_id, **properties):
    return {"event": name, "distinct_id": distinct_id, "properties": properties,
            "timestamp": "2026-11-22T04:29:58Z", "uuid": "0192f0a1-7c3e-7b2a-9d41-3f5e6a7b8c9e"}


def sqs_of_s3(keys):
    notification = {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
                                 "eventName": "ObjectCreated:Put",
                                 "s3": {"bucket": {"name": "analytics-bucket"}, "object": {"key": key, "size": 512}}}
                                for key in keys]}
    return {"Records": [{"messageId": "059f36b4-87a3-44ab-83d2-661975830a7d", "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
                         "body": json.dumps(notification), "attributes": {"ApproximateReceiveCount": "1"},
                         "messageAttributes": {}, "eventSource": "aws:sqs",
                         "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:JobQueue", "awsRegion": "us-east-1"}]}


EVENTS = {
    "users": {
        "health.json": event("GET", "/_health", "GET /_health", auth=False),
        "get-me.json": event("GET", *me()[:1], USERS, path_params=me()[1]),
        "get-me-named-stage.json": event("GET", me()[0], USERS, stage="prod", path_params=me()[1]),
        "patch-me.json": event("PATCH", me()[0], USERS, body={"first_name": "Ada", "theme_mode": "dark"}, path_params=me()[1]),
        "two-factor-start-setup.json": event("GET", me("two_factor_start_setup")[0], USERS, path_params=me("two_factor_start_setup")[1]),
        "start-2fa-setup.json": event("GET", me("start_2fa_setup")[0], USERS, path_params=me("start_2fa_setup")[1]),
        "two-factor-validate.json": event("POST", me("two_factor_validate")[0], USERS, body={"token": "123456"}, path_params=me("two_factor_validate")[1]),
        "validate-2fa.json": event("POST", me("validate_2fa")[0], USERS, body={"token": "123456"}, path_params=me("validate_2fa")[1]),
        "two-factor-status.json": event("GET", me("two_factor_status")[0], USERS, path_params=me("two_factor_status")[1]),
        "two-factor-backup-codes.json": event("POST", me("two_factor_backup_codes")[0], USERS, body={}, path_params=me("two_factor_backup_codes")[1]),
        "two-factor-disable.json": event("POST", me("two_factor_disable")[0], USERS, body={"token": "123456"}, path_params=me("two_factor_disable")[1]),
        "request-email-verification.json": event("POST", "/api/users/request_email_verification/", USERS, body={"uuid": SAMPLE_UUID}, auth=False, path_params={"proxy": "request_email_verification/"}),
        "verify-email.json": event("POST", "/api/users/verify_email/", USERS, body={"uuid": SAMPLE_UUID, "code": "123456"}, auth=False, path_params={"proxy": "verify_email/"}),
        "cancel-email-change-request.json": event("PATCH", "/api/users/cancel_email_change_request/", USERS, body={}, path_params={"proxy": "cancel_email_change_request/"}),
        "list-projects.json": event("GET", "/api/projects/", "ANY /api/projects", query="limit=10"),
        "get-project.json": event("GET", "/api/projects/@current/", PROJECTS, path_params={"proxy": "@current/"}),
        "patch-project.json": event("PATCH", "/api/projects/1/", PROJECTS, body={"name": "Renamed from Lambda", "timezone": "Europe/Paris"}, path_params={"proxy": "1/"}),
    },
    "capture": {
        "batch.json": event("POST", "/batch/", CAPTURE, auth=False, body={
            "api_key": TOKEN, "sent_at": "2026-11-22T04:30:00Z",
            "batch": [sdk_event("$pageview", "anon-1", **{"$current_url": "https://example.com"}),
                      {**sdk_event("$identify", "ada@example.com", **{"$anon_distinct_id": "anon-1", "$set": {"email": "ada@example.com"}}),
                       "uuid": "0192f0a1-7c3e-7b2a-9d41-3f5e6a7b8c9f"}]}),
        "e-gzip-js.json": event("POST", "/e/", CAPTURE, auth=False, query="compression=gzip-js&ver=1.200.0",
                                content_type="text/plain", raw_body=gzip.compress(json.dumps(
                                    {**sdk_event("$autocapture", "anon-2"), "properties": {"token": TOKEN}}).encode())),
        "i-v0-e.json": event("POST", "/i/v0/e/", CAPTURE, auth=False, body={**sdk_event("signed_up", "ada@example.com"), "api_key": TOKEN}),
        "capture-form.json": event("POST", "/capture/", CAPTURE, auth=False, content_type="application/x-www-form-urlencoded",
                                   raw_body=("data=" + base64.b64encode(json.dumps(
                                       {**sdk_event("clicked", "anon-3"), "api_key": TOKEN}).encode()).decode()
                                       .replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")).encode()),
        "track.json": event("POST", "/track/", CAPTURE, auth=False, body={**sdk_event("opened", "anon-4"), "token": TOKEN}),
    },
}

# Not HTTP: what the worker receives.
WORKER = {
    "sqs-staging-notification.json": sqs_of_s3(["staging/team_id%3D1/0192f0a1-7c3e-7b2a-9d41-3f5e6a7b8c9d.ndjson.gz"]),
    "scheduled-sweep.json": {"version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event",
                             "source": "aws.events", "account": "123456789012", "time": "2026-11-22T04:30:00Z",
                             "region": "us-east-1", "resources": ["arn:aws:events:us-east-1:123456789012:rule/Sweep"], "detail": {}},
}
(ROOT / "worker").mkdir(parents=True, exist_ok=True)
for name, content in WORKER.items():
    (ROOT / "worker" / name).write_text(json.dumps(content, indent=2) + "\n")

for family, files in EVENTS.items():
    folder = ROOT / family
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content, indent=2) + "\n")
