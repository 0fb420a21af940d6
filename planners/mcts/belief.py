"""A belief over unknown facts: for each item whose place is unknown, a distribution over the places
that could hold it (stored beside the graph by graph_io).

What is unknown and what an observation shows come from the domain's ``[belief]`` table in
domain.toml (item and place types, the `located` predicate, the predicates that make an item's place
`known`, the `searched` predicate of places whose contents have been seen).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kgplan.domains.formula import GroundAtom
from kgplan.domains.model import Domain
from kgplan.errors import DomainError, InputError

if TYPE_CHECKING:
    import numpy as np

Dist = dict[str, float]
# similarity(item texts, place texts) -> a matrix of scores, one row per item
Scorer = Callable[[Sequence[str], Sequence[str]], "np.ndarray"]
# (items, places), each name -> type -> a distribution over the places for each item
BeliefPrior = Callable[[Mapping[str, str], Mapping[str, str]], dict[str, Dist]]
Counts = dict[str, dict[str, float]]  # item kind -> place (or place kind) -> how often an item was there
FLOOR = 0.01  # the least probability a possible place keeps under a commonsense prior
TEMPERATURE = 0.05  # softmax temperature over cosine similarities


@dataclass(frozen=True)
class BeliefSpec:
    """The domain's [belief] table."""

    item: str
    place: str
    located: str
    known: tuple[str, ...]
    searched: str | None
    visible: str | None

    @classmethod
    def of(cls, domain: Domain) -> BeliefSpec:
        t = domain.meta.get("belief")
        if not t:
            raise DomainError(f"domain {domain.name!r} has no [belief] table in its domain.toml: "
                             "it does not say which facts may be unknown")
        return cls(t["item"], t["place"], t["located"], tuple(t.get("known", [t["located"]])),
                   t.get("searched"), t.get("visible"))


def text_of(name: str, type_: str) -> str:
    """How an object is put into words for a similarity score."""
    return f"{name.replace('_', ' ')} ({type_.replace('_', ' ')})"


def prior(items: Mapping[str, str], places: Mapping[str, str], score: Scorer, floor: float = FLOOR,
          temperature: float = TEMPERATURE) -> dict[str, Dist]:
    """A commonsense prior: softmax of the similarity of each item to each place, floored at `floor`."""
    import numpy as np  # here, not at import: the CLI's start need not load it

    if not items or not places:
        return {i: {} for i in items}
    names = list(places)
    sims = np.asarray(score([text_of(i, t) for i, t in items.items()], [text_of(p, places[p]) for p in names]),
                      dtype=float)
    out = {}
    for row, item in zip(sims, items, strict=True):
        z = np.exp((row - row.max()) / temperature)
        out[item] = floored(dict(zip(names, (z / z.sum()).tolist(), strict=True)), floor)
    return out


def embedding_prior(score: Scorer) -> BeliefPrior:
    """`prior` with a similarity scorer (e.g. sentence embeddings)."""
    return lambda items, places: prior(items, places, score)


def kind_of(name: str) -> str:
    """An object's kind from its name: the name without its copy number (`cup_2` -> `cup`)."""
    return re.sub(r"_\d+$", "", name)


def place_counts(scenes: Mapping[str, Mapping[str, str]], leave_out: str | None = None) -> Counts:
    """How often items of each kind were inside/on places of each kind, over `scenes` (scene name -> item ->
    its place), without the scene named `leave_out` (the one being evaluated)."""
    out: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for name, where in scenes.items():
        if name != leave_out:
            for item, place in where.items():
                out[kind_of(item)][kind_of(place)] += 1
    return {k: dict(c) for k, c in out.items()}


def learned_prior(counts: Counts, floor: float = FLOOR) -> BeliefPrior:
    """Place statistics: an item is at each place as often as items of its kind were at places of that kind
    (shared among the home's places of the kind); a kind never counted, or counted only at kinds of place
    this home lacks, as often as any item was; floored at `floor`."""
    every: Counter[str] = Counter()
    for c in counts.values():
        every.update(c)

    def make(items: Mapping[str, str], places: Mapping[str, str]) -> dict[str, Dist]:
        copies = Counter(kind_of(p) for p in places)
        out = {}
        for item in items:
            seen = counts.get(kind_of(item), {})
            if not any(kind_of(p) in seen for p in places):
                seen = every
            raw = {p: seen.get(kind_of(p), 0) / copies[kind_of(p)] for p in places}
            total = sum(raw.values())
            out[item] = (floored({p: q / total for p, q in raw.items()}, floor) if total
                         else uniform([item], list(places))[item])
        return out

    return make


def learned_from(path: str | None) -> BeliefPrior:
    """`learned_prior` over the counts in a JSON file (as `kgplan bench rearrange --save-counts` writes)."""
    if not path:
        raise InputError("the learned belief needs place statistics: set KGPLAN_PLACE_COUNTS to a JSON file "
                         "that `kgplan bench rearrange --save-counts PATH` writes")
    try:
        return learned_prior(json.loads(Path(path).read_text()))
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read place statistics from {path}: {e}") from e


@dataclass(frozen=True)
class Lifelong:
    """A belief that remembers: where items of each kind have been `seen` in this home (item kind -> place ->
    times), added to the `base` belief counted as `strength` sightings; an item of a kind seen at a place
    ranks it first. `graph_io.decide` fills `seen` from the graph's history."""

    base: BeliefPrior | None = None
    seen: Counts = field(default_factory=dict)
    strength: float = 1.0

    def __call__(self, items: Mapping[str, str], places: Mapping[str, str]) -> dict[str, Dist]:
        base = self.base(items, places) if self.base else uniform(list(items), list(places))
        return {i: normalised({p: self.strength * base[i].get(p, 0.0) + self.seen.get(kind_of(i), {}).get(p, 0)
                               for p in places}) for i in items}


def uniform(items: Sequence[str], places: Sequence[str]) -> dict[str, Dist]:
    """No commonsense: every place equally likely."""
    return {i: {p: 1 / len(places) for p in places} if places else {} for i in items}


def floored(dist: Mapping[str, float], floor: float) -> Dist:
    """Every place at least `floor` (before renormalising)."""
    return normalised({p: max(q, floor) for p, q in dist.items()})


def normalised(dist: Mapping[str, float]) -> Dist:
    total = sum(dist.values())
    return {p: q / total for p, q in dist.items() if q > 0} if total > 0 else {}


def absent(dist: Mapping[str, float], place: str) -> Dist:
    """The agent looked at `place` and the item was not there: zero there, renormalised (empty when the
    item can be nowhere the belief knows of)."""
    return normalised({p: q for p, q in dist.items() if p != place})


def reliability(prior: Mapping[str, Dist], found: Mapping[str, str], searched: Collection[str],
                places: Collection[str], odds: float = 1.0) -> float:
    """The posterior probability that the commonsense `prior` (rather than no commonsense, uniform over
    `places`) is how this world's items were placed, after the episode's evidence: items `found` at a
    place (likelihood: the probability there) and items still unknown after the `searched` places
    (likelihood: the probability of not being there); `odds` are the prior odds for the commonsense."""
    n, looked = len(places), set(searched) & set(places)
    log_p = log_u = 0.0
    for item, dist in prior.items():
        if item in found:
            p, u = dist.get(found[item], 0.0), 1 / n
        else:
            p, u = 1 - sum(dist.get(q, 0.0) for q in looked), 1 - len(looked) / n
        log_p += math.log(max(p, 1e-12))
        log_u += math.log(max(u, 1e-12))
    return 1 / (1 + math.exp(min(log_u - log_p, 700)) / odds)


def mixed(dist: Mapping[str, float], weight: float, places: Collection[str], searched: Collection[str]) -> Dist:
    """Bayesian model averaging of an item's place: the commonsense `dist` with probability `weight`, uniform
    over `places` otherwise, each conditioned on the item not being at the `searched` places."""
    rest = [q for q in places if q not in set(searched)]
    common = normalised({q: dist.get(q, 0.0) for q in rest})
    return normalised({q: weight * common.get(q, 0.0) + (1 - weight) / len(rest) for q in rest}) if rest else {}


def sample(beliefs: Mapping[str, Mapping[str, float]], rng: random.Random) -> dict[str, str]:
    """One world: a place for each item, drawn independently (items with an empty belief get none)."""
    out = {}
    for item, dist in beliefs.items():
        if dist:
            out[item] = rng.choices(list(dist), weights=list(dist.values()))[0]
    return out


def unknown_items(spec: BeliefSpec, domain: Domain, objects: Mapping[str, str], facts: set[GroundAtom],
                  marked: Collection[str] = ()) -> list[str]:
    """Items the graph marks unknown for the `located` predicate (`marked`), or for which no `known`
    predicate holds."""
    known = {a[0] for p, a in facts if p in spec.known and a} - set(marked)
    return sorted(o for o, t in objects.items() if domain.is_subtype(t, spec.item) and o not in known)


def places(spec: BeliefSpec, domain: Domain, objects: Mapping[str, str]) -> dict[str, str]:
    return {o: t for o, t in objects.items() if domain.is_subtype(t, spec.place)}
