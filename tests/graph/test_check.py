"""The whole-graph checker and `kgplan check`: every typing and invariant violation is reported."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgplan.domains.verify import IssueKind
from kgplan.graph.backends import open_graph
from kgplan.graph.check import check_graph
from kgplan.graph.model import Delta, Entity, Fact
from kgplan.graph.world import WorldGraph
from kgplan.interfaces.cli import app
from tests.conftest import HOUSEHOLD

F = Fact.parse


def test_a_loaded_world_has_no_issues(graph: WorldGraph) -> None:
    assert check_graph(graph) == []


def test_unverified_writes_are_all_reported(graph: WorldGraph) -> None:
    graph.apply(Delta(new_entities=[Entity(name="vase1", type="vase")],
                      add=[F("(switched_on kitchen)"), F("(on red_mug kitchen_table)"),
                           F("(agent_at robot kitchen)")]), verified=False)
    found = {(i.kind, i.fact) for i in check_graph(graph)}
    assert {k for k, _ in found} == {IssueKind.UNKNOWN_TYPE, IssueKind.WRONG_TYPE, IssueKind.INVARIANT}
    assert (IssueKind.WRONG_TYPE, "(switched_on kitchen)") in found
    assert (IssueKind.INVARIANT, "(on red_mug kitchen_table) and (on red_mug living_room_table)") in found
    assert (IssueKind.INVARIANT, "(agent_at robot hallway) and (agent_at robot kitchen)") in found


def test_a_manual_edit_is_reported(world: WorldGraph) -> None:
    """Rows written behind the store's back: unknown predicate, wrong arity, unknown entity."""
    db = sqlite3.connect(world.url.removeprefix("sqlite:"))
    with db:
        db.executemany("INSERT INTO facts(predicate, args) VALUES (?, ?)", [
            ("light_on", '["kitchen_light"]'), ("switched_on", '["kitchen_light","x"]'),
            ("clean", '["ghost"]')])
    db.close()
    kinds = sorted(i.kind for i in check_graph(world))
    assert kinds == sorted([IssueKind.UNKNOWN_PREDICATE, IssueKind.WRONG_ARITY, IssueKind.UNKNOWN_ENTITY])


def test_kgplan_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "k.db"
    monkeypatch.setenv("KGPLAN_STORE", f"sqlite:{store}")
    runner = CliRunner()
    world = HOUSEHOLD / "world.pddl"
    assert runner.invoke(app, ["init", "--problem", str(world)]).exit_code == 0
    r = runner.invoke(app, ["check"])
    assert r.exit_code == 0 and "no issues" in r.output
    with open_graph(f"sqlite:{store}") as g:
        g.apply(Delta(add=[F("(agent_at robot kitchen)")]), verified=False)
    r = runner.invoke(app, ["check"])
    assert r.exit_code == 1 and "(agent_at robot hallway) and (agent_at robot kitchen)" in r.output


def test_an_entity_that_lost_its_exactly_one_atom_is_reported(graph: WorldGraph) -> None:
    """Issue 21.19: `check` said "no issues" for the robot with no place (then every plan was unsolvable with no
    reason); marked unknown, it may have none."""
    from kgplan.graph.model import Unknown

    assert check_graph(graph, incomplete=True) == []
    graph.apply(Delta(remove=[F("(agent_at robot hallway)")]), verified=False)
    issues = check_graph(graph, incomplete=True)
    assert [i.kind for i in issues] == [IssueKind.INCOMPLETE], issues
    assert issues[0].message == ("robot has none of agent_at, but exactly one of agent_at(?x, *) holds for each ?x; "
                                 "say which holds, or mark it unknown")
    assert check_graph(graph) == []  # no violation: verification lets an entity be created so
    graph.apply(Delta(unknown=[Unknown(entity="robot", predicate="agent_at")]))
    assert check_graph(graph, incomplete=True) == []
