"""The change feed's reads (graph/feed.py) on each backend: the history read forward from any id, in order, across
a store cleared and begun anew, and the followers' filters, which read a change whole when its summary is cut."""

from __future__ import annotations

import asyncio

import pytest

from kgplan.domains.model import Domain, Problem
from kgplan.errors import StoreError
from kgplan.graph.feed import Interest, changes_after, heads, newest, read_on
from kgplan.graph.model import Delta, Entity, Fact, Unknown
from kgplan.graph.world import WorldGraph


def rooms(graph: WorldGraph, n: int, prefix: str = "r") -> list[int]:
    return [graph.apply(Delta(new_entities=[Entity(name=f"{prefix}{i}", type="room")], source="sensor")).id
            for i in range(n)]


def test_the_history_is_read_forward_from_any_id(graph: WorldGraph, household: Domain,
                                                  world_problem: Problem) -> None:
    ids = [c.id for c in graph.changes(None)][::-1] + rooms(graph, 12)
    assert newest(graph) == ids[-1]
    for after in (0, ids[0], ids[5], ids[-2], ids[-1]):
        for limit in (1, 5, 100):
            assert [c.id for c in changes_after(graph, after, limit)] == [i for i in ids if i > after][:limit]
    assert read_on(graph, ids[-1]) == ([], ids[-1])  # nothing new

    graph.init(household, force=True, problem=world_problem)  # cleared and begun anew: one change, the load
    (load,) = graph.changes(None)
    if load.id > ids[-1]:  # sqlite: ids go on, so a follower reads on; a new one finds the first id past a gap
        assert [c.id for c in read_on(graph, ids[-1])[0]] == [load.id]
        assert [c.id for c in changes_after(graph, 0, 5)] == [load.id]
    else:  # neo4j: ids begin again, so a follower beyond them is told to read again from 0
        assert read_on(graph, ids[-1]) == ([], 0)
        assert [c.id for c in changes_after(graph, 0, 5)] == [load.id] == [1]


def test_interests_pick_changes_by_entity_predicate_and_source(graph: WorldGraph) -> None:
    light = graph.apply(Delta(remove=[Fact.parse("(switched_on kitchen_light)")], source="user"))
    mark = graph.apply(Delta(remove=[Fact.parse("(on apple kitchen_counter)")],
                             unknown=[Unknown(entity="apple", predicate="on")], source="sensor"))
    (new,) = rooms(graph, 1, "attic")
    changes = {c.id: c for c in changes_after(graph, 0)}
    (load,) = [c for c in changes.values() if c.delta.source == "load"]

    def picked(**interest: str) -> set[int]:
        return {i for i, c in changes.items() if Interest(**interest).matches(graph, c)}

    assert picked() == set(changes)
    assert picked(entity="kitchen_light") == {load.id, light.id}
    assert picked(entity="apple") == {load.id, mark.id}
    assert picked(entity="apple", predicate="on") == {load.id, mark.id}
    assert picked(entity="apple", predicate="switched_on") == set()
    assert picked(predicate="switched_on") == {load.id, light.id}
    assert picked(entity="attic0") == {new}
    assert picked(source="sensor") == {mark.id, new}
    assert picked(source="sensor", entity="kitchen_light") == set()
    # the load's summary shows its first items only: what lies beyond them is found in the whole change
    whole = graph.change_slice(load.id, 0, None)
    assert whole is not None and load.sizes["add"] > len(load.delta.add)
    shown = {a for f in load.delta.add for a in f.args} | {e.name for e in load.delta.new_entities}
    hidden = sorted({a for f in whole.delta.add for a in f.args} - shown)
    hidden_predicates = sorted({f.predicate for f in whole.delta.add} - {f.predicate for f in load.delta.add})
    assert hidden and hidden_predicates
    assert load.id in picked(entity=hidden[0]) and load.id in picked(predicate=hidden_predicates[0])


def test_heads_go_on_past_a_store_that_cannot_be_read_for_a_moment(world: WorldGraph,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    reads = []
    changes = world.changes

    def flaky(*args: object) -> list:
        reads.append(args)
        if len(reads) == 2:
            raise StoreError("the store cannot be reached")
        return changes(*args)

    monkeypatch.setattr(world, "changes", flaky)

    async def follow() -> tuple[int, int]:
        moves = heads(world, 0)
        first = await anext(moves)
        rooms(world, 1)
        return first, await anext(moves)

    first, then = asyncio.run(follow())
    assert then == first + 1 and len(reads) == 3
