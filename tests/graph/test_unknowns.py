"""The open-world graph: unknown marks, placeholders, and verification that stays strict on what is
known. Conformance tests: they run on every backend (sqlite file and a real Bolt server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgplan.agent.agent import Agent
from kgplan.domains.model import Domain, Problem, resolve_domain
from kgplan.domains.verify import ChangeRefused, IssueKind
from kgplan.errors import KgplanError
from kgplan.graph.model import Delta, Entity, Fact, Unknown
from kgplan.graph.world import WorldGraph
from kgplan.interfaces.cli import app
from tests.conftest import HOUSEHOLD

F = Fact.parse


def kinds(exc: pytest.ExceptionInfo[ChangeRefused]) -> set[IssueKind]:
    return {i.kind for i in exc.value.issues}


def state(graph: WorldGraph) -> tuple[set, set, list]:
    return ({e.name: e.type for e in graph.entities()}.items(), set(graph.facts()), graph.unknowns())


def test_an_items_place_can_become_unknown_and_known_again(graph: WorldGraph) -> None:
    where = Unknown(entity="apple", predicate="on")
    gone = Delta(remove=[F("(on apple kitchen_counter)")], source="sensor")
    with pytest.raises(ChangeRefused) as e:  # exactly one place per item: not without the mark
        graph.apply(gone)
    assert kinds(e) == {IssueKind.INVARIANT} and "mark it unknown" in str(e.value)
    before = state(graph)
    lost = graph.apply(gone.model_copy(update={"unknown": [where]}))
    assert graph.unknowns() == [where] and graph.unknowns(["apple"]) == [where] and graph.unknowns(["pear"]) == []
    assert not graph.facts(entity="apple", predicate="on")
    with pytest.raises(ChangeRefused) as e:  # becoming known needs the place
        graph.apply(Delta(known=[where]))
    assert kinds(e) == {IssueKind.INVARIANT} and "stop being unknown" in str(e.value)
    with pytest.raises(ChangeRefused) as e:  # still at most one place while unknown
        graph.apply(Delta(add=[F("(on apple kitchen_table)"), F("(on apple kitchen_counter)")]))
    assert kinds(e) == {IssueKind.INVARIANT}
    found = graph.apply(Delta(add=[F("(on apple kitchen_table)")], known=[where]))
    assert graph.unknowns() == [] and F("(on apple kitchen_table)") in graph.facts("on")
    graph.undo(found.id)
    assert graph.unknowns() == [where] and not graph.facts(entity="apple", predicate="on")
    graph.undo(lost.id)
    assert state(graph) == before


def test_marks_are_verified(graph: WorldGraph) -> None:
    before, changes = state(graph), len(graph.history())
    bad = [
        (Delta(unknown=[Unknown(entity="nosuch", predicate="on")]), IssueKind.UNKNOWN_ENTITY),
        (Delta(unknown=[Unknown(entity="apple", predicate="flying")]), IssueKind.UNKNOWN_PREDICATE),
        (Delta(unknown=[Unknown(entity="kitchen", predicate="cup_empty")]), IssueKind.WRONG_TYPE),
        (Delta(known=[Unknown(entity="apple", predicate="on")]), IssueKind.ABSENT_FACT),
        (Delta(unknown=[Unknown(entity="apple")], known=[Unknown(entity="apple")]), IssueKind.CONTRADICTION),
        (Delta(removed_entities=["apple"], unknown=[Unknown(entity="apple")]), IssueKind.UNKNOWN_ENTITY),
    ]
    for delta, kind in bad:
        with pytest.raises(ChangeRefused) as e:
            graph.apply(delta)
        assert kind in kinds(e), delta
    graph.apply(Delta(unknown=[Unknown(entity="apple", predicate="on")]))
    with pytest.raises(ChangeRefused) as e:
        graph.apply(Delta(unknown=[Unknown(entity="apple", predicate="on")]))
    assert kinds(e) == {IssueKind.PRESENT_FACT}
    graph.apply(Delta(known=[Unknown(entity="apple", predicate="on")]))  # it still has its place
    assert state(graph) == before and len(graph.history()) == changes + 2


def test_a_placeholder_is_merged_or_renamed_and_undone_exactly(graph: WorldGraph) -> None:
    before = state(graph)
    seen = graph.apply(Delta(new_entities=[Entity(name="room_behind_door", type="room")],
                             add=[F("(connected hallway room_behind_door)"), F("(connected kitchen room_behind_door)")],
                             unknown=[Unknown(entity="room_behind_door")], source="sensor"))
    assert graph.unknowns() == [Unknown(entity="room_behind_door")]
    with pytest.raises(KgplanError, match="not a placeholder"):
        graph.identify("hallway", "kitchen")
    merged = graph.identify("room_behind_door", "kitchen")  # it was the kitchen: facts re-pointed
    assert graph.unknowns() == [] and not graph.entities(["room_behind_door"])
    assert F("(connected hallway kitchen)") in graph.facts("connected")
    assert F("(connected kitchen kitchen)") in graph.facts("connected")
    graph.undo(merged.id)
    assert graph.unknowns() == [Unknown(entity="room_behind_door")]
    assert F("(connected hallway room_behind_door)") in graph.facts("connected")
    renamed = graph.identify("room_behind_door", "attic")  # a room not seen before: renamed
    assert graph.entities(["attic"]) == [Entity(name="attic", type="room")] and graph.unknowns() == []
    assert {F("(connected hallway attic)"), F("(connected kitchen attic)")} <= set(graph.facts("connected"))
    graph.undo(renamed.id)
    graph.undo(seen.id)
    assert state(graph) == before


def test_removing_an_entity_takes_its_marks_and_undo_restores_them(graph: WorldGraph) -> None:
    graph.apply(Delta(unknown=[Unknown(entity="apple", predicate="on"), Unknown(entity="apple")]))
    c = graph.apply(Delta(removed_entities=["apple"]))
    assert graph.unknowns() == [] and graph.history()[-1].delta.known == [
        Unknown(entity="apple"), Unknown(entity="apple", predicate="on")]
    graph.undo(c.id)
    assert graph.unknowns() == [Unknown(entity="apple"), Unknown(entity="apple", predicate="on")]


def test_a_placeholder_has_no_exactly_one_facts_yet(graph: WorldGraph) -> None:
    """A placeholder item may lose its place; a new entity may come marked and without any."""
    graph.apply(Delta(new_entities=[Entity(name="thing", type="item")], unknown=[Unknown(entity="thing")]))
    graph.apply(Delta(unknown=[Unknown(entity="apple")], remove=[F("(on apple kitchen_counter)")]))
    with pytest.raises(ChangeRefused):
        graph.apply(Delta(known=[Unknown(entity="apple")]))


def test_open_world_domain_keeps_no_keyless_at_most_one_group(empty_graph: WorldGraph) -> None:
    """Cooking World's first observation has one uncut item; items found later are uncut too."""
    cooking = resolve_domain("cooking")
    problem = Problem.parse("(define (problem p) (:domain cooking) (:objects kitchen - location carrot - item) "
                            "(:init (at kitchen) (item_at carrot kitchen) (uncut carrot) (raw carrot)))")
    kept = empty_graph.init(cooking, problem=problem).kept
    assert kept and all(g.exactly_one or g.arity for g in kept)
    assert closed_world_would_refuse(cooking, problem)
    empty_graph.apply(Delta(new_entities=[Entity(name="potato", type="item")],
                            add=[F("(item_at potato kitchen)"), F("(uncut potato)"), F("(raw potato)")]))


def closed_world_would_refuse(domain: Domain, problem: Problem) -> bool:
    """The same domain without `open_world` derives a keyless at-most-one group for this state."""
    closed = Domain.parse(domain.text, "closed")
    return any(not g.exactly_one and not g.arity for g in closed.derive_invariants(
        list(problem.init)).kept)


def test_cli_marks_and_lists_unknowns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An observation file carries marks; `kgplan show` marks them, `kgplan show --unknown` lists them."""
    monkeypatch.setenv("KGPLAN_STORE", f"sqlite:{tmp_path / 'k.db'}")
    monkeypatch.setenv("COLUMNS", "200")
    cli = CliRunner()
    assert cli.invoke(app, ["init", "--problem", str(HOUSEHOLD / "world.pddl")]).exit_code == 0
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps([{"text": "the apple is gone", "remove": ["(on apple kitchen_counter)"],
                                "unknown": [{"entity": "apple", "predicate": "on"}]},
                               {"text": "a door", "new_entities": [{"name": "attic", "type": "room"}],
                                "add": ["(connected hallway attic)"], "unknown": [{"entity": "attic"}]}]))
    r = cli.invoke(app, ["observe", str(obs)])
    assert r.exit_code == 0, r.output
    r = cli.invoke(app, ["show", "--unknown"])
    assert r.exit_code == 0 and "Unknowns (2)" in r.output
    assert "(on apple ?)" in r.output and "placeholder" in r.output and "attic" in r.output
    assert "2 unknowns" in cli.invoke(app, ["show"]).output
    assert "unknown: (on apple ?)" in cli.invoke(app, ["show", "apple"]).output
    assert "placeholder" in cli.invoke(app, ["show", "attic"]).output
    r = cli.invoke(app, ["show", "--unknown", "kitchen"])
    assert r.exit_code == 0 and "Unknowns (0)" in r.output
    with Agent(f"sqlite:{tmp_path / 'k.db'}") as a:
        assert a.unknowns() == [Unknown(entity="apple", predicate="on"), Unknown(entity="attic")]


def test_pddl_edits_apply_in_order_as_one_verified_change(graph: WorldGraph) -> None:
    """LLM mode's edits (kgplan.language.pddl_edit) on the store: a placeholder merged into a known room, an
    item's place becoming unknown, a fact replaced; one change, undone exactly; a refused reply changes nothing."""
    from kgplan.language.llm import ScriptedLLM
    from kgplan.language.pddl_edit import observe

    graph.apply(Delta(new_entities=[Entity(name="room_x", type="room")], add=[F("(connected hallway room_x)")],
                      unknown=[Unknown(entity="room_x")]))
    before = state(graph)
    reply = json.dumps({"objects": {"replace": [{"old": "room_x", "new": "kitchen"}]},
                        "init": {"delete": ["(on apple kitchen_counter)"],
                                 "replace": [{"old": "(agent_at robot hallway)", "new": "(agent_at robot kitchen)"}]},
                        "unknown": {"add": ["(on apple ?)"]}})
    wrong = json.dumps({"init": {"delete": ["(on apple kitchen_counter)"]}})  # the apple would be nowhere
    llm = ScriptedLLM([wrong, reply])
    out = observe(llm, graph, "go to the kitchen", "You are in the kitchen. The counter is empty.")
    assert out.change is not None and len(out.rounds) == 1 and "mark it unknown" in out.rounds[0][0]
    assert "Those edits were refused" in llm.prompts[1][-1]["content"]
    assert "room_x" in llm.prompts[0][1]["content"] and "Unknown now:\nroom_x" in llm.prompts[0][1]["content"]
    kinds = llm.prompts[0][0]["content"].split("Object types (no others): ")[1].split("\n")[0].split(", ")
    assert {k.split(" ")[0] for k in kinds} == set(graph.domain.types) - {"object"}  # the types it may use
    assert graph.unknowns() == [Unknown(entity="apple", predicate="on")] and not graph.entities(["room_x"])
    assert F("(agent_at robot kitchen)") in graph.facts("agent_at")
    assert F("(connected hallway kitchen)") in graph.facts("connected")
    graph.undo(out.change.id)
    assert state(graph) == before
    out = observe(ScriptedLLM([wrong] * 2), graph, None, "The apple is gone.", max_rounds=2)
    assert out.change is None and out.error and len(out.rounds) == 2 and state(graph) == before


def test_http_api_lists_unknowns(world: WorldGraph) -> None:
    from fastapi.testclient import TestClient

    from kgplan.interfaces.api import create_app

    world.apply(Delta(remove=[F("(on apple kitchen_counter)")], unknown=[Unknown(entity="apple", predicate="on")]))
    client = TestClient(create_app(Agent(world)), base_url="http://localhost")
    assert client.get("/api/unknowns").json() == [{"entity": "apple", "predicate": "on"}]
    assert client.get("/api/unknowns", params={"entity": "kitchen"}).json() == []
