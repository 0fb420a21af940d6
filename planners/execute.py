"""Executing a plan on the world graph: one verified change per action, provenance `plan`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from domains.formula import quantifiers
from domains.model import Action
from graph.base import ChangeRefused, WorldGraph, atom_of, fact_of
from graph.model import Delta
from planners.state import Failure, PlanError, State, Step


@dataclass
class Execution:
    """How far a plan got: the changes applied and, if it stopped, why."""

    changes: list[int] = field(default_factory=list)
    failure: Failure | None = None

    @property
    def done(self) -> bool:
        return self.failure is None


def _quantified_types(act: Action) -> set[tuple[str, ...]]:
    """Types an action quantifies over (forall effects, quantified conditions)."""
    out = {p.types for e in act.effects for p in e.params}
    for f in (act.precondition, *(e.condition for e in act.effects)):
        out |= {p.types for q in quantifiers(f) for p in q.params}
    return out


def execute(graph: WorldGraph, plan: Sequence[Step], why: str = "") -> Execution:
    """Apply `plan` step by step, each step's preconditions checked on the graph as it is now.

    Stops at the first step that cannot run (its preconditions no longer hold, or the change
    is refused by verification), with the failure; earlier steps stay applied.
    """
    domain = graph.domain
    objects = {e.name: e.type for e in graph.entities()}
    nullary = [p for p, pred in domain.predicates.items() if pred.arity == 0]
    out = Execution()
    for i, step in enumerate(plan, 1):
        act = domain.actions.get(step.action)
        names = set(step.args) | set(domain.constants)
        if act is not None:
            for types in _quantified_types(act):
                names |= {o for o, t in objects.items() if domain.accepts(types, t)}
        facts = [*graph.facts_about(names), *(f for p in nullary for f in graph.facts(p))]
        state = State(domain, objects, map(atom_of, facts))
        try:
            act, b = state.bind(step)
        except PlanError as e:
            out.failure = Failure(i, str(step), str(e))
            return out
        if (bad := state.failed_conjunct(act.precondition, b)) is not None:
            out.failure = Failure(i, str(step), f"precondition {bad} no longer holds in the graph")
            return out
        added, removed = state.apply(step)
        delta = Delta(add=[fact_of(a) for a in sorted(added)], remove=[fact_of(a) for a in sorted(removed)],
                      source="plan", text=f"{why + ': ' if why else ''}step {i}/{len(plan)} {step}")
        try:
            out.changes.append(graph.apply(delta).id)
        except ChangeRefused as e:
            out.failure = Failure(i, str(step), f"the change was refused: {e.issues[0]}")
            return out
    return out
