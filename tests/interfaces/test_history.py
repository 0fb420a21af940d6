"""The graph as of a moment, a fact's timeline and the difference between moments, in each interface: the CLI's
`--at`, `timeline` and `diff`, the API's `?at=`, /api/timeline and /api/diff, and MCP's `at`, `timeline` and
`difference`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from kgplan.agent.agent import Agent
from kgplan.interfaces.api import create_app
from kgplan.interfaces.cli import app
from tests.conftest import ROOT
from tests.interfaces.test_mcp import structured

MOVE = {"add": ["(on apple kitchen_table)"], "remove": ["(on apple kitchen_counter)"], "note": "moved"}


@pytest.fixture
def moved(agent: Agent) -> tuple[Agent, int, int, int]:
    """The household world (change `load`), the apple moved to the kitchen table (`move`), the move undone."""
    load = agent.history(1)[0].id
    move = agent.change(MOVE["add"], MOVE["remove"], MOVE["note"]).id
    return agent, load, move, agent.undo(move).id


def cli(agent: Agent, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, ["--store", agent.graph.url, *args])
    return r.exit_code, r.output


def test_cli_reads_as_of_a_moment_and_shows_timelines_and_differences(moved: tuple[Agent, int, int, int]) -> None:
    a, load, move, undo = moved
    assert cli(a, "facts", "--entity", "apple", "--at", str(move)) == (0, "(on apple kitchen_table)\n")
    assert cli(a, "facts", "--entity", "apple") == (0, "(on apple kitchen_counter)\n")
    time = a.history(None)[-2].time.isoformat()  # the move's time: the last change made then
    assert cli(a, "facts", "--entity", "apple", "--at", time) == (0, "(on apple kitchen_table)\n")
    code, out = cli(a, "show", "apple", "--at", str(move))
    assert code == 0 and "kitchen_table" in out and "kitchen_counter" not in out
    code, out = cli(a, "show", "--at", str(load))
    assert code == 0 and f"{load} changes" in out
    assert cli(a, "check", "--at", str(move))[0] == 0
    code, out = cli(a, "export", "--pddl", "--at", str(move))
    assert code == 0 and "(on apple kitchen_table)" in out

    code, out = cli(a, "timeline", "(on apple *)")
    rows = [line for line in out.splitlines() if "(on apple" in line]
    assert code == 0 and len(rows) == 3
    assert f"#{load} " in rows[0] and f"#{move} " in rows[0] and "load" in rows[0]
    assert "moved" in rows[1] and f"undo (undo of #{move})" in rows[1] and "(holds still)" in rows[2]
    code, out = cli(a, "diff", str(load), str(move))
    assert code == 0 and "- (on apple kitchen_counter)" in out and "+ (on apple kitchen_table)" in out
    assert "no difference" in cli(a, "diff", str(load), str(undo))[1]

    for args, words in ((("facts", "--at", str(undo + 1)), f"changes {load} to {undo}"),
                        (("facts", "--at", "1999-01-01T00:00"), "before the first change"),
                        (("diff", "0", str(move)), "no change 0"), (("timeline", "(on apple)"), "takes 2 arguments")):
        code, out = cli(a, *args)
        assert code == 1 and words in " ".join(out.split()), (args, out)


def test_api_reads_as_of_a_moment_and_answers_timelines_and_differences(moved: tuple[Agent, int, int, int]) -> None:
    a, load, move, undo = moved
    c = TestClient(create_app(a), base_url="http://127.0.0.1")
    facts = c.get("/api/facts", params={"entity": "apple", "at": move}).json()["facts"]
    assert [f["text"] for f in facts] == ["(on apple kitchen_table)"]
    shown = c.get("/api/entities/apple", params={"at": move}).json()
    assert "(on apple kitchen_table)" in {f["text"] for f in shown["facts"]}
    assert c.get("/api/entities", params={"at": load}).json()["total"] == len(a.entities())
    assert c.get("/api/unknowns", params={"at": move}).json() == []

    t = c.get("/api/timeline", params={"pattern": "(on apple *)"}).json()
    assert [(i["fact"]["text"], i["opened"]["id"], i["closed"] and i["closed"]["id"]) for i in t] == [
        ("(on apple kitchen_counter)", load, move), ("(on apple kitchen_table)", move, undo),
        ("(on apple kitchen_counter)", undo, None)]
    assert (t[1]["opened"]["text"], t[1]["closed"]["source"], t[1]["closed"]["undo_of"]) == ("moved", "undo", move)
    d = c.get("/api/diff", params={"from": load, "to": move}).json()
    assert ([f["text"] for f in d["add"]], [f["text"] for f in d["remove"]]) == (
        ["(on apple kitchen_table)"], ["(on apple kitchen_counter)"])

    bad = c.get("/api/facts", params={"at": undo + 1})
    assert bad.status_code == 400 and f"changes {load} to {undo}" in bad.json()["detail"]["message"]
    assert c.get("/api/timeline", params={"pattern": "(flying apple)"}).status_code == 400
    assert c.get("/api/diff", params={"from": "soon", "to": move}).status_code == 400


@pytest.mark.integration
def test_mcp_reads_as_of_a_moment_and_answers_timelines_and_differences(
        moved: tuple[Agent, int, int, int]) -> None:
    a, load, move, undo = moved
    params = StdioServerParameters(command=sys.executable, args=["-m", "kgplan.interfaces.mcp"],
                                   env={**os.environ, "KGPLAN_STORE": a.graph.url}, cwd=ROOT)

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["timeline"].annotations.read_only_hint and tools["difference"].annotations.read_only_hint
            shown = structured(await client.call_tool("show", {"entity": "apple", "at": str(move)}))
            assert "(on apple kitchen_table)" in {f["text"] for f in shown["facts"]}
            found = structured(await client.call_tool("search", {"text": "apple", "at": str(move)}))
            assert "(on apple kitchen_table)" in {f["text"] for f in found["facts"]["facts"]}
            t = structured(await client.call_tool("timeline", {"pattern": "(on apple *)"}))
            assert [(i["opened"]["id"], i["closed"] and i["closed"]["id"]) for i in t] == [
                (load, move), (move, undo), (undo, None)]
            d = structured(await client.call_tool("difference", {"start": str(load), "end": str(move)}))
            assert [f["text"] for f in d["add"]] == ["(on apple kitchen_table)"]
            bad = await client.call_tool("show", {"entity": "apple", "at": str(undo + 1)})
            assert bad.is_error and f"changes {load} to {undo}" in bad.content[0].text

    anyio.run(session)


def test_a_graph_as_of_a_moment_cannot_be_changed(moved: tuple[Agent, int, int, int], tmp_path: Path) -> None:
    a, _, move, _ = moved
    with pytest.raises(Exception, match="cannot be changed"):
        a.at(move).change(["(switched_on kitchen_light)"])
