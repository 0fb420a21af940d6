"""MCTS on a world graph: a searcher grounded on the graph's objects, one decision on its current state, and
the beliefs read from the graph, updated with what it knows and stored beside it (its meta key/value
storage, so both backends keep them)."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

from kgplan.domains.formula import Formula, GroundAtom, atoms
from kgplan.domains.model import Domain
from kgplan.graph.world import WorldGraph
from kgplan.planners.grounding import GroundTask
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts.observe import Observer
from kgplan.planners.mcts.priors import Prior
from kgplan.planners.mcts.search import Budget, Decision, Search, Settings
from kgplan.planners.relaxation import Goal

META_KEY = "belief"
EVIDENCE_KEY = "belief_evidence"  # the commonsense prior as first made, and where items were found


def read_beliefs(graph: WorldGraph) -> dict[str, bl.Dist]:
    """Every stored belief, by item."""
    return json.loads(graph.get_meta(META_KEY) or "{}")


def read_belief(graph: WorldGraph, item: str) -> bl.Dist | None:
    """The stored belief about one item, or None."""
    return read_beliefs(graph).get(item)


def write_beliefs(graph: WorldGraph, beliefs: Mapping[str, bl.Dist]) -> None:
    """Store beliefs (replacing those of the same items)."""
    graph.set_meta({META_KEY: json.dumps({**read_beliefs(graph), **beliefs}, sort_keys=True)})


def beliefs_for(graph: WorldGraph, spec: bl.BeliefSpec, items: Sequence[str], make: bl.BeliefPrior | None,
                facts: set[GroundAtom], objects: Mapping[str, str], fresh: bool = False,
                average: bool = True, kind: str = "") -> dict[str, bl.Dist]:
    """The beliefs about `items`, written back: the prior (commonsense from `make`, else uniform; made once
    per item and stored with the evidence and the name of its belief `kind`, whose change starts the evidence
    anew; made anew for an item found before and unknown again, and for every item if `fresh`: a prior that
    learns as the graph sees) mixed with
    a uniform belief by how well it has predicted where this episode's items were found and were not
    (`bl.reliability`; not if `average` is off: the prior as made), given what the graph knows."""
    places = bl.places(spec, graph.domain, objects)
    evidence = json.loads(graph.get_meta(EVIDENCE_KEY) or '{"prior": {}, "found": {}}')
    if evidence.get("kind", kind) != kind:
        evidence = {"prior": {}, "found": {}}
    evidence["kind"] = kind
    prior, found = evidence["prior"], evidence["found"]
    if missing := [i for i in items if fresh or i not in prior or i in found]:
        for i in missing:
            found.pop(i, None)
        prior |= make({i: objects[i] for i in missing}, places) if make else bl.uniform(missing, list(places))
    located = {a[0]: a[1] for p, a in facts if p == spec.located}
    found |= {i: located[i] for i in prior if i in located and i not in found}
    searched = {a[0] for p, a in facts if p == spec.searched}
    weight = bl.reliability({i: prior[i] for i in {*found, *items}}, found, searched, places) if average else 1.0
    beliefs = {i: {located[i]: 1.0} if i in located else bl.mixed(prior[i], weight, places, searched)
               for i in items}
    graph.set_meta({EVIDENCE_KEY: json.dumps(evidence, sort_keys=True)})
    write_beliefs(graph, beliefs)
    return beliefs


def sightings(graph: WorldGraph, spec: bl.BeliefSpec) -> bl.Counts:
    """Where the graph's sensors have seen items of each kind (item kind -> place -> times), from its history."""
    out: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for change in graph.history():
        if change.delta.source == "sensor" and change.undo_of is None:
            for f in change.delta.add:
                if f.predicate == spec.located:
                    out[bl.kind_of(f.args[0])][f.args[1]] += 1
    return {k: dict(c) for k, c in out.items()}


def relevant(domain: Domain, spec: bl.BeliefSpec, objects: Mapping[str, str], goal: Formula) -> dict[str, str]:
    """The objects to ground: everything but the items (of the belief's item type) the goal does not name."""
    named = {a for at in atoms(goal) for a in at.args}
    return {o: t for o, t in objects.items() if o in named or not domain.is_subtype(t, spec.item)}


def unknown_in_goal(graph: WorldGraph, goal: Formula) -> list[str]:
    """The goal's items whose place the graph does not know (empty: the symbolic planner can take over)."""
    domain = graph.domain
    spec = bl.BeliefSpec.of(domain)
    objects, facts, _ = graph.snapshot()
    named = {a for at in atoms(goal) for a in at.args}
    return [i for i in unknown_items(graph, spec, objects, set(facts)) if i in named]


def unknown_items(graph: WorldGraph, spec: bl.BeliefSpec, objects: Mapping[str, str],
                  facts: set[GroundAtom]) -> list[str]:
    """Items whose place the graph does not know: marked unknown (open world), or with no known place."""
    marked = {u.entity for u in graph.unknowns() if u.predicate == spec.located}
    return bl.unknown_items(spec, graph.domain, objects, facts, marked)


def searcher(graph: WorldGraph, goal: Formula, prior: Prior, rollout_prior: Prior, settings: Settings | None = None,
             rng: random.Random | None = None) -> Search:
    """A searcher for `goal` on the graph's objects (grounded once: reuse it for the episode)."""
    domain = graph.domain
    spec = bl.BeliefSpec.of(domain)
    objects, facts, _ = graph.snapshot()
    task = GroundTask(domain, relevant(domain, spec, objects, goal), set(facts))
    items = [o for o, t in task.objects.items() if domain.is_subtype(t, spec.item)]
    return Search(task, Goal(goal, task), Observer(spec, task, items), prior, rollout_prior, settings, rng)


def decide(graph: WorldGraph, search: Search, budget: Budget, prior: bl.BeliefPrior | None = None,
           history: tuple[str, ...] = (), lock: AbstractContextManager = nullcontext(), kind: str = "") -> Decision:
    """One decision on the graph's current state and belief (initialised with the commonsense `prior` of the
    belief `kind`, or uniform, for unknown items that have none yet or a prior of another kind; updated with
    what the graph knows, averaged with
    uniform if the search's settings say `averaging`; stored). A lifelong
    prior is given the graph's sightings. `lock` is held while the belief is read, updated and stored, not
    while the search runs (it reads the state read then)."""
    spec = bl.BeliefSpec.of(graph.domain)
    fresh = isinstance(prior, bl.Lifelong)
    if fresh:
        prior = dataclasses.replace(prior, seen=sightings(graph, spec))
    with lock:
        objects, facts, _ = graph.snapshot()
        unknown = [i for i in unknown_items(graph, spec, objects, set(facts)) if i in search.observe.items]
        beliefs = beliefs_for(graph, spec, unknown, prior, set(facts), objects, fresh, search.settings.averaging,
                              kind)
    known = frozenset(a for a in facts if all(x in search.task.objects for x in a[1]))
    return search.decide(known, beliefs, budget, history)
