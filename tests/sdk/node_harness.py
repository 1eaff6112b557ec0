"""What the structured-node checks against DuckDB share: calling the API as the project's owner,
posting a node, and moving the project to another time zone."""
import json
import urllib.error
import urllib.request


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
