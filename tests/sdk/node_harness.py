"""What the checks against DuckDB share: the server's last log lines, the failure report,
calling the API as the project's owner, posting a node, and moving the project to another time
zone."""
import collections
import json
import threading
import urllib.error
import urllib.request


def keep_logs(server):
    """The server's last 50 stderr lines, kept while it runs (shown when a check fails)."""
    logs = collections.deque(maxlen=50)

    def drain():
        for line in server.process.stderr:
            logs.append(line)

    threading.Thread(target=drain, daemon=True).start()
    return logs


def report(backend, failures, logs, checks):
    """Prints every mismatch, with the server's log, and fails when there is any."""
    for failure in failures:
        print(f"{backend}: MISMATCH {failure}\n")
    if failures:
        if logs:
            print(f"{backend}: the server's last log lines:\n" + "".join(logs))
        raise AssertionError(f"{len(failures)} of {checks} checks failed")


def request(server, method, path, body):
    """`(status, reply)`; the reply is the JSON object answered, else `{"detail": <text>}`."""
    data = json.dumps(body).encode()
    req = urllib.request.Request(
        f"{server.url}{path}", data=data, method=method,
        headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            reply = json.loads(text)
        except ValueError:
            reply = text.decode(errors="replace")
        return error.code, reply if isinstance(reply, dict) else {"detail": reply}


def post_node(server, node):
    """Runs `node` now (never from cache)."""
    return request(server, "POST", f"/api/projects/{server.project_id}/query/",
                   {"query": node, "refresh": "force_blocking"})


def set_timezone(server, zone):
    status, body = request(server, "PATCH", f"/api/projects/{server.project_id}/", {"timezone": zone})
    assert status == 200 and body.get("timezone") == zone, f"{status}: {body}"
