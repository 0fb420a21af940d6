"""The tree search over a belief (POMCP's histories of actions and observations) with PUCT selection, its
belief-greedy policy, rollouts and leaf values: what one decision does, on a ground task and worlds
sampled from the belief. The graph is read and written by graph_io; the priors come from priors (and
the language layer's LLM prior)."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgplan.planners.grounding import GroundState, GroundTask
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts.estimators import Hybrid, doubly_robust
from kgplan.planners.mcts.observe import Observer
from kgplan.planners.mcts.priors import Beliefs, Prior
from kgplan.planners.relaxation import Goal
from kgplan.planners.state import Step


@dataclass
class Settings:
    """How to search: `estimator` "mc" (rollout returns) or "dr" (the hybrid); `policy_weight`: the share
    of a node's PUCT prior given to the belief-greedy policy (`Search._greedy`; 0 keeps the prior as it
    is, as UCT's uniform one)."""

    c: float = 3.0
    gamma: float = 0.95
    horizon: int = 15
    estimator: str = "mc"
    policy_weight: float = 0.7
    rollout_depth: int = 8  # then gamma**h: results as at 15 on the rearrange benchmark, in 2/3-3/4 of the time
    rollout_epsilon: float = 0.2  # rollout policy: a random action with this probability, else a greedy one
    rho_max: float = 10.0
    beta_base: float = 0.5
    lam: float = 0.01


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
    __slots__ = ("actions", "kids", "n", "na", "prior", "q")

    def __init__(self) -> None:
        self.n = 0
        self.actions: list[int] | None = None
        self.prior: list[float] = []
        self.na: list[int] = []
        self.q: list[float] = []
        self.kids: dict[tuple[int, frozenset], _Node] = {}


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
        self._last_action = -1

    def decide(self, known: GroundState, beliefs: Mapping[str, Mapping[str, float]], budget: Budget,
               history: tuple[str, ...] = ()) -> Decision:
        """The most visited first action after simulations from `known` facts plus worlds sampled from
        `beliefs` (about the items whose place is unknown), within `budget`. The tree grows from the
        subtree the last decision's action and what the agent now sees lead to, where there is one."""
        start, calls0 = time.perf_counter(), self.prior.llm_calls
        self.prior.limit_calls(budget.llm_calls)
        hybrid = Hybrid(self.settings.beta_base, self.settings.lam)
        root, sims = _Node(), 0
        self._greedy_cache.clear()
        if self._last is not None:  # the subtree of what was done and seen since the last decision (POMCP)
            root = self._last.kids.get((self._last_action, self.observe(known)), root)
        while sims < budget.simulations:
            if budget.seconds is not None and time.perf_counter() - start >= budget.seconds:
                break
            world = {(self.observe.located, (i, p)) for i, p in bl.sample(beliefs, self.rng).items()
                     if i in self.observe.items}
            s0 = known | world
            self._simulate(root, s0, 0, history, beliefs, hybrid, sims, frozenset(self.observe.visible(s0)))
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
            hybrid.beta(sims) if self.settings.estimator == "dr" else None)

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
                  hybrid: Hybrid, sims: int, looked: frozenset[str]) -> float:
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
            node.na, node.q = [0] * len(node.actions), [0.0] * len(node.actions)
            mc, dr = self._rollout(s, depth, beliefs, guess)
            if st.estimator == "mc":
                return mc
            beta = hybrid.beta(sims)
            hybrid.add(mc, dr)
            return beta * mc + (1 - beta) * dr
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
                                                               hybrid, sims, looked | set(self.observe.visible(s2)))
        if done:
            child.n += 1
        node.n += 1
        node.na[best] += 1
        node.q[best] += (g - node.q[best]) / node.na[best]
        return g

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

    def _rollout(self, s: GroundState, depth: int, beliefs: Beliefs, guess: Beliefs) -> tuple[float, float]:
        """(V_MC, V_DR) of a rollout from `s`, acting on what the agent would know: the behaviour policy mu
        takes an action of the belief-greedy policy (`_greedy`) with probability 1 - `rollout_epsilon`,
        else any; the target policy pi of the DR estimate is the rollout prior; V(s) = gamma**h with the
        greedy policy's h. `guess` is the belief at `s` (`_belief_at`), narrowed on a copy as the
        rollout looks."""
        st, gamma, located = self.settings, self.settings.gamma, self.observe.located
        guess = dict(guess)
        h, greedy = self._greedy(s, guess)
        values, rewards, rhos = [gamma ** h], [], []
        rho, ret, disc = 1.0, 0.0, 1.0
        for _ in range(min(st.rollout_depth, st.horizon - depth)):
            acts = self.task.applicable(s)
            if not acts:
                break
            good = [i in greedy for i in acts]
            n_good = sum(good)
            eps = st.rollout_epsilon if n_good else 1.0
            mu = [(1 - eps) * g / max(n_good, 1) + eps / len(acts) for g in good]
            j = self.rng.choices(range(len(acts)), weights=mu)[0]
            if st.estimator == "dr":
                pi = self.rollout_prior((), [self.task.operators[i].step for i in acts], beliefs)
                rho = min(rho * pi[j] / mu[j], st.rho_max)
            s = self.task.apply(acts[j], s)
            for p in self.observe.visible(s):
                for i in list(guess):
                    guess[i] = {} if (located, (i, p)) in s else bl.absent(guess[i], p)
                    if not guess[i]:
                        del guess[i]
            done = self.goal.holds(s)
            h, greedy = (0.0, set()) if done else self._greedy(s, guess)
            rewards.append(1.0 if done else 0.0)
            rhos.append(rho)
            values.append(0.0 if done else gamma ** h)
            if done:
                ret = disc
                break
            disc *= gamma
        else:  # cut off before the goal: the heuristic's value of where it stopped, not a loss
            ret = disc * values[-1]
        return ret, doubly_robust(values, rewards, rhos, gamma)
