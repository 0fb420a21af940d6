"""The MCP server end to end: the MCP SDK's own client spawns `python -m kgplan.interfaces.mcp` over stdio; the LLM
behind `tell` is the fake OpenAI-compatible server on 127.0.0.1 of tests/support/fake_llm.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from kgplan.agent.agent import Agent
from tests.conftest import HOUSEHOLD, ROOT
from tests.support.fake_llm import FakeServer, ok


def structured(result: object) -> dict:
    assert not result.is_error, result.content
    return result.structured_content if result.structured_content is not None else json.loads(result.content[0].text)


@pytest.mark.integration
def test_mcp_tools_end_to_end(tmp_path: Path, server: FakeServer) -> None:
    store = f"sqlite:{tmp_path / 'mcp.db'}"
    with Agent(store) as a:
        a.init("household", HOUSEHOLD / "world.pddl")
    server.script += [ok({"entities": ["kitchen_light"]}),
                      ok({"add": [], "remove": [{"predicate": "switched_on", "args": ["kitchen_light"]}]})]
    env = {**os.environ, "KGPLAN_STORE": store, "KGPLAN_LLM_BASE_URL": server.url, "KGPLAN_LLM_MODEL": "fake",
           "OPENAI_API_KEY": "sk-test"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "kgplan.interfaces.mcp"], env=env, cwd=ROOT)

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"tell", "plan", "run", "show", "search", "history", "history_entry", "change", "undo"} <= tools
            told = structured(await client.call_tool("tell", {"text": "Omar switched the kitchen light off"}))
            assert told["change"]["remove"][0]["text"] == "(switched_on kitchen_light)"
            assert "Omar switched the kitchen light off" in json.dumps(server.requests[-1])
            shown = structured(await client.call_tool("show", {"entity": "kitchen_light"}))
            assert "(switched_on kitchen_light)" not in {f["text"] for f in shown["facts"]}
            planned = structured(await client.call_tool("plan", {"goal": "(switched_on kitchen_light)"}))
            assert planned["status"] == "solved" and planned["plan"][-1].startswith("(switch_on")
            ran = structured(await client.call_tool("run", {}))
            assert ran["done"] and len(ran["changes"]) == len(planned["plan"])
            found = structured(await client.call_tool("search", {"text": "kitchen_light"}))
            assert "(switched_on kitchen_light)" in {f["text"] for f in found["facts"]["facts"]}
            history = structured(await client.call_tool("history", {"limit": 3}))
            newest = history["result"][0] if "result" in history else history[0]
            diff = structured(await client.call_tool("history_entry", {"change_id": newest["id"], "limit": 1}))
            assert diff["id"] == newest["id"] and len(diff["add"]) <= 1 and diff["sizes"] == newest["sizes"]
            undone = structured(await client.call_tool("undo", {"change_id": newest["id"]}))
            assert undone["undo_of"] == newest["id"]
            bad = await client.call_tool("plan", {"goal": "(flying apple)"})
            assert bad.is_error and "flying" in bad.content[0].text
            missing = await client.call_tool("show", {"entity": "atlantis"})
            assert missing.is_error and "atlantis" in missing.content[0].text

    anyio.run(session)


@pytest.mark.integration
def test_mcp_writes_verified_changes_and_describes_the_domain(tmp_path: Path) -> None:
    """`change` is POST /api/changes for assistants (a move is one change: remove and add), refused with the API's
    message and issues; `domain` describes types, predicates (with glosses) and actions; the tools say what they
    do (annotations), name their choices (enums) and refuse negative limits."""
    store = f"sqlite:{tmp_path / 'mcp.db'}"
    with Agent(store) as a:
        a.init("household", HOUSEHOLD / "world.pddl")
    params = StdioServerParameters(command=sys.executable, args=["-m", "kgplan.interfaces.mcp"],
                                   env={**os.environ, "KGPLAN_STORE": store}, cwd=ROOT)

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            hints = {n: (t.annotations.read_only_hint, t.annotations.destructive_hint) for n, t in tools.items()}
            assert {hints[n] for n in ("domain", "show", "search", "history", "history_entry")} == {(True, False)}
            assert {hints[n] for n in ("change", "tell", "run", "undo")} == {(False, True)}
            assert "fd" in tools["plan"].input_schema["properties"]["planner"]["enum"]
            assert "puct_dr" in tools["decide"].input_schema["properties"]["method"]["enum"]

            d = structured(await client.call_tool("domain", {}))
            assert d["types"]["food"] == "item" and {"pick_up", "move"} <= {x["name"] for x in d["actions"]}
            on = next(p for p in d["predicates"] if p["name"] == "on")
            assert on["gloss"] == "item ?i is on ?f" and on["params"][0] == {"name": "?i", "types": ["item"]}

            # the refusal's own advice (also remove the old place) followed in one change
            alone = await client.call_tool("change", {"add": ["(on apple kitchen_table)"]})
            assert alone.is_error and "change refused; the graph is unchanged" in alone.content[0].text
            assert "apple" in alone.content[0].text.split("unchanged", 1)[1]  # the issues, as the API lists them
            move = {"add": ["(on apple kitchen_table)"], "remove": ["(on apple kitchen_counter)"], "note": "moved"}
            checked = structured(await client.call_tool("change", {**move, "dry_run": True}))
            assert checked["id"] == 0
            moved = structured(await client.call_tool("change", move))
            assert moved["id"] > 0 and moved["text"] == "moved"
            assert [f["text"] for f in moved["remove"]] == ["(on apple kitchen_counter)"]
            made = structured(await client.call_tool("change", {
                "new_entities": [{"name": "teal_mug", "type": "cup"}], "add": ["(on teal_mug kitchen_table)"],
                "removed_entities": ["bowl"], "unknown": [{"entity": "apple", "predicate": "on"}],
                "remove": ["(on apple kitchen_table)"]}))
            assert made["new_entities"][0]["name"] == "teal_mug" and made["removed_entities"] == ["bowl"]
            assert made["unknown"] == [{"entity": "apple", "predicate": "on"}]
            shown = structured(await client.call_tool("show", {"entity": "teal_mug"}))
            assert "(on teal_mug kitchen_table)" in {f["text"] for f in shown["facts"]}
            gone = await client.call_tool("show", {"entity": "bowl"})
            assert gone.is_error and "bowl" in gone.content[0].text

            for tool, args in [("history", {"limit": -1}), ("history_entry", {"change_id": 1, "offset": -1}),
                               ("search", {"limit": 0}), ("show", {"entity": "apple", "depth": -1}),
                               ("plan", {"goal": "(clean plate)", "planner": "nope"})]:
                refused = await client.call_tool(tool, args)
                assert refused.is_error, (tool, args)
            empty = await client.call_tool("change", {})
            assert empty.is_error and "the change is empty" in empty.content[0].text

    anyio.run(session)


@pytest.mark.integration
def test_mcp_plan_says_why_not_and_offers_the_closest_goal(tmp_path: Path) -> None:
    """Issue 25 item 3: the plan tool's answer to an unsolvable goal carries its causes and the closest goal."""
    store = f"sqlite:{tmp_path / 'mcp.db'}"
    with Agent(store) as a:
        a.init("household", HOUSEHOLD / "world.pddl")
    params = StdioServerParameters(command=sys.executable, args=["-m", "kgplan.interfaces.mcp"],
                                   env={**os.environ, "KGPLAN_STORE": store}, cwd=ROOT)

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            planned = structured(await client.call_tool("plan", {
                "goal": "(and (on apple kitchen_table) (inside apple kitchen_fridge))"}))
            assert planned["status"] == "unsolvable" and planned["alternative"] == "(on apple kitchen_table)"
            causes = [(c["kind"], c["literal"]) for c in planned["why"]]
            assert causes == [("invariant", "(inside apple kitchen_fridge)")]

    anyio.run(session)
