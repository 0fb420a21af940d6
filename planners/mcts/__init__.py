"""Monte Carlo tree search over a belief (LLM-MCTS, MC-DML, DR-MCTS), for goals that no symbolic plan
reaches because facts are unknown.

Each simulation samples a world from the belief (planners/belief.py) and simulates it with the
domain's own actions, grounded once into precondition/effect sets. The tree is over histories of
actions and what they showed (POMCP), so a node's actions are chosen on what the agent would know.
Selection is PUCT, ``Q + c*P(a)*sqrt(N)/(1+N(a))``, with a prior policy P that is uniform (UCT), the
belief's mass at the places an action reaches (the belief from embeddings or an LLM), or an LLM's with
MC-DML's memories, mixed with a belief-greedy policy (look where the most belief mass is per step, pick
up what is seen, deliver once all is found). Rollouts follow that policy. Leaf values are rollout
returns or DR-MCTS's hybrid ``beta*V_MC + (1-beta)*V_DR``.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from pydantic import BaseModel

from kgplan.domains.formula import TRUE, And, Atom, Equals, Formula, Not, atoms, parse_formula
from kgplan.domains.model import Domain
from kgplan.domains.sexpr import read
from kgplan.domains.verify import GroundAtom
from kgplan.errors import DomainError
from kgplan.graph.world import WorldGraph
from kgplan.planners.mcts import belief as bl
from kgplan.planners.state import State, Step, ground, substitute

World = frozenset[GroundAtom]


# ---- the domain's transition model, grounded once --------------------------------------------------
@dataclass(frozen=True)
class GroundAction:
    step: Step
    pre: frozenset[GroundAtom]
    pre_not: frozenset[GroundAtom]
    add: frozenset[GroundAtom]
    delete: frozenset[GroundAtom]


def _literals(f: Formula) -> list[Formula] | None:
    """The conjuncts of a conjunction of literals, or None for anything richer."""
    parts = list(f.args) if isinstance(f, And) else [f]
    ok = all(isinstance(p, Atom | Equals) or (isinstance(p, Not) and isinstance(p.arg, Atom | Equals))
             for p in parts)
    return parts if ok else None


class Model:
    """The ground actions of `domain` over `objects` as precondition/effect sets (static preconditions
    evaluated once): STRIPS with negative preconditions and equality; other actions are refused."""

    def __init__(self, domain: Domain, objects: Mapping[str, str], facts: set[GroundAtom]) -> None:
        self.domain, self.objects = domain, dict(objects)
        static = domain.static_predicates()
        self.static = {a for a in facts if a[0] in static}
        probe = State(domain, self.objects, self.static)
        self.actions: list[GroundAction] = []
        richer = [a.name for a in domain.actions.values() if _literals(a.precondition) is None
                  or any(e.condition != TRUE or e.params for e in a.effects)]
        if richer:
            raise DomainError(f"MCTS simulates STRIPS actions (with negative preconditions and equality) only; "
                             f"these actions of domain {domain.name!r} have quantified or conditional parts: "
                             f"{', '.join(richer)}")
        for act in domain.actions.values():
            lits = _literals(act.precondition)
            for b in probe.bindings(act.params):
                step = Step(act.name, tuple(b[p.name] for p in act.params))
                pre, pre_not, fine = set(), set(), True
                for lit in lits or ():
                    positive = not isinstance(lit, Not)
                    inner = lit if positive else lit.arg
                    if isinstance(inner, Equals):
                        fine = (b.get(inner.left, inner.left) == b.get(inner.right, inner.right)) == positive
                    else:
                        atom = ground(inner, b)
                        if atom[0] in static:
                            fine = (atom in self.static) == positive
                        else:
                            (pre if positive else pre_not).add(atom)
                    if not fine:
                        break
                if fine:
                    self.actions.append(GroundAction(
                        step, frozenset(pre), frozenset(pre_not),
                        frozenset(ground(e.atom, b) for e in act.effects if e.add),
                        frozenset(ground(e.atom, b) for e in act.effects if not e.add)))
        self.index: dict[GroundAtom, list[int]] = {}
        self.always: list[int] = []
        for i, a in enumerate(self.actions):
            if a.pre:
                self.index.setdefault(min(a.pre), []).append(i)
            else:
                self.always.append(i)
        self.by_step = {a.step: i for i, a in enumerate(self.actions)}
        self.adders: dict[GroundAtom, list[GroundAction]] = {}
        self.deleters: dict[GroundAtom, list[GroundAction]] = {}
        for a in self.actions:
            for q in a.add:
                self.adders.setdefault(q, []).append(a)
            for q in a.delete:
                self.deleters.setdefault(q, []).append(a)

    def ok(self, i: int, s: World) -> bool:
        a = self.actions[i]
        return a.pre <= s and not (a.pre_not & s)

    def applicable(self, s: World) -> list[int]:
        """Indexes of the ground actions applicable in `s`."""
        out = [i for i in self.always if self.ok(i, s)]
        for atom in s:
            out += [i for i in self.index.get(atom, ()) if self.ok(i, s)]
        return out

    def apply(self, i: int, s: World) -> World:
        a = self.actions[i]
        return (s - a.delete) | a.add


class Goal:
    """A goal test, and the value heuristic of rollouts and the DR estimator: V(s) = gamma**h(s), where h is
    FF's heuristic, the number of distinct actions in the relaxed plan that the additive heuristic's
    cheapest supports make (an atom costs 0 if it holds, else 1 plus its cheapest achiever's precondition
    costs, computed backwards from the goal on demand; a cycle counts as unreachable). h_add itself counts
    a shared step once per goal that needs it (being at the target looks as good as twice a step)."""

    def __init__(self, goal: Formula, model: Model) -> None:
        self.formula, self.model = goal, model
        lits = _literals(goal)
        self.pos = frozenset(ground(a, {}) for a in (lits or ()) if isinstance(a, Atom))
        self.neg = frozenset(ground(a.arg, {}) for a in (lits or ()) if isinstance(a, Not) and isinstance(a.arg, Atom))
        self.literal = lits is not None and len(self.pos) + len(self.neg) == len(lits)
        self.cache: dict[World, tuple[float, set[GroundAction]]] = {}

    def holds(self, s: World) -> bool:
        if self.literal:
            return self.pos <= s and not (self.neg & s)
        return State(self.model.domain, self.model.objects, s).holds(self.formula)

    def helpful(self, s: World) -> tuple[float, set[GroundAction]]:
        """h(s), and the helpful actions: those applicable in `s` that the relaxed plan begins with (as in
        FF); remembered per state (simulations revisit states)."""
        if (known := self.cache.get(s)) is not None:
            return known
        if len(self.cache) > 200_000:
            self.cache.clear()
        self.cache[s] = out = self._helpful(s)
        return out

    def _helpful(self, s: World) -> tuple[float, set[GroundAction]]:
        if not self.literal:
            return (0 if self.holds(s) else 1), set()
        memo: dict[tuple[GroundAtom, bool], tuple[float, GroundAction | None]] = {}

        def cost(q: GroundAtom, positive: bool) -> float:
            if (q in s) == positive:
                return 0
            key = (q, positive)
            if key in memo:
                return memo[key][0]
            achievers = (self.model.adders if positive else self.model.deleters).get(q, ())
            for a in achievers:
                if a.pre <= s and not (a.pre_not & s):  # the cheapest possible: no need to cost the others
                    memo[key] = (1, a)
                    return 1
            memo[key] = (math.inf, None)  # in progress: a cycle back here is no way to reach it
            best: tuple[float, GroundAction | None] = (math.inf, None)
            for a in achievers:  # stop costing an achiever once it is no cheaper than the best
                c = 1.0
                for p in a.pre:
                    if p not in s:
                        m = memo.get((p, True))
                        c += m[0] if m is not None else cost(p, True)
                        if c >= best[0]:
                            break
                else:
                    for p in a.pre_not:
                        if p in s:
                            m = memo.get((p, False))
                            c += m[0] if m is not None else cost(p, False)
                            if c >= best[0]:
                                break
                if c < best[0]:
                    best = (c, a)
            memo[key] = best
            return best[0]

        goals = [(g, True) for g in self.pos] + [(g, False) for g in self.neg]
        if sum(cost(*g) for g in goals) == math.inf:
            return 99, set()
        helpful: set[GroundAction] = set()
        plan: set[GroundAction] = set()
        todo, done = [g for g in goals if g in memo], set()
        while todo:
            key = todo.pop()
            if key in done or (a := memo[key][1]) is None:
                continue
            done.add(key)
            plan.add(a)
            unmet = [k for k in [(p, True) for p in a.pre] + [(p, False) for p in a.pre_not] if k in memo]
            if memo[key][0] <= 1:
                helpful.add(a)
            todo += unmet
        return min(len(plan), 99), helpful


class Observer:
    """What the agent sees after an action: the `located` facts at every place where `visible` holds;
    `reach[p]`: the goal of seeing place p (`visible` at p)."""

    def __init__(self, spec: bl.BeliefSpec, model: Model, items: Sequence[str]) -> None:
        self.located, self.items = spec.located, set(items)
        self.places: list[str] = []
        self.checks: list[tuple[frozenset[GroundAtom], frozenset[GroundAtom], list[GroundAtom]]] = []
        self.reach: dict[str, Goal] = {}
        if spec.visible is None:
            return
        f = parse_formula(read(spec.visible, "[belief] visible")[0], "[belief] visible")
        if (lits := _literals(f)) is None:
            raise DomainError(f"[belief] visible must be a conjunction of literals over ?p: {spec.visible}")
        for p in bl.places(spec, model.domain, model.objects):
            b = {"?p": p}
            pos = frozenset(ground(a, b) for a in lits if isinstance(a, Atom))
            neg = frozenset(ground(a.arg, b) for a in lits if isinstance(a, Not) and isinstance(a.arg, Atom))
            self.checks.append((pos, neg, [(spec.located, (i, p)) for i in items]))
            self.places.append(p)
            self.reach[p] = Goal(substitute(f, b), model)

    def __call__(self, s: World) -> frozenset[GroundAtom]:
        out: list[GroundAtom] = []
        for pos, neg, located in self.checks:
            if pos <= s and not (neg & s):
                out += [a for a in located if a in s]
        return frozenset(out)

    def visible(self, s: World) -> list[str]:
        """The places whose contents the agent sees in `s`."""
        return [p for p, (pos, neg, _) in zip(self.places, self.checks, strict=True) if pos <= s and not (neg & s)]


# ---- prior policies ---------------------------------------------------------------------------------
Beliefs = Mapping[str, Mapping[str, float]]


class Prior(Protocol):
    """P(a | history, belief) over the given actions (summing to 1); `llm_calls` counts its LLM calls."""

    llm_calls: int

    def __call__(self, history: tuple[str, ...], actions: Sequence[Step], beliefs: Beliefs) -> list[float]: ...


def action_text(step: Step, templates: Mapping[str, str]) -> str:
    """A step in words, from domain.toml's [explore.actions] templates where the action has one."""
    words = [a.replace("_", " ") for a in step.args]
    t = templates.get(step.action)
    return t.format(*words) if t else " ".join([step.action.replace("_", " "), *words])


class UniformPrior:
    llm_calls = 0

    def __call__(self, history: tuple[str, ...], actions: Sequence[Step], beliefs: Beliefs) -> list[float]:
        return [1 / len(actions)] * len(actions)


class BeliefMassPrior:
    """P(a): the belief's probability that an unknown item is at a place the action acts on (an argument of
    a fact it adds or deletes, but not the source of a fact it moves: walk's `from`), floored; uniform
    when no action reaches an unknown item."""

    llm_calls = 0

    def __init__(self, domain: Domain, floor: float = 0.01) -> None:
        self.floor = floor
        self.leads_to: dict[str, list[int]] = {}
        for act in domain.actions.values():
            moved = {e.atom.predicate for e in act.effects if e.add}
            names = {x for e in act.effects if e.add or e.atom.predicate not in moved for x in e.atom.args}
            self.leads_to[act.name] = [i for i, p in enumerate(act.params) if p.name in names]

    def __call__(self, history: tuple[str, ...], actions: Sequence[Step], beliefs: Beliefs) -> list[float]:
        mass = np.array([sum(d.get(a.args[i], 0.0) for d in beliefs.values() for i in self.leads_to[a.action])
                         for a in actions])
        w = mass / mass.sum() if mass.sum() > 0 else np.full(len(actions), 1 / len(actions))
        w = np.maximum(w, self.floor)
        return (w / w.sum()).tolist()


class ActionScore(BaseModel):
    action: str
    probability: float


class ActionScores(BaseModel):
    scores: list[ActionScore]


class Reflection(BaseModel):
    reflection: str


class PlaceChoice(BaseModel):
    place: str


class LLMClient(Protocol):
    """kgplan.language.llm.LLM's interface: a structured completion."""

    def complete(self, messages: list[dict], schema: type) -> tuple: ...


@dataclass
class Memory:
    """MC-DML's memories: in-trial, the trajectory of this episode so far (the last `steps`); cross-trial,
    reflections written after failed simulations (at most `k`, the newest kept)."""

    k: int = 3
    steps: int = 10
    trajectory: deque[str] = field(default_factory=deque)
    reflections: deque[str] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self.trajectory = deque(self.trajectory, maxlen=self.steps)
        self.reflections = deque(self.reflections, maxlen=self.k)

    def prompt(self) -> str:
        lines = ["Your trajectory so far: " + ("; ".join(self.trajectory) or "(none)")]
        if self.reflections:
            lines += ["Lessons from earlier failed attempts:", *(f"- {r}" for r in self.reflections)]
        return "\n".join(lines)


class LLMPrior:
    """P(a | history) from an LLM that sees the goal, the memories and the actions (MC-DML); cached per
    history (the episode's trajectory and the node's path) and memory; once `max_calls` calls are made
    (see `Search.decide` for a budget per decision), or when the LLM fails to answer, `fallback`."""

    def __init__(self, llm: LLMClient, goal_text: str, memory: Memory, fallback: Prior,
                 templates: Mapping[str, str], max_calls: int | None = None, floor: float = 0.01) -> None:
        self.llm, self.goal, self.memory, self.fallback = llm, goal_text, memory, fallback
        self.templates, self.max_calls, self.floor = templates, max_calls, floor
        self.cache: dict[tuple, list[float]] = {}
        self.llm_calls = 0

    def __call__(self, history: tuple[str, ...], actions: Sequence[Step], beliefs: Beliefs) -> list[float]:
        key = (tuple(self.memory.trajectory), tuple(self.memory.reflections), history, tuple(actions))
        if key in self.cache:
            return self.cache[key]
        if self.spent():
            return self.fallback(history, actions, beliefs)
        texts = [action_text(a, self.templates) for a in actions]
        likely = "; ".join(f"{i}: " + ", ".join(f"{p} {q:.0%}" for p, q in sorted(d.items(), key=lambda x: -x[1])[:3])
                           for i, d in beliefs.items())
        prompt = (f"Goal: {self.goal}\n{self.memory.prompt()}\n"
                  f"Where the items not yet seen probably are: {likely or '(all seen)'}\n"
                  f"Imagined steps since then: {'; '.join(history) or '(none)'}\n"
                  "Give each possible next action the probability that it is the best next step:\n"
                  + "\n".join(f"- {t}" for t in texts))
        self.llm_calls += 1
        try:
            reply, _ = self.llm.complete([{"role": "user", "content": prompt}], ActionScores)
        except Exception:  # an LLM that fails to answer (transport, format) leaves the node to the fallback
            return self.fallback(history, actions, beliefs)
        given = {s.action.strip().lower(): max(s.probability, 0.0) for s in reply.scores}
        w = np.maximum(np.array([given.get(t.lower(), 0.0) for t in texts]), 0.0)
        w = w / w.sum() if w.sum() > 0 else np.full(len(texts), 1 / len(texts))
        w = np.maximum(w, self.floor)
        self.cache[key] = (w / w.sum()).tolist()
        return self.cache[key]

    def spent(self) -> bool:
        return self.max_calls is not None and self.llm_calls >= self.max_calls

    def reflect(self, trajectory: Sequence[str]) -> None:
        """After a search whose simulations all failed: the LLM writes a lesson about the line it tried
        most, kept in the cross-trial memory (none if the LLM fails to answer)."""
        if self.spent():
            return
        self.llm_calls += 1
        try:
            reply, _ = self.llm.complete([{"role": "user", "content":
                                           f"Goal: {self.goal}\nThis attempt failed: {'; '.join(trajectory)}\n"
                                           "In one sentence, what should be done differently?"}], Reflection)
        except Exception:  # as in __call__
            return
        self.memory.reflections.append(reply.reflection.strip())


def llm_belief(llm: LLMClient, samples: int = 5, floor: float = bl.FLOOR) -> bl.BeliefPrior:
    """A commonsense prior sampled from an LLM as in LLM-MCTS: `samples` answers to "where is the item
    most likely?" per item, counted, floored (an answer that is no place counts for nothing)."""

    def make(items: Mapping[str, str], places: Mapping[str, str]) -> dict[str, bl.Dist]:
        out = {}
        for item in items:
            counts = dict.fromkeys(places, 0.0)
            for _ in range(samples):
                reply, _ = llm.complete([{"role": "user", "content":
                                          f"In a home, where is the {item.replace('_', ' ')} most likely to be? "
                                          f"Answer with one of: {', '.join(places)}"}], PlaceChoice)
                if (place := reply.place.strip().lower().replace(" ", "_")) in counts:
                    counts[place] += 1
            out[item] = bl.floored(bl.normalised(counts) or dict.fromkeys(places, 1.0), floor)
        return out

    return make


# ---- the DR-MCTS hybrid estimator -----------------------------------------------------------------------
@dataclass
class Hybrid:
    """Online statistics of paired (V_MC, V_DR) samples and the weight beta of V_MC that minimises the
    variance of ``beta*V_MC + (1-beta)*V_DR``; with too few samples (or no variance) the schedule
    ``beta_base*exp(-lam*N)``. Samples that never vary (every rollout failed) say nothing of a variance,
    so they count as too few."""

    beta_base: float = 0.5
    lam: float = 0.01
    min_samples: int = 10
    n: int = 0
    mean_mc: float = 0.0
    mean_dr: float = 0.0
    m2_mc: float = 0.0
    m2_dr: float = 0.0
    c: float = 0.0

    def add(self, mc: float, dr: float) -> None:
        self.n += 1
        d_mc = mc - self.mean_mc
        self.mean_mc += d_mc / self.n
        d_dr = dr - self.mean_dr
        self.mean_dr += d_dr / self.n
        self.m2_mc += d_mc * (mc - self.mean_mc)
        self.m2_dr += d_dr * (dr - self.mean_dr)
        self.c += d_mc * (dr - self.mean_dr)

    def beta(self, visits: int) -> float:
        if self.n >= max(self.min_samples, 2):
            v_mc, v_dr, cov = self.m2_mc / (self.n - 1), self.m2_dr / (self.n - 1), self.c / (self.n - 1)
            denom = v_mc + v_dr - 2 * cov
            if min(v_mc, v_dr) > 1e-12 and denom > 1e-12:
                return min(1.0, max(0.0, (v_dr - cov) / denom))
        return self.beta_base * math.exp(-self.lam * visits)


def doubly_robust(v: Sequence[float], rewards: Sequence[float], rho: Sequence[float], gamma: float) -> float:
    """V_DR of one trajectory s_0 a_0 r_0 s_1 ... s_T: ``V(s_0) + sum_t gamma^t rho_{0:t} (r_t + gamma V(s_{t+1})
    - Q(s_t, a_t))`` with Q(s, a) = V(s); `v` has T+1 values (0 for a terminal state), `rho` the T
    cumulative importance weights prod pi/mu."""
    out = v[0]
    for t, (r, w) in enumerate(zip(rewards, rho, strict=True)):
        out += gamma ** t * w * (r + gamma * v[t + 1] - v[t])
    return out


# ---- the search -----------------------------------------------------------------------------------------
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
    """One episode's searcher: the model grounded once, the goal, the observer and the priors."""

    def __init__(self, model: Model, goal: Goal, observer: Observer, prior: Prior, rollout_prior: Prior,
                 settings: Settings | None = None, rng: random.Random | None = None) -> None:
        self.model, self.goal, self.observe, self.prior = model, goal, observer, prior
        self.rollout_prior = rollout_prior
        self.settings = settings or Settings()
        self.rng = rng or random.Random(0)
        self._last: _Node | None = None  # the last decision's root and action, whose subtree is reused
        self._greedy_cache: dict[tuple, tuple[float, set[int]]] = {}  # per decision
        self._last_action = -1

    def decide(self, known: World, beliefs: Mapping[str, Mapping[str, float]], budget: Budget,
               history: tuple[str, ...] = ()) -> Decision:
        """The most visited first action after simulations from `known` facts plus worlds sampled from
        `beliefs` (about the items whose place is unknown), within `budget`. The tree grows from the
        subtree the last decision's action and what the agent now sees lead to, where there is one."""
        start, calls0 = time.perf_counter(), self.prior.llm_calls
        if isinstance(self.prior, LLMPrior) and budget.llm_calls is not None:  # then the fallback prior
            self.prior.max_calls = calls0 + budget.llm_calls
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
        if best is not None and root.q[best] == 0.0 and isinstance(self.prior, LLMPrior):
            self.prior.reflect([*history, *self._principal(root)])  # every simulation failed: a lesson
        return Decision(
            None if best is None else self.model.actions[root.actions[best]].step, sims,
            self.prior.llm_calls - calls0, time.perf_counter() - start,
            root.q[best] if best is not None else 0.0,
            {str(self.model.actions[a].step): n for a, n in zip(root.actions or [], root.na, strict=False) if n},
            hybrid.beta(sims) if self.settings.estimator == "dr" else None)

    def _principal(self, node: _Node) -> list[str]:
        """The most visited line of play below `node` (the attempt a reflection is about)."""
        line: list[str] = []
        while node.na and max(node.na) > 0:
            j = max(range(len(node.na)), key=node.na.__getitem__)
            line.append(str(self.model.actions[node.actions[j]].step))
            kids = [k for (a, _), k in node.kids.items() if a == node.actions[j]]
            if not kids:
                break
            node = max(kids, key=lambda k: k.n)
        return line

    def _simulate(self, node: _Node, s: World, depth: int, history: tuple[str, ...], beliefs: Beliefs,
                  hybrid: Hybrid, sims: int, looked: frozenset[str]) -> float:
        st = self.settings
        if self.goal.holds(s) or depth >= st.horizon:
            return 0.0
        if node.actions is None:  # expand, then evaluate by a rollout
            node.actions = self.model.applicable(s)
            if not node.actions:
                return 0.0
            guess = self._belief_at(s, beliefs, looked)
            node.prior = self.prior(history, [self.model.actions[i].step for i in node.actions], guess)
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
        s2 = self.model.apply(i, s)
        done = self.goal.holds(s2)
        key = (i, self.observe(s2))
        child = node.kids.get(key)
        if child is None:
            child = node.kids[key] = _Node()
        step = str(self.model.actions[i].step)
        g = 1.0 if done else st.gamma * self._simulate(child, s2, depth + 1, (*history, step), beliefs,
                                                               hybrid, sims, looked | set(self.observe.visible(s2)))
        if done:
            child.n += 1
        node.n += 1
        node.na[best] += 1
        node.q[best] += (g - node.q[best]) / node.na[best]
        return g

    def _select(self, node: _Node, s: World) -> int:
        """The PUCT choice among the node's actions applicable in `s` (-1: none). Q as it is (returns lie in
        [0, 1]); an action not tried yet counts at the node's mean value (first-play urgency), so that one
        lucky return does not shut out the untried ones."""
        sqrt_n = math.sqrt(node.n + 1)
        mean = sum(q * n for q, n in zip(node.q, node.na, strict=True)) / max(sum(node.na), 1)
        best, best_u = -1, -math.inf
        for j, i in enumerate(node.actions or ()):
            q = node.q[j] if node.na[j] else mean
            u = q + self.settings.c * node.prior[j] * sqrt_n / (1 + node.na[j]) + 1e-9 * self.rng.random()
            if u > best_u and self.model.ok(i, s):
                best, best_u = j, u
        return best

    def _next_place(self, bare: World, guess: Beliefs) -> str | None:
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

    def _greedy(self, s: World, guess: Beliefs) -> tuple[float, set[int]]:
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
        candidates = {self.model.by_step[a.step] for a in (helpful | reach.helpful(bare)[1] if reach else helpful)}
        to_goal = {i: self.goal.helpful(self.model.apply(i, guessed))[0] for i in candidates if self.model.ok(i, s)}
        least = min(to_goal.values(), default=0)
        to_place = {i: reach.helpful(self.model.apply(i, bare))[0] if reach else 0
                    for i, g in to_goal.items() if g == least}
        nearest = min(to_place.values(), default=0)
        self._greedy_cache[key] = out = (h, {i for i, r in to_place.items() if r == nearest})
        return out

    def _policy_share(self, s: World, actions: Sequence[int], guess: Beliefs) -> list[float]:
        """A policy over `actions`: uniform over the belief-greedy policy's (uniform over all when it has
        none)."""
        _, chosen = self._greedy(s, guess)
        hits = [i in chosen for i in actions]
        n = sum(hits)
        return [h / n for h in hits] if n else [1 / len(actions)] * len(actions)

    def _belief_at(self, s: World, beliefs: Beliefs, looked: frozenset[str]) -> dict[str, bl.Dist]:
        """The belief after a history that looked at `looked`: items seen there drop out (their place is
        known), the others are not at those places."""
        located = self.observe.located
        return {i: bl.normalised({p: q for p, q in d.items() if p not in looked}) for i, d in beliefs.items()
                if not any((located, (i, p)) in s for p in looked)}

    def _rollout(self, s: World, depth: int, beliefs: Beliefs, guess: Beliefs) -> tuple[float, float]:
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
            acts = self.model.applicable(s)
            if not acts:
                break
            good = [i in greedy for i in acts]
            n_good = sum(good)
            eps = st.rollout_epsilon if n_good else 1.0
            mu = [(1 - eps) * g / max(n_good, 1) + eps / len(acts) for g in good]
            j = self.rng.choices(range(len(acts)), weights=mu)[0]
            if st.estimator == "dr":
                pi = self.rollout_prior((), [self.model.actions[i].step for i in acts], beliefs)
                rho = min(rho * pi[j] / mu[j], st.rho_max)
            s = self.model.apply(acts[j], s)
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


# ---- from the graph ------------------------------------------------------------------------------------
def relevant(domain: Domain, spec: bl.BeliefSpec, objects: Mapping[str, str], goal: Formula) -> dict[str, str]:
    """The objects to ground: everything but the items (of the belief's item type) the goal does not name."""
    named = {a for at in atoms(goal) for a in at.args}
    return {o: t for o, t in objects.items() if o in named or not domain.is_subtype(t, spec.item)}


def beliefs_for(graph: WorldGraph, spec: bl.BeliefSpec, items: Sequence[str], make: bl.BeliefPrior | None,
                facts: set[GroundAtom], objects: Mapping[str, str]) -> dict[str, bl.Dist]:
    """The beliefs about `items`, written back: the prior (commonsense from `make`, else uniform; made once
    per item and stored with the evidence) mixed with a uniform belief by how well it has predicted
    where this episode's items were found and were not (`bl.reliability`), given what the graph knows."""
    places = bl.places(spec, graph.domain, objects)
    evidence = json.loads(graph.get_meta(bl.EVIDENCE_KEY) or '{"prior": {}, "found": {}}')
    prior, found = evidence["prior"], evidence["found"]
    if missing := [i for i in items if i not in prior]:
        prior |= make({i: objects[i] for i in missing}, places) if make else bl.uniform(missing, list(places))
    located = {a[0]: a[1] for p, a in facts if p == spec.located}
    found |= {i: located[i] for i in prior if i in located and i not in found}
    searched = {a[0] for p, a in facts if p == spec.searched}
    weight = bl.reliability({i: prior[i] for i in {*found, *items}}, found, searched, places)
    beliefs = {i: {located[i]: 1.0} if i in located else bl.mixed(prior[i], weight, places, searched)
               for i in items}
    graph.set_meta({bl.EVIDENCE_KEY: json.dumps(evidence, sort_keys=True)})
    bl.write_beliefs(graph, beliefs)
    return beliefs


def unknown_in_goal(graph: WorldGraph, goal: Formula) -> list[str]:
    """The goal's items whose place the graph does not know (empty: the symbolic planner can take over)."""
    domain = graph.domain
    spec = bl.BeliefSpec.of(domain)
    objects, facts, _ = graph.snapshot()
    named = {a for at in atoms(goal) for a in at.args}
    return [i for i in unknown_items(graph, spec, objects, set(facts)) if i in named]


def unknown_items(graph: WorldGraph, spec: bl.BeliefSpec, objects: Mapping[str, str],
                  facts: set[GroundAtom]) -> list[str]:
    """Items whose place the graph does not know: marked unknown (open world), or with no known place."""
    marked = {u.entity for u in graph.unknowns() if u.predicate == spec.located}
    return bl.unknown_items(spec, graph.domain, objects, facts, marked)


def searcher(graph: WorldGraph, goal: Formula, prior: Prior, rollout_prior: Prior, settings: Settings | None = None,
             rng: random.Random | None = None) -> Search:
    """A searcher for `goal` on the graph's objects (grounded once: reuse it for the episode)."""
    domain = graph.domain
    spec = bl.BeliefSpec.of(domain)
    objects, facts, _ = graph.snapshot()
    model = Model(domain, relevant(domain, spec, objects, goal), set(facts))
    items = [o for o, t in model.objects.items() if domain.is_subtype(t, spec.item)]
    return Search(model, Goal(goal, model), Observer(spec, model, items), prior, rollout_prior, settings, rng)


def decide(graph: WorldGraph, search: Search, budget: Budget, prior: bl.BeliefPrior | None = None,
           history: tuple[str, ...] = ()) -> Decision:
    """One decision on the graph's current state and belief (initialised with the commonsense `prior`,
    or uniform, for unknown items that have none yet; updated with what the graph knows; stored)."""
    spec = bl.BeliefSpec.of(graph.domain)
    objects, facts, _ = graph.snapshot()
    unknown = [i for i in unknown_items(graph, spec, objects, set(facts)) if i in search.observe.items]
    beliefs = beliefs_for(graph, spec, unknown, prior, set(facts), objects)
    known = frozenset(a for a in facts if all(x in search.model.objects for x in a[1]))
    return search.decide(known, beliefs, budget, history)
