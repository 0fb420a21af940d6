"""The MCP server end to end: the MCP SDK's own client spawns `python -m kgplan.interfaces.mcp` over stdio; the LLM
behind `tell` is the fake OpenAI-compatible server on 127.0.0.1 of tests/support/fake_llm.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from kgplan.agent.agent import Agent
from tests.conftest import HOUSEHOLD, ROOT
from tests.support.fake_llm import FakeServer, chooses, ok


def structured(result: object) -> Any:
    """A tool's result; a result that is not an object (a list, a union of shapes) comes wrapped as {"result": ...}."""
    assert not result.is_error, result.content
    out = result.structured_content if result.structured_content is not None else json.loads(result.content[0].text)
    return out["result"] if set(out) == {"result"} else out


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A store holding the household world."""
    url = f"sqlite:{tmp_path / 'mcp.db'}"
    with Agent(url) as a:
        a.init("household", HOUSEHOLD / "world.pddl")
    return url


def mcp(store: str, **env: str) -> StdioServerParameters:
    """`python -m kgplan.interfaces.mcp` on the store, with more environment (an LLM's settings)."""
    return StdioServerParameters(command=sys.executable, args=["-m", "kgplan.interfaces.mcp"],
                                 env={**os.environ, "KGPLAN_STORE": store, **env}, cwd=ROOT)


@pytest.mark.integration
def test_mcp_tools_end_to_end(store: str, server: FakeServer) -> None:
    server.script += [ok({"mentions": ["Omar", "the kitchen light"]}),
                      chooses(switched_on="no longer: kitchen light is switched on")]
    params = mcp(store, KGPLAN_LLM_BASE_URL=server.url, KGPLAN_LLM_MODEL="fake", OPENAI_API_KEY="sk-test")

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"tell", "plan", "run", "show", "search", "history", "history_entry", "change", "undo"} <= tools
            told = structured(await client.call_tool("tell", {"text": "Omar switched the kitchen light off"}))
            assert told["status"] == "applied" and told["change"]["remove"][0]["text"] == "(switched_on kitchen_light)"
            assert "Omar switched the kitchen light off" in json.dumps(server.requests[-1])
            # one choice per predicate among its own candidates as shown, or none
            choice = server.requests[-1]["response_format"]["json_schema"]["schema"]["properties"]
            assert {p: v["enum"] for p, v in choice.items()} == {
                "switched_on": ["no longer: kitchen light is switched on", "none"]}
            shown = structured(await client.call_tool("show", {"entity": "kitchen_light"}))
            assert "(switched_on kitchen_light)" not in {f["text"] for f in shown["facts"]}
            planned = structured(await client.call_tool("plan", {"goal": "(switched_on kitchen_light)"}))
            assert planned["status"] == "solved" and planned["plan"][-1].startswith("(switch_on")
            ran = structured(await client.call_tool("run", {}))
            assert ran["done"] and len(ran["changes"]) == len(planned["plan"])
            found = structured(await client.call_tool("search", {"text": "kitchen_light"}))
            assert "(switched_on kitchen_light)" in {f["text"] for f in found["facts"]["facts"]}
            history = structured(await client.call_tool("history", {"limit": 3}))
            newest = history[0]
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
def test_mcp_writes_verified_changes_and_describes_the_domain(store: str) -> None:
    """`change` is POST /api/changes for assistants (a move is one change: remove and add), refused with the API's
    message and issues; `domain` describes types, predicates (with glosses) and actions; the tools say what they
    do (annotations), name their choices (enums) and refuse negative limits."""

    async def session() -> None:
        async with Client(mcp(store), read_timeout_seconds=120) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            hints = {n: (t.annotations.read_only_hint, t.annotations.destructive_hint) for n, t in tools.items()}
            assert {hints[n] for n in ("domain", "show", "search", "history", "history_entry")} == {(True, False)}
            assert {hints[n] for n in ("change", "tell", "run", "undo")} == {(False, True)}
            assert "fd" in tools["plan"].input_schema["properties"]["planner"]["enum"]
            assert "puct_dr" in tools["decide"].input_schema["properties"]["method"]["enum"]
            assert '"llm"' in json.dumps(tools["decide"].input_schema["properties"]["belief"])

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
def test_mcp_plan_says_why_not_and_offers_the_closest_goal(store: str) -> None:
    """Issue 25 item 3: the plan tool's answer to an unsolvable goal carries its causes and the closest goal."""

    async def session() -> None:
        async with Client(mcp(store), read_timeout_seconds=120) as client:
            planned = structured(await client.call_tool("plan", {
                "goal": "(and (on apple kitchen_table) (inside apple kitchen_fridge))"}))
            assert planned["status"] == "unsolvable" and planned["alternative"] == "(on apple kitchen_table)"
            causes = [(c["kind"], c["literal"]) for c in planned["why"]]
            assert causes == [("invariant", "(inside apple kitchen_fridge)")]

    anyio.run(session)


@pytest.mark.integration
def test_mcp_tell_returns_a_question_and_takes_the_answer_in_a_follow_up_call(store: str, server: FakeServer) -> None:
    """Issue 23 item 4: two mugs and "the mug": the tool's result is the question with the options from the graph
    (not an error, nothing changed); the same call with the answer added applies the change."""
    mentions = ok({"mentions": ["Sandra", "the mug"]})
    server.script += [mentions, ok({"answer": "unclear"}), mentions,
                      *[chooses(held_by="now: item red mug is held by person sandra")] * 2]
    params = mcp(store, KGPLAN_LLM_BASE_URL=server.url, KGPLAN_LLM_MODEL="fake", OPENAI_API_KEY="sk-test")
    text = "Sandra picked up the mug"

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            asked = structured(await client.call_tool("tell", {"text": text}))
            assert asked["status"] == "needs_clarification" and asked["word"] == "the mug" and asked["answers"] == {}
            assert asked["options"] == [{"value": "red_mug", "label": "red mug"},
                                        {"value": "blue_mug", "label": "blue mug"}]
            history = structured(await client.call_tool("history", {"limit": 1}))
            assert history[0]["source"] == "load"  # nothing changed
            told = structured(await client.call_tool("tell", {"text": text, "answers": {
                **asked["answers"], asked["word"]: "red_mug"}}))
            assert told["status"] == "applied" and [f["text"] for f in told["change"]["add"]] == [
                "(held_by red_mug sandra)"]
            assert "the user said 'the mug' means red_mug" in told["change"]["how"]["(held_by red_mug sandra)"]

    anyio.run(session)
