"""Verification of proposed state changes against a domain and the current state."""

from __future__ import annotations

import difflib
import math
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from kgplan.domains.formula import Equals, Formula, GroundAtom, quantifiers, scoped
from kgplan.domains.model import NAME_RE, TOTAL_COST, Domain
from kgplan.errors import InputError

Mark = tuple[str, str | None]  # (entity, predicate): what is unknown about it (graph.model.Unknown)
Instance = tuple[int, tuple[str, ...]]  # (group index, key)


class IssueKind(StrEnum):
    UNKNOWN_PREDICATE = "unknown_predicate"
    WRONG_ARITY = "wrong_arity"
    UNKNOWN_ENTITY = "unknown_entity"
    WRONG_TYPE = "wrong_type"
    ABSENT_FACT = "absent_fact"
    PRESENT_FACT = "present_fact"
    CONTRADICTION = "contradiction"
    INVARIANT = "invariant"
    BAD_NAME = "bad_name"
    UNKNOWN_TYPE = "unknown_type"
    DUPLICATE_ENTITY = "duplicate_entity"
    CONSTANT = "constant"
    WRONG_VALUE = "wrong_value"
    INCOMPLETE = "incomplete"  # the whole-graph check's: an entity without what an exactly-one invariant needs


@dataclass(frozen=True)
class Issue:
    """One reason a change is refused, rendered as a short English message."""

    kind: IssueKind
    message: str
    fact: str | None = None

    def __str__(self) -> str:
        return self.message


class ChangeRefused(InputError):
    """A change failed verification; nothing was applied. `issues` says why, each as a short English sentence."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        super().__init__("change refused:\n" + "\n".join(f"  - {i}" for i in issues))


class StateView(Protocol):
    """The read access verification needs, answered inside the store's write transaction."""

    def entity_types(self, names: Collection[str]) -> dict[str, str]: ...

    def present(self, atoms: Collection[GroundAtom]) -> set[GroundAtom]: ...

    def facts_about(self, names: Collection[str]) -> list[GroundAtom]:
        """Every fact with one of `names` among its arguments."""

    def facts_of(self, predicates: Collection[str]) -> list[GroundAtom]:
        """Every fact of the given predicates."""

    def unknown(self, names: Collection[str]) -> set[Mark]:
        """The unknown marks of the named entities."""


def show(atom: GroundAtom) -> str:
    return f"({' '.join((atom[0], *atom[1]))})"


def glossed(domain: Domain, atom: GroundAtom) -> str:
    """An atom as PDDL followed by its predicate's gloss in words, where domain.toml has one."""
    text = show(atom)
    return f'{text} ("{domain.gloss(atom[0], list(atom[1]))}")' if "{" in domain.gloss(atom[0]) else text


def verify(
    domain: Domain,
    add: Iterable[GroundAtom],
    remove: Iterable[GroundAtom],
    new_entities: Iterable[tuple[str, str]],
    view: StateView,
    removed_entities: Iterable[str] = (),
    undone: Collection[GroundAtom] = (),
    marked: Iterable[Mark] = (),
    unmarked: Iterable[Mark] = (),
) -> list[Issue]:
    """All issues that forbid applying the change; an empty list means it is valid.

    `new_entities` are (name, type) pairs; `removed_entities` go with every fact (and mark) about
    them. `undone` are the atoms added by the change this one undoes: an exactly-one instance left
    with none because those go was empty before that change, and may be so again. `marked` and
    `unmarked` are the marks the change adds and removes (see graph.model.Unknown): an exactly-one
    instance may be empty while one of its entities is marked unknown for one of its predicates
    (or as a placeholder), and must hold an atom again when that mark goes.
    """
    add, remove = list(dict.fromkeys(add)), list(dict.fromkeys(remove))
    new_entities, gone = list(new_entities), list(dict.fromkeys(removed_entities))
    marked, unmarked = list(dict.fromkeys(marked)), list(dict.fromkeys(unmarked))
    issues: list[Issue] = []
    mentioned = {a for _, args in add + remove for a in args} | {e for e, _ in marked + unmarked}
    known = {**domain.constants, **view.entity_types(mentioned | {n for n, _ in new_entities} | set(gone))}
    new: dict[str, str] = {}
    for name, t in new_entities:
        if not NAME_RE.fullmatch(name):
            issues.append(Issue(IssueKind.BAD_NAME, f"{name!r} is not a valid name: use lower-case "
                                "letters, digits, '_' and '-', starting with a letter"))
        if t not in domain.types:
            issues.append(Issue(IssueKind.UNKNOWN_TYPE, f"new entity '{name}' has unknown type '{t}'"
                                f"{_suggest(t, domain.types)}"))
        if name in new:
            issues.append(Issue(IssueKind.DUPLICATE_ENTITY, f"new entity '{name}' is declared twice"
                                + (f" (as a {new[name]} and a {t})" if new[name] != t else "")))
        elif name in known:
            what = "a constant of the domain" if name in domain.constants else "an existing entity"
            issues.append(Issue(IssueKind.DUPLICATE_ENTITY, f"'{name}' is {what} (a {known[name]}): "
                                "it cannot be declared new" + (f" as a {t}" if known[name] != t else "")))
        new.setdefault(name, t)
    for name in gone:
        if name in domain.constants:
            issues.append(Issue(IssueKind.CONSTANT, f"'{name}' is a constant of the domain: it cannot be removed"))
        elif name in new:
            issues.append(Issue(IssueKind.CONTRADICTION, f"'{name}' is both declared new and removed"))
        elif name not in known:
            issues.append(Issue(IssueKind.UNKNOWN_ENTITY, f"cannot remove '{name}': it is not a known entity"
                                f"{_suggest(name, known)}"))
    types = {**new, **known}
    for atom in add + remove:
        issues += _check_atom(domain, atom, types)
    for mark in marked + unmarked:
        issues += _check_mark(domain, mark, types)
    for name, _ in marked:
        if name in gone:
            issues.append(Issue(IssueKind.UNKNOWN_ENTITY, f"cannot mark '{name}' unknown: it is removed by "
                                "this change"))
    for atom in add:
        if gone_args := [a for a in atom[1] if a in gone]:
            issues.append(Issue(IssueKind.UNKNOWN_ENTITY, f"cannot add {show(atom)}: '{gone_args[0]}' "
                                "is removed by this change", show(atom)))
    if issues:
        return issues
    for atom in set(add) & set(remove):
        issues.append(Issue(IssueKind.CONTRADICTION, f"{show(atom)} is both added and removed", show(atom)))
    for mark in set(marked) & set(unmarked):
        issues.append(Issue(IssueKind.CONTRADICTION, f"{_show_mark(mark)} is both marked unknown and known"))
    before = view.unknown({e for e, _ in marked + unmarked}) if marked or unmarked else set()
    for mark in marked:
        if mark in before:
            issues.append(Issue(IssueKind.PRESENT_FACT, f"{_show_mark(mark)} is already marked unknown"))
    for mark in unmarked:
        if mark not in before:
            issues.append(Issue(IssueKind.ABSENT_FACT, f"{_show_mark(mark)} is not marked unknown now"))
    present = view.present(add + remove)
    for atom in remove:
        if atom not in present:
            issues.append(Issue(IssueKind.ABSENT_FACT, f"cannot remove {glossed(domain, atom)}: it is not true now",
                                show(atom)))
    for atom in add:
        if atom in present:
            issues.append(Issue(IssueKind.PRESENT_FACT, f"cannot add {glossed(domain, atom)}: it is already true",
                                show(atom)))
    if issues:
        return issues
    if gone:  # the removed entities' facts go with them
        remove = list(dict.fromkeys([*remove, *view.facts_about(gone)]))
    # the one-entity instances a mark that goes covered, for entities of a type they are about
    revealed = {(gi, (e,)) for e, p in unmarked for gi, g in enumerate(domain.invariants) if g.arity == 1
                for part in g.parts if p in (None, part.predicate)
                and domain.accepts(domain.predicates[part.predicate].params[part.key_positions[0]].types, types[e])}
    return _check_invariants(domain, add, remove, view, set(gone), set(undone), set(marked), set(unmarked), revealed)


def _show_mark(mark: Mark) -> str:
    return f"'{mark[0]}' as a placeholder" if mark[1] is None else f"({mark[1]} {mark[0]} ?)"


def _check_mark(domain: Domain, mark: Mark, types: dict[str, str]) -> list[Issue]:
    """An unknown mark names an entity and, if any, a predicate that can take it."""
    name, pred_name = mark
    if name not in types:
        return [Issue(IssueKind.UNKNOWN_ENTITY, f"{_show_mark(mark)}: '{name}' is not a known entity"
                      f"{_suggest(name, types)}")]
    if pred_name is None:
        return []
    pred = domain.predicates.get(pred_name)
    if pred is None:
        return [Issue(IssueKind.UNKNOWN_PREDICATE, f"{_show_mark(mark)}: unknown predicate '{pred_name}'"
                      f"{_suggest(pred_name, domain.predicates)}")]
    if not any(domain.accepts(p.types, types[name]) for p in pred.params):
        return [Issue(IssueKind.WRONG_TYPE, f"{_show_mark(mark)}: '{name}' is a {types[name]}, which no "
                      f"argument of {pred_name} takes")]
    return []


def _check_atom(domain: Domain, atom: GroundAtom, types: dict[str, str]) -> list[Issue]:
    pred_name, args = atom
    pred = domain.predicates.get(pred_name) or domain.functions.get(pred_name)
    s = show(atom)
    if pred_name == TOTAL_COST:
        return [Issue(IssueKind.UNKNOWN_PREDICATE, f"{s}: total-cost is the cost of a plan, never a fact", s)]
    if pred is None:
        return [Issue(IssueKind.UNKNOWN_PREDICATE,
                      f"{s}: unknown predicate '{pred_name}'{_suggest(pred_name, domain.predicates)}", s)]
    if pred.arity != len(args):
        sig = " ".join(f"?{p.name.lstrip('?')}" for p in pred.params)
        return [Issue(IssueKind.WRONG_ARITY, f"{s}: '{pred_name}' takes {pred.arity} argument(s): "
                      f"({pred_name} {sig})".replace(" )", ")"), s)]
    out = []
    for i, (arg, param) in enumerate(zip(args, pred.params, strict=True), 1):
        t = types.get(arg)
        if t is None:
            out.append(Issue(IssueKind.UNKNOWN_ENTITY,
                             f"{s}: argument {i} '{arg}' is not a known entity{_suggest(arg, types)}", s))
        elif not domain.accepts(param.types, t):
            want = " or ".join(param.types)
            out.append(Issue(IssueKind.WRONG_TYPE,
                             f"{s}: argument {i} '{arg}' is a {t}, but {pred_name} expects a {want}", s))
    return out


def check_values(domain: Domain, facts: Iterable[tuple[GroundAtom, float | None]]) -> list[Issue]:
    """Added facts of a (static) function need a finite value; facts of a predicate have none."""
    out = []
    for atom, value in facts:
        if value is not None and not math.isfinite(value):
            out.append(Issue(IssueKind.WRONG_VALUE, f"{show(atom)} must be a finite number, not {value}",
                             show(atom)))
        elif atom[0] in domain.functions and value is None:
            out.append(Issue(IssueKind.WRONG_VALUE, f"{show(atom)} is a number: give its value, "
                             f"e.g. (= {show(atom)} 1)", show(atom)))
        elif atom[0] in domain.predicates and value is not None:
            out.append(Issue(IssueKind.WRONG_VALUE, f"{show(atom)} is true or false, it has no value "
                             f"({value:g})", show(atom)))
    return out


def _check_invariants(domain: Domain, add: list[GroundAtom], remove: list[GroundAtom],
                      view: StateView, dropped: set[str], undone: set[GroundAtom],
                      marked: set[Mark], unmarked: set[Mark], revealed: set[Instance]) -> list[Issue]:
    """Check every mutex group instance the change touches, reading the state in two queries.

    An instance about a removed entity (in `dropped`) goes with it, and one that held only
    `undone` atoms is given back its state before them: either may be left with none. An
    exactly-one instance is at-most-one while one of its entities is marked unknown for one of its
    predicates (or as a placeholder); the instances `revealed` by a mark that goes must hold an atom. Each issue
    says the rule, and the facts that break it in words."""
    groups = domain.invariants
    parts: dict[str, list[tuple[int, tuple[int, ...]]]] = defaultdict(list)
    for gi, g in enumerate(groups):
        for part in g.parts:
            parts[part.predicate].append((gi, part.key_positions))

    def instances(atoms: Iterable[GroundAtom]) -> dict[Instance, set[GroundAtom]]:
        out: dict[Instance, set[GroundAtom]] = defaultdict(set)
        for atom in atoms:
            for gi, keys in parts.get(atom[0], ()):
                out[(gi, tuple(atom[1][k] for k in keys))].add(atom)
        return out

    def covers(mark: Mark, gi: int) -> bool:
        return mark[1] is None or any(p.predicate == mark[1] for p in groups[gi].parts)

    touched = set(instances(add + remove)) | revealed
    if not touched:
        return []
    marks: set[Mark] | None = None  # read once, when an exactly-one instance is left empty

    def relaxed(gi: int, key: tuple[str, ...]) -> bool:
        nonlocal marks
        if marks is None:
            keys = {k for _, key in touched for k in key}
            marks = ((view.unknown(keys) if keys else set()) - unmarked) | marked
        return any(m[0] in key and covers(m, gi) for m in marks)

    keyed = {key[0] for _, key in touched if key}
    keyless = {p.predicate for gi, key in touched if not key for p in groups[gi].parts}
    state = (view.facts_about(keyed) if keyed else []) + (view.facts_of(keyless) if keyless else [])
    before_all, added, removed = instances(state), instances(add), set(remove)
    out = []
    for gi, key in sorted(touched):
        g = groups[gi]
        before = before_all.get((gi, key), set())
        after = (before - removed) | added.get((gi, key), set())
        who = ", ".join(key) or "the world"
        if len(after) > 1:
            listed = " and ".join(show(a) for a in sorted(after))
            stale, new = before - removed, added.get((gi, key), set()) - before
            hint = (f"; if {' and '.join(show(a) for a in sorted(new))} is now true, also remove "
                    f"{' and '.join(show(a) for a in sorted(stale))}") if stale and new else ""
            said = (f"{_words(domain, new)} cannot hold while {_words(domain, stale)} does" if stale and new else
                    f"{_words(domain, after)} cannot all hold")
            out.append(Issue(IssueKind.INVARIANT,
                             f"{who} would have {listed} at once, but {g.describe()}: {said}{hint}", listed))
        elif not g.exactly_one or after or not dropped.isdisjoint(key) or relaxed(gi, key):
            continue
        elif before and not before <= undone:
            gone = " and ".join(show(a) for a in sorted(before))
            out.append(Issue(IssueKind.INVARIANT,
                             f"removing {gone} leaves {who} with none, but {g.describe()}, and "
                             f"{_words(domain, before)} is all it has; say where it is now, or mark it unknown", gone))
        elif not before and (gi, key) in revealed:
            out.append(Issue(IssueKind.INVARIANT, f"{who} would stop being unknown with none of "
                             f"{', '.join(p.predicate for p in g.parts)}, but {g.describe()}; say which holds"))
    return out


def _words(domain: Domain, atoms: Iterable[GroundAtom]) -> str:
    return " and ".join(glossed(domain, a) for a in sorted(atoms))


def _suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def check_goal(domain: Domain, goal: Formula, objects: dict[str, str]) -> list[Issue]:
    """Issues with a goal formula: unknown predicates or objects, wrong arity or types."""
    issues = [Issue(IssueKind.UNKNOWN_TYPE, f"variable {p.name} has unknown type '{t}'"
                    f"{_suggest(t, domain.types)}")
              for q in quantifiers(goal) for p in q.params for t in p.types if t not in domain.types]
    if issues:
        return issues
    known = {**domain.constants, **objects}
    for f, scope in scoped(goal):
        if isinstance(f, Equals):
            issues += [Issue(IssueKind.UNKNOWN_ENTITY, f"'{a}' is not a known entity{_suggest(a, known)}")
                       for a in (f.left, f.right) if a not in known and a not in scope]
            continue
        variables = tuple(scope[a] for a in dict.fromkeys(f.args) if a in scope)
        for params in domain.split_either(variables):  # each member type of an either-set
            issues += _check_atom(domain, (f.predicate, f.args), {**known, **{p.name: p.types[0] for p in params}})
    return list(dict.fromkeys(issues))
