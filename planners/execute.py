"""Executing a plan on the world graph: one verified change per action, provenance `plan`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kgplan.domains.formula import quantifiers
from kgplan.domains.model import Action
from kgplan.domains.verify import ChangeRefused
from kgplan.graph.model import Delta, Fact
from kgplan.graph.store import Tx
from kgplan.graph.world import WorldGraph
from kgplan.planners.state import Failure, PlanError, State, Step, simulate
from kgplan.planners.whynot import Cause


@dataclass
class Execution:
    """How far a plan got: the changes applied and, if it stopped, why."""

    changes: list[int] = field(default_factory=list)
    failure: Failure | None = None
    why: Cause | None = None  # the failing step's unmet precondition and what changed it (planners/whynot.py)

    @property
    def done(self) -> bool:
        return self.failure is None


def _quantified_types(act: Action) -> set[tuple[str, ...]]:
    """Types an action quantifies over (forall effects, quantified conditions)."""
    out = {p.types for e in act.effects for p in e.params}
    for f in (act.precondition, *(e.condition for e in act.effects)):
        out |= {p.types for q in quantifiers(f) for p in q.params}
    return out


def stale(graph: WorldGraph, plan: Sequence[Step]) -> Failure | None:
    """The first step of `plan` that cannot run on the graph's current state (the plan simulated from it, the
    goal not checked: a decision's one-step plan does not reach it); None if every step can."""
    return simulate(State(graph.domain, *graph.snapshot()), plan, None)


class _Stop(Exception):
    """A step cannot run: its reason."""


def execute(graph: WorldGraph, plan: Sequence[Step], why: str = "") -> Execution:
    """Apply `plan` step by step, each step's preconditions checked on the graph as it is now.

    Each step is read, checked and written in one write transaction, so no concurrent change
    can come between its check and its write. Stops at the first step that cannot run (its
    preconditions no longer hold, or the change is refused by verification), with the failure;
    earlier steps stay applied.
    """
    domain = graph.domain
    nullary = [p for p, pred in domain.predicates.items() if pred.arity == 0]
    out = Execution()
    for i, step in enumerate(plan, 1):

        def make(tx: Tx, i: int = i, step: Step = step) -> Delta:
            act = domain.actions.get(step.action)
            quantified = _quantified_types(act) if act is not None else set()
            if quantified:
                everything = {e.name: e.type for e in tx.entities()}
                objects = {o: t for o, t in everything.items()
                           if o in step.args or any(domain.accepts(ts, t) for ts in quantified)}
            else:
                objects = tx.entity_types(step.args)
            names = set(objects) | set(domain.constants)
            state = State(domain, objects, [*tx.facts_about(names), *tx.facts_of(nullary)])
            try:
                act, b = state.bind(step)
            except PlanError as e:
                raise _Stop(str(e)) from e
            if (bad := state.failed_conjunct(act.precondition, b)) is not None:
                raise _Stop(f"precondition {bad} no longer holds in the graph")
            added, removed = state.apply(step)
            return Delta(add=[Fact.of(a) for a in sorted(added)], remove=[Fact.of(a) for a in sorted(removed)],
                         source="plan", text=f"{why + ': ' if why else ''}step {i}/{len(plan)} {step}")

        try:
            out.changes.append(graph.apply_from(make).id)
        except _Stop as e:
            out.failure = Failure(i, str(step), str(e))
            return out
        except ChangeRefused as e:
            out.failure = Failure(i, str(step), f"the change was refused: {e.issues[0]}")
            return out
    return out
