"""The LLM's parts of the tree search (kgplan.planners.mcts): MC-DML's prior with its memories and
reflections, LLM-MCTS's sampled commonsense belief and its policy, their prompts and reply schemas."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from kgplan.domains.formula import Formula, atoms
from kgplan.domains.model import Domain
from kgplan.errors import InputError, LLMError
from kgplan.language.llm import LLM
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts.priors import Beliefs, Prior
from kgplan.planners.state import Step, action_text


class ActionScore(BaseModel):
    action: str
    probability: float


class ActionScores(BaseModel):
    scores: list[ActionScore]


class Reflection(BaseModel):
    reflection: str


def goal_text(domain: Domain, goal: Formula) -> str:
    """A goal's atoms in words (domain.toml's glosses), joined by "and"."""
    return " and ".join(domain.gloss(a.predicate, [x.replace("_", " ") for x in a.args]) for a in atoms(goal))


def allowed_actions(domain: Domain, templates: Mapping[str, str]) -> str:
    """The actions of `templates` with their parameters' types, e.g. "walk to <place>, open <container>"."""
    return ", ".join(t.format(*(f"<{p.types[0]}>" for p in domain.actions[a].params)) for a, t in templates.items()
                     if a in domain.actions)


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


class _Asking(Prior):
    """A prior that asks an LLM within a budget of calls: `max_calls` in all, `limit_calls` per decision."""

    max_calls: int | None = None
    llm_calls = 0

    def spent(self, calls: int = 1) -> bool:
        """Whether `calls` more calls would go over the budget."""
        return self.max_calls is not None and self.llm_calls + calls > self.max_calls

    def limit_calls(self, calls: int | None) -> None:
        """At most `calls` more calls (then the fallback prior); None keeps the limit as it is."""
        if calls is not None:
            self.max_calls = self.llm_calls + calls


class LLMPrior(_Asking):
    """P(a | history) from an LLM that sees the goal, the memories and the actions (MC-DML); cached per
    history (the episode's trajectory and the node's path) and memory; once `max_calls` calls are made
    (`limit_calls` sets a budget per decision), or when the LLM fails to answer, `fallback`."""

    def __init__(self, llm: LLM, goal_text: str, memory: Memory, fallback: Prior,
                 templates: Mapping[str, str], max_calls: int | None = None, floor: float = 0.01) -> None:
        self.llm, self.goal, self.memory, self.fallback = llm, goal_text, memory, fallback
        self.templates, self.max_calls, self.floor = templates, max_calls, floor
        self.cache: dict[tuple, list[float]] = {}

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


# LLM-MCTS's belief prompt: three worked examples of invented homes and items (none of the benchmarks' items)
BELIEF_EXAMPLES = (
    ("stapler", ("bed", "bookshelf", "desk", "kitchen table", "sink"), "desk, bookshelf"),
    ("ketchup", ("bathtub", "fridge", "kitchen cabinet", "sofa"), "fridge, kitchen cabinet"),
    ("hairbrush", ("bathroom counter", "dining table", "dresser", "stove"), "bathroom counter, dresser"),
)


def belief_prompt(item: str, places: Sequence[str]) -> list[dict]:
    """The question of where in a home `item` is likely to be, among `places`, after the 3 worked examples as
    earlier turns of the chat (a small chat model answers the last question then, in the examples' form)."""
    def asked(i: str, p: Sequence[str]) -> dict:
        return {"role": "user", "content": f"Places: {', '.join(p)}.\nItem: {i}"}

    shots = [m for i, p, a in BELIEF_EXAMPLES for m in (asked(i, p), {"role": "assistant", "content": a})]
    return [{"role": "system", "content": "Name the places of a home where the item is likely to be, one or more "
                                          "of the places listed, the likeliest first."}, *shots, asked(item, places)]


def named_places(reply: str) -> list[str]:
    """The places an answer names: its first line, cut at commas, semicolons, "and" and "or"."""
    line = reply.strip().split("\n")[0]
    return [p for p in (x.strip(" .") for x in re.split(r"[,;]|\band\b|\bor\b", line)) if p]


def llm_belief(llm: LLM, samples: int = 5, temperature: float = 0.6, floor: float = 1e-3,
               similarity: Callable[[Sequence[str], Sequence[str]], np.ndarray] | None = None,
               logprobs: bool = False) -> bl.BeliefPrior:
    """LLM-MCTS's commonsense belief: per item kind (the name without its copy number), `samples` answers sampled
    at `temperature` (top-p 0.9) to a 3-shot prompt (BELIEF_EXAMPLES) among the home's place kinds; each place an
    answer names is mapped to the most similar place kind by sentence-embedding cosine and counted once per answer;
    a kind's count is shared among its places, normalised and floored at `floor`. Asked once per item kind and
    set of place kinds (copies of an item, and the same item again, ask nothing). With `logprobs`, one call per
    item kind scores the places instead: the probability of the reply's first token, shared among the place kinds
    whose words begin with it (places with the same first word are not told apart)."""
    if similarity is None:
        from kgplan.language.retrieval import similarity  # the embedding model loads when first used
    cache: dict[tuple[str, tuple[str, ...]], dict[str, float]] = {}

    def sampled(prompt: list[dict], words: list[str], kinds: tuple[str, ...]) -> dict[str, float]:
        replies, _ = llm.sample(prompt, samples, temperature, max_tokens=32, stop=("\n",), top_p=0.9)
        out = dict.fromkeys(kinds, 0.0)
        for named in filter(None, map(named_places, replies)):
            for j in set(np.argmax(similarity(named, words), axis=1).tolist()):
                out[kinds[j]] += 1
        return out

    def scored(prompt: list[dict], words: list[str], kinds: tuple[str, ...]) -> dict[str, float]:
        choice, _ = llm.first_token(prompt, max_tokens=1)
        out = dict.fromkeys(kinds, 0.0)
        for token, logprob in choice.top.items():
            t = token.strip().lower()
            starts = [k for k, w in zip(kinds, words, strict=True) if t and w.lower().startswith(t)]
            for k in starts:
                out[k] += math.exp(logprob) / len(starts)
        return out

    def counts(kind: str, kinds: tuple[str, ...]) -> dict[str, float]:
        if (kind, kinds) not in cache:
            words = [k.replace("_", " ") for k in kinds]
            cache[kind, kinds] = (scored if logprobs else sampled)(belief_prompt(kind.replace("_", " "), words),
                                                                    words, kinds)
        return cache[kind, kinds]

    def make(items: Mapping[str, str], places: Mapping[str, str]) -> dict[str, bl.Dist]:
        if not places:
            return {i: {} for i in items}
        kind = {p: bl.kind_of(p) for p in places}
        size = Counter(kind.values())
        out = {}
        for item in items:
            c = counts(bl.kind_of(item), tuple(sorted(size)))
            named = sum(c.values())  # none: every kind alike
            out[item] = bl.floored({p: (c[kind[p]] / named if named else 1 / len(size)) / size[kind[p]]
                                    for p in places}, floor)
        return out

    return make


@dataclass(frozen=True)
class Example:
    """A demonstration for LLM-MCTS's policy: a task, the expert's actions in words, before each action what
    was seen so far (`observation`'s words), and the objects of the home (`objects`' words)."""

    task: str
    actions: tuple[str, ...]
    observations: tuple[str, ...]
    objects: str = ""


def observation(unseen: Sequence[str]) -> str:
    """What the agent knows in words: the task's items not found yet."""
    return ("Not found yet: " + ", ".join(i.replace("_", " ") for i in sorted(unseen)) + "." if unseen
            else "Every item of the task has been found.")


def objects(names: Sequence[str]) -> str:
    """The objects the agent can act on, in words (LLM-MCTS's visible objects)."""
    return "Objects: " + ", ".join(sorted({n.replace("_", " ") for n in names})) + "."


def read_examples(path: str | Path | None) -> list[Example]:
    """Examples from a JSON list of {task, actions, observations} (`kgplan bench rearrange --save-examples`);
    none without a path."""
    if not path:
        return []
    try:
        return [Example(e["task"], tuple(e["actions"]), tuple(e["observations"]), e.get("objects", ""))
                for e in json.loads(Path(path).read_text())]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"policy examples {path}: {e}") from e


def write_examples(path: Path, examples: Sequence[Example]) -> None:
    path.write_text(json.dumps([asdict(e) for e in examples], indent=1))


def first_action(reply: str) -> str:
    """The first action a reply names: up to a comma, full stop or line end, without a leading "Next actions:"
    or a number ("1. walk to ...": a chat model numbers its lists)."""
    text = re.sub(r"^\s*(next actions?\s*:)?\s*(\d+\s*[.)]\s*)?", "", reply, flags=re.IGNORECASE)
    return re.split(r"[,.\n]", text)[0].strip()


class LLMPolicy(_Asking):
    """LLM-MCTS's heuristic policy: P(a | history) from `samples` next actions the LLM writes at `temperature`
    (told the goal, the objects the node's actions act on, the items not found yet, the actions so far) after
    the `k` examples whose task is most like the goal (each cut where what had been seen is most like what
    is seen now), each matched to the actions by sentence-embedding cosine (softmax of `sharpness` * cosine),
    averaged, and mixed with uniform by `lam` (the paper's code: 5 samples at 0.6 with top-p 0.9, k = 3, 100, 0.5;
    at most 10 tokens there, `max_tokens` 16 here for longer place names; it stops at ",", "." and line ends, here
    at "," and line ends, so that a numbered list keeps its first action: `first_action`). Cached per (state
    description, actions); once the call budget is spent, or when the LLM fails, `fallback`."""

    def __init__(self, llm: LLM, goal_text: str, examples: Sequence[Example], fallback: Prior,
                 templates: Mapping[str, str], allowed: str, *, k: int = 3, samples: int = 5, temperature: float = 0.6,
                 lam: float = 0.5, sharpness: float = 100.0, max_tokens: int = 16,
                 similarity: Callable[[Sequence[str], Sequence[str]], np.ndarray] | None = None,
                 max_calls: int | None = None) -> None:
        if similarity is None:
            from kgplan.language.retrieval import similarity  # the embedding model loads when first used
        self.llm, self.goal, self.fallback, self.templates, self.allowed = llm, goal_text, fallback, templates, allowed
        self.samples, self.temperature, self.lam, self.sharpness = samples, temperature, lam, sharpness
        self.max_tokens, self.similarity, self.max_calls = max_tokens, similarity, max_calls
        near = similarity([goal_text], [e.task for e in examples])[0] if examples else np.zeros(0)
        self.examples = [examples[j] for j in np.argsort(-near, kind="stable")[:k]]
        self.cache: dict[tuple[str, tuple[str, ...]], list[float]] = {}

    def prompt(self, task: str, seen: str) -> str:
        """The instructions, the examples (each cut where its observation is most like `seen`), then `task`."""
        shown = []
        for e in self.examples:
            j = int(np.argmax(self.similarity([seen], list(e.observations))[0])) if e.observations else 0
            shown.append("\n".join(x for x in (e.task, e.objects, e.observations[j] if e.observations else "") if x)
                         + f"\nPrevious actions: {', '.join(e.actions[:j])}.\nNext actions: {', '.join(e.actions[j:])}")
        return ("Write the next actions of a household task, using the allowed actions and the places named. "
                f"Allowed actions: {self.allowed}. A container must be opened before things are taken from it or put "
                "in it. Find the items of the task first, then bring them.\n"
                + ("Example tasks:\n\n" + "\n\n".join(shown) + "\n\n" if shown else "")
                + "Now, complete the following task.\n" + task)

    def __call__(self, history: tuple[str, ...], actions: Sequence[Step], beliefs: Beliefs) -> list[float]:
        texts = [action_text(a, self.templates) for a in actions]
        seen = observation(list(beliefs))
        done = ", ".join(action_text(Step.parse(h), self.templates) for h in history)
        at_hand = objects([x for a in actions for x in a.args])
        task = f"{self.goal}\n{at_hand}\n{seen}\nPrevious actions: {done}.\nNext actions:"
        key = (task, tuple(texts))
        if key in self.cache:
            return self.cache[key]
        if self.spent(self.samples):
            return self.fallback(history, actions, beliefs)
        calls = len(self.llm.records)
        try:
            replies, _ = self.llm.sample([{"role": "user", "content": self.prompt(task, seen)}], self.samples,
                                         self.temperature, self.max_tokens, stop=(",", "\n"), top_p=0.9)
        except LLMError:  # as LLMPrior: the node is left to the fallback
            return self.fallback(history, actions, beliefs)
        finally:
            self.llm_calls += len(self.llm.records) - calls
        answers = [a for a in (first_action(r) for r in replies) if a]
        if not answers:
            p = self.fallback(history, actions, beliefs)
        else:
            cos = self.similarity(answers, texts)
            z = np.exp(self.sharpness * (cos - cos.max(axis=1, keepdims=True)))
            dist = (z / z.sum(axis=1, keepdims=True)).mean(axis=0)
            p = (self.lam * dist + (1 - self.lam) / len(texts)).tolist()
        self.cache[key] = p
        return p
