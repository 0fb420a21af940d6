"""The command line: `kgplan observe` and `kgplan remove` with entities (entity removal, unknown marks set and
cleared by `add`/`remove`), and `kgplan explore` on the TextWorld games (one generated game played, skipped
without `textworld`; the clear message where it is missing)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgplan.graph.backends import open_graph
from kgplan.graph.model import Unknown
from kgplan.interfaces.cli import app
from tests.conftest import HOUSEHOLD


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "k.db"
    monkeypatch.setenv("KGPLAN_STORE", f"sqlite:{db}")
    r = CliRunner().invoke(app, ["init", "--problem", str(HOUSEHOLD / "world.pddl")])
    assert r.exit_code == 0, r.output
    return db


def observe(tmp_path: Path, items: list[dict]) -> tuple[int, str]:
    f = tmp_path / "obs.json"
    f.write_text(json.dumps(items))
    r = CliRunner().invoke(app, ["observe", str(f)])
    return r.exit_code, r.output


def test_an_entity_declared_twice_is_refused(store: Path, tmp_path: Path) -> None:
    code, out = observe(tmp_path, [{"text": "x", "add": ["(connected thing thing)"], "new_entities": [
        {"name": "thing", "type": "cup"}, {"name": "thing", "type": "room"}]}])
    assert code == 1 and "'thing' is declared twice" in out
    with open_graph(f"sqlite:{store}") as g:
        assert g.entities(["thing"]) == [] and len(g.history()) == 1


def test_observe_and_remove_entities(store: Path, tmp_path: Path) -> None:
    code, out = observe(tmp_path, [{"text": "the apple was eaten", "removed_entities": ["apple"]}])
    assert code == 0, out
    r = CliRunner().invoke(app, ["remove", "--entity", "red_mug", "--note", "it broke"])
    assert r.exit_code == 0 and "red_mug - cup" in r.output
    with open_graph(f"sqlite:{store}") as g:
        assert g.entities(["apple", "red_mug"]) == [] and g.facts(entity="red_mug") == []
        last = g.history()[-1].id
    assert CliRunner().invoke(app, ["undo", str(last)]).exit_code == 0
    with open_graph(f"sqlite:{store}") as g:
        assert [e.type for e in g.entities(["red_mug"])] == ["cup"] and g.facts(entity="red_mug")
    assert CliRunner().invoke(app, ["remove"]).exit_code == 2  # nothing to remove: a usage error


def test_a_refused_change_names_each_issue_kind(store: Path) -> None:
    """Each issue is printed with its kind in brackets, as the README shows (not eaten as markup)."""
    r = CliRunner().invoke(app, ["add", "(at robot kitchen)"])
    assert r.exit_code == 1 and "[unknown_predicate] (at robot kitchen): unknown predicate 'at'" in r.output


def test_add_and_remove_set_and_clear_unknown_marks(store: Path) -> None:
    def run(*args: str) -> tuple[int, str]:
        r = CliRunner().invoke(app, list(args))
        return r.exit_code, r.output

    code, out = run("remove", "(on apple kitchen_counter)", "--unknown", "(on apple ?)", "--note", "lost it")
    assert code == 0 and "unknown (on apple ?)" in out, out
    with open_graph(f"sqlite:{store}") as g:
        assert g.unknowns() == [Unknown(entity="apple", predicate="on")]
        changes = len(g.history())
    for args, words in [(("add", "--known", "(on apple ?)"), "stop being unknown"),  # it needs its place
                        (("add", "--unknown", "(flying apple ?)"), "[unknown_predicate]"),
                        (("remove", "--unknown", "atlantis"), "atlantis"),
                        (("add", "--unknown", "apple on the table"), 'write "(predicate entity ?)"')]:
        code, out = run(*args)
        assert code == 1 and words in out, (args, out)
    code, out = run("add", "(on apple kitchen_table)", "--known", "(on apple ?)")
    assert code == 0 and "known (on apple ?)" in out, out
    with open_graph(f"sqlite:{store}") as g:
        assert g.unknowns() == [] and len(g.history()) == changes + 1
    assert run("add")[0] == 2  # nothing to do: a usage error


def test_error_messages_are_printed_verbatim(store: Path) -> None:
    """A message naming a domain.toml table (`[belief]`) is not read as console markup."""
    r = CliRunner().invoke(app, ["plan", "--goal", "(agent_at robot kitchen)", "--search", "puct_dr"])
    assert r.exit_code != 0 and "no [belief] table" in r.output, r.output


@pytest.mark.skipif(importlib.util.find_spec("textworld") is None,
                    reason="needs textworld (pip install textworld) to generate and play games")
def test_explore_plays_a_textworld_game() -> None:
    r = CliRunner().invoke(app, ["explore", "--game", "textworld-coin", "--seed", "3"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("observation:") and any(line.startswith("graph change") for line in lines)
    assert any(line.startswith("goal (") for line in lines) and any(line.startswith("action 1: go ") for line in lines)
    assert lines[-1].startswith("success after") and "omniscient optimum 4" in lines[-1]


def test_explore_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "textworld", None)  # as if not installed
    r = CliRunner().invoke(app, ["explore", "--game", "textworld-cooking"])
    assert r.exit_code == 2 and "textworld is not installed (pip install textworld)" in r.output
    r = CliRunner().invoke(app, ["explore", "--game", "chess"])
    assert r.exit_code == 2 and "textworld-coin" in r.output


def test_cli_plan_search_mcts_and_show_belief(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from kgplan.interfaces.cli import app

    problem = tmp_path / "p.pddl"
    problem.write_text("(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container "
                       "counter bed - surface milk - item) (:init (in_room fridge kitchen) (in_room counter kitchen) "
                       "(in_room bed kitchen) (closed fridge) (agent_at bed) (looked bed)))")
    monkeypatch.setenv("KGPLAN_STORE", f"sqlite:{tmp_path / 'w.db'}")
    cli = CliRunner()
    assert cli.invoke(app, ["init", "--domain", "rearrange", "--problem", str(problem)]).exit_code == 0
    assert "no belief stored about milk" in cli.invoke(app, ["show", "--belief", "milk"]).output
    r = cli.invoke(app, ["plan", "--goal", "(in milk bed)", "--search", "puct_dr", "--simulations", "20"])
    assert r.exit_code == 0 and "decided (" in r.output and "after 20 simulations" in r.output, r.output
    shown = cli.invoke(app, ["show", "--belief", "milk"]).output
    assert "fridge" in shown and "counter" in shown and "bed" not in shown.split("where milk is")[1]
    bad = cli.invoke(app, ["plan", "--goal", "(in milk bed)", "--search", "bfs"])
    assert bad.exit_code == 2 and "puct_dr" in bad.output  # the choices, from the registry
