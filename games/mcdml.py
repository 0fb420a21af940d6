"""MC-DML (Shi et al., ICLR 2025) over a real game engine: a tree search that steps the game itself, saving
and restoring its state, with the LLM's prior over the admissible commands at each node.

At a node the prior is the softmax (temperature 5) of the log-probabilities the LLM gives each command's
index as the first token of its reply (the top 20; an index absent from them counts -10; a letter in place
of the index where there are more than 10 commands: `labels`); the prompt holds
the in-trial memory (the previous observation with `look` and `inventory`, the action, the observation now)
and the cross-trial memory (reflections the LLM writes whenever a simulation reaches a losing state, at most
3 per root). Selection is PUCT, Q + c sqrt(N + 1) / (n + 1) P; a new node is rolled out at random to the
depth; when the best Q is 0 the search starts again 20 deeper (10, then 30); the command played is the one of
highest Q. Ablations switch memories and dynamic depth off; UCT is the same search with a uniform prior,
and `random` plays uniformly among the admissible commands.

The games are deterministic (TextWorld's are), so a node keeps its state's snapshot and a simulation
restores the deepest known node instead of replaying the way down. `GAME_SEARCHES` is a registry of its
own: `agent.search.SEARCH_METHODS` holds searches over a PDDL model of the graph, these take the game.
"""

from __future__ import annotations

import math
import random
import string
import time
from dataclasses import dataclass, field, replace
from typing import Protocol

from pydantic import BaseModel

from kgplan.games.base import Observation
from kgplan.language.llm import LLM
from kgplan.registry import Registry


class SavableGame(Protocol):
    """A game the search can step, save and restore (games.textworld.TextWorld)."""

    budget: int

    def reset(self, seed: int) -> Observation: ...

    def step(self, action: str) -> Observation: ...

    def save(self) -> object: ...

    def restore(self, snapshot: object) -> None: ...

    def look(self) -> tuple[str, str]:
        """What `look` and `inventory` say now."""
        ...

    @property
    def lost(self) -> bool: ...

    @property
    def policy(self) -> list[str]:
        """A winning sequence of commands from here (the game's walkthrough), for measuring priors."""
        ...


@dataclass(frozen=True)
class Settings:
    """MC-DML's hyper-parameters (the paper's where it gives them) and its ablation switches."""

    simulations: int = 20  # per root (the paper: 50 per admissible command)
    c: float = 50.0  # PUCT's exploration constant
    gamma: float = 0.95
    depth: int = 10  # the first depth
    depth_step: int = 20  # dynamic depth: this much deeper when the best Q is 0 ...
    max_depth: int = 30  # ... up to this
    dynamic_depth: bool = True
    llm_prior: bool = True  # off: uniform (UCT)
    in_trial: bool = True  # the previous observation and action in the prior's prompt
    cross_trial: bool = True  # reflections at losing states in the prior's prompt
    reflections: int = 3  # at most this many per root
    temperature: float = 5.0  # of the softmax over log-probabilities
    absent: float = -10.0  # the log-probability of an index outside the top ones
    top: int = 20
    loss_reward: float = -10.0  # added to the score's change where the game is lost


@dataclass(frozen=True)
class GameSearch:
    """A way to play a game: MC-DML with `settings`, or uniformly at random (`random`)."""

    name: str
    help: str
    settings: Settings = field(default_factory=Settings)
    random: bool = False


GAME_SEARCHES: Registry[GameSearch] = Registry("game search")
GAME_SEARCHES.add(GameSearch("mcdml", "MC-DML: PUCT with the LLM's log-probability prior, memories, dynamic depth"))
GAME_SEARCHES.add(GameSearch("mcdml_no_cross", "MC-DML without cross-trial memory (reflections)",
                             Settings(cross_trial=False)))
GAME_SEARCHES.add(GameSearch("mcdml_no_in_trial", "MC-DML without in-trial memory (previous observation, action)",
                             Settings(in_trial=False)))
GAME_SEARCHES.add(GameSearch("mcdml_no_dynamic", "MC-DML without dynamic depth (depth 10)",
                             Settings(dynamic_depth=False)))
GAME_SEARCHES.add(GameSearch("uct_game", "UCT: the same search with a uniform prior, no memory, depth 10",
                             Settings(llm_prior=False, cross_trial=False, dynamic_depth=False)))
GAME_SEARCHES.add(GameSearch("random", "uniformly among the admissible commands", random=True))


def softmax(xs: list[float], temperature: float = 1.0) -> list[float]:
    top = max(xs)
    e = [math.exp((x - top) / temperature) for x in xs]
    return [x / sum(e) for x in e]


def labels(n: int) -> list[str]:
    """The labels of `n` commands in the prior's prompt: their indices 0-9 (the paper's) up to 10 commands, else
    letters A-Z, a-z, then indices: each a single token where a tokenizer splits numbers into digits (Qwen's,
    Llama's), whose first token would name "1" for every command from 10 to 19."""
    if n <= 10:
        return [str(i) for i in range(n)]
    return [*(string.ascii_uppercase + string.ascii_lowercase)[:n], *map(str, range(52, n))]


def log_prob_prior(top: dict[str, float], names: list[str], temperature: float = 5.0,
                   absent: float = -10.0) -> list[float]:
    """The prior over the commands labelled `names` from the log-probabilities of the labels' tokens
    (surrounding spaces ignored, the likeliest spelling kept), `absent` for a label not among them."""
    best: dict[str, float] = {}
    for token, lp in top.items():
        key = token.strip()
        best[key] = max(lp, best.get(key, -math.inf))
    return softmax([best.get(name, absent) for name in names], temperature)


def entropy(p: list[float]) -> float:
    return -sum(x * math.log(x) for x in p if x > 0)


class Reflection(BaseModel):
    """The LLM's lesson from a lost simulation: one sentence."""

    suggestion: str


def clip(text: str, limit: int = 600) -> str:
    """The text on one line, its last `limit` characters (a game's banner comes first)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else "..." + text[-limit:]


@dataclass
class Node:
    """A game state reached in the search: its text (observation, look, inventory), commands, how it was
    reached, its snapshot, and the statistics of its commands."""

    text: str
    actions: list[str]
    score: float = 0.0  # the game's
    reward: float = 0.0  # the step into it: the score's change (and the loss penalty)
    done: bool = False
    lost: bool = False
    snapshot: object = None
    prev_text: str = ""
    prev_action: str = ""
    children: dict[str, Node] = field(default_factory=dict)
    visits: int = 0
    n: dict[str, int] = field(default_factory=dict)
    w: dict[str, float] = field(default_factory=dict)
    prior: list[float] | None = None
    prior_reflections: int = -1  # how many reflections the prior's prompt held

    def q(self, action: str) -> float:
        return self.w[action] / self.n[action] if self.n.get(action) else 0.0


@dataclass
class Decision:
    """One move: the command, the simulations and LLM calls it took, the depth it ended at, Q per command,
    and (an LLM prior) the root prior's entropy, the number of commands and the rank of the walkthrough's
    next command under it (1: the likeliest)."""

    action: str
    simulations: int = 0
    llm_calls: int = 0
    depth: int = 0
    q: dict[str, float] = field(default_factory=dict)
    reflections: list[str] = field(default_factory=list)
    prior_entropy: float | None = None
    commands: int = 0
    gold_rank: int | None = None
    gold_prob: float | None = None


class MCDML:
    """MC-DML's search on one game (see the module's text); `decide` picks the next command."""

    def __init__(self, game: SavableGame, settings: Settings, llm: LLM | None = None,
                 rng: random.Random | None = None) -> None:
        if settings.llm_prior and llm is None:
            settings = replace(settings, llm_prior=False, cross_trial=False)  # no LLM: the uniform prior (UCT)
        self.game, self.s, self.llm = game, settings, llm
        self.rng = rng or random.Random(0)
        self.memory: list[str] = []  # reflections of this root
        self.cache: dict[str, list[float]] = {}  # prompt -> prior: a prompt is asked once
        self.calls = 0

    def describe(self, obs: Observation) -> str:
        """The state's text: the observation, what `look` says where it says more, the inventory."""
        look, inventory = self.game.look()
        same = " ".join(obs.text.split()) == " ".join(look.split())
        return f"{clip(obs.text)}{'' if same else ' ' + clip(look)} {clip(inventory, 300)}"

    def node(self, obs: Observation, prev: Node | None = None, action: str = "") -> Node:
        """The node of the game's state now (just after `obs`)."""
        lost = self.game.lost
        reward = obs.score - prev.score + (self.s.loss_reward if lost else 0) if prev else 0.0
        return Node(self.describe(obs), list(obs.admissible), obs.score, reward, obs.done, lost,
                    None if obs.done else self.game.save(), prev.text if prev else "", action)

    def decide(self, obs: Observation, prev_text: str = "", prev_action: str = "") -> Decision:
        """The next command from the state the game is in (`obs` its last observation)."""
        calls, depth, sims, here = self.calls, self.s.depth, 0, self.node(obs)
        while True:  # a new tree and memory at each depth
            self.memory = []
            root = Node(here.text, here.actions, here.score, snapshot=here.snapshot, prev_text=prev_text,
                        prev_action=prev_action)
            for _ in range(self.s.simulations):
                self.simulate(root, 0, depth, [])
                sims += 1
            tried = [a for a in root.actions if root.n.get(a)] or root.actions
            top = max(root.q(a) for a in tried)
            if not self.s.dynamic_depth or top != 0 or depth + self.s.depth_step > self.s.max_depth:
                break
            depth += self.s.depth_step
        self.game.restore(root.snapshot)
        action = self.rng.choice([a for a in tried if root.q(a) == top])
        out = Decision(action, sims, self.calls - calls, depth, {a: root.q(a) for a in tried}, list(self.memory),
                       commands=len(root.actions))
        if self.s.llm_prior and root.prior:
            gold = next(iter(self.game.policy), None)
            out.prior_entropy = entropy(root.prior)
            if gold in root.actions:
                p = root.prior[root.actions.index(gold)]
                out.gold_prob, out.gold_rank = p, 1 + sum(x > p for x in root.prior)
        return out

    def simulate(self, node: Node, depth: int, limit: int, trail: list[tuple[str, str]]) -> float:
        """One simulation below `node` (the tree's way down, then a new node and its rollout): its return."""
        if node.done or depth >= limit:
            self.reflect(node.lost, trail)
            return 0.0
        action = self.select(node)
        trail.append((node.text, action))
        child = node.children.get(action)
        if child is None:
            self.game.restore(node.snapshot)
            child = node.children[action] = self.node(self.game.step(action), node, action)
            ret = child.reward + self.s.gamma * self.rollout(child, depth + 1, limit, trail)
        else:
            ret = child.reward + self.s.gamma * self.simulate(child, depth + 1, limit, trail)
        node.visits += 1
        node.n[action] = node.n.get(action, 0) + 1
        node.w[action] = node.w.get(action, 0.0) + ret
        return ret

    def rollout(self, node: Node, depth: int, limit: int, trail: list[tuple[str, str]]) -> float:
        """The discounted return of uniformly random commands from `node` (the game is in its state) to the
        depth or the game's end."""
        ret, discount = 0.0, 1.0
        score, lost, done, actions, text = node.score, node.lost, node.done, node.actions, node.text
        while not done and depth < limit:
            action = self.rng.choice(actions)
            trail.append((text, action))
            obs = self.game.step(action)
            lost = self.game.lost
            ret += discount * (obs.score - score + (self.s.loss_reward if lost else 0))
            discount *= self.s.gamma
            score, depth, done, actions, text = obs.score, depth + 1, obs.done, list(obs.admissible), clip(obs.text)
        if done:
            self.reflect(lost, trail)
        return ret

    def select(self, node: Node) -> str:
        """PUCT's choice among the node's commands (ties at random)."""
        prior = self.prior(node)
        root = self.s.c * math.sqrt(node.visits + 1)
        scores = [node.q(a) + root / (node.n.get(a, 0) + 1) * p for a, p in zip(node.actions, prior, strict=True)]
        best = max(scores)
        return self.rng.choice([a for a, x in zip(node.actions, scores, strict=True) if math.isclose(x, best)])

    def prior(self, node: Node) -> list[float]:
        """The node's prior: uniform, or the LLM's, asked again when reflections came since."""
        if not self.s.llm_prior:
            return [1 / len(node.actions)] * len(node.actions)
        if node.prior is None or (self.s.cross_trial and node.prior_reflections < len(self.memory)):
            node.prior, node.prior_reflections = self.ask_prior(node), len(self.memory)
        return node.prior

    def ask_prior(self, node: Node) -> list[float]:
        state = (f"Before: {node.prev_text}\nYou did: {node.prev_action}\nNow: {node.text}"
                 if self.s.in_trial and node.prev_action else f"Now: {node.text}")
        lessons = (f"Lessons from earlier tries of this game: {' '.join(self.memory)}\n"
                   if self.s.cross_trial and self.memory else "")
        names = labels(len(node.actions))
        commands = "\n".join(f"{x}: {a}" for x, a in zip(names, node.actions, strict=True))
        prompt = (f"{lessons}{state}\nWhich command is the most promising to try next?\n{commands}\n"
                  f"Answer with the command's {'number' if names[0] == '0' else 'letter'} only.")
        if prompt not in self.cache:
            messages = [{"role": "system", "content": "You play a text adventure game and pick the commands worth "
                                                      "exploring."}, {"role": "user", "content": prompt}]
            choice, _ = self.llm.first_token(messages, top=min(self.s.top, len(node.actions)))
            self.calls += 1
            self.cache[prompt] = log_prob_prior(choice.top, names, self.s.temperature, self.s.absent)
        return self.cache[prompt]

    def reflect(self, lost: bool, trail: list[tuple[str, str]]) -> None:
        """At a losing state, a reflection on the simulation's way there (at most `reflections` per root)."""
        if not (lost and self.s.cross_trial and self.llm and len(self.memory) < self.s.reflections):
            return
        steps = "\n".join(f"{i}. {clip(text, 300)} -> {action}" for i, (text, action) in enumerate(trail[-10:]))
        messages = [{"role": "system", "content": "A text adventure game was lost. Say in one sentence what to do "
                                                  "differently next time."},
                    {"role": "user", "content": f"The last moves before losing:\n{steps}"}]
        reply, _ = self.llm.complete(messages, Reflection)
        self.calls += 1
        self.memory.append(reply.suggestion)


@dataclass
class Played:
    """One episode of a game search: the final score, won or lost, the moves and what the decisions took."""

    seed: int
    score: float = 0.0
    won: bool = False
    lost: bool = False
    steps: int = 0
    simulations: int = 0
    llm_calls: int = 0
    seconds: float = 0.0
    decisions: list[Decision] = field(default_factory=list)


def play(game: SavableGame, seed: int, method: GameSearch, llm: LLM | None = None, steps: int | None = None,
         settings: Settings | None = None) -> Played:
    """One episode of `method` (its settings, or `settings`) on the game's seed, at most `steps` moves (the
    game's budget); without an LLM, MC-DML's prior is uniform and it writes no reflections."""
    rng, out = random.Random(seed), Played(seed)
    obs = game.reset(seed)
    search = MCDML(game, settings or method.settings, llm, rng)
    prev_text = prev_action = ""
    start = time.perf_counter()
    for _ in range(steps or game.budget):
        if obs.done:
            break
        if method.random:
            decision = Decision(rng.choice(obs.admissible))
        else:
            decision = search.decide(obs, prev_text, prev_action)
            prev_text = search.describe(obs)
        prev_action = decision.action
        obs = game.step(decision.action)
        out.decisions.append(decision)
    out.seconds = time.perf_counter() - start
    out.score, out.won, out.lost, out.steps = obs.score, obs.won, game.lost, len(out.decisions)
    out.simulations = sum(d.simulations for d in out.decisions)
    out.llm_calls = sum(d.llm_calls for d in out.decisions)
    return out
