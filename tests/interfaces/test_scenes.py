"""Scene graphs through the interfaces: `kgplan observe --scene`, POST /api/scenes (both forms) and MCP's
observe_scene, on the small kitchen of tests/data/scene."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
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
from tests.conftest import DATA, ROOT
from tests.interfaces.test_mcp import structured

SCAN = {"nodes": [{"id": "k", "class": "kitchen"}, {"id": "t", "class": "table"},
                  {"id": "m", "class": "mug", "states": ["DIRTY"]}],
        "relations": [["t", "INSIDE", "k"], ["m", "ON", "t"]]}
TWICE = {**SCAN, "relations": [*SCAN["relations"], ["m", "INSIDE", "t"]]}  # on the table and inside it at once
# the same kitchen as VirtualHome writes its environment graphs
VIRTUALHOME = {"nodes": [{"id": 1, "class_name": "kitchen", "category": "Rooms", "states": [], "properties": []},
                         {"id": 2, "class_name": "table", "category": "Furniture", "states": [], "properties": []},
                         {"id": 3, "class_name": "mug", "category": "placable_objects", "states": ["CLEAN"],
                          "properties": ["GRABBABLE"]}],
               "edges": [{"from_id": 2, "relation_type": "INSIDE", "to_id": 1},
                         {"from_id": 3, "relation_type": "ON", "to_id": 2},
                         {"from_id": 3, "relation_type": "NEAR", "to_id": 2}]}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:{tmp_path / 'scene.db'}"
    monkeypatch.setenv("KGPLAN_STORE", url)
    Agent(url, DATA / "scene").close()
    return url


@pytest.fixture
def agent(store: str) -> Iterator[Agent]:
    with Agent(store) as a:
        yield a


def test_cli_observe_scene(store: str, tmp_path: Path) -> None:
    scan, twice = tmp_path / "scan.json", tmp_path / "twice.json"
    scan.write_text(json.dumps(SCAN))
    twice.write_text(json.dumps(TWICE))
    r = CliRunner().invoke(app, ["observe", "--scene", str(scan)])
    assert r.exit_code == 0 and "Scene applied as change #1" in r.output and "+ (on mug_m table_t)" in r.output
    r = CliRunner().invoke(app, ["observe", "--scene", str(scan)])
    assert r.exit_code == 0 and "nothing changed" in r.output
    r = CliRunner().invoke(app, ["observe", "--scene", str(twice)])
    assert r.exit_code == 1 and "mug_m would have" in r.output
    assert CliRunner().invoke(app, ["observe"]).exit_code == 2
    assert CliRunner().invoke(app, ["observe", str(scan), "--scene", str(scan)]).exit_code == 2
    with Agent(store) as a:
        assert len(a.history()) == 1


def test_api_scenes_in_both_forms(agent: Agent) -> None:
    c = TestClient(create_app(agent), base_url="http://127.0.0.1")
    r = c.post("/api/scenes", json=SCAN)
    assert r.status_code == 200 and r.json()["appeared"] == 3
    assert {f["text"] for f in r.json()["change"]["add"]} >= {"(on mug_m table_t)", "(dirty mug_m)"}
    r = c.post("/api/scenes", json=SCAN)
    assert r.status_code == 200 and r.json()["change"] is None
    r = c.post("/api/scenes", json=TWICE)
    assert r.status_code == 422 and r.json()["detail"]["issues"][0]["kind"] == "invariant"
    bad = c.post("/api/scenes", json={**SCAN, "relations": [["m", "UNDER", "t"]]})
    assert bad.status_code == 400 and "relation 'UNDER' has no predicate" in bad.json()["detail"]["message"]
    r = c.post("/api/scenes", json=VIRTUALHOME)  # other ids: other entities, beside the first ones
    assert r.status_code == 200 and r.json()["appeared"] == 3
    assert "(on mug_3 table_2)" in {f["text"] for f in r.json()["change"]["add"]}
    assert c.post("/api/scenes", json={"nodes": "none"}).status_code == 422
    assert len(agent.history()) == 2


@pytest.mark.integration
def test_mcp_observe_scene(store: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "kgplan.interfaces.mcp"],
                                   env={**os.environ, "KGPLAN_STORE": store}, cwd=ROOT)

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            done = structured(await client.call_tool("observe_scene", SCAN))
            assert done["appeared"] == 3 and done["change"]["source"] == "sensor"
            refused = await client.call_tool("observe_scene", TWICE)
            assert refused.is_error and "mug_m would have" in refused.content[0].text

    anyio.run(session)
