"""Goals by propose-then-choose (issue 23): the model names and chooses, the symbolic side proposes the goal literals.

A task in English becomes a PDDL goal in four stages, each accounted (seconds, tokens) in `Outcome.stages`:

1. `words`: the model says whether the task is about named things or all things of a kind (`scope`), copies the
   phrases naming one person, room or thing, and names the kinds (domain types) it is about (enums);
2. `ground`: the phrases are matched to entities as `tell` matches them (language.propose.ground): a phrase that
   several entities fit is a question to the model what it names, those entities or every thing of their kind
   (answered by the option's text), then a `Clarification`, not a guess;
3. `candidates`: the goal literals the domain admits over them: for named things every type-correct atom of a
   predicate some action changes, and its negation where no exactly-one invariant gives the predicate one value
   (a light may be off; a thing is always somewhere); for all things of a kind the same literals with one place
   quantified over a type that has objects (``(forall (?x - phone) (not (phone_ringing ?x)))``), the other places
   filled by named entities; the kinds named narrow a place's types where they fit it; only literals that can hold
   (an action makes them so, or they hold now), shown by domain.toml's glosses (`negated` for the false value);
4. `choose`: the model picks, for each predicate with candidates, one literal or "none" (enums in the schema); the
   chosen facts of one invariant instance that exclude each other are one question to the model (which of them, or
   none), then a `Clarification`. The goal is their conjunction, checked against the domain and the graph's objects
   (domains.verify.check_goal).

The worked examples come from domain.toml's `[[goal_examples]]` (invented tasks over invented mini-situations); their
candidates and answers are computed by the same code. The prompt shows the glossed predicates and the actions.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from kgplan.domains.formula import GroundAtom
from kgplan.domains.model import Domain
from kgplan.errors import InputError
from kgplan.graph.world import WorldGraph
from kgplan.language.llm import LLM, LLMError, choice, enum_model
from kgplan.language.prompts import Messages, candidate_lines, choose_goal_messages
from kgplan.language.propose import (
    MAX_MENTIONS,
    NONE,
    Candidate,
    _named,
    _Stage,
    answer,
    choice_schema,
    replaced,
    said_with,
    tokens,
    told_apart,
    which,
    words,
)
from kgplan.language.update import Clarification, Outcome

NAMED, ALL = "named", "all"  # the scopes of a task
VAR = "?x"
NEITHER = "*neither"  # the model's answer that the task asks for none of the conflicting conditions
MAX_KINDS = 4


@dataclass(frozen=True)
class Literal(Candidate):
    """A goal literal: `atom` holds (`value`) or does not; with `over`, for every object of that type in the place
    of `atom` that holds `VAR`. Its id is its gloss."""

    over: str | None = None

    @property
    def pddl(self) -> str:
        lit = str(self.atom) if self.value else f"(not {self.atom})"
        return f"(forall ({VAR} - {self.over}) {lit})" if self.over else lit


def gloss(domain: Domain, atom: GroundAtom, value: bool, over: str | None) -> str:
    """A goal literal in English: "the porch lamp is on", "not: the porch lamp is on", "no phone is ringing"; where
    domain.toml words the false value (`negated`), by it: "the porch lamp is off", "every phone is silent"."""
    meta = domain.meta.get("predicates", {}).get(atom.predicate, {})
    negated = None if value else meta.get("negated")
    quantifier = "every" if value or negated else "no"
    args = [f"{quantifier} {words(over)}" if a == VAR and over else words(a) for a in atom.args]
    if negated:
        return negated.format(*args)
    said = domain.gloss(atom.predicate, args) if meta.get("gloss") else " ".join([words(atom.predicate), *args])
    return said if value or over else f"not: {said}"


def words_schema(domain: Domain) -> type[BaseModel]:
    """The first reply: the scope, the phrases naming one thing each, the kinds (domain types)."""
    phrase = Annotated[str, StringConstraints(min_length=1, max_length=48)]
    kinds = [t for t in domain.types if t != "object"]
    return enum_model("GoalWords", scope=[NAMED, ALL], mentions=(list[phrase], Field(max_length=MAX_MENTIONS)),
                      kinds=(list[choice(kinds)], Field(max_length=MAX_KINDS)))


def kinds_present(domain: Domain, types: Collection[str]) -> set[str]:
    """The types some object of these types belongs to (its own and its ancestors), but `object`."""
    return {a for t in types for a in domain.ancestors(t)} - {"object"}


def sole(entities: dict[str, str]) -> dict[str, str]:
    """The entities (name -> type) that are the only ones of their type (the laundry basket of a house)."""
    count = Counter(entities.values())
    return {e: t for e, t in entities.items() if count[t] == 1}


def literals(domain: Domain, named: dict[str, str], scope: str, kinds: Collection[str], present: Collection[str],
             alone: dict[str, str] | None = None, now: Collection[GroundAtom] | None = None) -> list[Literal]:
    """The goal literals over the named entities (name -> type); for scope `all`, with one place quantified over a
    type of `present`: within the `kinds` named (the most general of theirs that fit the place; where kinds are
    named, only places that one fits), the other places filled by the named entities, else by those `alone` of
    their type (the laundry basket). Only literals that can hold: some action makes them so, or (a literal without
    a quantifier) the facts true `now` say it holds already (no action makes a cloth dirty)."""
    negatable = set(domain.predicates) - replaced(domain)
    made = {(e.atom.predicate, e.add) for a in domain.actions.values() for e in a.effects}

    def can_hold(atom: GroundAtom, value: bool, over: str | None) -> bool:
        return (atom.predicate, value) in made or (now is not None and over is None and (atom in now) == value)
    out: list[tuple[GroundAtom, bool, str | None]] = []
    for p in sorted(set(domain.predicates) - domain.static_predicates()):
        params = domain.predicates[p].params
        fits = [[e for e, t in named.items() if domain.accepts(a.types, t)] for a in params]
        if scope == NAMED:
            spots = [(fits, None)]
        else:
            spots = []
            extra = [f or [e for e, t in (alone or {}).items() if domain.accepts(a.types, t)]
                     for f, a in zip(fits, params, strict=True)]
            for i, a in enumerate(params):
                types = {t for t in present if domain.accepts(a.types, t)}
                if kinds:
                    types = {t for t in types if any(domain.is_subtype(t, k) for k in kinds)}
                types = {t for t in types if not any(o != t and domain.is_subtype(t, o) for o in types)}
                spots += [([*extra[:i], [VAR], *extra[i + 1:]], t) for t in sorted(types)]
        for places, over in spots:
            for args in itertools.product(*places):
                if len(set(args)) == len(args):
                    atom = GroundAtom(p, args)
                    out += [(atom, v, over) for v in (True, False)
                            if (v or p in negatable) and can_hold(atom, v, over)]
    # each is chosen by its gloss (a small model copies a gloss that fits the task better than it picks a letter)
    said = told_apart([gloss(domain, atom, value, over) for atom, value, over in out], [atom for atom, _, _ in out])
    return [Literal(x, atom, value, over=over) for x, (atom, value, over) in zip(said, out, strict=True)]


def parts(facts: Iterable[GroundAtom], named: Collection[str], said: Collection[str] = ()) -> set[str]:
    """What the named entities have through a static fact (`statics`) that other entities have too (a shelf's
    levels, which every shelf has; not a room's own fixtures): "the 10th level" of a named shelf, where no part of
    it is named already; of those, the ones whose own words (those the others do not share) the task's words
    (`said`, `tokens`) hold, where some are (the 0.5B chose levels 13 and 12 for "the 3rd level of the shelf in
    Rebecca's bedroom", copied whole and matched to the shelf, and for "the 3rd level of the pantry in the kitchen",
    among the 15 levels)."""
    pairs = [(p, x, y) for p, (x, y) in (a for a in facts if len(a.args) == 2)]
    shared = Counter((p, y) for p, _, y in pairs)
    theirs = [(p, x, y) for p, x, y in pairs if x in named and shared[p, y] > 1]
    told = {(p, x) for p, x, y in theirs if y in named}
    out = {y for p, x, y in theirs if (p, x) not in told}
    common = set.intersection(*(set(tokens(y)) for y in out)) if out else set()
    return {y for y in out if set(tokens(y)) - common <= set(said)} or out


def wholes(facts: Iterable[GroundAtom], named: Collection[str], owns: dict[str, set[str]]) -> set[str]:
    """What a named part belongs to within a named place, where parts and wholes are many to many: the shelf of a
    named room that has a named level, which every shelf has ("the 3rd level of the shelf in David's bedroom" copied
    without the shelf)."""
    pairs = [a for a in facts if len(a.args) == 2]
    shared, several = Counter((p, y) for p, (_, y) in pairs), Counter((p, x) for p, (x, _) in pairs)
    theirs = {f for o in named for f in owns.get(o, ())}
    return {x for p, (x, y) in pairs if y in named and shared[p, y] > 1 and several[p, x] > 1 and x in theirs}


def places(domain: Domain, named: dict[str, str], owns: dict[str, set[str]], everything: dict[str, str]) -> set[str]:
    """Where a named thing that no named place takes may be put: the fixtures of the named entities (a room's table,
    for "the table in the living room" matched to the room) in the second place of a predicate an action changes,
    where the thing fits the first."""
    binary = [domain.predicates[p].params for p in set(domain.predicates) - domain.static_predicates()
              if domain.predicates[p].arity == 2]

    def takes(x: str, y: str) -> bool:
        return any(domain.accepts(a.types, everything[x]) and domain.accepts(b.types, everything[y]) for a, b in binary)

    placeless = [x for x in named if not any(takes(x, y) for y in named if y != x)]
    return {f for x in placeless for o in named for f in owns.get(o, ()) if takes(x, f)}


def natural(name: str) -> tuple:
    """A sort key that puts shelf_level_2 before shelf_level_10."""
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name))


@dataclass(frozen=True)
class Example:
    text: str
    first: dict  # the first reply: scope, mentions, kinds
    lines: str  # the candidates as shown
    answer: dict[str, str]  # the second reply: predicate -> the gloss chosen, or "none"


def examples(domain: Domain) -> list[Example]:
    """domain.toml's worked goal examples whose types and predicates the domain has, with their candidates."""
    out = []
    for ex in domain.meta.get("goal_examples", []):
        objects: dict[str, str] = ex["objects"]
        kinds = ex.get("kinds", [])
        if any(t not in domain.types for t in [*objects.values(), *kinds]):
            continue
        cands = literals(domain, {n: objects[n] for n in ex["named"]}, ex["scope"], kinds,
                         kinds_present(domain, objects.values()), sole(objects))
        if not (goal := set(ex["goal"])) <= {c.pddl for c in cands}:
            continue  # a literal this domain cannot say (another domain's predicate)
        out.append(Example(ex["text"], {"scope": ex["scope"], "mentions": ex["mentions"], "kinds": kinds},
                           candidate_lines(c.id for c in cands),
                           answer(cands, {c.id for c in cands if c.pddl in goal})))
    return out


def choose(llm: LLM, graph: WorldGraph, task: str, *, answers: dict[str, str] | None = None,
           out: Outcome | None = None) -> Outcome:
    """A task in English as a PDDL goal (`out.goal`), proposed and chosen as above; or `out.clarification` (call
    again with `answers={word: option}`), or `out.error`."""
    out = out or Outcome(task)
    answers = dict(answers or {})
    domain = graph.domain
    shown = [(e.text, e.first, e.lines, e.answer) for e in examples(domain)]
    try:
        first = choose_goal_messages(domain, shown, task)
        every: dict[str, str] = {}  # the words the model says name all things of a kind ("the phones")
        said, named, static, owns, everything = _named(llm, graph, task, "words", first, words_schema(domain),
                                                       answers, out, every)
        if out.clarification:
            return out
        scope_of, kinds = (ALL, [*said.kinds, *every.values()]) if every else (said.scope, said.kinds)
        with _Stage(out, "candidates"):
            scope = set(named.values())
            scope |= set(said_with(task, scope, everything, owns).values())
            if scope_of == NAMED:
                scope |= parts(static, scope, tokens(task)) | wholes(static, scope, owns) | places(
                    domain, {e: everything[e] for e in scope}, owns, everything)
            entities = {e: everything[e] for e in sorted(scope, key=natural)}
            present, alone = kinds_present(domain, set(everything.values())), sole(everything)
            now = {f.atom for f in graph.facts_about(sorted(scope))}
            cands = (literals(domain, entities, scope_of, kinds, present, alone, now)
                     or literals(domain, entities, scope_of, [], present, alone, now))  # kinds no place takes
            if not cands and scope_of == NAMED:  # "Amy's bedroom" for its light: what the named entities own
                scope |= {f for e in scope for f in owns.get(e, ())}
                now = {f.atom for f in graph.facts_about(sorted(scope))}
                cands = literals(domain, {e: everything[e] for e in sorted(scope, key=natural)}, NAMED, [], present,
                                 alone, now)
        if not cands:
            out.error = "the task could not be grounded: no goal of the domain is about " + (
                ", ".join(map(words, sorted(scope))) if scope else "anything the graph holds")
            return out
        with _Stage(out, "choose"):
            shown_cands = candidate_lines(c.id for c in cands)
            reply, record = llm.complete(choose_goal_messages(domain, shown, task, shown_cands), choice_schema(cands))
            out.calls.append(record)
        by_id = {c.id: c for c in cands}
        chosen = [by_id[i] for i in reply.model_dump().values() if i != NONE]
        chosen = _one_of_each_conflict(llm, domain, first, chosen, answers, out)
    except LLMError as e:
        out.error = str(e)
        return out
    if out.clarification:
        return out
    if not chosen:
        out.error = "the model chose no goal condition for the task"
        return out
    out.goal = f"(and {' '.join(c.pddl for c in chosen)})"
    from kgplan.planners.pipeline import parse_goal

    try:
        parse_goal(out.goal, graph, everything)
    except InputError as e:  # candidates are type-correct by construction: a goal refused here is a bug
        out.error = f"the chosen goal was refused: {e}"
    return out


def _one_of_each_conflict(llm: LLM, domain: Domain, first: Messages, chosen: list[Literal],
                          answers: dict[str, str], out: Outcome) -> list[Literal]:
    """The chosen literals where several of them cannot all hold (one instance of an invariant; a quantified literal
    stands for any object of its kind) keep the one the user (`answers`) or the model, asked, says (the model may say
    none of them: made to choose for every predicate, it chooses some the task does not ask for); `out.clarification`
    is set where the task does not tell. All the literals of the instance make one question (asked pair by pair, the
    first pair may hold neither of the two the task asks for)."""
    while crowd := _crowded(domain, chosen):
        key = " or ".join(c.pddl for c in crowd)
        glosses = {c.pddl: c.id for c in crowd}
        if (picked := answers.get(key)) not in glosses and (
                picked := which(llm, first, "Which of these must hold when the task is done?",
                                glosses | {NEITHER: "none of them"}, out.calls)) is None:
            out.clarification = Clarification(
                key, f"Which one must hold when the task is done: {' or '.join(glosses.values())}?", list(glosses))
            return chosen
        chosen = [c for c in chosen if c not in crowd or c.pddl == picked]
    return chosen


def _crowded(domain: Domain, chosen: list[Literal]) -> list[Literal]:
    """The chosen true literals of the first invariant instance that more than one of them falls in, or []."""
    def instance(c: Literal) -> GroundAtom:
        return GroundAtom(c.atom.predicate, tuple(f"?{c.over}" if a == VAR else a for a in c.atom.args))

    for g in domain.invariants:
        parts = {part.predicate: part for part in g.parts}
        by_key: dict[tuple[str, ...], list[Literal]] = {}
        for c in chosen:
            if c.value and (part := parts.get(c.atom.predicate)):
                by_key.setdefault(part.key(instance(c).args), []).append(c)
        if crowd := next((cs for cs in by_key.values() if len(cs) > 1), None):
            return crowd
    return []
