"""Property tests on both backends: random accepted changes (new and removed entities included)
leave nothing for the whole-graph checker to find, and undoing them in reverse order gives back
the identical graph (entities, types, attributes, facts).

One long run per backend and domain: hypothesis draws a seed for each proposed change, and the
proposal is built from that seed and the current state; the verifier decides which are kept.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kgplan.domains.model import Domain
from kgplan.domains.verify import ChangeRefused
from kgplan.graph.backends import open_graph
from kgplan.graph.check import check_graph
from kgplan.graph.model import Change, Delta, Entity, Fact
from kgplan.graph.world import WorldGraph
from tests.conftest import HOUSEHOLD

CHECK_EVERY = 500  # whole-graph checks along the way
ODD_TEXT = ["plain", "it's \"quoted\"", "{'a': 1}", "`x` $y", "ü\n"]

# A domain unlike the household: constants, nullary and ternary predicates, an exactly-one
# group over a unary and a ternary predicate, and one with no key (the world's single mode).
LAB = """(define (domain lab) (:requirements :typing :negative-preconditions)
  (:types place robot sample - object box - place)
  (:constants home - place)
  (:predicates (at ?r - robot ?p - place) (stored ?s - sample ?b - box ?slot - place)
               (loose ?s - sample) (mode_idle) (mode_busy) (marked ?p - place) (link ?a ?b - place))
  (:action go :parameters (?r - robot ?a ?b - place)
    :precondition (and (at ?r ?a) (link ?a ?b)) :effect (and (not (at ?r ?a)) (at ?r ?b)))
  (:action store :parameters (?s - sample ?b - box ?p - place)
    :precondition (loose ?s) :effect (and (not (loose ?s)) (stored ?s ?b ?p)))
  (:action unstore :parameters (?s - sample ?b - box ?p - place)
    :precondition (stored ?s ?b ?p) :effect (and (loose ?s) (not (stored ?s ?b ?p))))
  (:action start :parameters () :precondition (mode_idle) :effect (and (not (mode_idle)) (mode_busy)))
  (:action stop :parameters () :precondition (mode_busy) :effect (and (mode_idle) (not (mode_busy)))))"""
LAB_PROBLEM = """(define (problem lab1) (:domain lab)
  (:objects r1 r2 - robot p1 p2 p3 - place b1 b2 - box s1 s2 s3 - sample)
  (:init (at r1 home) (at r2 p1) (link home p1) (link p1 home) (link p1 p2) (marked p3)
         (loose s1) (loose s2) (stored s3 b1 p2) (mode_busy)))"""


@dataclass
class Mirror:
    """What the graph should hold, kept from the recorded changes."""

    entities: dict[str, Entity]
    facts: set[Fact]
    made: int = 0
    gone: list[str] = field(default_factory=list)

    def follow(self, c: Change) -> None:
        d = c.delta
        self.facts -= set(d.remove)
        for e in d.removed_entities:
            assert isinstance(e, Entity), "the history keeps removed entities whole"
            del self.entities[e.name]
            self.gone.append(e.name)
        self.entities |= {e.name: e for e in d.new_entities}
        self.facts |= set(d.add)


def snapshot(g: WorldGraph) -> tuple[dict[str, Entity], set[Fact]]:
    return {e.name: e for e in g.entities()}, set(g.facts())


def propose(r: random.Random, dom: Domain, m: Mirror) -> Delta:
    """A random proposal on the current state: often valid, sometimes not."""
    types = {**dom.constants, **{n: e.type for n, e in m.entities.items()}}
    facts = sorted(m.facts, key=lambda f: (f.predicate, f.args))
    preds = sorted(dom.predicates)

    fitting: dict[tuple[str, ...], list[str]] = {}

    def atom(p: str, fixed: dict[int, str] | None = None) -> Fact | None:
        args = []
        for i, param in enumerate(dom.predicates[p].params):
            if fixed and i in fixed:
                args.append(fixed[i])
                continue
            if param.types not in fitting:
                fitting[param.types] = [n for n, t in sorted(types.items()) if dom.accepts(param.types, t)]
            fits = fitting[param.types]
            if not fits:
                return None
            args.append(r.choice(fits))
        return Fact(predicate=p, args=tuple(args))

    def moved(f: Fact) -> Fact | None:
        """Another atom of one of f's mutex group instances (a move), if any."""
        options = [(g, part) for g in dom.invariants for part in g.parts if part.predicate == f.predicate]
        if not options:
            return None
        g, part = r.choice(options)
        key = [f.args[k] for k in part.key_positions]
        other = r.choice(g.parts)
        if len(other.key_positions) != len(key):
            return None
        return atom(other.predicate, dict(zip(other.key_positions, key, strict=True)))

    grouped = {part.predicate for g in dom.invariants for part in g.parts}
    free = [p for p in preds if p not in grouped] or preds  # predicates no invariant constrains

    def some_facts(k: int) -> list[Fact]:
        """`k` present facts, mostly of free predicates (removing a located thing's only
        location is refused)."""
        pool = [f for f in facts if f.predicate in free] if r.random() < 0.85 else facts
        return r.sample(pool, min(len(pool), k))

    def some_atoms(k: int) -> list[Fact]:
        pool = free if r.random() < 0.85 else preds
        return [a for p in r.choices(pool, k=k) if (a := atom(p))]

    kind = r.choices(["move", "add", "remove", "mixed", "new", "drop"], [30, 15, 15, 15, 15, 10])[0]
    if kind == "move" and facts:
        f = r.choice(facts)
        new = moved(f)
        return Delta(remove=[f], add=[new] if new and new != f else [])
    if kind == "remove":
        return Delta(remove=some_facts(r.randint(1, 2)))
    if kind == "add":
        return Delta(add=some_atoms(r.randint(1, 3)))
    if kind == "mixed" and facts:  # a move, and some facts added and removed
        f = r.choice(facts)
        new = moved(f)
        add = list(dict.fromkeys([*([new] if new and new != f else []), *some_atoms(r.randint(0, 2))]))
        return Delta(add=add, remove=list(dict.fromkeys([f, *some_facts(r.randint(0, 2))])))
    if kind == "new":
        m.made += 1
        name = r.choice(m.gone) if m.gone and r.random() < 0.3 else f"new{m.made}"
        t = r.choice(sorted(dom.types))
        types[name] = t
        fitting.clear()
        attrs = {f"a{i}": r.choice(ODD_TEXT) for i in range(r.randint(0, 2))}
        add = []
        for g in dom.invariants:  # often give it a place in each group it belongs to
            for part in g.parts:
                params = dom.predicates[part.predicate].params
                if (len(part.key_positions) == 1 and r.random() < 0.7
                        and dom.accepts(params[part.key_positions[0]].types, t)
                        and (a := atom(part.predicate, {part.key_positions[0]: name}))):
                    add.append(a)
                    break
        for p in r.sample(preds, min(len(preds), 2)):
            spots = [i for i, q in enumerate(dom.predicates[p].params) if dom.accepts(q.types, t)]
            if spots and (a := atom(p, {r.choice(spots): name})):
                add.append(a)
        return Delta(new_entities=[Entity(name=name, type=t, attrs=attrs)], add=list(dict.fromkeys(add)))
    names = sorted(m.entities) or ["nothing"]
    return Delta(removed_entities=[r.choice(names) if r.random() < 0.95 else "never_was"])


def random_run(g: WorldGraph, data: st.DataObject, n: int) -> None:
    """`n` random accepted changes, checked, then undone in reverse order."""
    dom = g.domain
    start = snapshot(g)
    m = Mirror(dict(start[0]), set(start[1]))
    changes: list[Change] = []
    proposals = 0
    while len(changes) < n:
        proposals += 1
        assert proposals < 4 * n, f"only {len(changes)} of {proposals} proposals were accepted"
        # the proposal number is mixed in: hypothesis's first example draws only zeros
        seed = f"{proposals}:{data.draw(st.integers(0, 2**32 - 1))}"
        delta = propose(random.Random(seed), dom, m)
        try:
            c = g.apply(delta)
        except ChangeRefused:
            continue
        m.follow(c)
        changes.append(c)
        if len(changes) % CHECK_EVERY == 0:
            assert check_graph(g) == [], f"after {len(changes)} accepted changes"
    assert snapshot(g) == (m.entities, m.facts), "the recorded changes do not say what happened"
    kinds = {k for c in changes for k, v in c.delta if k in ("new_entities", "removed_entities") and v}
    assert kinds == {"new_entities", "removed_entities"}, "the run made or removed no entity"
    for c in reversed(changes):
        g.undo(c.id)
    assert snapshot(g) == start
    assert check_graph(g) == []


SETTINGS = settings(max_examples=1, deadline=None, phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# (domain, problem, accepted changes): the household run is the acceptance figure, the lab
# run adds shapes the household lacks at a fraction of the cost.
SETUPS = {"household": (Domain.load(HOUSEHOLD), (HOUSEHOLD / "world.pddl").read_text(), 2000),
          "lab": (Domain.parse(LAB, "lab"), LAB_PROBLEM, 300)}


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_random_changes_then_undo(store_url: str, setup: str) -> None:
    domain, problem, n = SETUPS[setup]

    @SETTINGS
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        with open_graph(store_url) as g:  # a fresh graph for each run hypothesis makes
            g.clear()
            g.init(domain)
            g.load_problem(problem)
            assert check_graph(g) == []
            random_run(g, data, n)

    run()
