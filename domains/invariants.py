"""Mutex groups (state invariants) of a PDDL domain via Fast Downward's invariant synthesis.

Fast Downward's translator proves lifted invariants of the form "for every instantiation of
the parameters, at most one atom of the group is true", checked to be preserved by every
action schema. Like any inductive invariant, a group holds in every state reachable from an
initial state that satisfies it, so a store keeps only the groups its initial state satisfies.
Groups are also declared in domain.toml or mined from a graph (for predicates no action changes).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from fast_downward.translate import invariant_finder, invariants, normalize, options, pddl
from fast_downward.translate.pddl.conditions import Condition
from fast_downward.translate.pddl_parser import ParseError, lisp_parser, parsing_functions

from kgplan.domains.formula import GroundAtom
from kgplan.errors import DomainError

if TYPE_CHECKING:
    from kgplan.domains.model import Domain

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
    atom of the same instance, so "exactly one" is preserved once it holds. ``origin`` is
    ``derived`` (synthesised from the actions), ``declared`` (domain.toml) or ``mined`` (from a
    graph, accepted by the user).
    """

    parts: tuple[InvariantPart, ...]
    exactly_one: bool
    origin: str = field(default="derived", compare=False)

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

    def overcrowded(self, atoms: Iterable[GroundAtom]) -> tuple[GroundAtom, ...] | None:
        """Atoms of one group instance with more than one true atom, or None if the atoms satisfy it."""
        by_predicate = {part.predicate: part for part in self.parts}
        seen: dict[tuple[str, ...], GroundAtom] = {}
        for atom in atoms:
            if (part := by_predicate.get(atom[0])) is not None:
                key = part.key(atom[1])
                if key in seen:
                    return seen[key], atom
                seen[key] = atom
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (see ``from_dict``)."""
        parts = [{"predicate": p.predicate, "key": list(p.key_positions), "counted": p.counted_position}
                 for p in self.parts]
        return {"parts": parts, "exactly_one": self.exactly_one, "origin": self.origin}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MutexGroup:
        parts = tuple(InvariantPart(p["predicate"], tuple(p["key"]), p["counted"]) for p in d["parts"])
        return cls(parts, d["exactly_one"], d["origin"])


def dump_groups(groups: Iterable[MutexGroup]) -> str:
    """Groups as JSON text, as a store keeps them."""
    return json.dumps([g.to_dict() for g in groups])


def load_groups(text: str) -> list[MutexGroup]:
    """Groups from ``dump_groups`` text."""
    return [MutexGroup.from_dict(d) for d in json.loads(text)]


@dataclass(frozen=True)
class Dropped:
    """A synthesised group the initial state violates, with the atoms of one overcrowded instance."""

    group: MutexGroup
    witness: tuple[GroundAtom, ...]

    def describe(self) -> str:
        atoms = " and ".join(f"({' '.join((p, *args))})" for p, args in self.witness)
        return f"{self.group.describe()}: dropped, the initial state has {atoms}"


@dataclass(frozen=True)
class Synthesis:
    """Groups kept for an initial state, those it violates, and whether the search ran to the end."""

    kept: list[MutexGroup]
    dropped: list[Dropped]
    complete: bool


def synthesize_invariants(
    domain_pddl: str, init: Iterable[GroundAtom] = (), timeout_s: float = 300
) -> Synthesis:
    """Synthesize the mutex groups of a domain (whose types contain no ``either``) for a start state.

    The analysis is lifted and uses only the action schemas, so it holds for any objects (the
    graph later gains entities no problem named); groups that the initial state ``init``
    violates are dropped, so the rest hold in all states reachable from it (Fast Downward
    filters by the problem's initial state the same way). Only groups that constrain states
    are kept. Left out are: single-predicate groups without a counted position (a set of atoms
    never holds an atom twice); groups none of whose predicates is added by any action (any
    grouping of such atoms is trivially preserved, so it says nothing about the domain); groups
    implied by a larger kept one (a superset of parts, exactly-one if the smaller is).
    ``timeout_s`` bounds the CPU time of the search; when it runs out, the groups proven so far
    are returned and ``complete`` is False.

    Raises DomainError if Fast Downward rejects the PDDL.
    """
    candidates, complete = _candidates(domain_pddl, timeout_s)
    by_predicate: dict[str, list[GroundAtom]] = defaultdict(list)
    for atom in init:
        by_predicate[atom[0]].append(atom)
    violated = {g: w for g in candidates
                if (w := g.overcrowded(a for p in g.parts for a in by_predicate[p.predicate])) is not None}
    groups = [g for g in candidates if g not in violated]
    kept = [g for g in groups if not any(_subsumes(h, g) for h in groups)]
    dropped = [Dropped(g, violated[g]) for g in _sorted(violated)
               if not any(_subsumes(h, g) for h in violated)]
    return Synthesis(_sorted(kept), dropped, complete)


def _sorted(groups: Iterable[MutexGroup]) -> list[MutexGroup]:
    return sorted(groups, key=lambda g: [(p.predicate, p.key_positions) for p in g.parts])


def fd_invariants(domain_pddl: str, timeout_s: float) -> tuple[Any, tuple[Any, ...], bool]:
    """Fast Downward's invariant synthesis on a domain alone (an empty problem, so its invariants hold in every
    problem of the domain): the normalised task, the invariants it proves and whether the search finished
    within `timeout_s` seconds of CPU. The one place kgplan runs the synthesis: the store's invariants
    (`synthesize_invariants`) and the planner worker's translator (`kgplan.planners.worker`) both come from it.

    Raises DomainError if Fast Downward rejects the PDDL. Not thread-safe: Fast Downward keeps its options in
    a module global (restored afterwards)."""
    previous = options.options
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log):
            domain = lisp_parser.parse_nested_list(domain_pddl.splitlines())
            problem = lisp_parser.parse_nested_list(_minimal_problem(domain).splitlines())
            options.options = options.parse_args(["domain.pddl", "problem.pddl"])
            options.options.invariant_generation_max_time = timeout_s
            task = parsing_functions.parse_task(domain, problem)
            normalize.normalize(task)
            found = tuple(invariant_finder.find_invariants(task, None))
    except (ParseError, StopIteration, SystemExit) as exc:
        raise DomainError(f"Fast Downward could not process the PDDL: {exc}") from exc
    finally:
        options.options = previous
    return task, found, "Time limit reached" not in log.getvalue()


@functools.lru_cache(maxsize=16)
def _candidates(domain_pddl: str, timeout_s: float) -> tuple[tuple[MutexGroup, ...], bool]:
    """The groups Fast Downward proves for the domain (before any initial state), and whether
    the search finished."""
    task, found, complete = fd_invariants(domain_pddl, timeout_s)
    added = {
        eff.literal.predicate for a in task.actions for eff in a.effects if not eff.literal.negated
    }
    groups = []
    for invariant in found:
        parts = tuple(_convert(part) for part in sorted(invariant.parts))
        if len(parts) == 1 and parts[0].counted_position is None:
            continue
        if added & {part.predicate for part in parts}:
            groups.append(MutexGroup(parts, _preserves_exactly_one(parts, task.actions)))
    return tuple(groups), complete


def _subsumes(big: MutexGroup, small: MutexGroup) -> bool:
    """Whether ``big`` implies everything ``small`` says (a superset of its parts)."""
    return set(small.parts) < set(big.parts) and (big.exactly_one or not small.exactly_one)


def _minimal_problem(domain: list[Any]) -> str:
    """An empty problem for the parsed domain, so that Fast Downward can parse the domain."""
    header = domain[1] if len(domain) > 1 else None
    name = header[1] if isinstance(header, list) and len(header) == 2 else "domain"
    return f"(define (problem invariants) (:domain {name}) (:objects) (:init) (:goal (and)))"


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


CHANCE = 0.05  # a mined group is proposed only if so few atoms would miss each other by chance this rarely


@dataclass(frozen=True)
class Mined:
    """Groups a graph satisfies for predicates no action changes, and why others were not proposed."""

    suggested: list[MutexGroup]
    notes: list[str]
    glosses: list[str] = field(default_factory=list)  # each suggestion in English, in the same order


def mine_invariants(domain: Domain, entities: dict[str, str], facts: Iterable[GroundAtom],
                    known: Iterable[MutexGroup] = ()) -> Mined:
    """Propose exactly-one / at-most-one groups that hold for every entity of a type in a graph.

    For each predicate that no action changes, of arity two or more, and each argument position
    as the counted one (the others are the key): the group is proposed if no key has two atoms;
    exactly-one if every combination of key entities has one, else at-most-one. Only meaningful
    ones: each key position and the counted one must fit at least two entities (counted over the
    entities whose type fits that argument). Only with evidence: if the graph's atoms of the
    predicate had their keys drawn at random among all possible keys, the chance that no two share a
    key (the birthday bound) must be below `CHANCE`, and the counted argument must vary (not one value
    for all): one sample world's coincidence (four people in four of ten rooms: 50%) is no rule.
    Groups in ``known`` are not proposed again. ``entities`` maps names to types (the domain's
    constants are added). Each suggestion has an English gloss (from the predicate's gloss in domain.toml).
    """
    typed = {**domain.constants, **entities}
    by_predicate: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for predicate, args in facts:
        by_predicate[predicate].add(args)
    known = set(known)
    suggested, notes = [], []
    for name in sorted(domain.static_predicates()):
        params = domain.predicates[name].params
        if len(params) < 2:
            continue
        fits = [sum(domain.accepts(p.types, t) for t in typed.values()) for p in params]
        for counted in range(len(params)):
            key = tuple(i for i in range(len(params)) if i != counted)
            part = InvariantPart(name, key, counted)
            pattern = part.pattern(tuple(f"?{_VARIABLES[i]}" for i in range(len(key))))
            few = [i for i in (*key, counted) if fits[i] < 2]
            if few:
                t = " or ".join(params[few[0]].types)
                notes.append(f"{pattern}: not proposed, only {fits[few[0]]} {t} in the graph "
                             "(at least 2 are needed for the constraint to mean something)")
                continue
            per_key = Counter(part.key(args) for args in by_predicate[name])
            if per_key and max(per_key.values()) > 1:
                continue
            combinations = math.prod(fits[i] for i in key)
            group = MutexGroup((part,), len(per_key) == combinations, "mined")
            if group in known or replace(group, exactly_one=True) in known:
                continue
            values = len({args[counted] for args in by_predicate[name]})
            chance = math.prod(1 - i / combinations for i in range(len(per_key)))
            if values < 2 or chance >= CHANCE:
                notes.append(f"{pattern}: not proposed, {len(per_key)} {name} fact(s) over {combinations} possible "
                             f"key(s) with {values} value(s) as * would miss each other by chance "
                             f"{chance:.0%} of the time (evidence needs under {CHANCE:.0%} and 2 values)")
                continue
            suggested.append(group)
    suggested = _sorted(suggested)
    return Mined(suggested, notes, [gloss(domain, g) for g in suggested])


def gloss(domain: Domain, group: MutexGroup) -> str:
    """A one-part group in English, e.g. "for each room ?y, at most one person ?x is such that person ?x is in
    room ?y"."""
    (part,) = group.parts
    params = domain.predicates[part.predicate].params
    words = [f"?{_VARIABLES[i]}" for i in range(len(params))]
    text = domain.gloss(part.predicate, words) if "{" in domain.gloss(part.predicate) else (
        f"({part.predicate} {' '.join(words)})")

    def named(i: int) -> str:
        return f"{' or '.join(params[i].types)} {words[i]}"

    quantity = "exactly one" if group.exactly_one else "at most one"
    keys = " and ".join(named(i) for i in part.key_positions)
    return f"for each {keys}, {quantity} {named(part.counted_position)} is such that {text}"
