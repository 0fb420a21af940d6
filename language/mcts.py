"""The LLM's parts of the tree search (kgplan.planners.mcts): MC-DML's prior with its memories and
reflections, LLM-MCTS's sampled commonsense belief, their prompts and reply schemas."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel

from kgplan.domains.formula import Formula, atoms
from kgplan.domains.model import Domain
from kgplan.language.llm import LLM
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts.priors import Beliefs, Prior
from kgplan.planners.state import Step


class ActionScore(BaseModel):
    action: str
    probability: float


class ActionScores(BaseModel):
    scores: list[ActionScore]


class Reflection(BaseModel):
    reflection: str


class PlaceChoice(BaseModel):
    place: str


def action_text(step: Step, templates: Mapping[str, str]) -> str:
    """A step in words, from domain.toml's [explore.actions] templates where the action has one."""
    words = [a.replace("_", " ") for a in step.args]
    t = templates.get(step.action)
    return t.format(*words) if t else " ".join([step.action.replace("_", " "), *words])


def goal_text(domain: Domain, goal: Formula) -> str:
    """A goal's atoms in words (domain.toml's glosses), joined by "and"."""
    return " and ".join(domain.gloss(a.predicate, [x.replace("_", " ") for x in a.args]) for a in atoms(goal))


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


class LLMPrior(Prior):
    """P(a | history) from an LLM that sees the goal, the memories and the actions (MC-DML); cached per
    history (the episode's trajectory and the node's path) and memory; once `max_calls` calls are made
    (`limit_calls` sets a budget per decision), or when the LLM fails to answer, `fallback`."""

    def __init__(self, llm: LLM, goal_text: str, memory: Memory, fallback: Prior,
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

    def limit_calls(self, calls: int | None) -> None:
        """At most `calls` more calls (then the fallback prior); None keeps the limit as it is."""
        if calls is not None:
            self.max_calls = self.llm_calls + calls

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


def llm_belief(llm: LLM, samples: int = 5, floor: float = bl.FLOOR) -> bl.BeliefPrior:
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
