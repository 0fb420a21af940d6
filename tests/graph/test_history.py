"""The graph as of any moment, a fact's timeline and the difference between two moments, from the recorded
history alone.

The property test (both backends): after random accepted changes (facts added and removed, entities made and
removed, unknown marks, undos), the graph as of each change k equals the graph that replaying the history up to
k gives in a fresh store (each change's recorded delta applied as it was recorded).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgplan.domains.verify import ChangeRefused
from kgplan.errors import InputError
from kgplan.graph.backends import open_graph
from kgplan.graph.model import Delta, Entity, Fact, Unknown
from kgplan.graph.world import WorldGraph
from tests.graph.test_properties import SETTINGS, SETUPS, Mirror, propose


def F(text: str) -> Fact:
    return Fact.parse(text)


def state(g: WorldGraph) -> tuple[list[Entity], list[Fact], list[Unknown], tuple[int, int]]:
    return g.entities(), g.facts(), g.unknowns(), g.count()


def proposal(r: random.Random, g: WorldGraph, m: Mirror, applied: list[int]) -> tuple[Delta | None, int | None]:
    """A random change, an unknown mark made or dropped, or an undo of an earlier change (its id)."""
    kind = r.random()
    if kind < 0.1 and applied:
        return None, r.choice(applied)
    if kind < 0.2:
        marks = g.unknowns()
        if marks and r.random() < 0.5:
            return Delta(known=[r.choice(marks)]), None
        names = sorted(m.entities)
        if names:
            pred = r.choice([None, *sorted(g.domain.predicates)])
            return Delta(unknown=[Unknown(entity=r.choice(names), predicate=pred)]), None
    return propose(r, g.domain, m), None


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_the_graph_as_of_each_change_is_the_history_replayed(store_url: str, tmp_path: Path, setup: str) -> None:
    domain, problem, _ = SETUPS[setup]
    n = 150

    @SETTINGS
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        with open_graph(store_url) as g, open_graph(f"sqlite:{tmp_path / 'replay.db'}") as fresh:
            g.clear()
            fresh.clear()
            g.init(domain)
            fresh.init(domain)
            g.load_problem(problem)
            m = Mirror({e.name: e for e in g.entities()}, set(g.facts()))
            applied: list[int] = []
            for i in range(4 * n):
                if len(applied) >= n:
                    break
                delta, undo = proposal(random.Random(f"{i}:{data.draw(st.integers(0, 2**32 - 1))}"), g, m, applied)
                try:
                    c = g.undo(undo) if undo is not None else g.apply(delta or Delta())
                except (ChangeRefused, InputError):
                    continue
                m.follow(c)
                applied.append(c.id)
            assert len(applied) >= n // 2
            kinds = {k for c in g.history() for k, v in c.delta if v and k in (
                "add", "remove", "new_entities", "removed_entities", "unknown", "known")}
            assert kinds == {"add", "remove", "new_entities", "removed_entities", "unknown", "known"}
            assert any(c.undo_of for c in g.history())
            for c in g.history():  # replayed up to change k, one change more each time
                fresh.apply(c.delta, verified=False)
                assert state(g.at(c.id)) == state(fresh), f"as of change {c.id}"
            assert state(g.at(c.id)) == state(g)

    run()


@pytest.fixture
def hist(graph: WorldGraph) -> tuple[WorldGraph, list[int]]:
    """The household world, then the apple moved twice, its move undone, a cup made and removed."""
    ids = [graph.history()[-1].id]
    for delta in (
        Delta(remove=[F("(on apple kitchen_counter)")], add=[F("(on apple kitchen_table)")], text="moved it"),
        Delta(remove=[F("(on apple kitchen_table)")], add=[F("(on apple living_room_table)")], source="sensor"),
    ):
        ids.append(graph.apply(delta).id)
    ids.append(graph.undo(ids[-1]).id)
    ids.append(graph.apply(Delta(new_entities=[Entity(name="cup9", type="cup")],
                                 add=[F("(on cup9 kitchen_table)")])).id)
    ids.append(graph.apply(Delta(removed_entities=["cup9"])).id)
    return graph, ids


def test_a_timeline_gives_each_interval_with_the_changes_that_opened_and_closed_it(
        hist: tuple[WorldGraph, list[int]]) -> None:
    g, (load, moved, sensed, undone, _, _) = hist
    t = g.timeline("(on apple *)")
    assert [(str(i.fact), i.opened.id, i.closed and i.closed.id) for i in t] == [
        ("(on apple kitchen_counter)", load, moved), ("(on apple kitchen_table)", moved, sensed),
        ("(on apple living_room_table)", sensed, undone), ("(on apple kitchen_table)", undone, None)]
    assert (t[0].opened.source, t[0].closed.source, t[0].closed.text) == ("load", "user", "moved it")
    assert (t[2].closed.source, t[2].closed.undo_of) == ("undo", sensed)
    assert [str(i.fact) for i in g.timeline("(* apple living_room_table)")] == ["(on apple living_room_table)"]
    assert [i.closed for i in g.at(sensed).timeline("(on apple *)")][-1] is None  # open as of then
    for bad in ("on apple", "(flies apple)", "(on apple)"):
        with pytest.raises(InputError):
            g.timeline(bad)


def test_a_difference_lists_facts_and_entities_added_and_removed(hist: tuple[WorldGraph, list[int]]) -> None:
    g, (load, moved, sensed, undone, made, dropped) = hist
    d = g.difference(load, sensed)
    assert (d.add, d.remove) == ([F("(on apple living_room_table)")], [F("(on apple kitchen_counter)")])
    back = g.difference(sensed, load)
    assert (back.add, back.remove) == (d.remove, d.add)
    assert g.difference(moved, undone).add == [] and g.difference(moved, undone).remove == []  # undone: as before
    d = g.difference(undone, made)
    assert [e.name for e in d.new_entities] == ["cup9"] and d.add == [F("(on cup9 kitchen_table)")]
    assert g.difference(undone, dropped).new_entities == [] and g.difference(undone, dropped).add == []
    assert [e.name for e in g.difference(made, dropped).removed_entities] == ["cup9"]


def test_moments_are_change_ids_or_times_and_outside_the_history_refused(hist: tuple[WorldGraph, list[int]]) -> None:
    g, ids = hist
    times = {c.id: c.time for c in g.history()}
    assert g.moment(str(ids[2])) == ids[2] and g.moment(ids[2]) == ids[2]
    assert g.moment(times[ids[2]].isoformat()) == ids[2]
    assert g.moment(times[ids[2]].replace(tzinfo=None).isoformat()) == ids[2]  # no zone: UTC
    assert g.moment(datetime.now(UTC) + timedelta(days=1)) == ids[-1]
    for bad, words in ((ids[-1] + 1, f"changes {ids[0]} to {ids[-1]}"), (0, "no change 0"),
                       ((times[ids[0]] - timedelta(seconds=1)).isoformat(), "before the first change"),
                       ("yesterday", "neither a change id nor an ISO time")):
        with pytest.raises(InputError, match=words):
            g.moment(bad)
    past = g.at(ids[2])
    there = F("(on apple living_room_table)")
    assert there in past.facts("on") and there not in g.facts("on")
    assert [c.id for c in past.changes(None)] == ids[2::-1] and past.change_slice(ids[3]) is None
    with pytest.raises(InputError, match="cannot be changed"):
        past.apply(Delta(add=[F("(light_on kitchen_light)")]))


def test_an_older_store_gets_its_history_indexed_when_opened(tmp_path: Path, household, world_problem) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    with open_graph(f"sqlite:{path}") as g:
        g.init(household)
        load = g.load_problem(world_problem).id
        moved = g.apply(Delta(remove=[F("(on apple kitchen_counter)")], add=[F("(on apple kitchen_table)")])).id
    db = sqlite3.connect(path)  # as a store made before the index was
    for table in ("fact_spans", "span_args", "entity_spans", "mark_spans"):
        db.execute(f"DROP TABLE {table}")
    db.commit()
    db.close()
    with open_graph(f"sqlite:{path}") as g:
        assert F("(on apple kitchen_counter)") in g.at(load).facts("on")
        assert [i.opened.id for i in g.timeline("(on apple *)")] == [load, moved]


def test_a_changed_value_is_a_new_interval_and_in_both_lists_of_a_difference(empty_graph: WorldGraph) -> None:
    from kgplan.domains.model import Domain, Problem
    from tests.graph.test_round_trip import COSTS_DOMAIN, COSTS_PROBLEM

    g = empty_graph
    g.init(Domain.parse(COSTS_DOMAIN), problem=Problem.parse(COSTS_PROBLEM))
    load = g.history()[-1].id
    old, new = F("(= (travel f1 f2) 2.5)"), F("(= (travel f1 f2) 4)")
    change = g.apply(Delta(remove=[old], add=[new])).id
    assert [(i.fact, i.opened.id, i.closed and i.closed.id) for i in g.timeline("(travel f1 *)")] == [
        (old, load, change), (new, change, None)]
    d = g.difference(load, change)
    assert (d.add, d.remove) == ([new], [old])
    assert old in g.at(load).facts("travel") and new in g.facts("travel")


def test_a_difference_over_a_long_stretch_reads_the_same(hist: tuple[WorldGraph, list[int]],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Neo4j looks each change of a short stretch up and scans a long one: both give the same."""
    from kgplan.graph.backends import neo4j

    monkeypatch.setattr(neo4j, "WINDOW", 0)
    test_a_difference_lists_facts_and_entities_added_and_removed(hist)
