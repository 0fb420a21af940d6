"""A domain's actions grounded once into a STRIPS task (as pyperplan's Task and Operator): each operator a
step with precondition, negative precondition, add and delete sets of ground atoms, static preconditions
evaluated once; a state is the frozenset of its true atoms.

Full grounding suits the small object sets of a search episode (planners/mcts). Relevance pruning
(planners/relevance.py) keeps its own lifted exploration, grounded lazily from the reached facts: on
its states of 100k facts grounding every action is out of reach.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kgplan.domains.formula import TRUE, And, Atom, Equals, Formula, GroundAtom, Not
from kgplan.domains.model import Domain
from kgplan.errors import DomainError
from kgplan.planners.state import State, Step, ground

GroundState = frozenset[GroundAtom]


@dataclass(frozen=True)
class GroundOperator:
    step: Step
    pre: frozenset[GroundAtom]
    pre_not: frozenset[GroundAtom]
    add: frozenset[GroundAtom]
    delete: frozenset[GroundAtom]


def literals(f: Formula) -> list[Formula] | None:
    """The conjuncts of a conjunction of literals, or None for anything richer."""
    parts = list(f.args) if isinstance(f, And) else [f]
    ok = all(isinstance(p, Atom | Equals) or (isinstance(p, Not) and isinstance(p.arg, Atom | Equals))
             for p in parts)
    return parts if ok else None


class GroundTask:
    """The ground operators of `domain` over `objects`, static facts taken from `facts`: STRIPS with negative
    preconditions and equality; a domain with other actions is refused. `adders`/`deleters`: the operators
    by the atoms they add/delete (for relaxed plans, planners/relaxation.py)."""

    def __init__(self, domain: Domain, objects: Mapping[str, str], facts: set[GroundAtom]) -> None:
        self.domain, self.objects = domain, dict(objects)
        static = domain.static_predicates()
        self.static = {a for a in facts if a[0] in static}
        probe = State(domain, self.objects, self.static)
        self.operators: list[GroundOperator] = []
        richer = [a.name for a in domain.actions.values() if literals(a.precondition) is None
                  or any(e.condition != TRUE or e.params for e in a.effects)]
        if richer:
            raise DomainError(f"a ground task (MCTS's model) takes STRIPS actions (with negative preconditions and "
                              f"equality) only; these actions of domain {domain.name!r} have quantified or "
                              f"conditional parts: {', '.join(richer)}")
        for act in domain.actions.values():
            lits = literals(act.precondition)
            for b in probe.bindings(act.params):
                step = Step(act.name, tuple(b[p.name] for p in act.params))
                pre, pre_not, fine = set(), set(), True
                for lit in lits or ():
                    positive = not isinstance(lit, Not)
                    inner = lit if positive else lit.arg
                    if isinstance(inner, Equals):
                        fine = (b.get(inner.left, inner.left) == b.get(inner.right, inner.right)) == positive
                    else:
                        atom = ground(inner, b)
                        if atom[0] in static:
                            fine = (atom in self.static) == positive
                        else:
                            (pre if positive else pre_not).add(atom)
                    if not fine:
                        break
                if fine:
                    self.operators.append(GroundOperator(
                        step, frozenset(pre), frozenset(pre_not),
                        frozenset(ground(e.atom, b) for e in act.effects if e.add),
                        frozenset(ground(e.atom, b) for e in act.effects if not e.add)))
        self.index: dict[GroundAtom, list[int]] = {}
        self.always: list[int] = []
        for i, a in enumerate(self.operators):
            if a.pre:
                self.index.setdefault(min(a.pre), []).append(i)
            else:
                self.always.append(i)
        self.by_step = {a.step: i for i, a in enumerate(self.operators)}
        self.adders: dict[GroundAtom, list[GroundOperator]] = {}
        self.deleters: dict[GroundAtom, list[GroundOperator]] = {}
        for a in self.operators:
            for q in a.add:
                self.adders.setdefault(q, []).append(a)
            for q in a.delete:
                self.deleters.setdefault(q, []).append(a)

    def ok(self, i: int, s: GroundState) -> bool:
        """Whether operator `i` is applicable in `s`."""
        a = self.operators[i]
        return a.pre <= s and not (a.pre_not & s)

    def applicable(self, s: GroundState) -> list[int]:
        """Indexes of the operators applicable in `s`."""
        out = [i for i in self.always if self.ok(i, s)]
        for atom in s:
            out += [i for i in self.index.get(atom, ()) if self.ok(i, s)]
        return out

    def apply(self, i: int, s: GroundState) -> GroundState:
        a = self.operators[i]
        return (s - a.delete) | a.add
