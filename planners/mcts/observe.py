"""What the agent sees in a simulated state, from the domain's [belief] table (`visible` over ?p)."""

from __future__ import annotations

from collections.abc import Sequence

from kgplan.domains.formula import Atom, GroundAtom, Not, parse_formula
from kgplan.domains.sexpr import read
from kgplan.errors import DomainError
from kgplan.planners.grounding import GroundState, GroundTask, literals
from kgplan.planners.mcts import belief as bl
from kgplan.planners.relaxation import Goal
from kgplan.planners.state import ground, substitute


class Observer:
    """What the agent sees after an action: the `located` facts at every place where `visible` holds;
    `reach[p]`: the goal of seeing place p (`visible` at p)."""

    def __init__(self, spec: bl.BeliefSpec, task: GroundTask, items: Sequence[str]) -> None:
        self.located, self.items = spec.located, set(items)
        self.places: list[str] = []
        self.checks: list[tuple[frozenset[GroundAtom], frozenset[GroundAtom], list[GroundAtom]]] = []
        self.reach: dict[str, Goal] = {}
        if spec.visible is None:
            return
        f = parse_formula(read(spec.visible, "[belief] visible")[0], "[belief] visible")
        if (lits := literals(f)) is None:
            raise DomainError(f"[belief] visible must be a conjunction of literals over ?p: {spec.visible}")
        for p in bl.places(spec, task.domain, task.objects):
            b = {"?p": p}
            pos = frozenset(ground(a, b) for a in lits if isinstance(a, Atom))
            neg = frozenset(ground(a.arg, b) for a in lits if isinstance(a, Not) and isinstance(a.arg, Atom))
            self.checks.append((pos, neg, [(spec.located, (i, p)) for i in items]))
            self.places.append(p)
            self.reach[p] = Goal(substitute(f, b), task)

    def __call__(self, s: GroundState) -> frozenset[GroundAtom]:
        out: list[GroundAtom] = []
        for pos, neg, located in self.checks:
            if pos <= s and not (neg & s):
                out += [a for a in located if a in s]
        return frozenset(out)

    def visible(self, s: GroundState) -> list[str]:
        """The places whose contents the agent sees in `s`."""
        return [p for p, (pos, neg, _) in zip(self.places, self.checks, strict=True) if pos <= s and not (neg & s)]
