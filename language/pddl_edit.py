"""LLM mode of the exploration loop (PDDL-edit, as in PDDLEGO): the LLM reads the prose observation and the
current problem and proposes edits to its objects, facts and unknowns. The edits are applied deterministically,
in order, as one verified change; refused edits go back to the LLM with the issues, for a bounded number of
rounds. The graph is changed only by edits that pass verification.

The current problem is the whole graph (the R- retrieval of the language layer): an exploration graph is small.
The prompt is `prompts.edit_messages`; this module holds the reply schema and applies the edits.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Collection, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, Field

from kgplan.domains.formula import GroundAtom, quantifiers
from kgplan.domains.model import NAME_RE, Domain, Problem
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import InputError
from kgplan.graph.model import Change, Delta, Entity, Fact, Unknown
from kgplan.graph.store import Tx
from kgplan.graph.world import WorldGraph, rename
from kgplan.language.llm import LLM, CallRecord, LLMError, choice, enum_model
from kgplan.language.prompts import (
    BLANK,
    CurrentProblem,
    Messages,
    Shot,
    blanks_question,
    choose_question,
    edit_messages,
    edits_refused,
    invalid_reply,
    list_messages,
    observation_messages,
    read_messages,
    retry,
)
from kgplan.language.propose import conflict, copied, held, keyed, replacements, tokens, which, whole_names
from kgplan.planners.state import State, Step, action_text

NAME = NAME_RE.pattern.strip("^$")
ATOM = rf"\({NAME}( {NAME})*\)"


def shaped(pattern: str, description: str) -> Any:
    """A string of the given shape. The pattern goes to the JSON schema only, for a constrained decoder (a
    llama.cpp grammar, OpenAI strict mode) to write nothing else; `to_delta` reads it, naming what is wrong."""
    return Annotated[str, Field(description=description, json_schema_extra={"pattern": f"^{pattern}$"})]


Name = shaped(NAME, "name")
ObjectText = shaped(f"{NAME} - {NAME}", '"name - type"')
FactText = shaped(rf"({ATOM}|\(= {ATOM} -?[0-9.]+\))", '"(predicate arg ...)"')
MarkText = shaped(rf"({NAME}|\({NAME} {NAME} \?\))", '"name" or "(predicate name ?)"')


class Rename(BaseModel):
    old: Name
    new: Name


class Swap(BaseModel):
    old: FactText
    new: FactText


class ObjectEdits(BaseModel):
    add: list[ObjectText] = Field(default_factory=list)
    delete: list[Name] = Field(default_factory=list)
    replace: list[Rename] = Field(default_factory=list)


class InitEdits(BaseModel):
    add: list[FactText] = Field(default_factory=list)
    delete: list[FactText] = Field(default_factory=list)
    replace: list[Swap] = Field(default_factory=list)


class UnknownEdits(BaseModel):
    add: list[MarkText] = Field(default_factory=list)
    delete: list[MarkText] = Field(default_factory=list)


class Edits(BaseModel):
    """Edits to the current problem."""

    objects: ObjectEdits = Field(default_factory=ObjectEdits)
    init: InitEdits = Field(default_factory=InitEdits)
    unknown: UnknownEdits = Field(default_factory=UnknownEdits)


@dataclass
class EditOutcome:
    """What one observation did: the applied change (None if nothing was applied), the issues of each refused
    reply, and every LLM call."""

    change: Change | None = None
    rounds: list[list[str]] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    error: str | None = None


def parse_object(text: str) -> Entity:
    name, dash, type_ = (w.strip().lower() for w in text.partition(" - "))
    if not dash or not name or not type_:
        raise InputError(f'{text!r} is no object: write "name - type"')
    return Entity(name=name, type=type_)


def to_delta(tx: Tx, edits: Edits, text: str) -> Delta:
    """The edits as one delta, built from the state in the write transaction; each edit applies to the
    result of the ones before it. Raises InputError for an edit that cannot be read or applied."""
    problems: list[str] = []

    def read(parse: Callable, items: Iterable) -> list:
        out = []
        for item in items:
            try:
                out.append(parse(item))
            except InputError as e:
                problems.append(str(e))
        return out

    adds = read(parse_object, edits.objects.add)
    facts = {k: read(Fact.parse, getattr(edits.init, k)) for k in ("add", "delete")}
    swaps = read(lambda r: (Fact.parse(r.old), Fact.parse(r.new)), edits.init.replace)
    marks = {k: read(Unknown.parse, getattr(edits.unknown, k)) for k in ("add", "delete")}
    if problems:
        raise InputError("\n".join(problems))
    add: dict[Fact, None] = {}
    remove: dict[Fact, None] = {}
    new, gone, unknown, known = list(adds), [o.lower() for o in edits.objects.delete], [], []
    for r in edits.objects.replace:
        d = rename(tx, r.old.lower(), r.new.lower())
        new += d.new_entities
        gone += d.removed_names()
        unknown += d.unknown
        add.update(dict.fromkeys(d.add))

    def drop(f: Fact) -> None:  # delete a fact: cancel its addition in this change, else remove it
        if f in add:
            del add[f]
        else:
            remove[f] = None

    def put(f: Fact) -> None:  # add a fact: cancel its deletion in this change, else add it
        if f in remove:
            del remove[f]
        else:
            add[f] = None

    for f in facts["delete"]:
        drop(f)
    for f in facts["add"]:
        put(f)
    for old, f in swaps:
        drop(old)
        put(f)
    for u in marks["delete"]:
        if u in unknown:
            unknown.remove(u)
        else:
            known.append(u)
    unknown += [u for u in marks["add"] if u not in unknown]
    return Delta(add=list(add), remove=list(remove), new_entities=new, removed_entities=gone, unknown=unknown,
                 known=known, source="nl", text=text)


def observe(llm: LLM, graph: WorldGraph, action: str | None, observation: str, max_rounds: int = 3,
            lock: AbstractContextManager = nullcontext()) -> EditOutcome:
    """Ask the LLM for the edits an observation makes, apply them verified; re-prompt with the issues of a
    refused or malformed reply, at most `max_rounds` replies (then nothing is applied). Only the apply holds
    `lock` (a writers' lock): the edits are made against the graph as it is then."""
    out = EditOutcome()
    messages = edit_messages(graph.domain, CurrentProblem.of(graph), action, observation)
    text = f"{action or 'start'}: {observation.strip()}"
    for _ in range(max_rounds):
        try:
            edits, record = llm.complete(messages, Edits)
        except LLMError as e:
            out.rounds.append([e.reason])
            if e.raw is None:  # the endpoint failed, not the reply
                out.error = str(e)
                return out
            messages += retry(e.raw, invalid_reply(e.reason))
            continue
        out.calls.append(record)
        try:
            if edits != Edits():
                with lock:
                    out.change = graph.apply_from(lambda tx, e=edits: to_delta(tx, e, text))
            return out
        except ChangeRefused as e:
            issues = [str(i) for i in e.issues]
        except InputError as e:
            issues = str(e).splitlines()
        out.rounds.append(issues)
        messages += retry(edits.model_dump_json(), edits_refused(issues))
    out.error = f"no valid edits after {max_rounds} replies; the graph is unchanged"
    return out


# ---- propose, then choose (issue 23): the model names, the domain proposes, the model chooses ---------------
MAX_FACTS = 10
SHOWN = 80  # candidates shown with their glosses up to this many (else the grammar alone holds them)
MAX_LISTED = 8  # things of one listed type named in one observation
NO_PLAN = ("The problem with those edits has no plan for the goal or any sub-goal, so a fact the observation "
           "tells is probably missing or wrong. Name the places and things again.")


def symbol(words: str) -> str:
    """Words as a PDDL name ("block of cheese" -> block_of_cheese); "" where no letter starts it."""
    name = "_".join("".join(c if c.isalnum() else " " for c in words.lower()).split())
    return name if NAME_RE.fullmatch(name) else ""


@dataclass(frozen=True)
class Rule:
    """Upkeep the agent does itself (domain.toml `[[explore.upkeep]]`): where the literals of `when` hold (the
    first binds the variables, "?x"; a negative one, "(not (p ?x))", tests them; another word is a constant), `add`
    becomes true, `delete` false."""

    when: tuple[tuple[bool, str, tuple[str, ...]], ...]
    add: tuple[tuple[str, tuple[str, ...]], ...]
    delete: tuple[tuple[str, tuple[str, ...]], ...]

    @staticmethod
    def literal(text: str) -> tuple[bool, str, tuple[str, ...]]:
        neg = text.startswith("(not ")
        words = (text[5:-1] if neg else text).strip().strip("()").split()
        return not neg, words[0], tuple(words[1:])

    @classmethod
    def of(cls, spec: dict) -> Rule:
        atoms = {k: tuple(cls.literal(t)[1:] for t in spec.get(k, [])) for k in ("add", "delete")}
        return cls(tuple(map(cls.literal, spec["when"])), atoms["add"], atoms["delete"])

    @property
    def writes(self) -> set[str]:
        return {p for p, _ in (*self.add, *self.delete)}

    def bindings(self, state: set[GroundAtom]) -> Iterable[dict[str, str]]:
        def walk(i: int, b: dict[str, str]) -> Iterable[dict[str, str]]:
            if i == len(self.when):
                yield b
                return
            pos, p, args = self.when[i]
            if not pos:
                if GroundAtom(p, tuple(b.get(a, a) for a in args)) not in state:
                    yield from walk(i + 1, b)
                return
            for atom in state:
                if atom.predicate == p and len(atom.args) == len(args):
                    nb = dict(b)
                    if all((nb.setdefault(v, x) if v.startswith("?") else v) == x
                           for v, x in zip(args, atom.args, strict=True)):
                        yield from walk(i + 1, nb)
        return walk(0, {})

    def apply(self, state: set[GroundAtom]) -> set[GroundAtom]:
        out = set(state)
        for b in list(self.bindings(state)):
            out -= {GroundAtom(p, tuple(b.get(a, a) for a in args)) for p, args in self.delete}
            out |= {GroundAtom(p, tuple(b.get(a, a) for a in args)) for p, args in self.add}
        return out


def upkeep(rules: list[Rule], state: set[GroundAtom]) -> set[GroundAtom]:
    """The state with the upkeep rules applied until nothing changes (or ten rounds)."""
    for _ in range(10):
        nxt = state
        for r in rules:
            nxt = r.apply(nxt)
        if nxt == state:
            break
        state = nxt
    return state


def sources(laws: list[Rule], state: set[GroundAtom], fact: GroundAtom) -> set[GroundAtom]:
    """The facts of `state` from which an upkeep rule makes `fact` true (an exit's way back), which go with it."""
    return {GroundAtom(p, tuple(b.get(x, x) for x in args)) for r in laws for b in r.bindings(state)
            if fact in {GroundAtom(q, tuple(b.get(x, x) for x in xs)) for q, xs in r.add}
            for pos, p, args in r.when if pos}


def rules(domain: Domain) -> list[Rule]:
    return [Rule.of(r) for r in domain.meta.get("explore", {}).get("upkeep", [])]


def told(domain: Domain) -> list[str]:
    """The predicates an observation may tell: those the upkeep rules do not keep, less domain.toml's [explore]
    `untold` (what only the player's actions make, which their effects say)."""
    kept = set().union(*(r.writes for r in rules(domain)), domain.meta.get("explore", {}).get("untold", []))
    return [p for p in domain.predicates if p not in kept]


def leaf_types(domain: Domain) -> list[str]:
    parents = set(domain.types.values())
    return [t for t in domain.types if t not in parents and t != "object"]


def command_objects(domain: Domain, templates: dict[str, str], admissible: Iterable[str]) -> dict[str, str]:
    """The objects the game's admissible commands name (name -> type), read through domain.toml's templates of
    the actions' commands (the game's structured output, not its prose); the most literal template wins."""
    import re

    parsers = []
    for action, template in templates.items():
        params = domain.actions[action].params
        parts = re.split(r"\{(\d+)\}", template)
        pattern = "".join(re.escape(p) if k % 2 == 0 else f"(?P<a{p}>.+?)" for k, p in enumerate(parts))
        parsers.append((len("".join(parts[::2])), re.compile(pattern), params))
    parsers.sort(key=lambda x: -x[0])
    out: dict[str, str] = {}
    for command in admissible:
        for _, pattern, params in parsers:
            if m := pattern.fullmatch(command):
                for key, words in m.groupdict().items():
                    types = domain.reduce_types(params[int(key[1:])].types)
                    if (name := symbol(words)) and len(types) == 1:
                        out.setdefault(name, types[0])
                break
    return out


def proposals(domain: Domain, scope: dict[str, str], state: set[GroundAtom]) -> list[GroundAtom]:
    """The facts an observation may make true: every type-correct atom of a told predicate over the objects in
    `scope` (name -> type) that is false now."""
    out = []
    for p in told(domain):
        params = domain.predicates[p].params
        objects = [[o for o, t in scope.items() if domain.accepts(a.types, t)] for a in params]
        out += [a for args in itertools.product(*objects)
                if len(set(args)) == len(args) and (a := GroundAtom(p, tuple(args))) not in state]
    return out


def enabled(domain: Domain, templates: dict[str, str], objects: dict[str, str], state: set[GroundAtom],
            fact: GroundAtom, quantified: bool = False) -> set[str]:
    """The commands of the actions that `fact` makes possible in `state`: possible with it, and not without it. An
    action with a universal precondition is left out unless `quantified`: over a partly observed state it holds
    vacuously (cooking seed 11, 1.5B: read as the recipe was, "prepare meal" needed nothing yet, the game did not
    admit it, and the kitchen stopped being one)."""
    base = State(domain, objects, state - {fact})
    with_f = base.copy()
    with_f.add(fact)
    return {action_text(Step(act.name, tuple(b[p.name] for p in act.params)), templates)
            for act in (domain.actions[a] for a in templates if a in domain.actions)
            if quantified or not any(q.kind == "forall" for q in quantifiers(act.precondition))
            for b in with_f.bindings(act.params)
            if with_f.holds(act.precondition, b) and not base.holds(act.precondition, b)}


def changing(domain: Domain) -> set[str]:
    """The predicates some action's effects change."""
    return {e.atom.predicate for a in domain.actions.values() for e in a.effects}


def refuted(domain: Domain, templates: dict[str, str], objects: dict[str, str], state: set[GroundAtom],
            admissible: Collection[str], facts: Iterable[GroundAtom], attempted: str | None = None) -> set[GroundAtom]:
    """The facts (candidates, or facts of `state`) the game's admissible commands refute: with one of them true, an
    action whose command the game does not admit now would be possible, and without it not (a door is not closed
    where the game offers no "open door" for it). A game may admit more than is possible, so only a command it leaves
    out tells. Where facts make such an action possible together, the one an action changes goes first, and the
    others are weighed without it (cooking, 1.5B: "the counter is closed" beside "the counter is in the kitchen",
    and no "open counter": the counter is not closed, and still there). What no action changes (where a device is,
    what a thing is) only the command the agent just `attempted` and the game refused refutes: a game may offer fewer
    commands than the domain's preconditions allow (cooking: no "cook olive oil in oven"; with the oil held, the
    oven, the stove and the toaster were refuted out of the kitchen), and it does so whatever its precondition
    quantifies: the agent planned it on this state (cooking seed 27, 1.5B: the pantry read as a kitchen, "prepare
    meal" was refused there until the budget ran out)."""
    if not admissible:  # a game that lists no commands refutes nothing
        return set()
    admitted = set(admissible)
    changed = changing(domain)
    out: set[GroundAtom] = set()
    for f in sorted(facts, key=lambda a: (a.predicate not in changed, str(a))):
        if f.predicate in changed:
            refutes = not enabled(domain, templates, objects, state - out, f) <= admitted
        else:
            refutes = bool(attempted) and attempted in enabled(domain, templates, objects, state - out, f,
                                                               quantified=True) - admitted
        if refutes:
            out.add(f)
    return out


def about(domain: Domain, atom: GroundAtom, here: str | None, scope: dict[str, str]) -> bool:
    """Whether a candidate is about the place the player is in: an observation tells what is here (an atom with
    a place of `here`'s type names `here`)."""
    places = [x for x, a in zip(atom.args, domain.predicates[atom.predicate].params, strict=True)
              if here and domain.accepts(a.types, scope.get(here, ""))]
    return not places or here in places


def displaced(domain: Domain, add: Iterable[GroundAtom], state: set[GroundAtom]) -> set[GroundAtom]:
    """The true facts the domain's invariants exclude once `add` holds: the old value of an exactly-one group, a
    conflicting state of an at-most-one group per object (keyless at-most-one groups are artefacts of an empty
    start, not laws)."""
    return set(replacements(domain, add, lambda _: state, lambda g: g.exactly_one or g.arity > 0))


HERE, OPEN = "here", "?"


def bereft(domain: Domain, removed: Iterable[GroundAtom], state: set[GroundAtom]) -> set[GroundAtom]:
    """The facts of `removed` whose instance of an exactly-one group (with a key: where a thing is) has no fact in
    `state`."""
    out: set[GroundAtom] = set()
    for parts in keyed(domain):
        there = held(parts, state)
        out |= {a for a in removed if a.predicate in parts and parts[a.predicate].key(a.args) not in there}
    return out


@dataclass(frozen=True)
class Slot:
    """A fact with one open place that the model fills with words it copies from the observation: domain.toml's
    [explore] `ask` (entry -> fact): `?` is the open place, `here` the place the field `here` names (else where the
    player is), another variable each object of its type that the admissible commands name (its name is the
    field's: one slot per exit)."""

    field: str
    predicate: str
    args: tuple[str, ...]
    type: str  # of the open place
    entry: str  # the `ask` entry it is of

    def fact(self, here: str, name: str) -> GroundAtom:
        return GroundAtom(self.predicate, tuple(here if a == HERE else name if a == OPEN else a for a in self.args))


def slots(domain: Domain, commanded: dict[str, str]) -> list[Slot]:
    """The slots of domain.toml's `ask` over the objects the commands name (name -> type)."""
    out = []
    for entry, text in domain.meta.get("explore", {}).get("ask", {}).items():
        _, p, args = Rule.literal(text)
        params = domain.predicates[p].params
        open_type = domain.reduce_types(params[args.index(OPEN)].types)[0]
        var = [i for i, x in enumerate(args) if x.startswith("?") and x != OPEN]
        for combo in itertools.product(*([o for o, t in commanded.items() if domain.accepts(params[i].types, t)]
                                         for i in var)):
            bound = dict(zip(var, combo, strict=True))
            out.append(Slot("_".join(combo) if var else entry, p,
                            tuple(bound.get(i, x) for i, x in enumerate(args)), open_type, entry))
    return out


def still(asked: list[Slot], effects: Effects) -> bool:
    """Whether the player is where they were: the game admitted an action that does not change where the player is
    (after "open door to south, revealing the living room" the player is not in the living room, whatever the blank
    says)."""
    where = {s.predicate for s in asked if s.field == HERE}
    return bool(where) and any(effects) and not any(a.predicate in where for part in effects for a in part)


def unread(domain: Domain, effects: Effects) -> set[str]:
    """The predicates the observation does not tell: domain.toml's [explore] `told_after` maps a fact to the predicates
    only the observation of an action that just made it true tells (a recipe's needs, after the cookbook is read;
    the 1.5B chose "the recipe needs the oven" in the first kitchen), and that observation tells nothing else (cooking
    seed 10, 1.5B: reading the recipe, it put the potato it named in the cutlery drawer, the salt in the
    dishwasher)."""
    made, after = set(map(str, effects[0])), domain.meta.get("explore", {}).get("told_after", {})
    if only := [set(ps) for fact, ps in after.items() if fact in made]:
        return set(told(domain)) - set().union(*only)
    return {p for ps in after.values() for p in ps}


def listed(domain: Domain) -> dict[str, str]:
    """domain.toml's [explore] `list`: the types of which the model lists every thing the observation names, beyond
    the blanks (the ingredients of a recipe, which no command names yet), each with what it covers."""
    return domain.meta.get("explore", {}).get("list", {})


def pairs(domain: Domain) -> dict[str, str]:
    """domain.toml's [explore] `pairs`: predicates whose facts the model lists as copied words, one per argument (a
    pair for two), each with what it covers (where a thing lies: "a counter that has a potato, and a cookbook on it";
    chosen among a kitchen's facts without glosses, the 1.5B put them in the closed cupboard, the drawer or the trash
    can; which container is closed: chosen per object, it chose one fact per thing, where it is, in seed 10's first
    kitchen)."""
    return domain.meta.get("explore", {}).get("pairs", {})


def lines(domain: Domain) -> dict[str, dict[str, Any]]:
    """domain.toml's [explore] `lines`: kinds of line the model copies whole from the observation (a recipe's
    directions), each with what it `covers` and the predicates whose facts such a line `tells`, which are asked one
    line at a time (`line_facts`), not chosen with the rest."""
    return domain.meta.get("explore", {}).get("lines", {})


def kinds(domain: Domain) -> dict[str, str]:
    """domain.toml's [explore] `kinds`: predicates that say what a thing is (a knife, the cookbook), each with its
    question ("Which item is a knife?"), asked after the observation alone among the candidates (`kind_facts`), not
    chosen with the rest."""
    return domain.meta.get("explore", {}).get("kinds", {})


def blanks(domain: Domain, asked: list[Slot]) -> str:
    """The names question for the slots: each fact glossed, the open place a blank; then the listed types and
    pairs."""
    return blanks_question({s.field: domain.gloss(s.predicate, [BLANK if a == OPEN else a for a in s.args])
                            for s in asked} | {t: f"every {t} it names (a list): {what}"
                                               for t, what in listed(domain).items()}
                           | {p: f"{what} (a list{' of pairs' if arity(domain, p) == 2 else ''})"
                              for p, what in pairs(domain).items()})


def names_schema(domain: Domain, asked: list[Slot]) -> type[BaseModel]:
    """One string per slot: the words naming what fills it ("" where the observation does not tell); a list of
    such strings per listed type, and per listed predicate of them (unary) or of tuples of them."""
    words = Annotated[str, Field(max_length=40)]
    return enum_model("Names", **{s.field: (words, "") for s in asked},
                      **{t: (list[words], Field(default_factory=list, max_length=MAX_LISTED)) for t in listed(domain)},
                      **{p: (list[words if (n := arity(domain, p)) == 1 else tuple[(words,) * n]],  # type: ignore[misc]
                             Field(default_factory=list, max_length=MAX_LISTED)) for p in pairs(domain)})


def arity(domain: Domain, predicate: str) -> int:
    return len(domain.predicates[predicate].params)


def entries(words: dict[str, Any], predicate: str) -> list[tuple[str, ...]]:
    """A listed predicate's entries in a names reply, each a tuple of copied words."""
    return [(e,) if isinstance(e, str) else tuple(e) for e in words.get(predicate, [])]


def paired(domain: Domain, words: dict[str, Any], scope: dict[str, str]) -> list[GroundAtom]:
    """The facts the listed pairs tell: each word a name in `scope` (`denoted`) of the predicate's types."""
    out = []
    for p in pairs(domain):
        params = domain.predicates[p].params
        for pair in entries(words, p):
            args = tuple(denoted(symbol(w), scope) for w in pair)
            if all(a in scope and domain.accepts(q.types, scope[a]) for a, q in zip(args, params, strict=True)):
                out.append(GroundAtom(p, args))
    return list(dict.fromkeys(out))


def slot_facts(asked: list[Slot], words: dict[str, Any], state: set[GroundAtom], entered: str | None = None,
               placeholders: bool = False, fits: Callable[[Slot, str, GroundAtom], bool] = lambda *_: True
               ) -> tuple[list[GroundAtom], dict[str, str], str]:
    """The facts the filled slots tell, the objects they name (name -> type) and where the player is: its blank
    tells, else `entered` (the placeholder an action just moved the player into, the same room), else the state. Of the
    other slots: one the state already fills keeps its value (the map is not redrawn: the exit the player came in
    by); the slots of one entry name different objects, none of them here (a value two blanks give, or one the
    state gives another slot, is neither's: a small model read "east: the kitchen" as west), and a value must `fit`
    the slot (`propose.fits`). A slot left without a value is, with `placeholders`, a placeholder object
    `unseen_<here>_<field>`: the commands say it is there."""
    here_slot = next((s for s in asked if s.field == HERE), None)
    said_here = symbol(words.get(HERE, "")) if here_slot else ""
    said_here = said_here if said_here and fits(here_slot, said_here, here_slot.fact(said_here, said_here)) else ""
    here = said_here or entered or next((a.args[0] for a in state if here_slot and a.predicate ==
                                         here_slot.predicate), "")
    facts, named = ([here_slot.fact(here, here)], {here: here_slot.type}) if said_here or entered else ([], {})
    rooms = {here, entered} - {None, ""}
    others = [s for s in asked if s.field != HERE and (HERE not in s.args or here)]

    def known(s: Slot) -> str:  # the value the state gives the slot, or "": the entered placeholder's first (its
        # way back, which the move made), then the room's; never by the state's set order (coin seed 12's recorded
        # replies won or lost by PYTHONHASHSEED: the street, entered from the backyard, kept either that way back or
        # an exit an older reading had given it)
        i = s.args.index(OPEN)
        for r in [x for x in (entered, here) if x] or [""]:
            shape = (args := s.fact(r, OPEN).args)[:i] + args[i + 1:]
            if values := sorted(a.args[i] for a in state if a.predicate == s.predicate and len(a.args) == len(s.args)
                                and a.args[:i] + a.args[i + 1:] == shape):
                return values[0]
        return ""

    old = {s.field: known(s) for s in others}
    said = {s.field: symbol(words.get(s.field, "")) for s in others}
    for s in others:
        if old[s.field]:
            named[old[s.field]] = s.type
            continue
        siblings = [t for t in others if t.entry == s.entry and t is not s]
        name = said[s.field]
        if (not name or name in rooms or not fits(s, name, s.fact(here, name))
                or any(name in (old[t.field], said[t.field]) for t in siblings)):
            if not (placeholders and here):
                continue
            name = symbol(f"unseen {here} {s.field}")
        facts.append(s.fact(here, name))
        named[name] = s.type
    return facts, named, here


def by_object(domain: Domain) -> bool:
    """domain.toml's [explore] `choose_by_object`: the facts that become true are chosen in one list per object (the
    fact's first argument), not in one list of all (cooking, 1.5B, the first kitchens of seeds 10-15: 108 of the
    sensor's 169 facts found and 12 extra per object, 7 and 10 in one list, where it wrote ten facts and stopped)."""
    return bool(domain.meta.get("explore", {}).get("choose_by_object", False))


def owner(a: GroundAtom) -> str:
    """The object a fact is chosen under (`by_object`): its first argument, or its predicate where it has none."""
    return a.args[0] if a.args else a.predicate


def choice_schema(cands: list[GroundAtom], true_now: list[GroundAtom], per_object: bool = False) -> type[BaseModel]:
    """The facts that become true (among `cands`: one list, or one per object) and those that stop being true (among
    `true_now`): a grammar admits no other, so a type-wrong fact cannot be written."""
    fields: dict[str, Any] = {}
    if cands and per_object:
        groups: dict[str, list[str]] = {}
        for a in cands:
            groups.setdefault(owner(a), []).append(str(a))
        fields["true"] = (enum_model("BecomeTrue", **{o: (list[choice(atoms)], Field(
            default_factory=list, max_length=min(len(atoms), MAX_FACTS))) for o, atoms in groups.items()}),
            Field(default_factory=dict))
    elif cands:
        fields["true"] = (list[choice(map(str, cands))], Field(default_factory=list, max_length=MAX_FACTS))
    if true_now:
        fields["false"] = (list[choice(map(str, true_now))], Field(default_factory=list, max_length=MAX_FACTS))
    return enum_model("Facts", **fields)


def chosen_json(cands: Iterable[GroundAtom], true: list[str], false: list[str], per_object: bool = False) -> str:
    """The reply to `choice_schema` that chooses the facts `true` (among `cands`) and `false`."""
    if not per_object:
        return json.dumps({"true": true, "false": false})
    groups: dict[str, list[str]] = {owner(a): [] for a in cands}
    for t in true:
        groups[owner(Fact.parse(t).atom)].append(t)
    return json.dumps({"true": groups, "false": false})


def choices(reply: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The facts a reply to `choice_schema` chooses true and false, each once, in order."""
    true = reply.get("true", [])
    true = [t for ts in true.values() for t in ts] if isinstance(true, dict) else true
    return list(dict.fromkeys(true)), list(dict.fromkeys(reply.get("false", [])))


@dataclass(frozen=True)
class Reading:
    """What the model named (name -> type), the facts its names tell (`said`, the blanks filled) and those it chose,
    as one delta over a state (`build`)."""

    named: dict[str, str]
    said: list[GroundAtom]
    true: list[GroundAtom]
    false: list[GroundAtom]


Effects = tuple[Collection[GroundAtom], Collection[GroundAtom]]  # what an action made true, and false
NO_EFFECTS: Effects = ((), ())


def swap(a: GroundAtom, b: GroundAtom) -> tuple[str, str] | None:
    """The one place where two facts of one predicate differ, as (a's object, b's object); None where they differ
    in none or several."""
    diff = [(x, y) for x, y in zip(a.args, b.args, strict=False) if x != y]
    return diff[0] if a.predicate == b.predicate and len(a.args) == len(b.args) and len(diff) == 1 else None


def lasting(domain: Domain, unmade: Iterable[GroundAtom]) -> set[GroundAtom]:
    """What an action made false that no action makes true again: false for good, whatever later readings say (a
    door opened, as no action closes one: the 1.5B read doors the player had opened or gone through closed again,
    and the agent opened them again, "That is already open")."""
    made = {e.atom.predicate for a in domain.actions.values() for e in a.effects if e.add}
    return {a for a in unmade if a.predicate not in made}


def build(domain: Domain, objects: dict[str, str], state: set[GroundAtom], reading: Reading, effects: Effects,
          text: str) -> Delta:
    """The delta of a reading after an action the game accepted: the action's `effects` (the domain's model of it),
    the facts the names tell, the chosen facts, the old values the invariants remove, the upkeep rules. A
    placeholder (domain.toml's [explore] `placeholder` predicate holds for it) that the action was to put in a fact
    where the names put another object is that object (merged into it), unless that fact is one the action made
    false (the move did not happen: "here" is still the old room). A chosen fact that would undo an effect is
    dropped: a game's admissible commands do what the domain says, so the choice misread. A fact chosen false that
    would leave a thing with none of an exactly-one group (nowhere) stays true: the reading did not say where it went
    (cooking seed 10, 1.5B: the recipe's reading took the potato off the counter and put it nowhere, refused three
    times, and the recipe went unread)."""
    mark = domain.meta.get("explore", {}).get("placeholder")
    made, unmade = effects
    merged: dict[str, str] = {}
    for e in made:
        for c in reading.said:
            if (pair := swap(e, c)) and GroundAtom(mark, (pair[0],)) in state and c not in unmade:
                merged[pair[0]] = pair[1]

    def sub(a: GroundAtom) -> GroundAtom:
        return GroundAtom(a.predicate, tuple(merged.get(x, x) for x in a.args))

    kept, undone = {sub(a) for a in made}, {sub(a) for a in unmade}
    predicted = ({sub(a) for a in state} - undone) | kept
    add = [*map(sub, reading.said), *(a for a in map(sub, reading.true)
                                      if a not in undone and not displaced(domain, [a], predicted) & kept)]
    false = {sub(a) for a in reading.false} - kept
    after = (predicted - displaced(domain, add, predicted)) | set(add)
    after = upkeep(rules(domain), after - (false - bereft(domain, false, after - false)))
    types = {**reading.named, **objects}
    used = {x for a in after for x in a.args}
    gone = set(merged) - set(merged.values())
    new = [Entity(name=n, type=types[n]) for n in sorted(used - objects.keys())]
    return Delta(add=[Fact.of(a) for a in sorted(after - state)],
                 remove=[Fact.of(a) for a in sorted(state - after) if gone.isdisjoint(a.args)],
                 new_entities=new, removed_entities=sorted(gone), source="nl", text=text)


def scope_of(domain: Domain, objects: dict[str, str], named: dict[str, str], admissible: Iterable[str]
             ) -> dict[str, str]:
    """The objects (name -> type) the facts of a reading may use: those the model named (a name the problem has
    keeps its type there), those the admissible commands name, those known beforehand."""
    cfg = domain.meta.get("explore", {})
    return {**named, **command_objects(domain, cfg.get("actions", {}), admissible), **cfg.get("known", {}),
            **{n: objects[n] for n in named if n in objects}}


def after(domain: Domain, state: set[GroundAtom], effects: Effects, given: Iterable[GroundAtom]) -> set[GroundAtom]:
    """The state after the action's `effects`, with the facts the blanks tell (`given`) in place of the old values."""
    now = (state - set(effects[1])) | set(effects[0])
    return (now - displaced(domain, given, now)) | set(given)


def denoted(name: str, known: Iterable[str]) -> str:
    """A listed name as the known object (the problem's, the commands') its last words name, the longest such:
    "raw_purple_potato" is purple_potato (the observation says "a raw purple potato", the commands "take purple
    potato"; cooking seed 10, 1.5B: a second potato, refused wherever it was put); else the one known object whose
    last words it is ("cupboard": kitchen_cupboard, which the commands name); else the name itself."""
    known = list(known)
    if ends := [k for k in known if name == k or name.endswith(f"_{k}")]:
        return max(ends, key=len)
    return tails[0] if len(tails := [k for k in known if k.endswith(f"_{name}")]) == 1 else name


def listed_names(domain: Domain, words: dict[str, Any], known: Iterable[str]) -> dict[str, str]:
    """The things the model listed (name -> the listed type), each the known object its words end in (`denoted`)."""
    known = list(known)
    return {n: t for t in listed(domain) for w in words.get(t, []) if (n := denoted(symbol(w), known))}


class Proposal(NamedTuple):
    """From the filled slots: the facts they tell (`given`), the new objects they name (name -> type), the candidate
    facts about where the player is, the true facts about it that may stop being true (an action changes them), the
    true facts the admissible commands refute (`stale`: they stop being true whatever the model chooses), the choice
    question, the candidates asked about alone, not chosen (those of `lines` and `kinds`), and for each thing `stale`
    leaves with no place, the places the commands support (`refills`)."""

    given: list[GroundAtom]
    named: dict[str, str]
    cands: list[GroundAtom]
    true_now: list[GroundAtom]
    stale: set[GroundAtom]
    question: str
    alone: list[GroundAtom]
    refills: dict[tuple[str, ...], list[GroundAtom]]


def propose(domain: Domain, objects: dict[str, str], state: set[GroundAtom], asked: list[Slot],
            words: dict[str, Any], admissible: Iterable[str], effects: Effects = NO_EFFECTS,
            settled: Collection[GroundAtom] = (), done: Collection[GroundAtom] = (),
            attempted: str | None = None) -> Proposal:
    """The candidates of a reading, from the filled slots (`Proposal`; `effects`: what the action just taken made
    true and false, `build`'s; `settled`: what earlier actions made false for good, `lasting`, never a candidate;
    `done`: what admitted actions made true and none has made false since, which no candidate displaces and nothing
    refutes; `attempted`: the command the game just refused, see `refuted`). The admissible commands refute
    candidates and true facts alike (`refuted`), but not the facts the blanks tell (where the player is, the exits)."""
    admissible = list(admissible)
    cfg = domain.meta.get("explore", {})
    where = {s.predicate for s in asked if s.field == HERE}
    entered = next((a.args[0] for a in effects[0] if a.predicate in where), None)
    known = {**objects, **command_objects(domain, cfg.get("actions", {}), admissible)}
    laws, mark = rules(domain), cfg.get("placeholder")

    def fits(s: Slot, name: str, fact: GroundAtom) -> bool:
        """Whether a blank's value may fill its slot: an object the problem or the commands type fits its type (the
        0.5B named an exit "dishwasher", which the commands name as a container), and what the upkeep rules derive
        from the fact gives no slot-shaped fact a second value (two doors both described as a "closed wood door":
        the room behind the second is not the first one's, which already leads back elsewhere; a placeholder's
        value may still turn out to be any room)."""
        if name in known and not domain.accepts((s.type,), known[name]):
            return False
        i = s.args.index(OPEN)
        return not any(a.predicate == b.predicate == s.predicate and a.args[i] != b.args[i]
                       and a.args[:i] + a.args[i + 1:] == b.args[:i] + b.args[i + 1:]
                       and GroundAtom(mark, (a.args[i],)) not in state
                       for b in upkeep(laws, state | {fact}) - state - {fact} for a in state)

    given, named, here = slot_facts(asked, words, state, entered, bool(mark), fits)
    named |= {n: t for n, t in listed_names(domain, words, known).items() if n not in named}
    scope = scope_of(domain, objects, named, admissible)
    for a in paired(domain, words, scope):  # the first pair that gives a thing its place, unless an effect did
        if not displaced(domain, [a], set(effects[0])) and conflict(domain, [*given, a]) is None:
            given.append(a)
    asked_predicates = {s.predicate for s in asked}
    typed, unsaid = {**objects, **scope}, unread(domain, effects)
    untold = asked_predicates | unsaid
    now = after(domain, state, effects, given)
    if entered and here != entered:  # the placeholder the move entered is the room named here
        settled, done = ({*facts, *(GroundAtom(a.predicate, tuple(here if x == entered else x for x in a.args))
                                    for a in facts)} for facts in (settled, done))
    # what admitted actions made true stays (cooking seed 11, 1.5B: after "You roast the red apple with the oven.",
    # the apple taken before was chosen in the cutlery drawer; the pepper, taken and roasted, and the pepper read
    # as a knife gave "slice red hot pepper", which the game did not offer: the holding was refuted, not the knife)
    kept = set(done) & now
    # where the model lists what the observation names, a fact is about a thing it named or a new one (the commands')
    # (cooking seeds 10 and 11, 1.5B: after "You open the trash can. It's empty inside." it chose the apple, the
    # pepper and the cookbook in the trash can, then each of them sliced, diced, fried and roasted; after "You open
    # the kitchen cupboard. It's empty inside.", that the recipe was read)
    cands = [a for a in proposals(domain, scope, state) if a.predicate not in untold and about(domain, a, here, typed)
             and (not listed(domain) or (a.args and (owner(a) in named or owner(a) not in objects)))
             and a not in given and not displaced(domain, [a], set(given) | kept)]
    true_now = sorted(a for a in state if a.predicate in told(domain) and a not in kept)
    # refuted where the player is now: after the action's effects, with what the blanks tell (coin seed 17, 1.5B:
    # in the living room, still also "in the kitchen", a kitchen door whose opening the living room's commands do
    # not list was refuted closed, the kitchen's reading closed it again, and the agent walked to and fro)
    # without the listed facts, which are weighed with the choice in `read` (a counter listed closed refuted its
    # place, where "open counter" is not offered, instead of itself); of the facts the blanks tell, only what no
    # action changes (an exit, not where the player is), by the command the game refused (coin seed 24, 1.5B: "a
    # closed wood door" east of the kitchen and south of the living room was read as one room; entered from the
    # living room it was the bedroom, west of which the kitchen then lay, and "move west" was refused 47 times)
    moving = changing(domain)
    exits = [a for a in state if attempted and a.predicate in asked_predicates and a.predicate not in moving]
    gone = refuted(domain, cfg.get("actions", {}), typed, now - {a for a in given if a.predicate in pairs(domain)},
                   set(admissible), [*cands, *(a for a in true_now if a.predicate not in asked_predicates), *exits],
                   attempted)
    cands = [a for a in cands if a not in gone and a not in settled]
    apart = {p for spec in lines(domain).values() for p in spec["tells"]} | set(kinds(domain))
    alone, cands = [a for a in cands if a.predicate in apart], [a for a in cands if a.predicate not in apart]
    question = choose_question(scope, {str(a): domain.gloss(a.predicate, list(a.args)) for a in cands}
                               if len(cands) <= SHOWN else {}, admissible)
    # what may stop being true is what is here too (cooking seed 12, 1.5B: in the pantry it chose the cookbook no
    # longer in the kitchen, which the invariants refused three times, and the move went unread), and what an action
    # changes: what none changes (where a device is) never stops being true, and one read wrongly is refuted by the
    # commands the agent tries (`refuted`)
    stale = gone & set(true_now) | {b for a in gone & set(exits) for b in [a, *sources(laws, state, a)]}
    return Proposal(given, {n: t for n, t in scope.items() if n not in objects}, cands,
                    [a for a in true_now if about(domain, a, here, typed) and a.predicate not in unsaid
                     and a.predicate in moving],
                    stale, question, alone,
                    refills(domain, cfg.get("actions", {}), typed, now - stale, stale, set(admissible)))


def refills(domain: Domain, templates: dict[str, str], objects: dict[str, str], state: set[GroundAtom],
            stale: set[GroundAtom], commands: set[str]) -> dict[tuple[str, ...], list[GroundAtom]]:
    """For each thing the refuted facts (`stale`) leave with no value of an exactly-one group in `state` (nowhere:
    `build` would keep the refuted one), the values of that group over `objects` that alone make an admitted
    command possible (the knife on the counter or in an open cupboard here, where "take knife" is offered)."""
    out: dict[tuple[str, ...], list[GroundAtom]] = {}
    for parts in keyed(domain):
        if not (lost := {parts[a.predicate].key(a.args) for a in stale if a.predicate in parts} - held(parts, state)):
            continue
        for a in proposals(domain, objects, state):
            if (a.predicate in parts and (key := parts[a.predicate].key(a.args)) in lost and a not in stale
                    and enabled(domain, templates, objects, state, a) & commands):
                out.setdefault(key, []).append(a)
    return out


def examples(domain: Domain) -> list[Shot]:
    """domain.toml's worked examples (`[[explore.examples]]`: an invented problem, action, observation, the names
    and the choice), with the objects the choice may use computed as for a real observation."""
    out = []
    for ex in domain.meta.get("explore", {}).get("examples", []):
        objects = " ".join(f"{n} - {t}" for n, t in ex["objects"].items())
        problem = Problem.parse(f"(define (problem current) (:domain {domain.name}) (:objects {objects}) "
                                f"(:init {' '.join(ex['init'])}))", "a worked example of domain.toml")
        asked = slots(domain, command_objects(domain, domain.meta["explore"].get("actions", {}), ex["commands"]))
        state = {GroundAtom(a.predicate, a.args) for a in problem.init}
        made = [Fact.parse(f).atom for f in ex.get("made", [])]  # what the example's action just made true
        proposal = propose(domain, problem.objects, state, asked, ex["names"], ex["commands"], (made, []))
        names = json.dumps({s.field: ex["names"].get(s.field, "") for s in asked} |
                           {t: ex["names"].get(t, []) for t in [*listed(domain), *pairs(domain)]})
        out.append(Shot(CurrentProblem(problem, [], False), ex.get("action"), ex["observation"], blanks(domain, asked),
                        names, proposal.question, chosen_json(proposal.cands, ex.get("true", []), ex.get("false", []),
                                                           by_object(domain))))
    return out


def settle(llm: LLM, domain: Domain, first: Messages, chosen: list[GroundAtom], calls: list[CallRecord],
           admitted: Callable[[GroundAtom], bool] = lambda _: False) -> list[GroundAtom]:
    """The chosen facts, where two of them cannot both hold (an invariant), with the one of the two that alone makes
    an admitted command possible (`admitted`: the commands break the tie, "take coin" beside "the coin is here" and
    "the player carries the coin"), else the one the model answers to a targeted question about the two (after
    `first`, the choice's messages); neither where it says the text does not tell. Asked again, the whole choice came
    back the same (the 1.5B chose "the player carries the coin" beside "the coin is in the corridor" 123 times in
    one episode; coin seed 16 on 085d559: it answered "unclear" to the question, and the coin it saw was lost)."""
    while (both := conflict(domain, chosen)) is not None:
        backed = [a for a in both if admitted(a)]
        picked = str(backed[0]) if len(backed) == 1 else which(
            llm, first, "Which one is true now?", {str(a): domain.gloss(a.predicate, list(a.args)) for a in both},
            calls)
        chosen = [a for a in chosen if a not in both or str(a) == picked]
    return chosen


def place(llm: LLM, domain: Domain, first: Messages, chosen: list[GroundAtom], cands: list[GroundAtom],
          listed_now: set[str], now: set[GroundAtom], calls: list[CallRecord]) -> list[GroundAtom]:
    """The chosen facts, where a thing the model listed has no value yet of an exactly-one group (where it is) and
    several candidates for it, with the one it answers to a question among those, glossed (after `first`, the
    choice's messages), in place of the choice's; the choice's where it says the text does not tell. Chosen in one
    list of a kitchen's facts, shown no glosses, the 1.5B put what lay on the counter in the closed cupboard, the
    drawer or the trash can (cooking seeds 10 and 11)."""
    for parts in keyed(domain):
        there = held(parts, now)
        options: dict[tuple[str, ...], list[GroundAtom]] = {}
        for a in cands:
            if a.predicate in parts and (key := parts[a.predicate].key(a.args)) not in there and set(key) <= listed_now:
                options.setdefault(key, []).append(a)
        for key, atoms in sorted(options.items()):
            if len(atoms) > 1 and (picked := where_now(llm, domain, first, key, atoms, calls)):
                chosen = [a for a in chosen if a not in atoms] + [picked]
    return chosen


def where_now(llm: LLM, domain: Domain, first: Messages, key: tuple[str, ...], atoms: list[GroundAtom],
              calls: list[CallRecord]) -> GroundAtom | None:
    """The one of `atoms` (values of one thing's exactly-one group) the model answers to "Which is true of ... now?"
    among them, glossed (after `first`); the only one unasked; None where it says the text does not tell."""
    if len(atoms) == 1:
        return atoms[0]
    picked = which(llm, first, f"Which is true of {' and '.join(key)} now?",
                   {str(a): domain.gloss(a.predicate, list(a.args)) for a in atoms}, calls, by_text=True)
    return next((a for a in atoms if str(a) == picked), None)


def refill(llm: LLM, domain: Domain, first: Messages, options: dict[tuple[str, ...], list[GroundAtom]],
           calls: list[CallRecord]) -> list[GroundAtom]:
    """Where the commands refute a thing's only place, the place they support (`refills`), or the one of several
    the model answers (after `first`). Cooking seed 21 (1.5B): "The kitchen cupboard contains a knife." was read as
    the knife held; the commands refuted the holding at every step ("take knife" offered), but `build` keeps a fact
    that would leave a thing nowhere, the plan sliced with the knife, and "slice red hot pepper" was refused 12
    times until the budget ran out."""
    return [a for key, atoms in sorted(options.items()) if (a := where_now(llm, domain, first, key, atoms, calls))]


def line_facts(llm: LLM, domain: Domain, observation: str, cands: list[GroundAtom], calls: list[CallRecord]
               ) -> list[GroundAtom]:
    """The facts the observation's lines tell (`lines`), where a kind of line has candidates: the model lists such
    lines, copied whole (`copied`), after the observation alone (listed with the names, the 1.5B followed the worked
    example nearest the question, which had none); of each line, the fact it answers to a short question ("Which fact
    does the direction "roast the purple potato" tell?") among the candidates of the predicates its kind tells about
    the things whose whole names the line spells out, glossed, one thing's after another (in the order of the
    predicates, the 1.5B read "slice the red apple" as "the recipe wants the red apple roasted"); a line that spells
    out none is not asked (the 1.5B listed "prepare meal" as a direction in 18 recorded cooking episodes of 18 and
    answered it with a want each time: seed 25, "the recipe wants the salt fried", which the game offers no command
    for); none where it says the line does not tell."""
    first, out = observation_messages(observation), []
    text = Annotated[str, Field(max_length=80)]
    schema = enum_model("Lines", lines=(list[text], Field(default_factory=list, max_length=MAX_LISTED)))
    for kind, spec in lines(domain).items():
        told_here = sorted((a for a in cands if a.predicate in spec["tells"]), key=owner)
        if not told_here:
            continue
        reply, record = llm.complete(list_messages(first, f"List {spec['covers']}."), schema)
        calls.append(record)
        owners = {owner(a) for a in told_here}
        for line in [t for t in reply.lines if copied(t, observation)]:
            named = set(whole_names(tokens(line), owners))
            options = {str(a): domain.gloss(a.predicate, list(a.args)) for a in told_here if owner(a) in named}
            if options and (picked := which(llm, first, f'Which fact does the {kind} "{line}" tell?', options, calls,
                                            by_text=True)):
                out.append(Fact.parse(picked).atom)
    return list(dict.fromkeys(out))


def kind_facts(llm: LLM, domain: Domain, observation: str, cands: list[GroundAtom], calls: list[CallRecord],
               state: Iterable[GroundAtom] = ()) -> list[GroundAtom]:
    """The facts that say what a thing is (`kinds`): per predicate in order, the one the model answers to its question
    after the observation alone, among the things of no kind yet (in `state` or this reading) shown by their names;
    none where it says the text does not tell. Chosen per object, the 1.5B chose an apple and a pepper
    knives (cooking seed 11) and missed the knife (seed 10); asked so, 12 of 12 right on seven kitchen observations,
    "unclear" where none is a knife; asked first, in seed 10's first kitchen, it made the cookbook a knife."""
    first, out = observation_messages(observation), []
    for p, question in kinds(domain).items():
        kinded = {owner(a) for a in [*state, *out] if a.predicate in kinds(domain)}
        options = {str(a): owner(a).replace("_", " ") for a in cands
                   if a.predicate == p and owner(a) not in kinded}
        if options and (picked := which(llm, first, question, options, calls, by_text=True)):
            out.append(Fact.parse(picked).atom)
    return out


def read(llm: LLM, graph: WorldGraph, action: str | None, observation: str, admissible: Iterable[str] = (),
         effects: Effects = NO_EFFECTS, rounds: int = 3, note: str | None = None,
         lock: AbstractContextManager = nullcontext(), took: bool = False,
         settled: Collection[GroundAtom] = (), done: Collection[GroundAtom] = (),
         refused: bool = False) -> EditOutcome:
    """An observation as a verified change, proposed and chosen: the model names the places and things it tells
    (copied words, a type from an enum); the domain proposes the type-correct facts over them, the objects the
    admissible commands name and the problem's objects known beforehand; the model chooses which became true and
    which of the problem's facts stopped being true (enums); a fact of the problem the admissible commands refute
    stops being true (`refuted`: a door the model said was closed). After an admitted action that leaves the player
    where they were, the observation reports that action: what stopped being true is its effects, and the model's
    "false" choices are not read (after "open door to north" the 1.5B chose every door of the room open; the agent
    then walked into a closed one, read it closed, opened the open one again, for 50 steps of coin seed 29). A
    refused choice is asked again with the issues, at most `rounds` replies. `effects`: what the action just taken
    made true and false, where the game accepted it (`build`); `took`: the game's commands changed with it, so it
    took effect (a failed move changes none): a room blank naming the room it left is not read (coin seed 14, 1.5B:
    the backyard's "to the West you see the kitchen" read as being in the kitchen, whose exits it then redrew).
    `settled`: what earlier actions made false for good (`lasting`): no candidate; `done`: what admitted actions made
    true and none has made false since (see `propose`). `refused`: the game did not admit the action (it lists its
    commands, and the action was not among them), so nothing changed and the observation is its refusal: the model
    is not asked (it read "Unknown action: I'm not sure what you mean." as doors closed, containers opened and the
    recipe unread), only what the commands refute stops being true. `note` (e.g. that the last reading left no plan)
    goes before the observation."""
    domain = graph.domain
    out = EditOutcome()
    shown = CurrentProblem.of(graph)
    objects = dict(shown.problem.objects)
    state = {GroundAtom(a.predicate, a.args) for a in shown.problem.init}
    cfg = domain.meta.get("explore", {})
    asked = slots(domain, command_objects(domain, cfg.get("actions", {}), admissible))
    messages = read_messages(domain, examples(domain), shown, action, observation, blanks(domain, asked), note)
    text = f"{action or 'start'}: {observation.strip()}"
    attempted = action if refused else None
    try:
        names = names_schema(domain, asked)
        reply = names()  # nothing named, where the observation is a refusal
        if not refused:
            reply, record = llm.complete(messages, names)
            out.calls.append(record)
        words = reply.model_dump()
        for t in listed(domain):  # a thing listed is one the observation names (after "Unknown action", the 1.5B
            words[t] = [w for w in words[t] if copied(w, observation)]  # listed the recipe's apple and pepper)
        for p in pairs(domain):
            words[p] = [pair for pair in entries(words, p) if all(copied(w, observation) for w in pair)]
        stayed = still(asked, effects)
        left = {a.args[0] for a in effects[1] if any(s.field == HERE and s.predicate == a.predicate for s in asked)}
        if stayed or (took and symbol(words.get(HERE, "")) in left):
            words[HERE] = ""  # the room the problem holds, or the one the move entered
        given, named, cands, true_now, stale, question, alone, options = propose(
            domain, objects, state, asked, words, admissible, effects, settled, done, attempted)
        schema = choice_schema(cands, true_now, by_object(domain))
        listed_now = set(listed_names(domain, words, {**objects, **command_objects(domain, cfg.get("actions", {}),
                                                                                   admissible)}))
        now, commands = after(domain, state, effects, given), set(admissible)

        def admitted(a: GroundAtom) -> bool:
            return bool(enabled(domain, cfg.get("actions", {}), {**objects, **named}, now, a) & commands)

        messages += retry(reply.model_dump_json(), question)
        asking = list(messages)
        apart = [*([] if refused else [*line_facts(llm, domain, observation, alone, out.calls),
                                       *kind_facts(llm, domain, observation, alone, out.calls, now)]),
                 *refill(llm, domain, asking, options, out.calls)]
        for _ in range(rounds):
            try:
                answer, record = (schema(), None) if refused else llm.complete(messages, schema)
            except LLMError as e:
                if e.raw is None:  # the endpoint failed, not the reply
                    raise
                out.rounds.append([e.reason])
                messages += retry(e.raw, invalid_reply(e.reason))
                continue
            out.calls += [record] if record else []
            by_text = {str(a): a for a in [*cands, *true_now]}
            true, false = ([by_text[t] for t in ts] for ts in choices(answer.model_dump()))
            if stayed:  # the observation reports the action: what stopped being true is its effects (`build`)
                false = []
            true = place(llm, domain, asking, [*true, *apart], cands, listed_now, now, out.calls)
            true = settle(llm, domain, asking, true, out.calls, admitted)
            # refuted again with the choice in place, and the listed facts (cooking, 1.5B: "the counter is closed"
            # beside "the counter is in the kitchen", both chosen in the first kitchen, no "open counter": the agent
            # tried it)
            wrong = refuted(domain, cfg.get("actions", {}), {**objects, **named}, now | set(true), commands,
                            [*true, *(a for a in given if a.predicate in pairs(domain))], attempted)
            true, said = [a for a in true if a not in wrong], [a for a in given if a not in wrong]
            delta = build(domain, objects, state, Reading(named, said, true, [*false, *stale]), effects, text)
            if delta.is_empty():
                return out
            try:
                with lock:
                    out.change = graph.apply(delta)
                return out
            except ChangeRefused as e:
                out.rounds.append([str(i) for i in e.issues])
            messages += retry(answer.model_dump_json(), edits_refused(out.rounds[-1]))
    except LLMError as e:
        out.rounds.append([e.reason])
        out.error = str(e)
        return out
    out.error = f"no valid choice after {rounds} replies; the graph is unchanged"
    return out
