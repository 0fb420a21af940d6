"""Search methods where facts are unknown: which belief, which prior policies and which settings a tree search
(kgplan.planners.mcts) uses, or none (`explore`: the symbolic sub-goal loop). Beliefs and priors are kinds
of their own registries; a new method is one `SEARCH_METHODS.add(SearchMethod(...))` over them."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgplan.domains.formula import Formula
from kgplan.domains.model import Domain
from kgplan.errors import InputError
from kgplan.graph.world import WorldGraph
from kgplan.planners.mcts.belief import BeliefPrior, Lifelong, embedding_prior, learned_from
from kgplan.planners.mcts.graph_io import decide, searcher
from kgplan.planners.mcts.priors import BeliefMassPrior, Prior, UniformPrior
from kgplan.planners.mcts.search import Budget, Decision, Search, Settings
from kgplan.registry import Registry

if TYPE_CHECKING:
    from kgplan.language.llm import LLM


@dataclass(frozen=True)
class BeliefKind:
    """A commonsense belief: `make(llm)` gives its prior over the places of unknown items (None: uniform)."""

    name: str
    help: str
    make: Callable[[LLM | None], BeliefPrior | None]
    needs_llm: bool = False


@dataclass(frozen=True)
class PriorInput:
    """What a prior policy is made from: the domain, the goal, the LLM (if the method needs one), and the
    policy to fall back on (the method's rollout prior; uniform for the rollout prior itself)."""

    domain: Domain
    goal: Formula
    llm: LLM | None
    fallback: Prior


@dataclass(frozen=True)
class PriorKind:
    """A prior policy over a node's actions, made by `make`."""

    name: str
    help: str
    make: Callable[[PriorInput], Prior]
    needs_llm: bool = False


def _embedding(llm: LLM | None) -> BeliefPrior:
    from kgplan.language.retrieval import similarity  # the embedding model is loaded when first used

    return embedding_prior(similarity)


def _llm_belief(llm: LLM | None) -> BeliefPrior:
    from kgplan.language.mcts import llm_belief  # the LLM client (openai) is imported when first used

    return llm_belief(llm)


def _llm_prior(given: PriorInput) -> Prior:
    from kgplan.language.mcts import LLMPrior, Memory, goal_text

    return LLMPrior(given.llm, goal_text(given.domain, given.goal), Memory(), given.fallback,
                    given.domain.meta.get("explore", {}).get("actions", {}))


BELIEFS: Registry[BeliefKind] = Registry("belief")
BELIEFS.add(BeliefKind("uniform", "no commonsense: every place equally likely", lambda llm: None))
BELIEFS.add(BeliefKind("embedding", "softmax of the MiniLM similarity of item and place", _embedding))
BELIEFS.add(BeliefKind("llm", "LLM-MCTS: the LLM's sampled answers of where each item is, counted",
                       _llm_belief, needs_llm=True))
BELIEFS.add(BeliefKind("learned", "place statistics of scene graphs (the JSON file named by KGPLAN_PLACE_COUNTS)",
                       lambda llm: learned_from(os.environ.get("KGPLAN_PLACE_COUNTS"))))
BELIEFS.add(BeliefKind("lifelong", "where the graph has seen items of each kind, over the MiniLM belief",
                       lambda llm: Lifelong(_embedding(llm))))

PRIORS: Registry[PriorKind] = Registry("prior")
PRIORS.add(PriorKind("uniform", "every action alike (UCT)", lambda given: UniformPrior()))
PRIORS.add(PriorKind("belief_mass", "the belief's mass at the places an action reaches",
                     lambda given: BeliefMassPrior(given.domain)))
PRIORS.add(PriorKind("llm", "MC-DML: the LLM's scores with its memories, then the fallback", _llm_prior,
                     needs_llm=True))


@dataclass
class Searcher:
    """A search method's searcher for one goal on one graph (grounded once: reuse it for the episode)."""

    search: Search
    belief: BeliefPrior | None

    def decide(self, graph: WorldGraph, budget: Budget, history: tuple[str, ...] = ()) -> Decision:
        """One decision on the graph's current state and stored belief (see graph_io.decide)."""
        return decide(graph, self.search, budget, self.belief, history)


@dataclass(frozen=True)
class SearchMethod:
    """A way to act where facts are unknown: a tree search with a `belief` kind, a `prior` kind at its nodes,
    a `rollout_prior` kind (rollouts, DR's target policy, the fallback of an LLM prior) and `settings`;
    no belief: no tree search (the symbolic sub-goal loop)."""

    name: str
    help: str
    belief: str | None = None
    prior: str = "uniform"
    rollout_prior: str = "uniform"
    settings: Settings = field(default_factory=Settings)

    def __post_init__(self) -> None:
        if self.belief is not None:
            BELIEFS.check(self.belief)
        PRIORS.check(self.prior)
        PRIORS.check(self.rollout_prior)

    @property
    def tree(self) -> bool:
        """Whether it searches a tree (else it is the symbolic sub-goal loop)."""
        return self.belief is not None

    @property
    def needs_llm(self) -> bool:
        return self.tree and any(k.needs_llm for k in (BELIEFS[self.belief], PRIORS[self.prior],
                                                        PRIORS[self.rollout_prior]))

    def searcher(self, graph: WorldGraph, goal: Formula, llm: LLM | None = None,
                 rng: random.Random | None = None) -> Searcher:
        """This method's searcher for `goal` on the graph (`llm` where it needs one)."""
        if self.belief is None:
            raise InputError(f"search method {self.name!r} makes no tree search: plan for the goal or a sub-goal")
        if self.needs_llm and llm is None:
            raise InputError(f"search method {self.name!r} needs an LLM")
        rollout = PRIORS[self.rollout_prior].make(PriorInput(graph.domain, goal, llm, UniformPrior()))
        prior = PRIORS[self.prior].make(PriorInput(graph.domain, goal, llm, rollout))
        search = searcher(graph, goal, prior, rollout, dataclasses.replace(self.settings), rng)
        return Searcher(search, BELIEFS[self.belief].make(llm))


SEARCH_METHODS: Registry[SearchMethod] = Registry("search method")
SEARCH_METHODS.add(SearchMethod("explore", "no tree search: the goal, else its first sub-goal with a plan, planned"))
SEARCH_METHODS.add(SearchMethod("uct", "uniform belief and prior, no greedy policy mixed in",
                                "uniform", settings=Settings(policy_weight=0.0)))
SEARCH_METHODS.add(SearchMethod("puct", "embedding belief, its mass as the prior mixed with the greedy policy",
                                "embedding", "belief_mass", "belief_mass"))
SEARCH_METHODS.add(SearchMethod("puct_dr", "puct with DR-MCTS's hybrid leaf values",
                                "embedding", "belief_mass", "belief_mass", Settings(estimator="dr")))
SEARCH_METHODS.add(SearchMethod("puct_lifelong", "puct over the lifelong belief: where the graph has seen items before",
                                "lifelong", "belief_mass", "belief_mass"))
SEARCH_METHODS.add(SearchMethod("puct_llm", "LLM belief, MC-DML's LLM prior with memories (needs an LLM)",
                                "llm", "llm", "belief_mass"))
