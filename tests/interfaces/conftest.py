"""Fixtures of the interface tests: agents on the household and an open-world graph, a live server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgplan.agent.agent import Agent
from kgplan.graph.model import Delta, Unknown
from kgplan.interfaces.api import serving
from kgplan.language.llm import ScriptedLLM
from tests.conftest import HOUSEHOLD

COIN_WORLD = """(define (problem seen) (:domain coin_collector)
  (:objects kitchen room_east - room east - direction coin - item)
  (:init (at kitchen) (visited kitchen) (connected kitchen east room_east) (unknown room_east)))"""


@pytest.fixture(scope="module")
def household_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The household world in a sqlite file, built once; each test gets a copy."""
    path = tmp_path_factory.mktemp("template") / "household.db"
    with Agent(f"sqlite:{path}") as a:
        a.init("household", HOUSEHOLD / "world.pddl")
    return path


@pytest.fixture
def agent(tmp_path: Path, household_db: Path) -> Iterator[Agent]:
    shutil.copy(household_db, tmp_path / "api.db")
    with Agent(f"sqlite:{tmp_path / 'api.db'}", llm=ScriptedLLM()) as a:
        yield a


@pytest.fixture
def open_agent(tmp_path: Path) -> Iterator[Agent]:
    """An open-world Coin Collector graph: a placeholder room seen east of the kitchen, a coin whose room is
    not known."""
    (tmp_path / "seen.pddl").write_text(COIN_WORLD)
    with Agent(f"sqlite:{tmp_path / 'open.db'}", llm=ScriptedLLM()) as a:
        a.init("coin_collector", tmp_path / "seen.pddl")
        a.observe([Delta(unknown=[Unknown(entity="room_east"), Unknown(entity="coin", predicate="coin_in")],
                         source="sensor")])
        yield a


@pytest.fixture
def live_server(agent: Agent) -> Iterator[str]:
    """uvicorn serving the API on 127.0.0.1 in a thread (the LLM fails: no reply scripted)."""
    with serving(agent) as url:
        yield url
