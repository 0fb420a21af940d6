"""Mutex groups (state invariants) of a PDDL domain via Fast Downward's invariant synthesis.

Fast Downward's translator proves lifted invariants of the form "for every instantiation of
the parameters, at most one atom of the group is true", checked to be preserved by every
action schema. Like any inductive invariant, a group holds in every state reachable from an
initial state that satisfies it.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fast_downward.translate import invariant_finder, invariants, normalize, options, pddl
from fast_downward.translate.pddl.conditions import Condition
from fast_downward.translate.pddl_parser import ParseError, lisp_parser, parsing_functions

_VARIABLES = "xyzuvwrst"


@dataclass(frozen=True)
class InvariantPart:
    """One predicate of a mutex group.

    ``key_positions[i]`` is the argument position holding the group's i-th parameter;
    ``counted_position`` is the position that varies within a group instance (or None).
    """

    predicate: str
    key_positions: tuple[int, ...]
    counted_position: int | None

    @property
    def arity(self) -> int:
        """Number of arguments of the predicate."""
        return len(self.key_positions) + (self.counted_position is not None)

    def key(self, args: tuple[str, ...]) -> tuple[str, ...]:
        """The group instance (parameter values) that an atom with these arguments belongs to."""
        return tuple(args[pos] for pos in self.key_positions)

    def pattern(self, names: tuple[str, ...]) -> str:
        """Render the part, e.g. ``in_agent_hand(?x, *)`` for parameter names ``("?x",)``."""
        args = ["*"] * self.arity
        for name, pos in zip(names, self.key_positions, strict=True):
            args[pos] = name
        return f"{self.predicate}({', '.join(args)})"


@dataclass(frozen=True)
class MutexGroup:
    """Parts of which at most one atom is true per instantiation of the group's parameters.

    ``exactly_one`` means every action that may delete an atom of an instance also adds an
    atom of the same instance, so "exactly one" is preserved once it holds.
    """

    parts: tuple[InvariantPart, ...]
    exactly_one: bool

    @property
    def arity(self) -> int:
        """Number of group parameters (identical for all parts)."""
        return len(self.parts[0].key_positions)

    def describe(self) -> str:
        """Short English rendering of the invariant."""
        names = tuple(
            f"?{_VARIABLES[i]}" if i < len(_VARIABLES) else f"?x{i}" for i in range(self.arity)
        )
        quantity = "exactly one" if self.exactly_one else "at most one"
        text = f"{quantity} of {', '.join(part.pattern(names) for part in self.parts)} holds"
        return f"{text} for each {', '.join(names)}" if names else text


def synthesize_invariants(
    domain_pddl: str, problem_pddl: str | None = None, timeout_s: float = 30
) -> list[MutexGroup]:
    """Synthesize the mutex groups of a domain (whose types contain no ``either``).

    The analysis is lifted and uses only the action schemas. If ``problem_pddl`` is given
    (its ``:goal`` may be missing), groups that its initial state violates are dropped, so
    the rest hold in all states reachable from it; otherwise a minimal problem is parsed.
    Only groups that constrain states are kept. Dropped are: single-predicate groups without
    a counted position (a set of atoms never holds an atom twice); groups none of whose
    predicates is added by any action (any grouping of such atoms is trivially preserved,
    so it says nothing about the domain); groups implied by a larger one (a superset of
    parts, exactly-one if the smaller is). ``timeout_s`` bounds the CPU time of the
    search; when it runs out, the groups proven so far are returned. Not thread-safe:
    Fast Downward keeps its options in a module global (restored afterwards).

    Raises ValueError if Fast Downward rejects the PDDL.
    """
    previous = options.options
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            domain = lisp_parser.parse_nested_list(domain_pddl.splitlines())
            problem = _with_goal(
                lisp_parser.parse_nested_list(
                    (problem_pddl or _minimal_problem(domain)).splitlines()
                )
            )
            options.options = options.parse_args(["domain.pddl", "problem.pddl"])
            options.options.invariant_generation_max_time = timeout_s
            task = parsing_functions.parse_task(domain, problem)
            normalize.normalize(task)
            found = list(invariant_finder.find_invariants(task, None))
    except (ParseError, StopIteration, SystemExit) as exc:
        raise ValueError(f"Fast Downward could not process the PDDL: {exc}") from exc
    finally:
        options.options = previous

    added = {
        eff.literal.predicate for a in task.actions for eff in a.effects if not eff.literal.negated
    }
    groups = []
    for invariant in found:
        parts = tuple(_convert(part) for part in sorted(invariant.parts))
        if len(parts) == 1 and parts[0].counted_position is None:
            continue
        if not added & {part.predicate for part in parts} or _violated(parts, task.init):
            continue
        groups.append(MutexGroup(parts, _preserves_exactly_one(parts, task.actions)))
    kept = [g for g in groups if not any(_subsumes(h, g) for h in groups)]
    return sorted(kept, key=lambda g: [(p.predicate, p.key_positions) for p in g.parts])


def _subsumes(big: MutexGroup, small: MutexGroup) -> bool:
    """Whether ``big`` implies everything ``small`` says (a superset of its parts)."""
    return set(small.parts) < set(big.parts) and (big.exactly_one or not small.exactly_one)


def _minimal_problem(domain: list[Any]) -> str:
    """An empty problem for the parsed domain, so that Fast Downward can parse the domain."""
    header = domain[1] if len(domain) > 1 else None
    name = header[1] if isinstance(header, list) and len(header) == 2 else "domain"
    return f"(define (problem invariants) (:domain {name}) (:objects) (:init) (:goal (and)))"


def _with_goal(problem: list[Any]) -> list[Any]:
    """The parsed problem with a trivial goal inserted after ``:init`` if it has none."""
    tags = [entry[0] if isinstance(entry, list) and entry else None for entry in problem]
    if ":goal" in tags or ":init" not in tags:
        return problem
    at = tags.index(":init") + 1
    return [*problem[:at], [":goal", ["and"]], *problem[at:]]


def _violated(parts: tuple[InvariantPart, ...], init: Iterable[Any]) -> bool:
    """Whether some group instance has more than one true atom in the initial state."""
    by_predicate = {part.predicate: part for part in parts}
    seen: set[tuple[str, ...]] = set()
    for atom in init:
        if isinstance(atom, pddl.Atom) and atom.predicate in by_predicate:
            key = by_predicate[atom.predicate].key(atom.args)
            if key in seen:
                return True
            seen.add(key)
    return False


def _convert(part: invariants.InvariantPart) -> InvariantPart:
    """Translate Fast Downward's part (argument -> parameter index) into key positions."""
    arity = len(part.args) - (part.omitted_pos is not None)
    return InvariantPart(
        part.predicate, tuple(part.args.index(i) for i in range(arity)), part.omitted_pos
    )


def _literals(condition: Condition) -> frozenset[pddl.Literal] | None:
    """The literals of a (normalized) conjunctive condition, or None if it is not one."""
    if isinstance(condition, pddl.Truth):
        return frozenset()
    if isinstance(condition, pddl.Literal):
        return frozenset({condition})
    if isinstance(condition, pddl.Conjunction) and all(
        isinstance(part, pddl.Literal) for part in condition.parts
    ):
        return frozenset(condition.parts)
    return None


def _preserves_exactly_one(
    parts: tuple[InvariantPart, ...], actions: Iterable[pddl.Action]
) -> bool:
    """Whether each delete effect on the group comes with an add effect on the same instance.

    Conservative: the add effect must fire whenever the delete effect does, i.e. its
    condition consists of literals known from the precondition, the delete effect's
    condition and the deleted atom, and it is quantified like the delete effect (or not).
    """
    by_predicate = {part.predicate: part for part in parts}

    def key(literal: pddl.Literal) -> tuple[str, ...]:
        return by_predicate[literal.predicate].key(literal.args)

    for action in actions:
        effects = [e for e in action.effects if e.literal.predicate in by_predicate]
        adds = [e for e in effects if not e.literal.negated]
        precondition = _literals(action.precondition) or frozenset()
        for delete in (e for e in effects if e.literal.negated):
            known = precondition | (_literals(delete.condition) or frozenset())
            known |= {delete.literal.negate()}
            if not any(
                key(add.literal) == key(delete.literal)
                and (not add.parameters or add.parameters == delete.parameters)
                and (conditions := _literals(add.condition)) is not None
                and conditions <= known
                for add in adds
            ):
                return False
    return True
