"""The whole-graph check: every typing and invariant violation in a stored graph.

Independent of incremental verification (`domains.verify`): it reads the whole graph and
judges each entity and fact on its own, so it also catches what a bulk import, a manual
edit in Neo4j or a verification bug let in.
"""

from __future__ import annotations

import math
from collections import defaultdict

from kgplan.domains.invariants import MutexGroup
from kgplan.domains.model import NAME_RE, Domain
from kgplan.domains.verify import Issue, IssueKind, show
from kgplan.graph.world import WorldGraph


def check_graph(graph: WorldGraph, incomplete: bool = False) -> list[Issue]:
    """Every violation in the graph, in a stable order; an empty list means none.

    Typing: entity names and types; for each fact, its predicate, arity, a finite value, and that each argument
    is an entity (or constant) of a type the predicate accepts there. Invariants: every mutex
    group instance holding more than one atom. Verification accepts nothing of this.

    With `incomplete`, also what the graph does not say but the domain needs (kind INCOMPLETE): every entity
    that an exactly-one group about one entity is about by type (the robot, for "the robot is in exactly one
    room") holding none of its atoms while not marked unknown. A plan from such a state may have no start
    (the robot with no place: every plan is unsolvable). Verification lets an entity be created so (and an
    undo leave it so), and cannot tell whether it lost the atom; other empty exactly-one instances depend on
    the reachable states, not only on the types, and are left to verification, which refuses emptying one.
    """
    domain = graph.domain
    issues: list[Issue] = []
    types = dict(domain.constants)
    for e in graph.entities():
        if not NAME_RE.fullmatch(e.name):
            issues.append(Issue(IssueKind.BAD_NAME, f"entity {e.name!r} has an invalid name: use lower-case "
                                "letters, digits, '_' and '-', starting with a letter"))
        if e.type not in domain.types:
            issues.append(Issue(IssueKind.UNKNOWN_TYPE, f"entity '{e.name}' has unknown type '{e.type}'"))
        types[e.name] = e.type
    facts = graph.facts()
    for f in facts:
        s = str(f)
        pred = (domain.predicates if f.value is None else domain.functions).get(f.predicate)
        if pred is None:
            issues.append(Issue(IssueKind.UNKNOWN_PREDICATE, f"{s}: unknown predicate '{f.predicate}'", s))
            continue
        if f.value is not None and not math.isfinite(f.value):
            issues.append(Issue(IssueKind.WRONG_VALUE, f"{s}: a value must be a finite number", s))
        if len(pred.params) != len(f.args):
            issues.append(Issue(IssueKind.WRONG_ARITY, f"{s}: '{f.predicate}' takes {len(pred.params)} "
                                f"argument(s), not {len(f.args)}", s))
            continue
        for i, (arg, param) in enumerate(zip(f.args, pred.params, strict=True), 1):
            if arg not in types:
                issues.append(Issue(IssueKind.UNKNOWN_ENTITY, f"{s}: argument {i} '{arg}' is not an entity", s))
            elif not domain.accepts(param.types, types[arg]):
                issues.append(Issue(IssueKind.WRONG_TYPE, f"{s}: argument {i} '{arg}' is a {types[arg]}, "
                                    f"but {f.predicate} expects a {' or '.join(param.types)}", s))
    marks = {(u.entity, u.predicate) for u in graph.unknowns()} if incomplete else set()
    for group in domain.invariants:
        held: dict[tuple[str, ...], set[str]] = defaultdict(set)
        for f in facts:
            for part in group.parts:
                if part.predicate == f.predicate and len(f.args) > max(part.key_positions, default=-1):
                    held[tuple(f.args[k] for k in part.key_positions)].add(show(f.atom))
        for key, atoms in sorted(held.items()):
            if len(atoms) > 1:
                listed = " and ".join(sorted(atoms))
                issues.append(Issue(IssueKind.INVARIANT, f"{', '.join(key) or 'the world'} has {listed} "
                                    f"at once, but {group.describe()}", listed))
        for name in _owners(domain, group, types) if incomplete else ():
            if (name,) not in held and not marks & {(name, None), *((name, p.predicate) for p in group.parts)}:
                issues.append(Issue(IssueKind.INCOMPLETE, f"{name} has none of "
                                    f"{', '.join(p.predicate for p in group.parts)}, but {group.describe()}; "
                                    "say which holds, or mark it unknown"))
    return issues


def _owners(domain: Domain, group: MutexGroup, types: dict[str, str]) -> list[str]:
    """The entities an exactly-one group about one entity must hold an atom for: those of a type that every
    part's key argument takes (the robot of "the robot is in exactly one room"), in name order."""
    if not group.exactly_one or group.arity != 1:
        return []
    params = [domain.predicates[p.predicate].params[p.key_positions[0]] for p in group.parts]
    return sorted(n for n, t in types.items() if n not in domain.constants
                  and all(domain.accepts(p.types, t) for p in params))
