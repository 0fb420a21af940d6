"""The live change feed: GET /api/events (server-sent events read the way a browser's EventSource reads them) and
MCP's change resources with their subscriptions, against a real server, a real MCP server process over stdio and
writers in other threads and processes on the same sqlite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from kgplan.agent.agent import Agent
from kgplan.errors import InputError
from kgplan.graph.feed import changes_after, newest
from kgplan.graph.model import Delta, Entity
from kgplan.interfaces import api
from kgplan.interfaces.api import Limits, serving
from tests.conftest import ROOT

CHANGES = "kgplan://changes"
WRITER = """import sys
from kgplan.agent.agent import Agent
from kgplan.errors import InputError
from kgplan.graph.model import Delta, Entity
with Agent(sys.argv[1]) as a:
    for i in range(int(sys.argv[3])):
        a.observe([Delta(new_entities=[Entity(name=f"{sys.argv[2]}{i}", type="room")], source="sensor")])
"""


def blocks(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """The blocks of a server-sent event stream, each as its fields (a comment under the empty name)."""
    block: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            block[name] = value.removeprefix(" ")
        elif block:
            yield block
            block = {}


class Stream:
    """An open event stream; `last` is the Last-Event-ID a browser would send on reconnecting."""

    def __init__(self, response: httpx.Response, last: str | None) -> None:
        self.response, self.blocks, self.last = response, blocks(response.iter_lines()), last

    def until(self, wanted: Callable[[dict[str, str]], bool]) -> dict[str, str]:
        for block in self.blocks:
            self.last = block.get("id", self.last)
            if wanted(block):
                return block
        raise EOFError("the stream ended")

    def change(self) -> dict[str, Any]:
        """The next `change` event's data."""
        return json.loads(self.until(lambda b: b.get("event") == "change")["data"])


@contextmanager
def events(url: str, last: str | None = None, **params: Any) -> Iterator[Stream]:
    headers = {} if last is None else {"Last-Event-ID": last}
    with httpx.Client(base_url=url, timeout=30) as c, c.stream("GET", "/api/events", params=params,
                                                               headers=headers) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        yield Stream(r, last)


def write_rooms(agent: Agent, prefix: str, n: int) -> None:
    for i in range(n):
        agent.observe([Delta(new_entities=[Entity(name=f"{prefix}{i}", type="room")], source="sensor")])


def writers(agent: Agent, tag: str) -> threading.Thread:
    """500 changes at once: three threads of this process (on the served agent) and another process (200)."""

    def run() -> None:
        process = subprocess.Popen([sys.executable, "-c", WRITER, agent.graph.url, f"p{tag}_", "200"], cwd=ROOT)
        threads = [threading.Thread(target=write_rooms, args=(agent, f"t{tag}{k}_", 100)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert process.wait(120) == 0

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def mcp_params(store: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "kgplan.interfaces.mcp"],
                                 env={**os.environ, "KGPLAN_STORE": store}, cwd=ROOT)


async def read_on(client: Client, after: int, seen: list[int], query: str = "") -> int:
    """Read kgplan://changes on from `after` until nothing is new; the ids of the changes read go to `seen`."""
    while True:
        page = json.loads((await client.read_resource(f"{CHANGES}?after={after}&limit=1000{query}")).contents[0].text)
        seen += [c["id"] for c in page["changes"]]
        if page["next"] == after:
            return after
        after = page["next"]


def mcp_follower(store: str, after: int, pause: int, total: int, seen: list[int], listening: threading.Event,
                 paused: threading.Event, resume: threading.Event, failed: list[BaseException]) -> None:
    """An MCP client following the history: subscribed to kgplan://changes (`subscriptions/listen`), it reads on
    at each `notifications/resources/updated`; it disconnects once it has `pause` changes, and when `resume` is set
    connects again and reads on from where it stopped until it has `total`; `paused` is set while it is away (an
    error goes to `failed`)."""

    async def session(until: int) -> None:
        nonlocal after
        async with Client(mcp_params(store), read_timeout_seconds=60) as client, \
                client.listen(resource_subscriptions=[CHANGES]) as updates:
            listening.set()
            after = await read_on(client, after, seen)  # what came before the subscription
            events = aiter(updates)
            with anyio.fail_after(120):
                while len(seen) < until:
                    assert (await anext(events)).uri == CHANGES
                    after = await read_on(client, after, seen)

    try:
        anyio.run(session, pause)
        paused.set()
        assert resume.wait(120)
        anyio.run(session, total)
    except BaseException as e:
        failed.append(e)
        raise


@pytest.mark.integration
def test_sse_and_mcp_followers_see_every_change_once_in_order_and_resume(agent: Agent, live_server: str) -> None:
    """1,000 changes from three threads and another process (twice), followed by an SSE client and an MCP client,
    each of which disconnects midway, misses changes made meanwhile and resumes (Last-Event-ID; `after`)."""
    start = newest(agent.graph)
    seen_mcp: list[int] = []
    failed: list[BaseException] = []
    listening, paused, resume = threading.Event(), threading.Event(), threading.Event()
    mcp = threading.Thread(target=mcp_follower, args=(agent.graph.url, start, 250, 1000, seen_mcp, listening, paused,
                                                      resume, failed))
    mcp.start()
    assert listening.wait(120) and not failed
    sse: list[dict[str, Any]] = []
    with events(live_server, after=start) as stream:
        first = writers(agent, "a")
        while len(sse) < 250:
            sse.append(stream.change())
        last = stream.last
    first.join()
    assert paused.wait(120)
    second = writers(agent, "b")  # made while both clients are away
    second.join()
    resume.set()
    assert last == str(sse[-1]["id"])
    with events(live_server, last=last) as stream:
        while len(sse) < 1000:
            sse.append(stream.change())
    mcp.join(180)
    assert not failed and not mcp.is_alive()
    expected = changes_after(agent.graph, start, 2000)
    assert len(expected) == 1000 and {c.delta.source for c in expected} == {"sensor"}
    assert [d["id"] for d in sse] == [c.id for c in expected]
    assert [d["new_entities"][0]["name"] for d in sse] == [c.delta.new_entities[0].name for c in expected]
    assert {d["new_entities"][0]["name"][:2] for d in sse} == {"pa", "ta", "pb", "tb"}  # every writer
    assert seen_mcp == [c.id for c in expected]


def test_events_are_filtered_and_resume_past_the_changes_filtered_out(agent: Agent, live_server: str) -> None:
    """From the first change: a filter by entity finds it beyond a large change's summary; an event of the id
    alone moves the client past the changes not of interest, so it resumes without reading them again."""
    with events(live_server, after=0, entity="kitchen_light") as stream:
        load = stream.change()
        assert load["source"] == "load" and "(switched_on kitchen_light)" not in {f["text"] for f in load["add"]}
        write_rooms(agent, "attic", 2)
        light = agent.change(remove=["(switched_on kitchen_light)"], note="off")
        assert stream.change()["id"] == light.id
        (room,) = [agent.observe([Delta(new_entities=[Entity(name="cellar", type="room")])])[0]]
        stream.until(lambda b: b.get("id") == str(room.id))  # the id alone: no event
    with events(live_server, last=str(room.id), predicate="switched_on", source="user") as stream:
        on = agent.change(add=["(switched_on kitchen_light)"])
        seen = stream.change()
        assert seen["id"] == on.id and seen["text"] == "" and seen["add"][0]["text"] == "(switched_on kitchen_light)"
    with events(live_server, after=0, source="load") as stream:
        assert stream.change()["source"] == "load"


def test_a_stream_starts_now_keeps_alive_and_is_told_when_the_history_began_again(
        agent: Agent, live_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api.Feed, "keepalive", 0.05)
    with events(live_server) as stream:
        assert stream.until(lambda b: "" in b)[""] == "keep-alive"  # a comment: a quiet stream stays open
        c = agent.change(remove=["(switched_on kitchen_light)"])
        assert stream.change()["id"] == c.id  # from now on: the changes before are not sent
    # a Last-Event-ID beyond the history: the store was cleared and begun anew (Neo4j's ids begin at 1 again)
    with events(live_server, last=str(10**9)) as stream:
        reset = stream.until(lambda b: "event" in b)
        assert reset == {"id": "0", "event": "reset", "data": "{}"}
        assert stream.change()["id"] == 1


def test_streams_are_bounded_freed_on_disconnect_and_guarded(agent: Agent) -> None:
    """At most `streams` at once, then 429 with Retry-After; a client that leaves frees its stream. Reads stay
    open without the write token; the Host check and bad input answer as elsewhere."""
    with serving(agent, limits=Limits(streams=2), token="s3cret") as url, httpx.Client(base_url=url) as c:
        with events(url), events(url) as second:
            busy = c.get("/api/events")
            assert busy.status_code == 429 and busy.headers["retry-after"] == "5"
            assert "2 event streams are open" in busy.json()["detail"]["message"]
            second.response.close()
            for _ in range(200):  # the server notices the disconnect as it happens
                with c.stream("GET", "/api/events") as again:
                    if again.status_code == 200:
                        break
                time.sleep(0.05)
            assert again.status_code == 200
        assert c.get("/api/events", headers={"Last-Event-ID": "x"}).status_code == 422
        assert c.get("/api/events", params={"after": -1}).status_code == 422
        assert c.get("/api/events", params={"source": "gossip"}).status_code == 422
        assert c.get("/api/events", headers={"Host": "evil.example"}).status_code == 400
        assert "/api/events" in c.get("/openapi.json").json()["paths"]


@pytest.mark.integration
def test_mcp_change_resources_and_subscriptions_before_2026(agent: Agent) -> None:
    """The resources read the history forward (filtered) and the newest change; a client of an earlier protocol
    version subscribes with resources/subscribe and is sent notifications/resources/updated on a change made by
    another process."""
    store = agent.graph.url
    light = agent.change(remove=["(switched_on kitchen_light)"])
    updates: list[str] = []

    async def message(m: object) -> None:
        if getattr(m, "method", "") == "notifications/resources/updated":
            updates.append(m.params.uri)  # type: ignore[attr-defined]

    async def session() -> None:
        async with Client(mcp_params(store), read_timeout_seconds=60, mode="legacy", message_handler=message) as c:
            assert c.session.server_capabilities.resources.subscribe
            assert [r.uri for r in (await c.list_resources()).resources] == ["kgplan://changes/latest"]
            assert [t.uri_template for t in (await c.list_resource_templates()).resource_templates] == [
                CHANGES + "{?after,limit,entity,predicate,source}"]
            seen: list[int] = []
            assert await read_on(c, 0, seen, "&entity=kitchen_light&source=user") == light.id
            assert seen == [light.id]
            latest = json.loads((await c.read_resource("kgplan://changes/latest")).contents[0].text)
            assert latest["id"] == light.id
            with pytest.raises(MCPError, match="limit from 1 to 1000"):
                await c.read_resource(f"{CHANGES}?limit=0")
            with pytest.warns(MCPDeprecationWarning):
                await c.subscribe_resource(CHANGES)
            subprocess.run([sys.executable, "-c", WRITER, store, "hall", "1"], cwd=ROOT, check=True)
            with anyio.fail_after(30):
                while CHANGES not in updates:
                    await anyio.sleep(0.05)
            assert await read_on(c, light.id, seen) == newest(agent.graph)

    anyio.run(session)


def test_the_bound_on_streams_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGPLAN_API_STREAMS", "3")
    assert Limits.from_env() == Limits(streams=3)
    monkeypatch.setenv("KGPLAN_API_STREAMS", "-1")
    with pytest.raises(InputError, match="KGPLAN_API_STREAMS"):
        Limits.from_env()
