"""The whole-graph check: every typing and invariant violation in a stored graph.

Independent of incremental verification (`domains.verify`): it reads the whole graph and
judges each entity and fact on its own, so it also catches what a bulk import, a manual
edit in Neo4j or a verification bug let in.
"""

from __future__ import annotations

from collections import defaultdict

from kgplan.domains.model import NAME_RE
from kgplan.domains.verify import Issue, IssueKind, show
from kgplan.graph.world import WorldGraph


def check_graph(graph: WorldGraph) -> list[Issue]:
    """Every violation in the graph, in a stable order; an empty list means none.

    Typing: entity names and types; for each fact, its predicate, arity, and that each argument
    is an entity (or constant) of a type the predicate accepts there. Invariants: every mutex
    group instance holding more than one atom. Whether an exactly-one instance that holds no
    atom lost it cannot be judged from the graph alone (which instances exist depends on the
    reachable states, not only on the entities' types), so that is left to verification, which
    refuses a change that empties an instance.
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
    return issues
