"""Planning problems built straight from facts: PDDL text and unified-planning `Problem`s.

Both use the domain with `either` compiled away (widened types plus static type predicates).
The unified-planning problem is built through its API on a parsed copy of the domain, never
by parsing problem text (its PDDL reader is slow on large problems).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from kgplan.domains.formula import Atom, Equals, Formula, GroundAtom, Imply, Not, Or, Quantified
from kgplan.domains.model import TOTAL_COST, Domain, Problem

if TYPE_CHECKING:  # unified-planning is imported only where a `Problem` is built (slow to import)
    import unified_planning.model as upm


@dataclass
class Task:
    """A goal to reach from a set of facts over typed objects (constants come from the domain)."""

    domain: Domain
    objects: dict[str, str]
    facts: set[GroundAtom]
    goal: Formula
    numbers: dict[GroundAtom, float] = field(default_factory=dict)  # static function values

    def init(self) -> list[GroundAtom]:
        """The facts plus the static type facts the compiled domain needs, sorted."""
        types = self.domain.type_facts(self.objects)
        return sorted(set(self.facts) | set(types))

    def values(self) -> list[tuple[GroundAtom, float]]:
        """The static function values over this task's objects (and constants), sorted."""
        known = self.objects.keys() | self.domain.constants.keys()
        return sorted((a, v) for a, v in self.numbers.items() if known.issuperset(a[1]))

    @property
    def has_costs(self) -> bool:
        """Whether plans are measured by (total-cost) (`:action-costs`)."""
        return TOTAL_COST in self.domain.functions

    def to_pddl(self, name: str = "kgplan") -> str:
        """The problem as PDDL text for the compiled domain (`Domain.compiled_pddl`)."""
        d = self.domain
        return Problem(name, d.name, self.objects, self.init(), d.compile_formula(self.goal),
                       dict(self.values())).to_pddl(self.has_costs, d.type_text)

    def to_up(self) -> upm.Problem:
        """The problem as a unified-planning `Problem`."""
        import unified_planning.model as upm

        problem = base_problem(self.domain.compiled_pddl(), self.domain.name if self.has_costs else None).clone()
        problem.name = "kgplan"
        objs = [upm.Object(o, problem.user_type(t)) for o, t in sorted(self.objects.items())]
        problem.add_objects(objs)
        for p, args in self.init():
            problem.set_initial_value(problem.fluent(p)(*map(problem.object, args)), True)
        em = problem.environment.expression_manager
        for (p, args), v in self.values():
            value = em.Int(int(v)) if v == int(v) else em.Real(Fraction(v))
            problem.set_initial_value(problem.fluent(p)(*map(problem.object, args)), value)
        problem.add_goal(up_formula(problem, self.domain, self.domain.compile_formula(self.goal)))
        problem.__class__ = _built_class()
        return problem


@functools.cache
def _built_class() -> type[upm.Problem]:
    """A problem class for complete problems: their kind, which unified-planning recomputes on
    every access (ten times per solve, 40 ms each on household domains), is computed once."""
    import unified_planning.model as upm

    class Built(upm.Problem):
        @functools.cached_property
        def kind(self) -> upm.ProblemKind:  # type: ignore[override]
            return super().kind

    return Built


@functools.lru_cache(maxsize=8)
def base_problem(compiled_pddl: str, costs_of: str | None = None) -> upm.Problem:
    """The compiled domain parsed once by unified-planning (a problem without objects); with
    `costs_of` (the domain's name), its (total-cost) increases become the action costs that
    the quality metric minimises."""
    from unified_planning.io import PDDLReader

    if costs_of is None:
        return PDDLReader().parse_problem_string(compiled_pddl)
    stub = (f"(define (problem costs) (:domain {costs_of}) (:init (= ({TOTAL_COST}) 0)) (:goal (and))"
            f" (:metric minimize ({TOTAL_COST})))")
    return PDDLReader().parse_problem_string(compiled_pddl, stub)


def up_formula(problem: upm.Problem, domain: Domain, f: Formula,
               scope: dict[str, upm.Variable] | None = None) -> upm.FNode:
    """A compiled formula as a unified-planning expression."""
    import unified_planning.model as upm

    em = problem.environment.expression_manager
    scope = scope or {}

    def term(a: str) -> upm.Variable | upm.Object:
        return scope[a] if a in scope else problem.object(a)

    def conv(g: Formula) -> upm.FNode:
        if isinstance(g, Atom):
            return problem.fluent(g.predicate)(*map(term, g.args))
        if isinstance(g, Equals):
            return em.Equals(em.auto_promote(term(g.left))[0], em.auto_promote(term(g.right))[0])
        if isinstance(g, Not):
            return em.Not(conv(g.arg))
        if isinstance(g, Or):
            return em.Or(*map(conv, g.args))
        if isinstance(g, Imply):
            return em.Implies(conv(g.left), conv(g.right))
        if isinstance(g, Quantified):
            vs = [upm.Variable(p.name.lstrip("?"), problem.user_type(domain.type_text(p.types)))
                  for p in g.params]
            body = up_formula(problem, domain, g.body,
                              {**scope, **{p.name: v for p, v in zip(g.params, vs, strict=True)}})
            return (em.Forall if g.kind == "forall" else em.Exists)(body, *vs)
        return em.And(*map(conv, g.args))

    return conv(f)

