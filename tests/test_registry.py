"""The registries at the seams: a toy planner, a toy game and a toy search method added through their registries
alone appear in the CLI's `--help` choices and in the API's schema, and run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kgplan.agent.agent import Agent
from kgplan.agent.search import SEARCH_METHODS, SearchMethod
from kgplan.games import GAMES, Game
from kgplan.games.twx import CoinReplica, CoinSensor
from kgplan.interfaces.api import create_app
from kgplan.interfaces.cli import app
from kgplan.planners.engines import PLANNERS, Planner
from kgplan.planners.mcts.search import Settings
from kgplan.registry import Registry
from tests.conftest import HOUSEHOLD

runner = CliRunner()


@pytest.fixture
def toys() -> Iterator[None]:
    """A toy planner (Fast Downward with the blind heuristic), a toy game (a two-room Coin Collector map that
    needs no Java) and a toy search method (UCT with DR-MCTS's estimator), each one registry entry, removed
    afterwards."""
    PLANNERS.add(Planner("toy-blind", "A* with the blind heuristic (a test's toy)", "fd", "astar(blind())",
                         optimal=True))
    two_rooms = {(0, 0): {(1, 0): 1}, (1, 0): {(0, 0): 1}}
    GAMES.add(Game("toy-coin", "two rooms, the coin in the second (a test's toy)", "coin_collector",
                   lambda: CoinReplica(two_rooms, (1, 0)), CoinSensor, "toy"))
    SEARCH_METHODS.add(SearchMethod("toy-uct-dr", "UCT with DR-MCTS's estimator (a test's toy)", "uniform",
                                    settings=Settings(policy_weight=0.0, estimator="dr")))
    yield
    PLANNERS.remove("toy-blind")
    GAMES.remove("toy-coin")
    SEARCH_METHODS.remove("toy-uct-dr")


def test_toy_entries_are_choices_of_the_cli(toys: None, tmp_path: Path) -> None:
    assert "toy-blind" in runner.invoke(app, ["plan", "--help"]).output.replace("\n", "")
    assert "toy-coin" in runner.invoke(app, ["explore", "--help"]).output
    r = runner.invoke(app, ["list", "planners"])
    assert "toy-blind" in r.output and "blind heuristic" in r.output
    store = f"sqlite:{tmp_path / 'w.db'}"
    assert runner.invoke(app, ["-s", store, "init", "--problem", str(HOUSEHOLD / "world.pddl")]).exit_code == 0
    r = runner.invoke(app, ["-s", store, "plan", "--planner", "toy-blind", "-g", "(holding robot apple)", "--json"])
    assert r.exit_code == 0 and '"planner": "toy-blind"' in r.output and '"status": "solved"' in r.output, r.output
    r = runner.invoke(app, ["-s", store, "plan", "--search", "toy-uct-dr", "-g", "(holding robot apple)"])
    assert r.exit_code == 1 and "[belief] table" in r.output  # a search method, chosen; household has no belief
    assert "toy-uct-dr" in runner.invoke(app, ["list", "searches"]).output
    r = runner.invoke(app, ["explore", "--game", "toy-coin"])
    assert r.exit_code == 0 and r.output.splitlines()[-1].startswith("success after 2 steps"), r.output


def test_toy_entries_are_in_the_api_schema(toys: None, tmp_path: Path) -> None:
    with Agent(f"sqlite:{tmp_path / 'w.db'}", domain="household") as a:
        schemas = TestClient(create_app(a), base_url="http://localhost").get("/openapi.json").json()["components"]["schemas"]
    assert "toy-blind" in schemas["PlanIn"]["properties"]["planner"]["enum"]
    assert "toy-coin" in schemas["ExploreIn"]["properties"]["game"]["enum"]
    assert "toy-uct-dr" in schemas["DecideIn"]["properties"]["method"]["enum"]


def test_a_name_is_taken_once_and_an_unknown_one_lists_the_choices() -> None:
    reg: Registry[Planner] = Registry("planner")
    reg.add(Planner("a", "first", "fd"))
    with pytest.raises(ValueError, match="registered already"):
        reg.add(Planner("a", "again", "fd"))
    with pytest.raises(ValueError, match="unknown planner 'b': choose one of a"):
        reg["b"]
