"""Writes from another site are impossible, with or without a token: a page on another origin, driven in headless
Debian Chromium through Playwright, tries the bodiless no-cors POSTs, a JSON POST and a form post against a live
server; a page reached by a name the server does not know (DNS rebinding) is refused; the same requests sent by hand
(httpx, as curl would) with their Origin, Referer, Host and Content-Type headers."""

from __future__ import annotations

import http.server
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from kgplan.agent.agent import Agent
from kgplan.interfaces.api import ErrorOut, serving

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

EVIL_PAGE = """<!doctype html><html><body>
<form id="form" method="POST" action="{api}/api/undo/1" enctype="text/plain" target="sink">
  <input name='{{"x":"' value='1"}}'></form>
<iframe name="sink" id="sink"></iframe>
<script>
const api = "{api}";
const post = (path, init) => fetch(api + path, {{method: "POST", ...init}}).catch(() => null);
(async () => {{
  await post("/api/run", {{mode: "no-cors"}});
  await post("/api/jobs/run", {{mode: "no-cors"}});
  await post("/api/undo/1", {{mode: "no-cors"}});
  await post("/api/undo/1", {{mode: "no-cors", headers: {{"Content-Type": "application/json"}}, body: "{{}}"}});
  await post("/api/changes", {{mode: "no-cors", headers: {{"Content-Type": "text/plain"}},
                               body: JSON.stringify({{removed_entities: ["kitchen"]}})}});
  await post("/api/changes", {{headers: {{"Content-Type": "application/json"}},
                               body: JSON.stringify({{removed_entities: ["kitchen"]}})}});
  await new Promise((done) => {{
    document.getElementById("sink").addEventListener("load", done);
    document.getElementById("form").submit();
  }});
  document.body.dataset.done = "1";
}})();
</script></body></html>"""


def world(agent: Agent) -> tuple[list[str], list[int]]:
    """The facts and the ids of the history."""
    return sorted(map(str, agent.facts())), [c.id for c in agent.history(None)]


@contextmanager
def other_site(html: str) -> Iterator[str]:
    """A page served on another origin (localhost on another port), in a thread."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(html.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def with_stored_plan(agent: Agent) -> None:
    """A plan kept for /api/run, which would change the world."""
    assert agent.plan(goal="(not (switched_on kitchen_light))").plan


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is absent: apt-get install -y chromium")
def test_a_page_on_another_origin_changes_nothing(agent: Agent, live_server: str) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    with_stored_plan(agent)
    before = world(agent)
    port = live_server.rsplit(":", 1)[1]
    with sync_api.sync_playwright() as p, other_site(EVIL_PAGE.format(api=live_server)) as evil:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--host-resolver-rules=MAP rebound.example 127.0.0.1"])
        page = browser.new_page()
        page.goto(evil)
        page.wait_for_selector("body[data-done='1']", state="attached", timeout=30_000)
        # DNS rebinding: a name the attacker controls now resolves to this machine; the server refuses the name
        rebound = page.goto(f"http://rebound.example:{port}/")
        assert rebound is not None and rebound.status == 400
        assert page.evaluate("""async () => (await fetch("/api/entities")).status""") == 400
        assert page.evaluate("""async () => (await fetch("/api/undo/1", {method: "POST",
            headers: {"Content-Type": "application/json"}, body: "{}"})).status""") == 400
        # the server's own page still writes (it sends JSON from its own origin)
        page.goto(live_server)
        page.wait_for_selector("body[data-ready='1']")
        assert world(agent) == before  # nothing the other pages sent was applied, the stored plan not run
        status = page.evaluate("""async () => (await fetch("/api/changes", {method: "POST",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({add: ["(switched_on hallway_light)"]})})).status""")
        assert status == 200
        browser.close()
    assert len(world(agent)[1]) == len(before[1]) + 1


FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize("headers, status", [
    ({"Origin": "http://evil.example", "Content-Type": FORM}, 403),  # the curl
    ({"Origin": "http://evil.example", "Content-Type": "application/json"}, 403),
    ({"Origin": "null", "Content-Type": "application/json"}, 403),  # a sandboxed frame, a file
    ({"Referer": "http://evil.example/page", "Content-Type": "application/json"}, 403),
    ({"Origin": "http://127.0.0.1:1", "Content-Type": "application/json"}, 403),  # another port of this machine
    ({"Content-Type": FORM}, 415),
    ({"Content-Type": "text/plain"}, 415),
    ({"Content-Type": "multipart/form-data; boundary=x"}, 415),
    ({}, 415),  # no body, no type: what a no-cors fetch sends
    ({"Host": "evil.example", "Content-Type": "application/json"}, 400),  # DNS rebinding
    ({"Host": "evil.example", "Origin": "http://evil.example", "Content-Type": "application/json"}, 400),
])
def test_writes_from_elsewhere_are_refused(agent: Agent, live_server: str, headers: dict, status: int) -> None:
    with_stored_plan(agent)
    before = world(agent)
    body = "x=1" if headers.get("Content-Type") == FORM else "{}" if "Content-Type" in headers else None
    with httpx.Client(base_url=live_server) as c:
        for path in ("/api/undo/1", "/api/run", "/api/jobs/run"):
            r = c.post(path, content=body, headers=headers)
            assert r.status_code == status, (path, r.text)
            assert ErrorOut.model_validate(r.json()).detail.message
        r = c.post("/api/changes", content='{"removed_entities": ["kitchen"]}', headers=headers)
        assert r.status_code == status, r.text
    assert world(agent) == before


def test_reads_by_an_unknown_host_are_refused(live_server: str) -> None:
    with httpx.Client(base_url=live_server) as c:
        for host in ("evil.example", "evil.example:80", "127.0.0.1.evil.example", ""):
            r = c.get("/api/facts", headers={"Host": host})
            assert r.status_code == 400 and "rebinding" in ErrorOut.model_validate(r.json()).detail.message, host
        for host in ("127.0.0.1", "localhost", "[::1]", "127.1", "kgplan.localhost", "192.168.1.5:8000", "[fe80::1]"):
            assert c.get("/api/facts", headers={"Host": host}).status_code == 200, host


def test_same_origin_and_plain_clients_write(agent: Agent, live_server: str) -> None:
    port = live_server.rsplit(":", 1)[1]
    with httpx.Client(base_url=live_server) as c:
        for headers in ({"Origin": live_server}, {"Referer": f"{live_server}/"},
                        {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}, {}):
            r = c.post("/api/changes", json={"add": ["(switched_on hallway_light)"]}, headers=headers)
            assert r.status_code == 200, (headers, r.text)
            assert c.post(f"/api/undo/{r.json()['id']}", headers={**headers, "Content-Type": "application/json"}
                          ).status_code == 200  # no body: JSON said by the header alone
        assert c.post("/api/run", json={}).status_code == 400  # no plan: the route itself answers


def test_allowed_hosts_are_reached_by_name(agent: Agent) -> None:
    with serving(agent, hosts=["kgplan.lan"]) as url, httpx.Client(base_url=url) as c:
        port = url.rsplit(":", 1)[1]
        lan = {"Host": f"kgplan.lan:{port}", "Origin": f"http://kgplan.lan:{port}"}
        assert c.get("/api/facts", headers=lan).status_code == 200
        assert c.post("/api/changes", json={"add": ["(switched_on hallway_light)"]}, headers=lan).status_code == 200
        assert c.get("/api/facts", headers={"Host": "other.lan"}).status_code == 400
    with serving(agent, hosts=["*"]) as url, httpx.Client(base_url=url) as c:
        assert c.get("/api/facts", headers={"Host": "any.lan"}).status_code == 200


def test_the_token_does_not_open_writes_to_other_sites(agent: Agent) -> None:
    with serving(agent, token="s3cret") as url, httpx.Client(base_url=url) as c:
        auth = {"Authorization": "Bearer s3cret"}
        r = c.post("/api/changes", json={"add": ["(switched_on hallway_light)"]},
                   headers={**auth, "Origin": "http://evil.example"})
        assert r.status_code == 403
        assert c.post("/api/undo/1", headers={**auth, "Content-Type": FORM}, content="x=1").status_code == 415
        assert c.post("/api/undo/1", json={}).status_code == 401
        assert c.get("/api/settings").json()["writes_need_token"]

