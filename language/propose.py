"""Propose, then choose (issue 23): the model names and chooses, the symbolic side proposes.

A state change in English becomes a verified delta in four stages, each accounted (seconds, tokens) in
`Outcome.stages`:

1. `mentions`: the model copies the words of the sentence that name people, rooms and things (a list of
   short strings; worked examples first);
2. `ground`: a word that is an entity's whole name (an article and a possessive's "s" aside) names it; MiniLM
   embeddings match the others to an entity. The entities a matched entity owns through a
   static fact (a room's fixtures; not a shelf level that every shelf has) are tried first for the other
   words where they are of the kind the word best fits ("the sink": the kitchen's; "the book": not the
   living room's bookshelf). Of the entities of the best one's type, those whose whole name the sentence spells
   out come first, however near the word (the model often copies "the bedroom" from "Amy's bedroom"). Where
   several entities of a type fit a word about as well, the model chooses among them or says the sentence does not
   tell which: then the outcome is a `Clarification` with those entities, not a guess. A phrase copied for two
   things ("the dates on the 1st level of the shelf") names the other one too (`besides`);
3. `candidates`: the single-fact changes the domain admits for the named entities: every type-correct atom of
   a changing predicate over them that is false now (it may become true), and every true one that no
   exactly-one invariant replaces (it may stop being true); shown as glosses ("now: wren holds ivo scarf").
   The things the named ones own, or whose names hold a named one's whole name, count as named where the sentence
   says the other words of their names and nothing named is of their type (`said_with`: "the dryer" in the named
   laundry room, "the remote for Michael's bedroom TV"; a small model often copies only the person, the room and one
   thing);
4. `choose`: the model picks, for each predicate with candidates, one as shown or "none" (enums in the schema;
   not letters, whose answer for a predicate the 0.5B copied from the worked examples). It is asked twice, the
   second time with the candidates in reverse order, and only what it picks both times is taken (the 0.5B's choice of
   a side effect, "no longer clean" for "picked up", changes with the order); where the two replies differ, a third
   order (rotated by half, where that is new) decides: a predicate's answer two of the three give is taken (a free
   one's, only where the first two agree); a place (a person's or a thing's) one order gives where the others say none
   is taken too.
   The old place or value of what it makes true is removed by the domain's exactly-one invariants, never by the
   model; two chosen facts that the invariants exclude are a targeted question to the model, then (if the sentence
   does not tell) a `Clarification` between them; so is a thing left with no value of an exactly-one group, among its
   candidates, else among those over the named things' static neighbours (a named shelf's levels: `emptied`). Each
   fact of the delta records how it was chosen (`Delta.how`).

The worked examples come from domain.toml's `[[examples]]` (an invented sentence and mini-situation); their
candidate lists and answers are computed by the same code, so they show exactly what the model will see.
"""

from __future__ import annotations

import functools
import itertools
import re
import string
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Annotated, NamedTuple

from pydantic import BaseModel, Field, StringConstraints

from kgplan.domains.formula import GroundAtom, atoms
from kgplan.domains.invariants import InvariantPart, MutexGroup
from kgplan.domains.model import Domain
from kgplan.domains.verify import ChangeRefused
from kgplan.graph.model import Delta, Fact
from kgplan.graph.store import Tx
from kgplan.graph.world import WorldGraph
from kgplan.language.llm import LLM, CallRecord, LLMError, choice, enum_model
from kgplan.language.prompts import UNCLEAR, Messages, candidate_lines, propose_messages, which_messages
from kgplan.language.update import Clarification, Outcome
from kgplan.planners.state import State, implied

MIN_SIMILARITY = 0.4  # a word fitting no entity this well names none
MIN_RELEVANCE = 0.45  # a sentence whose meaning comes less near a free change's gloss is not shown it (`relevant`)
PLACE_NEARER = 0.06  # nor one whose meaning comes nearer a new place or value of its thing by more than this
TIE = 0.9  # entities of the best one's type fitting a word at least this share as well may be meant
MAX_OPTIONS = 8  # of those, the best, for the model to choose from (or to say the sentence does not tell)
OWNED_FIRST = 0.7  # an owned entity is taken when it fits at least this share of the best fit
MAX_MENTIONS = 8
ARTICLES = {("the",), ("a",), ("an",)}  # a phrase naming an entity by its whole name may start with one
NONE = "none"  # a predicate none of whose candidates happened
NOW, NO_LONGER = "now: ", "no longer: "  # how a candidate shows what becomes true, and what stops
EVERY = "*every"  # the option "every <type>" of a goal's question which thing a word names
Mentions = enum_model("Mentions", mentions=(
    list[Annotated[str, StringConstraints(min_length=1, max_length=48)]], Field(max_length=MAX_MENTIONS)))


@dataclass(frozen=True)
class Candidate:
    """A single-fact change: `atom` becomes true (`value`) or stops being true; its id is how it is shown ("now: wren
    holds ivo scarf")."""

    id: str
    atom: GroundAtom
    value: bool
    key: str = ""  # the thing it gives a value, where the candidates give several things one of its predicate

    @property
    def field(self) -> str:
        """Its reply's field: one choice per predicate, and per thing where its predicate gives each thing exactly
        one value ("person_in_room_emily" beside "person_in_room_helen")."""
        return f"{self.atom.predicate}_{self.key}" if self.key else self.atom.predicate

    @property
    def fact(self) -> str:
        """What it shows, without "now: " or "no longer: "."""
        return self.id.removeprefix(NOW if self.value else NO_LONGER)


def words(name: str) -> str:
    """An entity's name as words, as the model reads it."""
    return name.replace("_", " ")


def gloss(domain: Domain, atom: GroundAtom) -> str:
    """A fact in English, its entities' names as words ("wren holds ivo scarf")."""
    return domain.gloss(atom.predicate, [words(x) for x in atom.args])


def after(domain: Domain, c: Candidate) -> str:
    """What holds once the change is made, in English: its gloss, or where it stops being true, domain.toml's words
    for the false value (`negated`: "ivo scarf is dirty") where it has them."""
    negated = domain.meta.get("predicates", {}).get(c.atom.predicate, {}).get("negated")
    return gloss(domain, c.atom) if c.value or not negated else negated.format(*map(words, c.atom.args))


def tokens(text: str) -> list[str]:
    """The lower-case letter and digit runs of a text or an entity's name (a name's words, where a sentence says
    them: "Amy's bedroom" spells out amy_bedroom), a number's ordinal ending dropped ("the 6th level":
    shelf_level_6)."""
    return [re.sub(r"^(\d+)(?:st|nd|rd|th)$", r"\1", t) for t in re.findall(r"[a-z0-9]+", text.lower())]


def spoken(text: str) -> list[str]:
    """`tokens` without a possessive's "s" ("Helen's bedroom": helen, bedroom)."""
    return [w for w in tokens(text) if w != "s"]


def said_with(text: str, named: Collection[str], types: dict[str, str], owns: dict[str, set[str]]) -> dict[str, str]:
    """The entities a named one owns (a named room's fixtures), or whose names hold a named one's whole name (the
    remote of michael_bedroom_tv), where the sentence says the other words of their names ("placed the robe in the
    dryer" in the laundry room: the_laundry_room_dryer; "the remote for Michael's bedroom TV"), as words -> entity: a
    small model often copies only the person, the room and one thing. Only things of a type nothing named has (`types`:
    name -> type): Deborah and Maria's bedroom named, deborah_bedroom is not."""
    said, kinds = set(tokens(text)), {types.get(n) for n in named}
    of = {e: set(tokens(e)) for e in types}
    rest: dict[str, int] = {}  # entity -> the fewest words of its name the sentence says besides a named one's
    for owner in named:
        mine = set(tokens(owner))
        for e in {e for e, ws in of.items() if mine < ws} | owns.get(owner, set()):
            if e not in named and types.get(e) not in kinds and (more := of.get(e, set(tokens(e))) - mine - {"the"}) \
                    and more <= said:
                rest[e] = min(rest.get(e, len(more)), len(more))
    # of a type, those named most closely: the remote whose name is the named TV's and "remote", not the one whose
    # name is the named room's and "tv remote"
    fewest: dict[str | None, int] = {}
    for e, n in rest.items():
        fewest[types.get(e)] = min(n, fewest.get(types.get(e), n))
    return {words(e): e for e in sorted(rest) if rest[e] == fewest[types.get(e)]}


def whole_names(said: list[str], names: Iterable[str]) -> list[str]:
    """The entities whose whole names the words `said` spell out one after another, the longest name first at each
    word (words between names are skipped)."""
    by_first: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    full = {}
    for n in names:
        if t := tuple(tokens(n)):
            by_first[t[0]].append(t)
            full[t] = n
    out, i = [], 0
    while i < len(said):
        fits = [t for t in by_first.get(said[i], ()) if tuple(said[i:i + len(t)]) == t]
        if fits:
            t = max(fits, key=len)
            out.append(full[t])
            i += len(t)
        else:
            i += 1
    return list(dict.fromkeys(out))


def copied(phrase: str, text: str) -> bool:
    """Whether the words of `phrase` occur one after another in `text` (a copy of its words)."""
    p, t = tokens(phrase), tokens(text)
    return bool(p) and any(t[i:i + len(p)] == p for i in range(len(t) - len(p) + 1))


def spelled_out(mention: str, names: Iterable[str]) -> list[str]:
    """The entities whose whole names a copied phrase spells out ("Jennifer the magenta pen": jennifer, magenta_pen;
    a possessive's "s" is skipped); [] where it spells fewer than two (the phrase then names one thing, matched by
    meaning)."""
    out = whole_names(spoken(mention), names)
    return out if len(out) > 1 else []


def unsaid(text: str, mentions: Iterable[str], names: Iterable[str]) -> list[str]:
    """The entities whose whole names the text spells outside the phrases the model copied (it copied "Karen's
    bedroom" from "Place the watermelon on the shelf in Karen's bedroom": watermelon): a small model leaves phrases
    out."""
    said: list[str | None] = [*spoken(text)]
    for m in mentions:
        copied = spoken(m)
        for i in range(len(said) - len(copied) + 1):
            if copied and said[i:i + len(copied)] == copied:
                said[i:i + len(copied)] = [None] * len(copied)
                break
    return between(said, names)


def between(said: list[str | None], names: Iterable[str]) -> list[str]:
    """`whole_names` within each run of the words `said` that no None breaks."""
    runs = " ".join(w or "|" for w in said).split("|")
    return list(dict.fromkeys(e for run in runs for e in whole_names(run.split(), names)))


def besides(mention: str, entity: str, names: Collection[str]) -> tuple[list[str], str | None]:
    """What a copied phrase names besides `entity`, which it names by meaning: the other entities whose whole names
    it spells out in words not of `entity`'s name (the 0.5B copied "the dates on the 1st level of the shelf",
    shelf_level_1 and the dates, and "plate in the sink", the kitchen sink and the plate, as one phrase each: seed181,
    seed180; not ryan_bedroom_tv in "the remote for Ryan's bedroom TV"); and where it spells out `entity`'s whole name
    and its other words say a word of another entity's name, those words, to match by meaning ("Brian's cardigan on
    the 6th level of the shelf": brian_cardigan, then "on the 6 level of the shelf")."""
    said = spoken(mention)
    own = set(tokens(entity))
    spelled = [e for e in between([w if w not in own else None for w in said], names) if e != entity]
    if spelled or whole_names(said, [entity]) != [entity]:
        return spelled, None
    articles = {a for (a,) in ARTICLES}
    rest = [w for w in said if w not in own | articles]
    vocabulary = {w for n in names if n != entity for w in tokens(n)}
    return [], " ".join(rest) if vocabulary & set(rest) else None


def ids() -> Iterable[str]:
    """a, b, ..., z, aa, ab, ...: short ids a grammar writes in one or two tokens."""
    for n in itertools.count(1):
        for letters in itertools.product(string.ascii_lowercase, repeat=n):
            yield "".join(letters)


def owned(domain: Domain, facts: Iterable[GroundAtom]) -> dict[str, set[str]]:
    """entity -> what it owns: the other arguments of its static binary facts that no other such fact names in
    that place (a room's fixtures; not a shelf level that every shelf has, nor a room doors lead to)."""
    static = set(domain.predicates) - changing(domain)
    pairs = [a for a in facts if a.predicate in static and len(a.args) == 2]
    count = Counter((p, i, args[i]) for p, args in pairs for i in (0, 1))
    out: dict[str, set[str]] = defaultdict(set)
    for p, (x, y) in pairs:
        if count[p, 1, y] == 1:
            out[x].add(y)
        if count[p, 0, x] == 1:
            out[y].add(x)
    return out


def told_only(domain: Domain) -> set[str]:
    """Predicates domain.toml marks `told = true`: no action changes them (where people are), a sentence may (not
    pddl_edit.told, what an observation may tell)."""
    return {p for p, meta in domain.meta.get("predicates", {}).items() if meta.get("told") and p in domain.predicates}


def changing(domain: Domain) -> set[str]:
    """Predicates a sentence may change: those an action changes, and the `told_only` ones."""
    return (set(domain.predicates) - domain.static_predicates()) | told_only(domain)


def keyed(domain: Domain) -> list[dict[str, InvariantPart]]:
    """The parts, by predicate, of each exactly-one group with a key (where a thing is)."""
    return [{p.predicate: p for p in g.parts} for g in domain.invariants if g.exactly_one and g.arity]


def held(parts: dict[str, InvariantPart], atoms: Iterable[GroundAtom]) -> set[tuple[str, ...]]:
    """The keys (which thing) of one `keyed` group that `atoms` give a value."""
    return {parts[a.predicate].key(a.args) for a in atoms if a.predicate in parts}


def parts_of(domain: Domain) -> dict[str, InvariantPart]:
    """Each predicate of a `keyed` group -> its part there (which argument is the thing given a place)."""
    return {p: parts[p] for parts in keyed(domain) for p in parts}


def replaced(domain: Domain) -> set[str]:
    """Predicates whose old value an exactly-one invariant removes when a new one becomes true."""
    return set(parts_of(domain))


def told_places(domain: Domain) -> set[str]:
    """The `told_only` predicates an exactly-one invariant gives one value: where a person is."""
    return replaced(domain) & told_only(domain)


def candidates(domain: Domain, entities: dict[str, str], state: Collection[GroundAtom]) -> list[Candidate]:
    """The single-fact changes the domain admits over the entities the sentence named (name -> type), and the values
    an invariant replaces that hold already where they are `told` (where a person is) or a place that does not move
    (`stays`; no change when chosen, but they may exclude another choice); not over what they
    own (a room's light is proposed when the light is named, not for the room; an item picked up in a room gets no
    candidate place on the room's table): a small model chooses worse among more candidates."""
    out, replaceable, kept = [], replaced(domain), told_places(domain)
    groups, changes = keyed(domain), changing(domain)
    movers = {k for parts in groups for a in state if a.predicate in parts and a.predicate in changes
              for k in parts[a.predicate].key(a.args)}  # things whose place changes (people, items)

    def stays(atom: GroundAtom) -> bool:
        """A thing's value that holds already where the value is named things that do not move ("washed the fork
        in the sink", the fork in the sink already: the 0.5B chose "now: jerry holds fork" where the sink was no
        candidate, seed194); not a person holding it (answered "none", it taught the 0.5B to answer "none" to
        "picked up the remote": seed134)."""
        parts = next(parts for parts in groups if atom.predicate in parts)
        place = set(atom.args) - set(parts[atom.predicate].key(atom.args))
        return bool(place) and not place & movers

    for p in sorted(changes):
        params = domain.predicates[p].params
        objects = [[e for e, t in entities.items() if domain.accepts(a.types, t)] for a in params]
        for args in itertools.product(*objects):
            if len(set(args)) < len(args):
                continue
            atom = GroundAtom(p, tuple(args))
            # where a person is already ("X went to R" with X in R): the 0.5B answered "none" to "turned off the
            # light" when that was the lone candidate, not beside the move. Not what an action changes: "now: pia
            # holds the teapot" (held already, so answered "none") in the worked examples taught the 0.5B to answer
            # "none" to "picked up the remote" (seed134)
            if atom not in state or p in kept or (p in replaceable and stays(atom)):
                out.append((atom, True))
            elif p not in replaceable:
                out.append((atom, False))
    out.sort(key=lambda c: not c[1])  # what may become true first
    glosses = [(NOW if value else NO_LONGER) + gloss(domain, atom) for atom, value in out]
    shown = told_apart(glosses, [atom for atom, _ in out])
    # a field per thing where several get a value of one predicate: with one field for where two people are, the
    # 0.5B chose "helen is in brandon bedroom" (held already) for "Emily went to Brandon's bedroom and took
    # Kenneth's phone from Helen", and Emily's move was lost (seed226, 229)
    part = parts_of(domain)
    key = {a: "_".join(part[a.predicate].key(a.args)) if a.predicate in part else "" for a, _ in out}
    things = Counter(p for p, _ in {(a.predicate, key[a]) for a, _ in out})
    return [Candidate(said, atom, value, key[atom] if things[atom.predicate] > 1 else "")
            for said, (atom, value) in zip(shown, out, strict=True)]


def relevant(domain: Domain, text: str, cands: list[Candidate]) -> list[Candidate]:
    """The candidates but the free ones (no exactly-one invariant gives their predicate a value: a faucet, a light)
    whose gloss the sentence's meaning (MiniLM) comes less near than MIN_RELEVANCE, and those that stop being true where
    it comes nearer a new place or value of their thing by more than PLACE_NEARER. "Washed the fork in the sink" is
    0.30-0.42 from "the faucet of the kitchen sink is turned on" (14 washing sentences, seeds 531-577), a candidate the
    0.5B chose in every washing sentence where it was shown (seed218, 219, 222, 229), while each of the 732 true free
    changes of 42 L3M+P runs (seeds 2, 4, 180-238) is 0.50 or nearer its sentence (the 268 faucet sentences of seeds
    531-577: 0.59 or nearer; with "is running" 0.52, and a washing sentence 0.46). "Picked up Christopher's jacket" is
    nearer "ronald holds christopher jacket" than "christopher jacket is dirty" by 0.09-0.38 (the 0.5B answered "no
    longer clean" and lost the holding in two orders of three: seed309), a spill that makes it dirty 0.04 nearer at most
    (141 spills in 139 runs, seeds 2-330). "Switched the channel of the TV to ESPN" is nearer "the tv plays espn" than
    "the tv is off" by 0.15-0.22 (the 0.5B chose both in 17 of 18 such sentences, seeds 196-360), and no true change of
    90 runs (seeds 180-281) gives a thing a new value and takes a free one from it. Not what may become true: without
    "now: spoon is clean", the 0.5B chose "alexander holds spoon" for "washed the spoon in the sink" (6 of 8 washing
    sentences)."""
    from kgplan.language.retrieval import similarity

    part = parts_of(domain)
    free = [c for c in cands if c.atom.predicate not in part]
    if not free:
        return cands
    news = [c for c in cands if c.value]
    n = len(free)
    near = similarity([text], [*(gloss(domain, c.atom) for c in free), *(after(domain, c) for c in free),
                               *(gloss(domain, c.atom) for c in news)])[0]
    far = set()
    for c, as_is, then in zip(free, near[:n], near[n:2 * n], strict=True):
        moves = [s for p, s in zip(news, near[2 * n:], strict=True) if set(c.atom.args) & set(
            part[p.atom.predicate].key(p.atom.args) if p.atom.predicate in part else p.atom.args)]
        if as_is < MIN_RELEVANCE or (not c.value and moves and max(moves) - then > PLACE_NEARER):
            far.add(c.id)
    return [c for c in cands if c.id not in far]


def told_apart(shown: list[str], atoms: list[GroundAtom]) -> list[str]:
    """The glosses `shown` of `atoms` as ids: one that several of them share gets its predicate after it ("x is on
    y (placed at table)")."""
    twice = {x for x, n in Counter(shown).items() if n > 1}
    return [f"{x} ({words(a.predicate)})" if x in twice else x for x, a in zip(shown, atoms, strict=True)]


def choice_schema(cands: list[Candidate]) -> type[BaseModel]:
    """One choice per field (`Candidate.field`) among its candidates' ids, or "none" (a small model weighs each in
    turn)."""
    groups: dict[str, list[str]] = {}
    for c in cands:
        groups.setdefault(c.field, []).append(c.id)
    return enum_model("Choice", **{p: (choice([*ids, NONE]), NONE) for p, ids in groups.items()})


def answer(cands: list[Candidate], chosen: Collection[str]) -> dict[str, str]:
    """The reply to `choice_schema(cands)` that chooses the ids `chosen` (one per field)."""
    out = {c.field: NONE for c in cands}
    for c in cands:
        if c.id in chosen and out[c.field] == NONE:
            out[c.field] = c.id
    return out


def replacements(domain: Domain, add: Iterable[GroundAtom], facts_about: Callable[[list[str]], Iterable[GroundAtom]],
                 groups: Callable[[MutexGroup], bool] = lambda g: g.exactly_one and g.arity > 0
                 ) -> dict[GroundAtom, MutexGroup]:
    """The true facts that the invariants (the exactly-one groups with a key, unless `groups` says which) remove when
    `add` becomes true, with the group of each."""
    out: dict[GroundAtom, MutexGroup] = {}
    add = list(add)
    for g in filter(groups, domain.invariants):
        parts = {part.predicate: part for part in g.parts}
        for atom in add:
            if (part := parts.get(atom.predicate)) is None:
                continue
            key = part.key(atom.args)
            for old in facts_about(list(key)):
                old = GroundAtom(*old)
                if old != atom and old not in add and (q := parts.get(old.predicate)) and q.key(old.args) == key:
                    out[old] = g
    return out


def with_actions(domain: Domain, tx: Tx, add: list[GroundAtom], remove: list[GroundAtom], named: Collection[str]
                 ) -> tuple[dict[GroundAtom, GroundAtom], dict[GroundAtom, GroundAtom]]:
    """`planners.state.implied` on the state the change leaves (read in `tx`, of the predicates that the actions
    making its literals so read or change): the facts such actions remove and add too, each with its literal."""
    changed = {a.predicate for a in [*add, *remove]}
    acts = [a for a in domain.actions.values() if any(e.atom.predicate in changed for e in a.effects)]
    preds = {x.predicate for a in acts for e in a.effects for f in (a.precondition, e.condition, e.atom)
             for x in atoms(f)}
    state = State(domain, {e.name: e.type for e in tx.entities()}, set(tx.facts_of(preds)) - set(remove) | set(add))
    return implied(state, add, remove, named)


def conflict(domain: Domain, add: list[GroundAtom]) -> tuple[GroundAtom, ...] | None:
    """Two facts the model chose that an invariant says cannot both hold."""
    return next((c for g in domain.invariants if (c := g.overcrowded(add))), None)


def emptied(domain: Domain, add: Collection[GroundAtom], removed: Iterable[GroundAtom],
            cands: Iterable[Candidate], more: Callable[[], Iterable[Candidate]] = tuple) -> list[Candidate]:
    """The candidates that may fill the first exactly-one group instance the change leaves with none (`removed`
    takes its fact, nothing in `add` gives one), of those that fit beside `add`, else of `more` (called only then);
    none where no group is left so. Seed134 (0.5B): "placed the book on the 3rd level of the shelf" chose the level
    alone, which took "anna holds the book" from both groups of where a thing is and gave only one of them (the
    level's, not the shelf's); seed193: the model named the book and the shelf, not the level, which `more` (over
    the named things' static neighbours: the shelf's levels) proposes."""
    removed = list(removed)
    for parts in keyed(domain):
        for key in sorted(held(parts, removed) - held(parts, add)):
            for pool in (cands, more()):
                if options := [c for c in pool if c.value and held(parts, [c.atom]) == {key}
                               and conflict(domain, [*add, c.atom]) is None]:
                    return options
    return []


# ---- worked examples --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Example:
    text: str
    mentions: list[str]
    lines: str  # the candidates as shown
    answer: dict[str, str]  # the reply: predicate -> the id chosen, or "none"


def examples(domain: Domain) -> list[Example]:
    """domain.toml's worked examples whose types and predicates the domain has, with their candidates."""
    out = []
    for ex in domain.meta.get("examples", []):
        init = [Fact.parse(f).atom for f in ex.get("init", [])]
        truth = {Fact.parse(f).atom: True for f in ex.get("true", [])} | {
            Fact.parse(f).atom: False for f in ex.get("false", [])}
        objects: dict[str, str] = ex["objects"]
        if any(t not in domain.types for t in objects.values()) or any(
                a.predicate not in domain.predicates for a in [*init, *truth]):
            continue
        cands = candidates(domain, {n: objects[n] for n in ex["named"]}, set(init))
        right = {c.id for c in cands if truth.get(c.atom) == c.value}
        out.append(Example(ex["text"], list(ex["mentions"]),
                           candidate_lines(c.id for c in cands), answer(cands, right)))
    return out


# ---- the stages ------------------------------------------------------------------------------------
class _Stage(AbstractContextManager):
    """Accounts one stage's seconds and the tokens of the LLM calls made in it."""

    def __init__(self, out: Outcome, name: str) -> None:
        self.out, self.name = out, name

    def __enter__(self) -> _Stage:
        self.start, self.calls = time.perf_counter(), len(self.out.calls)
        return self

    def __exit__(self, *exc: object) -> None:
        calls = self.out.calls[self.calls:]
        self.out.stages[self.name] = {
            "seconds": time.perf_counter() - self.start,
            "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls)}


def atoms_about(graph: WorldGraph, names: Collection[str]) -> list[GroundAtom]:
    """The graph's true facts about `names`, as atoms (what `replacements` looks old values up in)."""
    return [f.atom for f in graph.facts_about(names)]


def statics(graph: WorldGraph) -> list[GroundAtom]:
    """The graph's binary facts that no change touches (what `owned` reads)."""
    domain = graph.domain
    return [f.atom for p in sorted(set(domain.predicates) - changing(domain)) if domain.predicates[p].arity == 2
            for f in graph.facts(predicate=p)]


def ground(llm: LLM, graph: WorldGraph, first: Messages, text: str, mentions: list[str], owns: dict[str, set[str]],
           types: dict[str, str], answers: dict[str, str], out: Outcome, kinds: dict[str, str] | None = None
           ) -> dict[str, str]:
    """word -> the entity it names (words naming none are left out); `out.clarification` is set instead where
    several entities fit a word and the model, shown them, says the sentence does not tell which.

    `first` are the messages that asked for the words (`which`); `owns` is `owned` of the graph, `types` its entities'
    types (name -> type); `answers`
    (word -> entity) are the user's. With `kinds` (a goal's), "every <type>" is one more option where several
    entities fit a word: the word -> type the model says it names all of goes there ("the phones")."""
    from kgplan.language.retrieval import embed, entity_index

    index = entity_index(graph)
    names = index.names
    named = {m: a for m, a in answers.items() if m in mentions and a in index.texts}
    whole = {tuple(tokens(n)): n for n in names}
    for m in [m for m in mentions if m not in named]:
        said = tuple(spoken(m))
        if e := whole.get(said) or whole.get(said[1:] if said[:1] in ARTICLES else ()):  # "the glass": glass
            named[m] = e
        elif parts := spelled_out(m, names):  # one phrase copied for two things: each by its whole name
            mentions = [x for x in mentions if x != m]
            named |= {words(e): e for e in parts}
    named |= {words(e): e for e in unsaid(text, mentions, names) if e not in named.values()}
    asked = [m for m in mentions if m not in named]
    if not asked or not names:
        return named
    queue = list(zip(asked, embed(asked) @ index.vectors.T, strict=True))
    best = {m: names[int(row.argmax())] for m, row in queue if row.max() >= MIN_SIMILARITY}
    said = set(tokens(text))
    while queue:
        m, row = queue.pop(0)
        if m not in best:
            continue
        anchors = {named.get(w, e) for w, e in best.items() if w != m} | set(named.values())
        theirs = {n for a in anchors for n in owns.get(a, ())}  # what the other named things own
        k = types.get(names[int(row.argmax())], "object")
        pool = [j for j, n in enumerate(names) if n in theirs
                and (graph.domain.is_subtype(t := types.get(n, "object"), k) or graph.domain.is_subtype(k, t))]
        if not pool or row[pool].max() < OWNED_FIRST * row.max():
            pool = list(range(len(names)))
        top = max(pool, key=lambda j: row[j])
        kind = [j for j in pool if types.get(names[j]) == types.get(names[top]) and row[j] >= MIN_SIMILARITY]
        # of those, the ones whose whole names the sentence spells out, however near the word: "ringing" in "Sharon's
        # phone started ringing" is nearest james_phone (0.43), sharon_phone 0.37 (seed305)
        if spelled := [j for j in pool if types.get(names[j]) == types.get(names[top])
                       and set(tokens(names[j])) <= said]:
            # of those, one a named thing owns ("Charles went to Carol's bedroom and closed the blinds of the window":
            # carol_bedroom_window, not charles_bedroom_window, whose words it says too: seed309)
            spelled = [j for j in spelled if names[j] in theirs] or spelled
            # of those, the ones it spells one word after another (the 0.5B copied "the bedroom" from "Anna went to
            # Helen's bedroom and opened the blinds of the window": helen_bedroom, not anna_bedroom: seed391)
            runs = set(whole_names(spoken(text), [names[j] for j in spelled]))
            spelled = [j for j in spelled if names[j] in runs] or spelled
            kind, top = spelled, max(spelled, key=lambda j: row[j])
        tied = sorted((j for j in kind if row[j] >= TIE * row[top]), key=lambda j: -row[j])[:MAX_OPTIONS]
        options = [names[j] for j in tied]
        shown = {o: words(o) for o in options}
        if len(options) > 1 and (pick := (
                which(llm, first, f"Which one does '{m}' name?", shown, out.calls) if kinds is None else
                # a goal's word may name every thing of the kind: "which one" would leave only "unclear" to answer
                which(llm, first, f"What does '{m}' name?", {EVERY: f"every {words(types[options[0]])}"} | shown,
                      out.calls, by_text=True))) is None:
            out.clarification = Clarification(
                m, f"Which one does '{m}' mean: {', '.join(map(words, options))}?", options, [*map(words, options)])
            return named
        if len(options) > 1 and pick == EVERY and kinds is not None:
            kinds[m] = types[options[0]]
            continue
        named[m] = options[0] if len(options) == 1 else pick
        also, rest = besides(m, named[m], names)
        named |= {words(e): e for e in also if e not in named.values() and words(e) not in named}
        if rest and rest not in named and (row := (embed([rest]) @ index.vectors.T)[0]).max() >= MIN_SIMILARITY:
            best[rest] = names[int(row.argmax())]
            queue.append((rest, row))
    return named


class Named(NamedTuple):
    """The first reply (the words naming things), what they name (word -> entity), and the graph's static facts, what
    each entity owns (`statics`, `owned`) and every entity's type (name -> type), which later stages read too."""

    reply: BaseModel
    entities: dict[str, str]
    static: list[GroundAtom]
    owns: dict[str, set[str]]
    types: dict[str, str]


def _named(llm: LLM, graph: WorldGraph, text: str, stage: str, messages: Messages, schema: type[BaseModel],
           answers: dict[str, str], out: Outcome, kinds: dict[str, str] | None = None) -> Named:
    """The first two stages of `tell` and `goals.choose`: the model's words naming things (stage `stage`, the reply
    to `messages` in `schema`, with its `mentions`), then the entities they name (stage `ground`;
    `out.clarification` may be set; `kinds` as `ground`'s)."""
    with _Stage(out, stage):
        reply, record = llm.complete(messages, schema)
        out.calls.append(record)
    with _Stage(out, "ground"):
        static = statics(graph)
        owns = owned(graph.domain, static)
        types = {e.name: e.type for e in graph.entities()}
        entities = ground(llm, graph, messages, text, list(dict.fromkeys(reply.mentions)), owns, types, answers, out,
                          kinds)
    return Named(reply, entities, static, owns, types)


def which(llm: LLM, first: Messages, question: str, options: dict[str, str], calls: list[CallRecord], *,
          by_text: bool = False) -> str | None:
    """The option (of value -> how it is shown) the model answers a question about the text of `first` (the
    messages of the first question about it) with, or None where it says the text does not tell. The answer is a
    letter, or with `by_text` the option as shown (a small model copies the text that fits the task better than it
    picks a letter)."""
    keys = {options[o]: o for o in options} if by_text else dict(zip(ids(), options, strict=False))  # ids() is endless
    schema = enum_model("Which", answer=[*keys, UNCLEAR])
    reply, record = llm.complete(which_messages(first, question, "\n".join(
        f"- {i}" if by_text else f"{i}) {options[o]}" for i, o in keys.items())), schema)
    calls.append(record)
    return keys.get(reply.answer)


def tell(llm: LLM, graph: WorldGraph, text: str, *, answers: dict[str, str] | None = None, dry_run: bool = False,
         out: Outcome | None = None, lock: AbstractContextManager = nullcontext()) -> Outcome:
    """A state change in English, proposed and chosen as above; applied unless `dry_run` or a clarification is
    needed (`out.clarification`: call again with `answers={word: option}`)."""
    out = out or Outcome(text)
    answers = dict(answers or {})
    domain = graph.domain
    shots = examples(domain)
    try:
        shown = [(e.text, e.mentions, e.lines, e.answer) for e in shots]
        first = propose_messages(shown, text)
        found = _named(llm, graph, text, "mentions", first, Mentions, answers, out)
        if out.clarification:
            return out
        with _Stage(out, "candidates"):
            named = found.entities | said_with(text, set(found.entities.values()), found.types, found.owns)
            scope = set(named.values())
            entities = {e: found.types[e] for e in scope if e in found.types}
            state = set(atoms_about(graph, scope))
            cands = relevant(domain, text, candidates(domain, entities, state))
        if not cands:
            out.error = "the sentence could not be grounded: no change of the domain names " + (
                ", ".join(map(words, sorted(scope))) if scope else "anything the graph holds")
            return out
        with _Stage(out, "choose"):
            schema = choice_schema(cands)
            replies = []
            # again in reverse order within what becomes true and what stops (as the worked examples show them):
            # wholly reversed, the 0.5B answered "none" for the holder of what was picked up (seed136, 145, 159)
            again = [c for c in cands if c.value][::-1] + [c for c in cands if not c.value][::-1]
            # where the two differ, a third order decides (the 0.5B answered "none" for the holder of a phone picked
            # up from a shelf in the second order alone: seed136, 159)
            third = cands[len(cands) // 2:] + cands[:len(cands) // 2]
            orders = [cands] if len(cands) == 1 else [cands, again] + [third] * (third not in (cands, again))
            for batch in (orders[:2], orders[2:]):  # the first two at once (to two servers, where there are)
                if len(replies) == 2 and replies[0] == replies[1]:
                    break
                for result in llm.complete_many([(propose_messages(shown, text, candidate_lines(c.id for c in order)),
                                                  schema) for order in batch]):
                    if isinstance(result, LLMError):
                        raise result
                    reply, record = result
                    out.calls.append(record)
                    replies.append(reply.model_dump())
            by_id, where, placed = {c.id: c for c in cands}, told_places(domain), replaced(domain)
            asked: dict[str, str] = {}  # a fact the model chose when asked -> how
            of = {c.field: c.atom.predicate for c in cands}
            agreed = [by_id[i] for f in replies[0]
                      if (i := _voted([r[f] for r in replies], of[f] in placed))]
            # a named person whom candidates would move and no order moved: asked where they are now, where they
            # were among the options (both orders answered "none" for the move of "Eric went to the kitchen and
            # turned on the overhead light", seed218, 249; the move was chosen when asked; asked with the move alone,
            # the 1.5B moved 4 of 20 people who turned on a TV in another room)
            for f in dict.fromkeys(c.field for c in cands if of[c.field] in where):
                moves = {c.id: c for c in cands if c.field == f and c.atom not in state}
                if not moves or any(c.field == f for c in agreed):
                    continue
                was = sorted(gloss(domain, a) for a in replacements(
                    domain, [c.atom for c in moves.values()], functools.partial(atoms_about, graph)))
                if (picked := which(llm, first, "Which one is true now?", {i: c.fact for i, c in moves.items()} | {
                        g: g for g in was}, out.calls, by_text=True)) in moves:
                    agreed.append(moves[picked])
                    asked[str(moves[picked].atom)] = f"{out.calls[-1].model} chose it as where they are when asked"
    except LLMError as e:
        out.error, out.failed = str(e), e
        return out

    @functools.cache
    def around() -> list[Candidate]:
        """The candidates over the named things and their static neighbours (a named shelf's levels), of those of a
        type the ones the sentence tells apart (`told_apart_by`: "the 11th level": shelf_level_11)."""
        near = {x for a in found.static if scope & set(a.args) for x in a.args} - scope
        near = scope | told_apart_by(text, {x: found.types.get(x) for x in near})
        return sorted(candidates(domain, {e: found.types[e] for e in near if e in found.types},
                                 set(atoms_about(graph, near))), key=lambda c: (not c.value, c.id))
    return _apply(llm, graph, first, out, agreed, asked, (cands, around), named, answers, record.model, dry_run,
                  lock)


def told_apart_by(text: str, entities: dict[str, str | None]) -> set[str]:
    """Of each type among the entities (name -> type), those the text tells apart from the others: it says every
    word of the name that not all of them share, and there is one ("on the 11th level of the pantry":
    shelf_level_11, of shelf_level_1 to 12, though it does not say "shelf"); all of a type it tells none apart of."""
    kinds: dict[str | None, list[str]] = defaultdict(list)
    for x, t in entities.items():
        kinds[t].append(x)
    said, out = set(tokens(text)), set()
    for xs in kinds.values():
        shared = set.intersection(*(set(tokens(x)) for x in xs)) if len(xs) > 1 else set()
        out |= {x for x in xs if (own := set(tokens(x)) - shared) and own <= said} or set(xs)
    return out


def _voted(answers: list[str], placed: bool) -> str | None:
    """A predicate's choice from its answers in the orders asked: the one two of them give (both, of two); or, where
    a thing is (`placed`: an exactly-one group gives it one value), the one place some order gives where the others
    answer none (the 0.5B answered "none" for "Brian is in the kitchen" beside "the kitchen overhead light is on" in
    one order: seed145, 167; and for "papaya is in the kitchen fridge" in one of two, seed324: in the recorded
    replies of 85 runs such a place was right 7 times of 8). Any other (free: no exactly-one group gives it a value;
    a thing's dryness, a light) changes only where the first two orders agree: the third order decides a value a
    thing must have, not a side effect the sentence does not state ("picked up Margaret's socks": "no longer dry" in
    the second and third order, seed212)."""
    if not placed and len(set(answers[:2])) > 1:
        return None
    (top, n), *_ = Counter(answers).most_common()
    if top != NONE and n >= min(2, len(answers)):
        return top
    named = set(answers) - {NONE}
    return named.pop() if placed and len(named) == 1 else None


def _apply(llm: LLM, graph: WorldGraph, first: Messages, out: Outcome, chosen: list[Candidate], asked: dict[str, str],
           pools: tuple[list[Candidate], Callable[[], list[Candidate]]], named: dict[str, str],
           answers: dict[str, str], model: str, dry_run: bool,
           lock: AbstractContextManager) -> Outcome:
    """The chosen facts with the old values the invariants remove, as one verified change. Two chosen facts that
    cannot both hold, or a change that leaves a thing with none of what exactly one of must hold (`emptied`, among
    `pools`: the candidates, else the more a function proposes), are a targeted question to the model (after `first`,
    the words question's messages) among the options, then (if the sentence does not tell) to the user. `asked`: how
    the model chose the facts it chose when asked (fact -> how), which this adds to."""
    domain = graph.domain
    add = [c.atom for c in chosen if c.value]
    drop = [c.atom for c in chosen if not c.value]

    about = functools.partial(atoms_about, graph)

    def ask(options: list[GroundAtom], how: str, by_text: bool = False) -> str | None:
        """The option the user's answer or else the model picks (`which`), or None (`out.clarification` set)."""
        key = " or ".join(map(str, options))
        glosses = {str(a): gloss(domain, a) for a in options}
        if (picked := answers.get(key)) in glosses:
            asked[picked] = f"the user chose it {how} when asked"
        elif (picked := which(llm, first, "Which one is true now?", glosses, out.calls, by_text=by_text)) is not None:
            asked[picked] = f"{model} chose it {how} when asked"
        else:
            out.clarification = Clarification(key, f"Which one is true now: {' or '.join(glosses.values())}?",
                                              list(glosses), list(glosses.values()))
        return picked

    while True:
        if (both := conflict(domain, add)) is not None:
            if (picked := ask(list(both), "over the other")) is None:
                return out
            add = [a for a in add if a not in both or str(a) == picked]
        elif options := emptied(domain, add, [*drop, *replacements(domain, add, about)], *pools):
            # one option is what the invariant requires (the 0.5B answered "unclear" to the one option "peanut butter
            # is on shelf level 11" for "placed the peanut butter on the 11th level of the pantry": seed222); of
            # several, by the option's text: by letter, the 0.5B answered "unclear" for "placed the book on the 3rd
            # level of the shelf" with the one option "the book is on the bedroom shelf" (seed134, 138)
            if len(options) == 1:
                picked = str(options[0].atom)
                asked[picked] = "the one candidate that gives it the value an exactly-one invariant requires"
            elif (picked := ask([c.atom for c in options], "as what holds instead", by_text=True)) is None:
                return out
            chosen.append(next(c for c in options if str(c.atom) == picked))
            add.append(chosen[-1].atom)
        else:
            break
    # what holds already changes nothing (chosen, it may have excluded another choice, asked between them above)
    holds = set(about(sorted({x for a in add for x in a.args})))
    add = [a for a in add if a not in holds]
    by_user = {e: w for w, e in named.items() if w in answers}
    how = {}
    for c in chosen:
        if c.value and c.atom not in add:
            continue
        notes = [f"chosen by {model} among {len(pools[0])} candidate{'s' * (len(pools[0]) != 1)}"]
        notes += [f"the user said '{by_user[a]}' means {a}" for a in c.atom.args if a in by_user]
        notes += [asked[str(c.atom)]] if str(c.atom) in asked else []
        how[str(c.atom)] = "; ".join(notes)

    def make(tx: Tx) -> Delta:
        gone = replacements(domain, add, tx.facts_about)
        also, more = with_actions(domain, tx, add, [*drop, *gone], set(named.values()))
        gone |= {a: g for a, g in replacements(domain, more, tx.facts_about).items() if a not in add}
        notes = how | {str(a): f"removed by the invariant: {g.describe()}" for a, g in gone.items()}
        notes |= {str(a): f"removed as every action that makes {x} {'true' if x in add else 'false'} does"
                  for a, x in also.items()}
        notes |= {str(a): f"added as every action that makes {x} true with the things the sentence names does"
                  for a, x in more.items()}
        return Delta(add=[Fact.of(a) for a in [*add, *more]], remove=[Fact.of(a) for a in [*drop, *gone, *also]],
                     source="nl", text=out.text, model=model, how=notes, tokens={
                         "prompt": out.prompt_tokens, "completion": sum(c.completion_tokens for c in out.calls)})

    with _Stage(out, "apply"):
        out.delta = graph.in_transaction(make)
        if out.delta.is_empty():
            out.error = "the sentence changes nothing in the graph"
        elif dry_run:
            if issues := graph.check(out.delta):
                out.rounds.append([str(i) for i in issues])
                out.error = "the change was refused: " + "; ".join(out.rounds[-1])
        else:
            try:
                with lock:
                    out.change = graph.apply_from(make)
                    out.delta = out.change.delta
            except ChangeRefused as e:
                out.rounds.append([str(i) for i in e.issues])
                out.error = "the change was refused: " + "; ".join(out.rounds[-1])
    return out
