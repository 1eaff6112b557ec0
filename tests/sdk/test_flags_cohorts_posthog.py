"""Cohort conditions in feature flags: our `/flags` against the official posthog-python SDK
evaluating the same flags locally from our definitions, on both storage backends.

Creates cohorts through the cohorts API (a person-property cohort, one that ORs a property group
with the first cohort, one that ANDs the first cohort negated with a property, and a static one)
and flags on them (`in` with a 60 % rollout, `in`, `not_in`, and `in` the static cohort). For
each id, asked with every property the cohorts read, `POST /flags/?v=4` must equal the SDK's
local answer for the person-property cohorts; the static cohort is not in the definitions'
`cohorts`, so the SDK must not answer it locally (it falls back to the server), while `/flags`
answers it from the stored members (none here: False).

Run by scripts/test: `python tests/sdk/test_flags_cohorts_posthog.py <analytics binary> [emulator endpoint]`.
"""
import json
import os
import sys

import requests
from posthog import Posthog

sys.dont_write_bytecode = True  # no __pycache__ next to the tests
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_posthog_sdk import Server, run_on_backends  # noqa: E402

IDS = {"sqlite": 2_000, "dynamodb": 600}
PRO, EUROPE, NOT_PRO_EXAMPLE, STATIC = "cohort-pro", "cohort-europe", "cohort-not-pro", "cohort-static"
LOCAL_FLAGS = (PRO, EUROPE, NOT_PRO_EXAMPLE)


def api(server, method, path, body=None):
    return requests.request(
        method, f"{server.url}/api/projects/{server.project_id}{path}", json=body, timeout=30,
        headers={"Authorization": f"Bearer {server.key}"})


def create(server, path, body):
    response = api(server, "POST", path, body)
    assert response.status_code == 201, f"{path} {body.get('name') or body.get('key')}: {response.status_code} {response.text}"
    return response.json()


def group(kind, values):
    return {"properties": {"type": kind, "values": values}}


def create_cohorts(server):
    pro = create(server, "/cohorts/", {"name": "pro", "filters": group("AND", [
        {"type": "person", "key": "plan", "value": ["pro"], "operator": "exact"}])})
    europe = create(server, "/cohorts/", {"name": "europe or pro", "filters": group("OR", [
        {"type": "AND", "values": [
            {"type": "person", "key": "country", "value": ["de", "fr"], "operator": "exact"}]},
        {"type": "cohort", "key": "id", "value": pro["id"]}])})
    not_pro = create(server, "/cohorts/", {"name": "not pro, example email", "filters": group("AND", [
        {"type": "cohort", "key": "id", "value": pro["id"], "negation": True},
        {"type": "person", "key": "email", "value": "example.com", "operator": "icontains"}])})
    static = create(server, "/cohorts/", {"name": "hand picked", "is_static": True})
    return pro["id"], europe["id"], not_pro["id"], static["id"]


def on_cohort(key, cohort_id, operator, rollout=100):
    return {"key": key, "filters": {"groups": [{"rollout_percentage": rollout, "properties": [
        {"key": "id", "type": "cohort", "value": cohort_id, "operator": operator}]}]}}


def properties_for(index):
    return {
        "plan": ["pro", "free", "PRO", "team"][index % 4],
        "country": ["de", "us", "FR", "jp", "fr"][index % 5],
        "email": [f"{index}@example.com", f"{index}@other.org", f"{index}@EXAMPLE.com"][index % 3],
    }


def expected(distinct_id, props, in_rollout):
    pro = props["plan"].lower() == "pro"
    europe = props["country"].lower() in ("de", "fr") or pro
    not_pro_example = not pro and "example.com" in props["email"].lower()
    return {PRO: pro and in_rollout, EUROPE: europe, NOT_PRO_EXAMPLE: not not_pro_example}


def check(backend):
    server = Server(backend)
    try:
        pro, europe, not_pro, static = create_cohorts(server)
        for body in (on_cohort(PRO, pro, "in", rollout=60), on_cohort(EUROPE, europe, "in"),
                     on_cohort(NOT_PRO_EXAMPLE, not_pro, "not_in"), on_cohort(STATIC, static, "in")):
            create(server, "/feature_flags/", body)

        client = Posthog(server.token, host=server.url, secret_key=server.key, poll_interval=3600,
                         max_retries=0, feature_flags_request_timeout_seconds=5)
        client.load_feature_flags()
        local_cohorts = client.cohorts or {}
        assert set(local_cohorts) == {str(pro), str(europe), str(not_pro)}, json.dumps(local_cohorts)
        remote_calls = []
        client._get_flags_decision = lambda *args, **kwargs: remote_calls.append(args) or {}

        session = requests.Session()
        mismatches, counts = [], {key: 0 for key in LOCAL_FLAGS}
        for index in range(IDS[backend]):
            distinct_id = f"cohort-user-{index}"
            props = properties_for(index)
            answer = session.post(f"{server.url}/flags/?v=4", timeout=30, json={
                "api_key": server.token, "distinct_id": distinct_id, "person_properties": props})
            assert answer.status_code == 200, (answer.status_code, answer.text)
            answer = answer.json()
            assert answer["errorsWhileComputingFlags"] is False, answer
            remote = {key: detail["enabled"] for key, detail in answer["flags"].items()}
            local = client.get_all_flags(distinct_id, person_properties=props, only_evaluate_locally=True)
            # The static cohort is the server's to answer: the SDK leaves it out locally.
            if STATIC in local or remote.get(STATIC) is not False:
                mismatches.append((distinct_id, "static", remote, local))
                continue
            remote.pop(STATIC)
            want = expected(distinct_id, props, in_rollout=remote[PRO] or not props["plan"].lower() == "pro")
            if remote != local or any(remote[key] != want[key] for key in (EUROPE, NOT_PRO_EXAMPLE)) or (
                    remote[PRO] and not want[PRO]):
                mismatches.append((distinct_id, props, remote, local, want))
                continue
            for key in LOCAL_FLAGS:
                counts[key] += remote[key]
        client.shutdown()
        assert not remote_calls, f"{len(remote_calls)} local evaluations went remote"
        total = IDS[backend]
        assert not mismatches, f"{len(mismatches)} of {total} ids differ, first: {mismatches[:3]}"
        # Half the ids are pro; 60 % of them are in the rollout.
        assert 0.2 < counts[PRO] / total < 0.4, counts
        print(f"{backend}: {total} ids equal on /flags and the SDK's local evaluation of cohort flags "
              f"(nested, negated, not_in, a 60 % rollout); the static cohort answered by the server only; {counts}")
    finally:
        server.stop()


if __name__ == "__main__":
    run_on_backends("flags cohorts", check)
