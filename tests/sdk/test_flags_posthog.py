"""Feature flags hash-compatible with PostHog: our `/flags` against the official posthog-python SDK
evaluating the same flags locally, on both storage backends.

Creates flags through the CRUD API (a boolean at 37 %, a multivariate 20/30/50 with payloads, a
person-property flag, a flag with a 10 % holdout, plus an inactive and a deleted one), then for
10,000 distinct ids asks `POST /flags/?v=4` (raw HTTP, every answer's
shape checked; a sample through the SDK's remote path and `/decide/?v=3` too) and evaluates the
same ids with the SDK locally from our definitions (`/flags/definitions`), with the server stopped
so nothing can be remote. Every answer must be equal, and equal to the formula of reference
section 3.2 computed here; the rollout and variant split is roughly what was asked. Persons captured
beforehand are read by /flags when the request carries no (or only some) properties.

Run by scripts/test: `python tests/sdk/test_flags_posthog.py <analytics binary> [emulator endpoint]`.
"""
import hashlib
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import requests
from posthog import Posthog

sys.dont_write_bytecode = True  # no __pycache__ next to the tests
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_posthog_sdk import Server, run_on_backends  # noqa: E402

# Every id on both backends. A /flags request reads the stored person only when it lacks a property
# some flag reads (a quarter of the ids here), so DynamoDB on the one-request-at-a-time emulator
# keeps to about half a minute.
IDS = {"sqlite": 10_000, "dynamodb": 10_000}
SDK_REMOTE_SAMPLE = 200
RAW_THREADS = 4

BOOLEAN, MULTIVARIATE, PROPERTY, HOLDOUT = "bool-37", "mv-20-30-50", "plan-or-email", "holdout-exp"
INACTIVE, DELETED = "inactive-flag", "deleted-flag"
HOLDOUT_ID = 1


# --- the reference formula (section 3.2), written from the reference, not from either side ---

LONG_SCALE = 0xFFFFFFFFFFFFFFF


def reference_hash(prefix, identifier, salt=""):
    digest = hashlib.sha1(f"{prefix}{identifier}{salt}".encode("utf-8")).hexdigest()
    return int(digest[:15], 16) / LONG_SCALE


def reference_variant(flag_key, identifier, variants):
    """The variant lookup table: cumulative [min, max) ranges in order."""
    hashed = reference_hash(f"{flag_key}.", identifier, "variant")
    low = 0.0
    for key, percentage in variants:
        high = low + percentage / 100
        if low <= hashed < high:
            return key
        low = high
    return None


def in_rollout(flag_key, identifier, percentage):
    return reference_hash(f"{flag_key}.", identifier) <= percentage / 100


MV_VARIANTS = [("control", 20), ("test", 30), ("third", 50)]
HOLDOUT_VARIANTS = [("control", 50), ("test", 50)]


def reference_answers(distinct_id, properties):
    """What section 3.2 says each flag is for this id; PROPERTY is None when properties are absent."""
    answers = {
        BOOLEAN: in_rollout(BOOLEAN, distinct_id, 37),
        MULTIVARIATE: reference_variant(MULTIVARIATE, distinct_id, MV_VARIANTS),
    }
    if reference_hash("holdout-", distinct_id) <= 0.10:
        answers[HOLDOUT] = f"holdout-{HOLDOUT_ID}"
    else:
        answers[HOLDOUT] = reference_variant(HOLDOUT, distinct_id, HOLDOUT_VARIANTS)
    if properties is None:
        answers[PROPERTY] = None
    else:
        pro = properties["plan"] == "pro" and in_rollout(PROPERTY, distinct_id, 80)
        example = "example.com" in properties["email"].lower() and in_rollout(PROPERTY, distinct_id, 50)
        answers[PROPERTY] = pro or example
    return answers


# --- the flags, created through our CRUD API ---

def flag_bodies():
    return [
        {"key": BOOLEAN, "name": "boolean at 37 %", "active": True, "filters": {
            "groups": [{"properties": [], "rollout_percentage": 37}],
            "payloads": {"true": json.dumps({"color": "blue"})},
        }},
        {"key": MULTIVARIATE, "name": "three variants", "active": True, "filters": {
            "groups": [{"properties": [], "rollout_percentage": 100}],
            "multivariate": {"variants": [{"key": k, "rollout_percentage": p} for k, p in MV_VARIANTS]},
            "payloads": {"control": json.dumps({"n": 0}), "test": json.dumps([1, 2]), "third": json.dumps("three")},
        }},
        {"key": PROPERTY, "name": "person properties", "active": True, "filters": {"groups": [
            {"properties": [{"key": "plan", "value": ["pro"], "operator": "exact", "type": "person"}],
             "rollout_percentage": 80},
            {"properties": [{"key": "email", "value": "EXAMPLE.com", "operator": "icontains", "type": "person"}],
             "rollout_percentage": 50},
        ]}},
        {"key": HOLDOUT, "name": "experiment with a holdout", "active": True, "filters": {
            "groups": [{"properties": [], "rollout_percentage": 100}],
            "multivariate": {"variants": [{"key": k, "rollout_percentage": p} for k, p in HOLDOUT_VARIANTS]},
            "holdout": {"id": HOLDOUT_ID, "exclusion_percentage": 10},
        }},
        {"key": INACTIVE, "name": "switched off", "active": False, "filters": {
            "groups": [{"properties": [], "rollout_percentage": 100}]}},
        {"key": DELETED, "name": "deleted", "active": True, "filters": {
            "groups": [{"properties": [], "rollout_percentage": 100}]}},
    ]


def api(server, method, path, body=None):
    response = requests.request(
        method, f"{server.url}/api/projects/{server.project_id}{path}", json=body, timeout=30,
        headers={"Authorization": f"Bearer {server.key}"})
    return response


def create_flags(server, bodies):
    """Creates each flag (201), answers {key: created JSON}."""
    created = {}
    for body in bodies:
        response = api(server, "POST", "/feature_flags/", body)
        assert response.status_code == 201, f"create {body['key']}: {response.status_code} {response.text}"
        flag = response.json()
        assert flag["key"] == body["key"] and isinstance(flag["id"], int), flag
        created[flag["key"]] = flag
    return created


# --- the ids and the properties each is asked with ---

def distinct_ids(count):
    """Plain, uuid-like, numeric and non-ASCII ids: the hash runs over the UTF-8 bytes."""
    ids = []
    for i in range(count):
        kind = i % 5
        if kind == 0:
            ids.append(f"user-{i}")
        elif kind == 1:
            ids.append(hashlib.md5(str(i).encode()).hexdigest())
        elif kind == 2:
            ids.append(str(1_000_000 + i))
        elif kind == 3:
            ids.append(f"ünïcødé-{i}-日本")
        else:
            ids.append(f"{i}@example.org")
    assert len(set(ids)) == count
    return ids


def properties_for(index, distinct_id):
    """A quarter with no properties at all; the rest split between the two conditions."""
    kind = index % 4
    if kind == 0:
        return None
    if kind == 1:
        return {"plan": "pro", "email": f"{distinct_id}@Other.org"}
    if kind == 2:
        return {"plan": "free", "email": f"{index}@EXAMPLE.com"}
    return {"plan": "free", "email": f"{index}@other.org"}


# --- the remote half: raw HTTP, every answer's shape checked ---

def flags_body(token, distinct_id, properties, **extra):
    body = {"api_key": token, "distinct_id": distinct_id, **extra}
    if properties is not None:
        body["person_properties"] = properties
    return body


def check_v4_shape(answer, created):
    assert set(answer) >= {"flags", "errorsWhileComputingFlags", "requestId"}, answer
    assert answer["errorsWhileComputingFlags"] is False, answer
    assert isinstance(answer["requestId"], str) and answer["requestId"], answer
    for key, detail in answer["flags"].items():
        assert detail["key"] == key, detail
        assert isinstance(detail["enabled"], bool), detail
        assert detail["variant"] is None or isinstance(detail["variant"], str), detail
        assert not (detail["variant"] and not detail["enabled"]), detail
        reason = detail["reason"]
        assert isinstance(reason["code"], str) and "description" in reason and "condition_index" in reason, detail
        metadata = detail["metadata"]
        flag = created[key]
        assert (metadata["id"], metadata["version"]) == (flag["id"], flag["version"]), (metadata, flag)
        # PostHog hands payloads as JSON text, which the SDKs parse.
        assert "payload" in metadata and (metadata["payload"] is None or isinstance(metadata["payload"], str)), detail


def values_of_v4(answer):
    """{key: value} as the SDKs read /flags v4: the variant, else enabled; and the payloads."""
    values, payloads = {}, {}
    for key, detail in answer["flags"].items():
        values[key] = detail["variant"] or detail["enabled"]
        payload = detail["metadata"].get("payload")
        if detail["enabled"] and payload is not None:
            payloads[key] = payload
    return values, payloads


def remote_all(server, ids, props, created):
    # http.client on keep-alive connections: requests costs more client CPU than the server does.
    local = threading.local()
    address = urllib.parse.urlsplit(server.url)

    def ask(index):
        connection = getattr(local, "connection", None)
        if connection is None:
            connection = local.connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
        body = json.dumps(flags_body(server.token, ids[index], props[index]))
        connection.request("POST", "/flags/?v=4", body=body.encode(), headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        text = response.read()
        assert response.status == 200, f"/flags for {ids[index]!r}: {response.status} {text!r}"
        answer = json.loads(text)
        check_v4_shape(answer, created)
        return values_of_v4(answer)

    with ThreadPoolExecutor(RAW_THREADS) as pool:
        return list(pool.map(ask, range(len(ids))))


def normalize_payloads(payloads):
    """Payloads as values: PostHog keeps them as JSON text; the SDK may hand either form."""
    normalized = {}
    for key, payload in (payloads or {}).items():
        if payload is None:
            continue
        normalized[key] = json.loads(payload) if isinstance(payload, str) else payload
    return normalized


def check_remote_extras(server, ids, props, remote, created):
    """The SDK's own remote path, /decide/?v=3 and flag_keys_to_evaluate agree with /flags v4."""
    sdk = Posthog(server.token, host=server.url, max_retries=0,
                  feature_flags_request_timeout_seconds=10)
    try:
        for index in range(0, len(ids), len(ids) // SDK_REMOTE_SAMPLE):
            answer = sdk.get_all_flags_and_payloads(ids[index], person_properties=props[index] or {})
            values, payloads = remote[index]
            assert answer["featureFlags"] == values, (ids[index], answer, values)
            assert normalize_payloads(answer["featureFlagPayloads"]) == normalize_payloads(payloads), (
                ids[index], answer, payloads)
            # The SDK's newer one-request API, scoped to two flags.
            evaluated = sdk.evaluate_flags(ids[index], person_properties=props[index] or {},
                                           flag_keys=[MULTIVARIATE, BOOLEAN])
            assert sorted(evaluated.keys) == sorted([MULTIVARIATE, BOOLEAN]), (ids[index], evaluated.keys)
            for key in (MULTIVARIATE, BOOLEAN):
                value = evaluated.get_flag(key, send_feature_flag_events=False)
                assert value == values[key], (ids[index], key, value, values)
    finally:
        sdk.shutdown()

    session = requests.Session()
    for index in range(0, len(ids), 50):
        body = flags_body(server.token, ids[index], props[index])
        decide = session.post(f"{server.url}/decide/?v=3", json=body, timeout=30)
        assert decide.status_code == 200, (decide.status_code, decide.text)
        decided = decide.json()
        values, payloads = remote[index]
        assert decided.get("featureFlags") == values, (ids[index], decided, values)
        assert normalize_payloads(decided.get("featureFlagPayloads")) == normalize_payloads(payloads), (
            ids[index], decided, payloads)
        only = session.post(f"{server.url}/flags/?v=4", timeout=30,
                            json={**body, "flag_keys_to_evaluate": [BOOLEAN, HOLDOUT]})
        assert only.status_code == 200, (only.status_code, only.text)
        assert set(only.json()["flags"]) == {BOOLEAN, HOLDOUT}, only.json()
    # An unknown token is refused, as PostHog refuses it.
    refused = session.post(f"{server.url}/flags/?v=4", json=flags_body("phc_unknown", "someone", None), timeout=30)
    assert refused.status_code == 401, (refused.status_code, refused.text)


# --- the local half: the official SDK from our definitions, with the server stopped ---

def local_client(server, live_keys):
    client = Posthog(server.token, host=server.url, secret_key=server.key,
                     poll_interval=3600, max_retries=0,
                     feature_flags_request_timeout_seconds=2)
    client.load_feature_flags()
    loaded = {flag["key"] for flag in client.feature_flags or []}
    assert live_keys <= loaded, f"definitions loaded: {sorted(loaded)}, expected at least {sorted(live_keys)}"
    assert DELETED not in loaded, "a deleted flag is in the definitions"
    # Older server SDKs read the same definitions from PostHog's older route.
    headers = {"Authorization": f"Bearer {server.key}"}
    older = requests.get(f"{server.url}/api/feature_flag/local_evaluation/", params={"token": server.token},
                         headers=headers, timeout=30)
    assert older.status_code == 200, (older.status_code, older.text)
    by_key = {flag["key"]: flag for flag in older.json()["flags"]}
    assert by_key == {flag["key"]: flag for flag in client.feature_flags}, (by_key, client.feature_flags)
    return client


STORED_PERSONS = 40


def check_stored_persons(server, client):
    """/flags without properties reads the person the lake keeps, and the request's properties win
    over it: each answer equals the SDK's local one given the properties the server should use."""
    people = []
    for i in range(STORED_PERSONS):
        stored = ({"plan": "pro", "email": f"stored-{i}@other.org"} if i % 2 else
                  {"plan": "free", "email": f"stored-{i}@example.com"})
        # Every third one asks with a property of its own, which the stored ones complete.
        given = {"plan": "free" if i % 2 else "pro"} if i % 3 == 0 else None
        people.append((f"stored-{i}", stored, given, {**stored, **(given or {})}))
    # Without the stored properties, some of these would be off: the wait below is for them.
    assert sum(given is None and reference_answers(distinct_id, merged)[PROPERTY]
               for distinct_id, _, given, merged in people) >= 5
    session = requests.Session()
    batch = [{"event": "$set", "distinct_id": distinct_id, "properties": {"$set": stored}}
             for distinct_id, stored, _, _ in people]
    captured = session.post(f"{server.url}/batch/", json={"api_key": server.token, "batch": batch}, timeout=30)
    assert captured.status_code == 200, (captured.status_code, captured.text)
    sent = time.monotonic()

    differing = people
    while differing and time.monotonic() - sent < 30:
        time.sleep(0.2)
        still = []
        for distinct_id, stored, given, merged in differing:
            answer = session.post(f"{server.url}/flags/?v=4", json=flags_body(server.token, distinct_id, given),
                                  timeout=30)
            assert answer.status_code == 200, (answer.status_code, answer.text)
            remote, _ = values_of_v4(answer.json())
            local = client.get_all_flags(distinct_id, person_properties=merged, only_evaluate_locally=True)
            local.pop(INACTIVE, None)
            if remote != local or local != reference_answers(distinct_id, merged):
                still.append((distinct_id, stored, given, merged, remote, local))
        differing = [person[:4] for person in still]
    assert not differing, f"stored persons: {len(still)} differ after 30 s, first: {still[:3]}"
    return time.monotonic() - sent


def check(backend):
    server = Server(backend)
    try:
        created = create_flags(server, flag_bodies())
        # PostHog deletes a flag softly, with a PATCH (its DELETE is a 405).
        deleted = api(server, "PATCH", f"/feature_flags/{created[DELETED]['id']}/", {"deleted": True})
        assert deleted.status_code == 200, (deleted.status_code, deleted.text)
        live = {BOOLEAN, MULTIVARIATE, PROPERTY, HOLDOUT}

        ids = distinct_ids(IDS[backend])
        props = [properties_for(i, distinct_id) for i, distinct_id in enumerate(ids)]

        started = time.monotonic()
        remote = remote_all(server, ids, props, created)
        remote_seconds = time.monotonic() - started
        check_remote_extras(server, ids, props, remote, created)

        client = local_client(server, live)
        remote_calls = []
        client._get_flags_decision = lambda *args, **kwargs: remote_calls.append(args) or {}
        stored_seconds = check_stored_persons(server, client)
        # From here on every answer is local: the server is gone, and a remote call would fail.
        server.process.terminate()
        server.process.wait(timeout=10)

        started = time.monotonic()
        mismatches = []
        counts = {BOOLEAN: 0, HOLDOUT: 0, MULTIVARIATE: {}}
        for index, distinct_id in enumerate(ids):
            values, payloads = remote[index]
            local = client.get_all_flags_and_payloads(
                distinct_id, person_properties=props[index], only_evaluate_locally=True)
            local_values = dict(local["featureFlags"] or {})
            # PostHog's definitions carry inactive flags and the SDK answers False for them;
            # /flags leaves them out. Either way the SDK's caller sees a flag that is off.
            assert local_values.pop(INACTIVE, False) is False, (distinct_id, local_values)
            reference = reference_answers(distinct_id, props[index])
            expected_remote = dict(reference)
            if props[index] is None:
                # No properties and no person: the SDK cannot decide locally (PostHog's SDK
                # leaves the flag out), the server answers False.
                assert PROPERTY not in local_values, (distinct_id, local_values)
                expected_remote[PROPERTY] = False
                local_values[PROPERTY] = False
            expected_remote = {key: (False if value is None else value) for key, value in expected_remote.items()}
            if not (values == local_values == expected_remote):
                mismatches.append((distinct_id, props[index], values, local_values, expected_remote))
                continue
            if normalize_payloads(local["featureFlagPayloads"]) != normalize_payloads(payloads):
                mismatches.append((distinct_id, "payloads", payloads, local["featureFlagPayloads"]))
                continue
            counts[BOOLEAN] += values[BOOLEAN] is True
            counts[HOLDOUT] += values[HOLDOUT] == f"holdout-{HOLDOUT_ID}"
            counts[MULTIVARIATE][values[MULTIVARIATE]] = counts[MULTIVARIATE].get(values[MULTIVARIATE], 0) + 1
        local_seconds = time.monotonic() - started
        client.shutdown()
        assert not remote_calls, f"{len(remote_calls)} evaluations went remote"
        total = len(ids)
        assert not mismatches, f"{len(mismatches)} of {total} ids differ, first: {mismatches[:3]}"

        # The split asked for, within 5 standard deviations of a share (at most 2.5 points at 10,000 ids).
        tolerance = 5 * (0.25 / total) ** 0.5

        def near(count, share, what):
            assert abs(count / total - share) <= tolerance, f"{what}: {count} of {total}, expected ~{share:.0%}"
        near(counts[BOOLEAN], 0.37, BOOLEAN)
        near(counts[HOLDOUT], 0.10, HOLDOUT)
        for key, percentage in MV_VARIANTS:
            near(counts[MULTIVARIATE].get(key, 0), percentage / 100, f"{MULTIVARIATE} {key}")
        print(f"{backend}: {total} ids equal on /flags, the SDK's local evaluation and the reference formula "
              f"(remote {remote_seconds:.1f} s, local {local_seconds:.1f} s; stored persons read after "
              f"{stored_seconds:.1f} s); {BOOLEAN} {counts[BOOLEAN]}, "
              f"{MULTIVARIATE} {counts[MULTIVARIATE]}, held out {counts[HOLDOUT]}")
    finally:
        server.stop()  # terminating a process already stopped does nothing


if __name__ == "__main__":
    run_on_backends("flags", check)
