"""Shared fixtures: the store backends (sqlite file, real Bolt server) and the L3M+P data."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kgplan.domains.model import BUNDLED, Domain, Problem, resolve_domain
from kgplan.graph.world import WorldGraph

if TYPE_CHECKING:  # imported where used: the tests' child processes import this module, not the LLM client
    from tests.support.fake_llm import FakeServer

# The tests run against scripted clients and fake servers: settings for a real endpoint in the shell that starts them
# (a developer's local model) would reach a server the tests do not start. The opt-in smoke test keeps them.
if os.environ.get("KGPLAN_SMOKE_LLM") != "1":
    for _name in [n for n in os.environ if n.startswith("KGPLAN_LLM_")]:
        del os.environ[_name]

HOUSEHOLD = BUNDLED / "household"
ROOT = Path(__file__).resolve().parent.parent  # the checkout
DATA = Path(__file__).parent / "data"  # test domains: data/domains/NAME/{domain,pNN}.pddl, data/domains_inv


@pytest.fixture(scope="session")
def household() -> Domain:
    return resolve_domain("household")


@pytest.fixture(scope="session")
def world_problem() -> Problem:
    return Problem.parse((HOUSEHOLD / "world.pddl").read_text(), "world.pddl")


@pytest.fixture(scope="session")
def bolt_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A real ArcadeDB server speaking Bolt on 127.0.0.1, for the whole session."""
    from kgplan.graph.bolt_server import running_arcadedb

    with running_arcadedb(tmp_path_factory.mktemp("arcadedb")) as server:
        yield server


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.integration)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> str:
    """A store URL for each backend; neo4j URLs get their credentials from the environment."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'world.db'}"
    server = request.getfixturevalue("bolt_server")
    monkeypatch.setenv("NEO4J_USER", server.user)
    monkeypatch.setenv("NEO4J_PASSWORD", server.password)
    monkeypatch.setenv("KGPLAN_NEO4J_DATABASE", server.database)
    return server.uri


@pytest.fixture
def empty_graph(store_url: str) -> Iterator[WorldGraph]:
    """An empty, uninitialised graph on each backend (neo4j is wiped first)."""
    from kgplan.graph.backends import open_graph

    g = open_graph(store_url)
    g.clear()
    yield g
    g.close()


@pytest.fixture
def graph(empty_graph: WorldGraph, household: Domain, world_problem: Problem) -> WorldGraph:
    """The bundled household world loaded on each backend."""
    empty_graph.init(household)
    empty_graph.load_problem(world_problem)
    return empty_graph


@pytest.fixture
def world(tmp_path: Path, household: Domain, world_problem: Problem) -> WorldGraph:
    """The bundled household world in a sqlite file."""
    from kgplan.graph.backends import open_graph

    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(household)
    g.load_problem(world_problem)
    return g


def l3mp_runs() -> list[Path]:
    """The L3M+P dev runs named by $KGPLAN_L3MP_DIR (skips the test where absent)."""
    root = os.environ.get("KGPLAN_L3MP_DIR")
    if not root or not Path(root).is_dir():
        pytest.skip("L3M+P data not available: set KGPLAN_L3MP_DIR")
    runs = sorted(p for p in Path(root).iterdir() if (p / "domain.pddl").is_file())
    if not runs:
        pytest.skip(f"no runs (folders with domain.pddl) under {root}")
    return runs


def run_steps(run: Path) -> list[Path]:
    """The step folders of a run in time order."""
    return sorted(p for p in run.iterdir() if p.is_dir() and (p / "problem.pddl").is_file())


def _fake_server() -> Iterator[FakeServer]:
    from tests.support.fake_llm import FakeServer

    fake = FakeServer()
    thread = threading.Thread(target=fake.httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """A fake OpenAI-compatible endpoint on 127.0.0.1 for one test."""
    yield from _fake_server()


@pytest.fixture
def replica() -> Iterator[FakeServer]:
    """A second one (`LLMConfig.replicas`: another server of the same model)."""
    yield from _fake_server()
