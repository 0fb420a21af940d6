"""Fuzzing verification: random corruptions of true deltas are all refused, with the right kind."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgplan.domains.model import Domain, Problem
from kgplan.domains.verify import ChangeRefused, IssueKind
from kgplan.graph.backends import open_graph
from kgplan.graph.backends.neo4j import Neo4jStore
from kgplan.graph.model import Delta, Entity, Fact
from kgplan.graph.world import WorldGraph
from tests.conftest import HOUSEHOLD, l3mp_runs
from tests.graph.test_dataset import true_deltas

F = Fact.parse
KINDS = ["predicate", "arity", "type", "entity", "extra_location", "absent", "half_move", "redeclared",
         "stranding"]

# True deltas on the bundled household world (each applies to the initial world).
HOUSEHOLD_DELTAS = [
    Delta(remove=[F("(on apple kitchen_counter)")], add=[F("(on apple kitchen_table)")]),
    Delta(remove=[F("(held_by omar_phone omar)")], add=[F("(inside omar_phone kitchen_cabinet)")]),
    Delta(remove=[F("(agent_at robot hallway)")], add=[F("(agent_at robot kitchen)")]),
    Delta(remove=[F("(cup_contains red_mug juice)")], add=[F("(cup_empty red_mug)")]),
    Delta(add=[F("(switched_on hallway_light)"), F("(phone_ringing omar_phone)")],
          remove=[F("(window_open bedroom_window)")]),
]


def corrupt(kind: str, delta: Delta, g: WorldGraph, data: st.DataObject) -> tuple[Delta, IssueKind]:
    """Corrupt a true delta in one way; returns it and the issue kind it must raise."""
    dom: Domain = g.domain
    types = {e.name: e.type for e in g.entities()}
    facts = delta.add + delta.remove
    f = data.draw(st.sampled_from(facts))
    in_add = f in delta.add

    def swap(new: Fact) -> Delta:
        if in_add:
            return Delta(add=[new if x == f else x for x in delta.add], remove=delta.remove)
        return Delta(add=delta.add, remove=[new if x == f else x for x in delta.remove])

    if kind == "predicate":
        name = data.draw(st.from_regex(r"[a-z]{3,12}", fullmatch=True).filter(
            lambda s: s not in dom.predicates))
        return swap(Fact(predicate=name, args=f.args)), IssueKind.UNKNOWN_PREDICATE
    if kind == "arity":
        extra = data.draw(st.sampled_from(sorted(types)))
        args = f.args[:-1] if f.args and data.draw(st.booleans()) else (*f.args, extra)
        return swap(Fact(predicate=f.predicate, args=args)), IssueKind.WRONG_ARITY
    if kind == "entity":
        i = data.draw(st.integers(0, len(f.args) - 1))
        ghost = data.draw(st.from_regex(r"ghost_[a-z]{1,8}", fullmatch=True))
        args = (*f.args[:i], ghost, *f.args[i + 1:])
        return swap(Fact(predicate=f.predicate, args=args)), IssueKind.UNKNOWN_ENTITY
    if kind == "type":
        pred = dom.predicates[f.predicate]
        options = [(i, e) for i, p in enumerate(pred.params) for e, t in sorted(types.items())
                   if not dom.accepts(p.types, t)]
        if not options:
            return corrupt("entity", delta, g, data)
        i, e = data.draw(st.sampled_from(options))
        args = (*f.args[:i], e, *f.args[i + 1:])
        return swap(Fact(predicate=f.predicate, args=args)), IssueKind.WRONG_TYPE
    if kind == "redeclared":  # an existing name declared new (any type), or a new name declared twice
        t = data.draw(st.sampled_from(sorted(dom.types)))
        if data.draw(st.booleans()):
            new = [Entity(name=data.draw(st.sampled_from(sorted(types))), type=t)]
        else:
            name = data.draw(st.from_regex(r"fresh_[a-z]{1,8}", fullmatch=True))
            new = [Entity(name=name, type=t), Entity(name=name, type=data.draw(st.sampled_from(sorted(dom.types))))]
        return delta.model_copy(update={"new_entities": [*delta.new_entities, *new]}), IssueKind.DUPLICATE_ENTITY
    if kind == "stranding":  # remove an entity that another entity's only location needs
        touched = {x for f in facts for x in f.args}
        options = sorted({x for f in g.facts() if touched.isdisjoint(f.args) for grp in dom.invariants
                          if grp.exactly_one for part in grp.parts if part.predicate == f.predicate
                          for i, x in enumerate(f.args) if i not in part.key_positions
                          and x not in {f.args[k] for k in part.key_positions} and x not in dom.constants})
        if not options:
            return corrupt("absent", delta, g, data)
        gone = data.draw(st.sampled_from(options))
        return delta.model_copy(update={"removed_entities": [gone]}), IssueKind.INVARIANT
    if kind == "absent":
        state = set(g.facts())
        absent = [Fact(predicate=p, args=(e,)) for p, pr in sorted(dom.predicates.items())
                  if pr.arity == 1 for e, t in sorted(types.items()) if dom.accepts(pr.params[0].types, t)
                  and Fact(predicate=p, args=(e,)) not in state and Fact(predicate=p, args=(e,))
                  not in delta.add]
        extra = data.draw(st.sampled_from(absent))
        return Delta(add=delta.add, remove=[*delta.remove, extra]), IssueKind.ABSENT_FACT
    # the invariant corruptions: an item (or the agent) ends up in two places
    moves = [(r, a) for r in delta.remove for a in delta.add for grp in dom.invariants
             if _same_instance(grp, r, a)]
    if kind == "half_move" and moves:
        r, _ = data.draw(st.sampled_from(moves))
        return Delta(add=delta.add, remove=[x for x in delta.remove if x != r]), IssueKind.INVARIANT
    located = [(a, grp, part) for a in delta.add for grp in dom.invariants for part in grp.parts
               if part.predicate == a.predicate]
    if not located:
        return corrupt("absent", delta, g, data)
    a, grp, _ = data.draw(st.sampled_from(located))
    key = next(tuple(a.args[k] for k in p.key_positions) for p in grp.parts if p.predicate == a.predicate)
    state = set(g.facts())
    options = []
    for part in grp.parts:
        pred = dom.predicates[part.predicate]
        free = [i for i in range(pred.arity) if i not in part.key_positions]
        for i in free[:1]:
            for e, t in sorted(types.items()):
                if not dom.accepts(pred.params[i].types, t):
                    continue
                args = [""] * pred.arity
                for k, v in zip(part.key_positions, key, strict=True):
                    args[k] = v
                args[i] = e
                if all(dom.accepts(pred.params[j].types, types.get(args[j], "")) for j in part.key_positions):
                    cand = Fact(predicate=part.predicate, args=tuple(args))
                    if cand not in state and cand not in delta.add:
                        options.append(cand)
    if not options:
        return corrupt("absent", delta, g, data)
    extra = data.draw(st.sampled_from(options))
    return Delta(add=[*delta.add, extra], remove=delta.remove), IssueKind.INVARIANT


def _same_instance(grp, r: Fact, a: Fact) -> bool:
    def inst(f: Fact) -> tuple | None:
        for p in grp.parts:
            if p.predicate == f.predicate:
                return tuple(f.args[k] for k in p.key_positions)
        return None

    return inst(r) is not None and inst(r) == inst(a)


def assert_refused(g: WorldGraph, delta: Delta, kind: IssueKind) -> None:
    before, n_hist = set(g.facts()), len(g.history())
    with pytest.raises(ChangeRefused) as exc:
        g.apply(delta)
    assert kind in {i.kind for i in exc.value.issues}, exc.value
    assert set(g.facts()) == before and len(g.history()) == n_hist


@pytest.fixture(scope="module", params=["sqlite", pytest.param("neo4j", marks=pytest.mark.integration)])
def household_graph(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorldGraph]:
    """The household world on each backend, shared by the examples (refused changes leave it as is)."""
    if request.param == "sqlite":
        g: WorldGraph = open_graph(f"sqlite:{tmp_path_factory.mktemp('fuzz') / 'h.db'}")
    else:
        server = request.getfixturevalue("bolt_server")
        g = WorldGraph(Neo4jStore(server.uri, server.user, server.password, server.database))
        g.clear()
    g.init(Domain.load(HOUSEHOLD))
    g.load_problem((HOUSEHOLD / "world.pddl").read_text())
    yield g
    g.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_household_deltas_are_refused(household_graph: WorldGraph, data: st.DataObject) -> None:
    delta = data.draw(st.sampled_from(HOUSEHOLD_DELTAS))
    assert household_graph.check(delta) == []  # the true delta itself is fine
    kind = data.draw(st.sampled_from(KINDS))
    bad, expected = corrupt(kind, delta, household_graph, data)
    assert_refused(household_graph, bad, expected)


@functools.cache
def l3mp_cases(run: Path) -> list[tuple[str, Delta, Problem]]:
    """(step, true non-empty delta, the state it applies to) for every step of a run, parsed once."""
    cases, prev = [], Problem.parse((run / "problem.pddl").read_text())
    for step, delta, state in true_deltas(run):
        if not delta.is_empty():
            cases.append((step, delta, prev))
        prev = state
    return cases


@pytest.mark.dataset
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_l3mp_deltas_are_refused(tmp_path: Path, data: st.DataObject) -> None:
    run = data.draw(st.sampled_from(l3mp_runs()))
    step, delta, state = data.draw(st.sampled_from(l3mp_cases(run)))
    g = open_graph(f"sqlite:{tmp_path / 'fuzz.db'}")
    g.init(Domain.load(run / "domain.pddl"), force=True)
    g.load_problem(state)
    assert g.check(delta) == [], step
    kind = data.draw(st.sampled_from(KINDS))
    bad, expected = corrupt(kind, delta, g, data)
    assert_refused(g, bad, expected)
    g.close()
