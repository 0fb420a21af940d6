"""Search methods where facts are unknown: which belief, which prior policies and which settings a tree search
(kgplan.planners.mcts) uses, or none (`explore`: the symbolic sub-goal loop). Beliefs and priors are kinds
of their own registries; a new method is one `SEARCH_METHODS.add(SearchMethod(...))` over them."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
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
    from kgplan.language.mcts import Example


@dataclass(frozen=True)
class BeliefKind:
    """A commonsense belief: `make(llm)` gives its prior over the places of unknown items (None: uniform)."""

    name: str
    help: str
    make: Callable[[LLM | None], BeliefPrior | None]
    needs_llm: bool = False


@dataclass(frozen=True)
class PriorInput:
    """What a prior policy is made from: the domain, the goal, the LLM (if the method needs one), the
    policy to fall back on (the method's rollout prior; uniform for the rollout prior itself), examples
    for LLM-MCTS's policy prompt (none given: the file named by KGPLAN_POLICY_EXAMPLES, if any) and the
    search's settings (an LLM policy's `llm_*`)."""

    domain: Domain
    goal: Formula
    llm: LLM | None
    fallback: Prior
    examples: Sequence[Example] = ()
    settings: Settings = field(default_factory=Settings)


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


def _llm_belief(llm: LLM | None, logprobs: bool = False) -> BeliefPrior:
    from kgplan.language.mcts import llm_belief  # the LLM client (openai) is imported when first used

    return llm_belief(llm, logprobs=logprobs)


def _llm_prior(given: PriorInput) -> Prior:
    from kgplan.language.mcts import LLMPrior, Memory, goal_text

    return LLMPrior(given.llm, goal_text(given.domain, given.goal), Memory(), given.fallback,
                    given.domain.meta.get("explore", {}).get("actions", {}))


def _llm_policy(given: PriorInput) -> Prior:
    from kgplan.language.mcts import LLMPolicy, allowed_actions, goal_text, read_examples

    templates, st = given.domain.meta.get("explore", {}).get("actions", {}), given.settings
    return LLMPolicy(given.llm, goal_text(given.domain, given.goal),
                     given.examples or read_examples(os.environ.get("KGPLAN_POLICY_EXAMPLES")), given.fallback,
                     templates, allowed_actions(given.domain, templates), k=st.llm_examples, samples=st.llm_samples,
                     temperature=st.llm_temperature, lam=st.llm_lambda)


BELIEFS: Registry[BeliefKind] = Registry("belief")
BELIEFS.add(BeliefKind("uniform", "no commonsense: every place equally likely", lambda llm: None))
BELIEFS.add(BeliefKind("embedding", "softmax of the MiniLM similarity of item and place", _embedding))
BELIEFS.add(BeliefKind("llm", "LLM-MCTS: the LLM's sampled answers of where each item is (3-shot, places matched "
                       "by MiniLM), counted",
                       _llm_belief, needs_llm=True))
BELIEFS.add(BeliefKind("llm_logprob", "the LLM's first-token log-probabilities of the places after the same 3-shot "
                       "prompt (one call per item kind; needs an endpoint that gives them)",
                       lambda llm: _llm_belief(llm, logprobs=True), needs_llm=True))
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
PRIORS.add(PriorKind("llm_policy", "LLM-MCTS: next actions sampled from the LLM after K retrieved examples, matched "
                     "to the actions by embeddings, mixed with uniform", _llm_policy, needs_llm=True))


@dataclass
class Searcher:
    """A search method's searcher for one goal on one graph (grounded once: reuse it for the episode), with its
    belief kind's name and prior."""

    search: Search
    belief: BeliefPrior | None
    belief_kind: str = ""

    def decide(self, graph: WorldGraph, budget: Budget, history: tuple[str, ...] = (),
               lock: AbstractContextManager = nullcontext()) -> Decision:
        """One decision on the graph's current state and stored belief (see graph_io.decide; `lock` is held while
        the belief is stored)."""
        return decide(graph, self.search, budget, self.belief, history, lock, self.belief_kind)


@dataclass(frozen=True)
class SearchMethod:
    """A way to act where facts are unknown: a tree search with a `belief` kind, a `prior` kind at its nodes,
    a `rollout_prior` kind (random rollouts without `ff_rollouts`, the fallback of an LLM prior) and
    `settings`; `without_llm`, the (belief, prior) kinds used when no LLM is given (else a method whose
    kinds need one needs it); no belief: no tree search (the symbolic sub-goal loop)."""

    name: str
    help: str
    belief: str | None = None
    prior: str = "uniform"
    rollout_prior: str = "uniform"
    settings: Settings = field(default_factory=Settings)
    without_llm: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        for b in (self.belief, *(self.without_llm or ())[:1]):
            if b is not None:
                BELIEFS.check(b)
        for p in (self.prior, self.rollout_prior, *(self.without_llm or ())[1:]):
            PRIORS.check(p)

    @property
    def tree(self) -> bool:
        """Whether it searches a tree (else it is the symbolic sub-goal loop)."""
        return self.belief is not None

    @property
    def uses_llm(self) -> bool:
        """Whether its belief or priors ask an LLM (where one is given)."""
        return self.tree and any(k.needs_llm for k in (BELIEFS[self.belief], PRIORS[self.prior],
                                                        PRIORS[self.rollout_prior]))

    @property
    def needs_llm(self) -> bool:
        return self.uses_llm and self.without_llm is None

    def kinds(self, llm: LLM | None) -> tuple[str, str]:
        """The (belief, prior) kinds it searches with, given `llm` or None."""
        assert self.belief is not None
        return self.without_llm if llm is None and self.without_llm else (self.belief, self.prior)

    def searcher(self, graph: WorldGraph, goal: Formula, llm: LLM | None = None,
                 rng: random.Random | None = None, examples: Sequence[Example] = (),
                 belief: str | None = None) -> Searcher:
        """This method's searcher for `goal` on the graph (`llm` where it needs one; `examples` for an LLM
        policy's prompt; `belief`, a kind of BELIEFS in place of its own)."""
        if self.belief is None:
            raise InputError(f"search method {self.name!r} makes no tree search: plan for the goal or a sub-goal")
        if self.needs_llm and llm is None:
            raise InputError(f"search method {self.name!r} needs an LLM")
        own, prior_kind = self.kinds(llm)
        belief = belief or own
        if BELIEFS[belief].needs_llm and llm is None:
            raise InputError(f"belief {belief!r} needs an LLM")
        rollout = PRIORS[self.rollout_prior].make(PriorInput(graph.domain, goal, llm, UniformPrior()))
        prior = PRIORS[prior_kind].make(PriorInput(graph.domain, goal, llm, rollout, examples, self.settings))
        search = searcher(graph, goal, prior, rollout, dataclasses.replace(self.settings), rng)
        return Searcher(search, BELIEFS[belief].make(llm), belief)


# kgplan's own improvements, each addable to any method as `METHOD+SWITCH`
SWITCHES: dict[str, tuple[str, dict[str, object]]] = {
    "greedy": ("the belief-greedy policy mixed into the prior (70%)", {"policy_weight": 0.7}),
    "ff": ("rollouts by the belief-greedy policy, cut off at gamma**h of FF's h", {"ff_rollouts": True}),
    "handover": ("Fast Downward takes over once every goal item has been seen", {"handover": True}),
    "averaging": ("the belief averaged with uniform by how well it has predicted", {"averaging": True}),
    "llm": ("LLM-MCTS's LLM policy as the prior where an LLM is given (uct+llm: uniform belief)", {}),
}
# the papers' settings: LLM-MCTS's code (c = 24 on returns scaled by 1/(1-gamma) = 20, gamma = 0.95, depth
# 20), on which DR-MCTS built its VirtualHome runs (Settings' defaults are its code's beta_base = 0.5,
# lambda = 0.05, K = 2, rho clipped at 10); no kgplan improvement
PAPER = Settings(c=1.2, gamma=0.95, horizon=20, policy_weight=0.0, ff_rollouts=False, handover=False,
                 averaging=False)


def with_settings(settings: Settings, assignments: str) -> Settings:
    """`settings` with `field=value,...` assigned (each value read as the field's type)."""
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    changes: dict[str, object] = {}
    for part in filter(None, (a.strip() for a in assignments.split(","))):
        name, _, value = part.partition("=")
        if name.strip() not in fields or not value:
            raise InputError(f"expected FIELD=VALUE with a field of: {', '.join(fields)}; got {part!r}")
        kind = type(getattr(settings, name.strip()))
        try:
            changes[name.strip()] = (value.strip().lower() in ("1", "true", "yes", "on") if kind is bool
                                     else kind(value.strip()))
        except ValueError as e:
            raise InputError(f"{name.strip()}: {e}") from e
    return dataclasses.replace(settings, **changes)


def configured(spec: str, assignments: str = "") -> SearchMethod:
    """The method `NAME[+SWITCH...]` (SWITCHES) with `field=value,...` settings assigned."""
    name, *switches = (x.strip() for x in spec.split("+"))
    base = SEARCH_METHODS[name]
    if bad := [s for s in switches if s not in SWITCHES]:
        raise InputError(f"unknown switch {', '.join(bad)}: the switches are {', '.join(SWITCHES)}")
    settings = dataclasses.replace(base.settings, **{k: v for s in switches for k, v in SWITCHES[s][1].items()})
    if "llm" in switches:  # without an LLM, the method's own kinds
        base = dataclasses.replace(base, prior="llm_policy", without_llm=base.without_llm or (
            None if base.uses_llm else base.kinds(None)))
    return dataclasses.replace(base, name=spec, settings=with_settings(settings, assignments))


SEARCH_METHODS: Registry[SearchMethod] = Registry("search method")
SEARCH_METHODS.add(SearchMethod("explore", "no tree search: the goal, else its first sub-goal with a plan, planned"))
SEARCH_METHODS.add(SearchMethod("uct", "UCT: uniform belief and prior, random rollouts, the Monte Carlo return",
                                "uniform", settings=PAPER))
SEARCH_METHODS.add(SearchMethod("llm_mcts", "LLM-MCTS: the LLM's belief and policy (next actions sampled after "
                                "retrieved examples; without an LLM: uniform belief, the policy of its mass), random "
                                "rollouts", "llm", "llm_policy", settings=PAPER,
                                without_llm=("uniform", "belief_mass")))
SEARCH_METHODS.add(SearchMethod("llm_mcts_no_policy", "LLM-MCTS without its heuristic policy (uniform prior)",
                                "llm", "uniform", settings=PAPER, without_llm=("uniform", "uniform")))
SEARCH_METHODS.add(SearchMethod("llm_mcts_uniform_belief", "LLM-MCTS with a uniform state prior (belief)",
                                "uniform", "llm_policy", settings=PAPER, without_llm=("uniform", "belief_mass")))
SEARCH_METHODS.add(SearchMethod("llm_mcts_full_obs", "LLM-MCTS, fully observable: told where every item is",
                                "llm", "llm_policy", settings=dataclasses.replace(PAPER, fully_observable=True),
                                without_llm=("uniform", "belief_mass")))
SEARCH_METHODS.add(SearchMethod("is_mcts", "IS-MCTS: llm_mcts with the importance-sampling backup",
                                "llm", "llm_policy", settings=dataclasses.replace(PAPER, estimator="is"),
                                without_llm=("uniform", "belief_mass")))
SEARCH_METHODS.add(SearchMethod("dr_mcts", "DR-MCTS: llm_mcts with the doubly robust backup",
                                "llm", "llm_policy", settings=dataclasses.replace(PAPER, estimator="dr"),
                                without_llm=("uniform", "belief_mass")))
SEARCH_METHODS.add(SearchMethod("puct", "kgplan's: embedding belief, its mass as the prior mixed with the greedy "
                                "policy, FF rollouts, averaging, hand-over", "embedding", "belief_mass", "belief_mass"))
SEARCH_METHODS.add(SearchMethod("puct_dr", "puct with DR-MCTS's backup",
                                "embedding", "belief_mass", "belief_mass", Settings(estimator="dr")))
SEARCH_METHODS.add(SearchMethod("puct_lifelong", "puct over the lifelong belief: where the graph has seen items before",
                                "lifelong", "belief_mass", "belief_mass"))
SEARCH_METHODS.add(SearchMethod("puct_llm", "LLM belief, MC-DML's LLM prior with memories (needs an LLM)",
                                "llm", "llm", "belief_mass"))
