"""Prior policies of the tree search: P(a | history, belief) over a node's actions. The LLM's prior (MC-DML)
lives in the language layer (kgplan.language.mcts) and implements the same protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from kgplan.domains.model import Domain
from kgplan.planners.state import Step

Beliefs = Mapping[str, Mapping[str, float]]


class Prior(Protocol):
    """P(a | history, belief) over the given actions (summing to 1); `llm_calls` counts its LLM calls. The
    hooks are no-ops unless a prior needs them (subclass to inherit those)."""

    llm_calls: int

    def __call__(self, history: tuple[str, ...], actions: Sequence[Step], beliefs: Beliefs) -> list[float]: ...

    def limit_calls(self, calls: int | None) -> None:
        """At the start of a decision: at most `calls` more LLM calls in it (None: no limit set)."""

    def reflect(self, trajectory: Sequence[str]) -> None:
        """After a decision whose simulations all failed: `trajectory`, the line of play it tried most."""


class UniformPrior(Prior):
    llm_calls = 0

    def __call__(self, history: tuple[str, ...], actions: Sequence[Step], beliefs: Beliefs) -> list[float]:
        return [1 / len(actions)] * len(actions)


class BeliefMassPrior(Prior):
    """P(a): the belief's probability that an unknown item is at a place the action acts on (an argument of
    a fact it adds or deletes, but not the source of a fact it moves: walk's `from`), floored; uniform
    when no action reaches an unknown item."""

    llm_calls = 0

    def __init__(self, domain: Domain, floor: float = 0.01) -> None:
        self.floor = floor
        self.leads_to: dict[str, list[int]] = {}
        for act in domain.actions.values():
            moved = {e.atom.predicate for e in act.effects if e.add}
            names = {x for e in act.effects if e.add or e.atom.predicate not in moved for x in e.atom.args}
            self.leads_to[act.name] = [i for i, p in enumerate(act.params) if p.name in names]

    def __call__(self, history: tuple[str, ...], actions: Sequence[Step], beliefs: Beliefs) -> list[float]:
        import numpy as np  # here, not at import: the CLI's start need not load it

        mass = np.array([sum(d.get(a.args[i], 0.0) for d in beliefs.values() for i in self.leads_to[a.action])
                         for a in actions])
        w = mass / mass.sum() if mass.sum() > 0 else np.full(len(actions), 1 / len(actions))
        w = np.maximum(w, self.floor)
        return (w / w.sum()).tolist()
