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
            assert {"tell", "plan", "run", "show", "search", "history", "change", "undo"} <= tools
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
            diff = structured(await client.call_tool("change", {"change_id": newest["id"], "limit": 1}))
            assert diff["id"] == newest["id"] and len(diff["add"]) <= 1 and diff["sizes"] == newest["sizes"]
            undone = structured(await client.call_tool("undo", {"change_id": newest["id"]}))
            assert undone["undo_of"] == newest["id"]
            bad = await client.call_tool("plan", {"goal": "(flying apple)"})
            assert bad.is_error and "flying" in bad.content[0].text
            missing = await client.call_tool("show", {"entity": "atlantis"})
            assert missing.is_error and "atlantis" in missing.content[0].text

    anyio.run(session)
