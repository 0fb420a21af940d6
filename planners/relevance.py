"""Backward relevance analysis: the part of a state a planner needs for a goal.

Starting from the goal's literals, every literal that does not already hold is regressed
through each action effect that could make it hold. The action's precondition literals are
joined against the state (binding the action's free parameters from the facts that match), and
become new sub-goals; a sub-goal that holds in the state stops the search (a relaxed, delete-free
view). The objects of every fact met on the way, the goal's objects and the agents are kept,
and the pruned state is every fact among the kept objects (the induced sub-state), so that
negative preconditions over kept objects are judged on exactly the facts of the full state.
A plan found on the pruned state uses only kept objects and is checked on the full state.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass

from domains.formula import TRUE, And, Atom, Effect, Formula, Imply, Not, Or, Quantified, quantifiers
from domains.model import Action, Domain
from domains.verify import GroundAtom
from planners.state import Binding, State, substitute

Pattern = tuple[str | None, ...]
Literal = tuple[str, Pattern, bool]  # (predicate, arguments with None for "any", positive)
MAX_BRANCHES = 64  # bindings explored per regression through one action


@dataclass
class Pruned:
    """The objects and facts kept for a goal."""

    objects: dict[str, str]
    facts: set[GroundAtom]


def agents(domain: Domain, state: State) -> list[str]:
    """The objects that act: of the type named by domain.toml's `agent_type` (default `agent`)."""
    t = domain.meta.get("agent_type", "agent")
    return state.of_type((t,)) if t in domain.types else []


def literals(f: Formula, positive: bool = True) -> Iterator[tuple[Atom, bool]]:
    """The atoms of a formula with the polarity in which they occur (both, under `imply`)."""
    if isinstance(f, Atom):
        yield f, positive
    elif isinstance(f, Not):
        yield from literals(f.arg, not positive)
    elif isinstance(f, And | Or):
        for a in f.args:
            yield from literals(a, positive)
    elif isinstance(f, Imply):
        yield from literals(f.left, not positive)
        yield from literals(f.right, positive)
    elif isinstance(f, Quantified):
        yield from literals(f.body, positive)


def ground_goal(state: State, f: Formula) -> Formula:
    """The goal with its quantifiers expanded over the state's objects."""
    if isinstance(f, Quantified):
        parts = tuple(ground_goal(state, substitute(f.body, b)) for b in state.bindings(f.params))
        return And(parts) if f.kind == "forall" else Or(parts)
    if isinstance(f, Not):
        return Not(ground_goal(state, f.arg))
    if isinstance(f, And | Or):
        return type(f)(tuple(ground_goal(state, a) for a in f.args))
    if isinstance(f, Imply):
        return Imply(ground_goal(state, f.left), ground_goal(state, f.right))
    return f


def _pattern(atom: Atom, b: Binding) -> Pattern:
    return tuple(b.get(a) if a.startswith("?") else a for a in atom.args)


def _covers(a: Literal, b: Literal) -> bool:
    """Whether sub-goal `a` asks for (an instance of) what `b` asks for."""
    return a[0] == b[0] and a[2] == b[2] and all(x is None or y is None or x == y
                                                  for x, y in zip(a[1], b[1], strict=True))


class Relevance:
    """Regression over one domain's actions, indexed by the literals their effects produce."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.achievers: dict[tuple[str, bool], list[tuple[Action, Effect]]] = defaultdict(list)
        for act in domain.actions.values():
            for e in act.effects:
                self.achievers[e.atom.predicate, e.add].append((act, e))

    def prune(self, state: State, goal: Formula) -> Pruned:
        """Objects and facts of `state` relevant to reaching `goal`."""
        acting = set(agents(self.domain, state))
        keep = acting | set(self.domain.constants)
        met: set[GroundAtom] = set()
        for a in acting:
            met |= state.about(a)
        queue: deque[tuple[Literal, tuple[Literal, ...]]] = deque()  # (sub-goal, the sub-goals above it)
        for atom, pos in literals(ground_goal(state, goal)):
            keep |= {a for a in atom.args if a in state.objects}
            queue.append(((atom.predicate, tuple(atom.args), pos), ()))
        seen: set[Literal] = set()
        while queue:
            lit, above = queue.popleft()
            if lit in seen:
                continue
            seen.add(lit)
            pred, pattern, pos = lit
            matches = [(pred, args) for args in state.match(pred, pattern)]
            met.update(matches)
            if bool(matches) == pos:  # holds already (for some instance)
                continue
            path = (*above, lit)
            for target in [pattern] if pos else [args for _, args in matches]:
                for act, eff in self.achievers.get((pred, pos), ()):
                    b = self._unify(state, act, eff, target)
                    if b is None:
                        continue
                    body = And((act.precondition, eff.condition)) if eff.condition != TRUE \
                        else act.precondition
                    for q in quantifiers(body):
                        keep |= {o for p in q.params for o in state.of_type(p.types)}
                    for subgoals in self._regress(state, act, list(literals(body)), b, acting):
                        # a way that needs what it is meant to achieve is useless in a delete-free view
                        if not any(_covers(s, a) for s in subgoals for a in path):
                            queue.extend((s, path) for s in subgoals)
        keep |= {a for _, args in met for a in args}
        facts = {f for o in keep for f in state.about(o) if all(a in keep for a in f[1])}
        facts |= {f for f in state.facts if not f[1]}
        return Pruned({o: state.objects[o] for o in keep if o not in self.domain.constants}, facts)

    def _types(self, act: Action, eff: Effect | None = None) -> dict[str, tuple[str, ...]]:
        return {p.name: p.types for p in (*act.params, *(eff.params if eff else ()))}

    def _unify(self, state: State, act: Action, eff: Effect, target: Pattern) -> Binding | None:
        """Bind the action's parameters so that the effect's atom matches `target`."""
        types = self._types(act, eff)
        b: Binding = {}
        for var, value in zip(eff.atom.args, target, strict=True):
            if value is None:
                continue
            if not var.startswith("?"):
                if var != value:
                    return None
            elif b.setdefault(var, value) != value or not self.domain.accepts(
                    types[var], state.objects.get(value, "")):
                return None
        return b

    def _regress(self, state: State, act: Action, lits: list[tuple[Atom, bool]], b: Binding,
                 acting: set[str]) -> Iterator[list[Literal]]:
        """The sub-goals of an action's condition literals, one list per way of binding its free
        parameters by joining positive literals with the state."""
        types = self._types(act)
        pending: list[tuple[Binding, list[tuple[Atom, bool]], list[Literal]]] = [(b, lits, [])]
        branches = 0
        while pending:
            b, rest, found = pending.pop()
            if not rest:
                yield found
                continue
            # bind from the literal with the most bound arguments first, the agents' own (which
            # plans change) last: its matches bind the others
            rest = sorted(rest, key=lambda lp: (any(b.get(a, a) in acting for a in lp[0].args),
                                                -sum(x is not None for x in _pattern(lp[0], b))))
            (atom, pos), rest = rest[0], rest[1:]
            pattern = _pattern(atom, b)
            free = [v for v, x in zip(atom.args, pattern, strict=True) if x is None and v.startswith("?")]
            extended = []
            if pos and free and any(x is not None for x in pattern) and branches < MAX_BRANCHES:
                for args in state.match(atom.predicate, pattern):
                    nb = {**b, **dict(zip(atom.args, args, strict=True))}
                    if all(v not in types or self.domain.accepts(types[v], state.objects[nb[v]])
                           for v in free):
                        extended.append(nb)
                extended = extended[: MAX_BRANCHES - branches]
                branches += len(extended)
            for nb in extended or [b]:  # each binding records the literal as it binds it
                lit = _pattern(atom, nb)
                if any(x is not None for x in lit) or not lit:  # an unbound literal says nothing
                    pending.append((nb, rest, [*found, (atom.predicate, lit, pos)]))
                else:
                    pending.append((nb, rest, found))
