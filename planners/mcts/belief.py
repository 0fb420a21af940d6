"""A belief over unknown facts: for each item whose place is unknown, a distribution over the places
that could hold it (stored beside the graph by graph_io).

What is unknown and what an observation shows come from the domain's ``[belief]`` table in
domain.toml (item and place types, the `located` predicate, the predicates that make an item's place
`known`, the `searched` predicate of places whose contents have been seen).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgplan.domains.formula import GroundAtom
from kgplan.domains.model import Domain
from kgplan.errors import DomainError

if TYPE_CHECKING:
    import numpy as np

Dist = dict[str, float]
# similarity(item texts, place texts) -> a matrix of scores, one row per item
Scorer = Callable[[Sequence[str], Sequence[str]], "np.ndarray"]
# (items, places), each name -> type -> a distribution over the places for each item
BeliefPrior = Callable[[Mapping[str, str], Mapping[str, str]], dict[str, Dist]]
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
