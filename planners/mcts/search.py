"""The tree search over a belief (POMCP's histories of actions and observations) with PUCT selection, its
belief-greedy policy, rollouts and leaf values: what one decision does, on a ground task and worlds
sampled from the belief. The graph is read and written by graph_io; the priors come from priors (and
the language layer's LLM prior)."""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgplan.errors import InputError
from kgplan.planners.grounding import GroundState, GroundTask
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts import estimators as est
from kgplan.planners.mcts.observe import Observer
from kgplan.planners.mcts.priors import Beliefs, Prior, UniformPrior
from kgplan.planners.relaxation import Goal
from kgplan.planners.state import Step


@dataclass
class Settings:
    """How to search (every field is a flag of `kgplan bench rearrange --set`).

    The tree: PUCT with exploration `c`, discount `gamma`, depth `horizon`. The backup `estimator`: "mc"
    (the return), "is" (IS-MCTS) or "dr" (DR-MCTS, kgplan.planners.mcts.estimators) with the target policy
    softmax(Q / `temperature`) mixed with uniform by `target_uniform`, the `behaviour` policy "uniform"
    (the paper's code) or the node's "prior", step weights clipped at `rho_max`, Q-hat by `kfold`-fold
    cross-validation, beta per (s, a) over the last `window` pairs (at least `min_samples`, else
    `beta_base*exp(-lam*N(s, a))`). An LLM policy (LLM-MCTS, kgplan.language.mcts.LLMPolicy) samples
    `llm_samples` next actions at `llm_temperature` after `llm_examples` retrieved examples and is mixed with
    uniform by `llm_lambda`.

    kgplan's own improvements, each a switch: `policy_weight`, the share of a node's prior given to the
    belief-greedy policy (`Search._greedy`; 0: the prior as it is); `ff_rollouts`, rollouts that follow
    that policy (a random action with probability `rollout_epsilon`) for at most `rollout_depth` steps, cut
    off at gamma**h of FF's h (else rollouts draw from the rollout prior, uniform in the papers, to the
    horizon, worth 0 when cut off); `handover`, Fast Downward takes over once every goal item has been seen
    (else whole episodes run under MCTS); `averaging`, the belief is the commonsense prior averaged with
    uniform by how well it has predicted this episode (graph_io.beliefs_for; else the prior as made).
    `fully_observable` (LLM-MCTS's ablation): the agent is told where every item is (the benchmark)."""

    c: float = 3.0
    gamma: float = 0.95
    horizon: int = 15
    estimator: str = "mc"
    temperature: float = 1.0
    target_uniform: float = 0.0
    behaviour: str = "uniform"
    rho_max: float = 10.0
    kfold: int = 2
    window: int = 20
    min_samples: int = 5
    beta_base: float = 0.5
    lam: float = 0.05
    llm_samples: int = 5
    llm_examples: int = 3
    llm_temperature: float = 0.6
    llm_lambda: float = 0.5
    policy_weight: float = 0.7
    ff_rollouts: bool = True
    rollout_depth: int = 8  # then gamma**h: results as at 15 on the rearrange benchmark, in 2/3-3/4 of the time
    rollout_epsilon: float = 0.2
    handover: bool = True
    averaging: bool = True
    fully_observable: bool = False

    def __post_init__(self) -> None:
        if self.estimator not in ("mc", "is", "dr"):
            raise InputError(f"unknown estimator {self.estimator!r}: mc, is or dr")
        if self.behaviour not in ("uniform", "prior"):
            raise InputError(f"unknown behaviour policy {self.behaviour!r}: uniform or prior")


@dataclass
class Budget:
    """Limits on one decision: simulations, wall-clock seconds, LLM calls (None: no limit; once the calls
    are spent, the LLM prior gives way to its fallback and the simulations go on)."""

    simulations: int = 100
    seconds: float | None = None
    llm_calls: int | None = None


@dataclass
class Decision:
    step: Step | None
    simulations: int
    llm_calls: int
    seconds: float
    value: float
    visits: dict[str, int]
    beta: float | None = None


class _Node:
    __slots__ = ("actions", "beta", "kids", "n", "na", "pairs", "prior", "q", "returns")

    def __init__(self) -> None:
        self.n = 0
        self.actions: list[int] | None = None
        self.prior: list[float] = []
        self.na: list[int] = []
        self.q: list[float] = []
        self.kids: dict[tuple[int, frozenset], _Node] = {}
        self.returns: list[list[float]] = []  # per action, its return samples G (IS and DR)
        self.pairs: list[deque[tuple[float, float]]] = []  # per action, the window of (G, V_X) pairs
        self.beta: list[float] = []  # per action, its last beta


class Search:
    """One episode's searcher: the task grounded once, the goal, the observer and the priors."""

    def __init__(self, task: GroundTask, goal: Goal, observer: Observer, prior: Prior, rollout_prior: Prior,
                 settings: Settings | None = None, rng: random.Random | None = None) -> None:
        self.task, self.goal, self.observe, self.prior = task, goal, observer, prior
        self.rollout_prior = rollout_prior
        self.settings = settings or Settings()
        self.rng = rng or random.Random(0)
        self._last: _Node | None = None  # the last decision's root and action, whose subtree is reused
        self._greedy_cache: dict[tuple, tuple[float, set[int]]] = {}  # per decision
        self._applicable: dict[GroundState, list[int]] = {}  # per decision: rollouts revisit states
        self._last_action = -1

    def decide(self, known: GroundState, beliefs: Mapping[str, Mapping[str, float]], budget: Budget,
               history: tuple[str, ...] = ()) -> Decision:
        """The most visited first action after simulations from `known` facts plus worlds sampled from
        `beliefs` (about the items whose place is unknown), within `budget`. The tree grows from the
        subtree the last decision's action and what the agent now sees lead to, where there is one."""
        start, calls0 = time.perf_counter(), self.prior.llm_calls
        self.prior.limit_calls(budget.llm_calls)
        root, sims = _Node(), 0
        self._greedy_cache.clear()
        self._applicable.clear()
        if self._last is not None:  # the subtree of what was done and seen since the last decision (POMCP)
            root = self._last.kids.get((self._last_action, self.observe(known)), root)
        while sims < budget.simulations:
            if budget.seconds is not None and time.perf_counter() - start >= budget.seconds:
                break
            world = {(self.observe.located, (i, p)) for i, p in bl.sample(beliefs, self.rng).items()
                     if i in self.observe.items}
            s0 = known | world
            self._simulate(root, s0, 0, history, beliefs, frozenset(self.observe.visible(s0)))
            sims += 1
        best = max(range(len(root.na)), key=lambda j: (root.na[j], root.q[j])) if root.na else None
        self._last, self._last_action = (root, root.actions[best]) if best is not None else (None, -1)
        if best is not None and root.q[best] == 0.0:
            self.prior.reflect([*history, *self._principal(root)])  # every simulation failed: a lesson
        return Decision(
            None if best is None else self.task.operators[root.actions[best]].step, sims,
            self.prior.llm_calls - calls0, time.perf_counter() - start,
            root.q[best] if best is not None else 0.0,
            {str(self.task.operators[a].step): n for a, n in zip(root.actions or [], root.na, strict=False) if n},
            root.beta[best] if best is not None and root.beta else None)

    def _principal(self, node: _Node) -> list[str]:
        """The most visited line of play below `node` (the attempt a reflection is about)."""
        line: list[str] = []
        while node.na and max(node.na) > 0:
            j = max(range(len(node.na)), key=node.na.__getitem__)
            line.append(str(self.task.operators[node.actions[j]].step))
            kids = [k for (a, _), k in node.kids.items() if a == node.actions[j]]
            if not kids:
                break
            node = max(kids, key=lambda k: k.n)
        return line

    def _simulate(self, node: _Node, s: GroundState, depth: int, history: tuple[str, ...], beliefs: Beliefs,
                  looked: frozenset[str]) -> float:
        st = self.settings
        if self.goal.holds(s) or depth >= st.horizon:
            return 0.0
        if node.actions is None:  # expand, then evaluate by a rollout
            node.actions = self.task.applicable(s)
            if not node.actions:
                return 0.0
            guess = self._belief_at(s, beliefs, looked)
            node.prior = self.prior(history, [self.task.operators[i].step for i in node.actions], guess)
            if (w := st.policy_weight) > 0:
                share = self._policy_share(s, node.actions, guess)
                node.prior = [(1 - w) * p + w * h for p, h in zip(node.prior, share, strict=True)]
            k = len(node.actions)
            node.na, node.q = [0] * k, [0.0] * k
            if st.estimator != "mc":
                node.returns, node.beta = [[] for _ in range(k)], [st.beta_base] * k
                node.pairs = [deque(maxlen=st.window) for _ in range(k)]
            return self._rollout(s, depth, beliefs, guess)
        best = self._select(node, s)
        if best < 0:
            return 0.0
        i = node.actions[best]
        s2 = self.task.apply(i, s)
        done = self.goal.holds(s2)
        key = (i, self.observe(s2))
        child = node.kids.get(key)
        if child is None:
            child = node.kids[key] = _Node()
        step = str(self.task.operators[i].step)
        g = 1.0 if done else st.gamma * self._simulate(child, s2, depth + 1, (*history, step), beliefs,
                                                               looked | set(self.observe.visible(s2)))
        if done:
            child.n += 1
        node.n += 1
        node.na[best] += 1
        v = g if st.estimator == "mc" else self._backup(node, best, g)
        node.q[best] += (g - node.q[best]) / node.na[best]  # Q(s, a): the mean return
        return v  # what the parent's return is made of: IS's or DR's value of s

    def _backup(self, node: _Node, j: int, g: float) -> float:
        """IS-MCTS's or DR-MCTS's value of the node's state after action j gave the return sample `g` (made
        of the value backed up from below; kgplan.planners.mcts.estimators): ``beta*g + (1-beta)*V_X`` with
        V_X = rho*g (IS) or V-hat + rho*(g - Q-hat) (DR), rho = pi/mu with pi = softmax(Q) and mu uniform (the
        paper's code) or the node's prior; beta per (s, a)."""
        st = self.settings
        node.returns[j].append(g)
        pi = est.target(node.q, st.temperature, st.target_uniform)[j]
        mu = node.prior[j] if st.behaviour == "prior" else 1 / len(node.q)
        rho = est.weight(pi, mu, st.rho_max)
        if st.estimator == "is":
            x = rho * g
        else:
            x = est.doubly_robust(est.v_hat(node.q, node.returns, st.temperature), rho, g,
                                  est.q_hat(node.returns[j], st.kfold))
        node.pairs[j].append((g, x))
        b = node.beta[j] = est.beta(node.pairs[j], node.na[j], st.beta_base, st.lam, st.min_samples)
        return b * g + (1 - b) * x

    def _select(self, node: _Node, s: GroundState) -> int:
        """The PUCT choice among the node's actions applicable in `s` (-1: none). Q as it is (returns lie in
        [0, 1]); an action not tried yet counts at the node's mean value (first-play urgency), so that one
        lucky return does not shut out the untried ones."""
        sqrt_n = math.sqrt(node.n + 1)
        mean = sum(q * n for q, n in zip(node.q, node.na, strict=True)) / max(sum(node.na), 1)
        best, best_u = -1, -math.inf
        for j, i in enumerate(node.actions or ()):
            q = node.q[j] if node.na[j] else mean
            u = q + self.settings.c * node.prior[j] * sqrt_n / (1 + node.na[j]) + 1e-9 * self.rng.random()
            if u > best_u and self.task.ok(i, s):
                best, best_u = j, u
        return best

    def _next_place(self, bare: GroundState, guess: Beliefs) -> str | None:
        """The place worth looking at next: the most belief mass of the items not yet seen per step (FF's
        h) it takes to see it, in `bare` (what the agent knows); None when nothing is unknown."""
        mass: dict[str, float] = {}
        for d in guess.values():
            for p, q in d.items():
                mass[p] = mass.get(p, 0.0) + q
        best: tuple[float, str] | None = None
        for p, q in sorted(mass.items(), key=lambda x: -x[1]):
            if best is not None and q < best[0]:
                break  # a place is worth at most its mass (it takes a step at least)
            if q > 0 and p in self.observe.reach:
                best = max(best or (-1.0, ""), (q / max(self.observe.reach[p].helpful(bare)[0], 1), p))
        return best[1] if best else None

    def _greedy(self, s: GroundState, guess: Beliefs) -> tuple[float, set[int]]:
        """The belief-greedy policy at `s`: h, and the actions it takes. The items of `guess` (not yet seen)
        are guessed at the place worth looking at next; of FF's helpful actions for the goal in that guess
        and for seeing that place, it keeps those applicable in `s` that leave the shortest relaxed plan
        to the goal, then to seeing the place (so it picks up what it sees, and finds every item before it
        delivers); h is the goal's in the guess."""
        located = self.observe.located
        bare = s - {a for a in s if a[0] == located and a[1][0] in guess}
        key = (bare, frozenset((i, frozenset(d.items())) for i, d in guess.items()))
        if (known := self._greedy_cache.get(key)) is not None:
            return known
        place = self._next_place(bare, guess)
        guessed = bare | {(located, (i, place)) for i in guess} if place else bare
        h, helpful = self.goal.helpful(guessed)
        reach = self.observe.reach[place] if place else None
        candidates = {self.task.by_step[a.step] for a in (helpful | reach.helpful(bare)[1] if reach else helpful)}
        to_goal = {i: self.goal.helpful(self.task.apply(i, guessed))[0] for i in candidates if self.task.ok(i, s)}
        least = min(to_goal.values(), default=0)
        to_place = {i: reach.helpful(self.task.apply(i, bare))[0] if reach else 0
                    for i, g in to_goal.items() if g == least}
        nearest = min(to_place.values(), default=0)
        self._greedy_cache[key] = out = (h, {i for i, r in to_place.items() if r == nearest})
        return out

    def _policy_share(self, s: GroundState, actions: Sequence[int], guess: Beliefs) -> list[float]:
        """A policy over `actions`: uniform over the belief-greedy policy's (uniform over all when it has
        none)."""
        _, chosen = self._greedy(s, guess)
        hits = [i in chosen for i in actions]
        n = sum(hits)
        return [h / n for h in hits] if n else [1 / len(actions)] * len(actions)

    def _belief_at(self, s: GroundState, beliefs: Beliefs, looked: frozenset[str]) -> dict[str, bl.Dist]:
        """The belief after a history that looked at `looked`: items seen there drop out (their place is
        known), the others are not at those places."""
        located = self.observe.located
        return {i: bl.normalised({p: q for p, q in d.items() if p not in looked}) for i, d in beliefs.items()
                if not any((located, (i, p)) in s for p in looked)}

    def _rollout(self, s: GroundState, depth: int, beliefs: Beliefs, guess: Beliefs) -> float:
        """The discounted return of a rollout from `s` to the horizon, acting on what the agent would know:
        with `ff_rollouts`, an action of the belief-greedy policy (`_greedy`) with probability 1 -
        `rollout_epsilon`, else any, for at most `rollout_depth` steps, then gamma**h of the greedy policy's
        h; else actions drawn from the rollout prior (uniform: random rollouts), 0 when cut off. `guess` is
        the belief at `s` (`_belief_at`), narrowed on a copy as the rollout looks."""
        st, located = self.settings, self.observe.located
        guess = dict(guess)
        ff = st.ff_rollouts
        h, greedy = self._greedy(s, guess) if ff else (0.0, set())
        disc = 1.0
        uniform = not ff and isinstance(self.rollout_prior, UniformPrior)  # random: no belief to narrow
        for _ in range(min(st.rollout_depth, st.horizon - depth) if ff else st.horizon - depth):
            if (acts := self._applicable.get(s)) is None:
                acts = self._applicable[s] = self.task.applicable(s)
            if not acts:
                return 0.0
            if uniform:
                s = self.task.apply(self.rng.choice(acts), s)
            else:
                if ff:
                    good = [i in greedy for i in acts]
                    eps = st.rollout_epsilon if any(good) else 1.0
                    mu = [(1 - eps) * g / max(sum(good), 1) + eps / len(acts) for g in good]
                else:
                    mu = self.rollout_prior((), [self.task.operators[i].step for i in acts], guess)
                s = self.task.apply(self.rng.choices(acts, weights=mu)[0], s)
            if self.goal.holds(s):
                return disc
            for p in [] if uniform else self.observe.visible(s):
                for i in list(guess):
                    guess[i] = {} if (located, (i, p)) in s else bl.absent(guess[i], p)
                    if not guess[i]:
                        del guess[i]
            if ff:
                h, greedy = self._greedy(s, guess)
            disc *= st.gamma
        return disc * st.gamma ** h if ff else 0.0  # cut off: the heuristic's value of where it stopped
