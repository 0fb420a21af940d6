"""The L3M+P evaluation harness: feed a run's English state changes and tasks to an agent variant.

Starting from a run's initial `problem.pddl`, every `state_change.txt` and `goal.txt` is fed in
order. A state change succeeds strictly when the graph then equals the ground-truth `:init`; the
paper's own rule (no new discrepancy between the graph and the truth) is reported beside it. Facts of a
predicate no state of the run records are not scored (the generator never writes `dish_is_clean` into a
problem file, so "washed the plate" making the plate clean would count against every later sentence); how
many a sentence changed is reported (`facts_unscored`). A plan succeeds when, executed from the true
state of that step, it reaches the true goal.

After a goal the harness does what the deployed agent does: it executes its own plan on its graph
(verified, provenance `plan`). The dataset's next state holds the simulator's execution of the task
plus the next sentence's change, so the graph is then brought to that state, as one verified sensor
observation (provenance `sensor`), for the facts whose subject (first argument) the task is about:
the true goal's objects and those whose facts the executed plan changed. The next sentence is scored
from there. Reported: how often the executed plan reproduced the dataset's transition (no
correction needed) and the size of the corrections. Prompt tokens are counted with the o200k
tokenizer (offline) for every LLM kind.

Variants: R- shows the LLM the whole graph, R+ the neighbourhood of the entities it picks from
the entity list, RS the neighbourhood of its query graph grounded by embeddings and search
(language/retrieval.py); a trailing V verifies each change and re-prompts with the issues. PC
proposes and chooses (language/propose.py: the model names the entities and chooses among the
changes the domain admits for them; a clarification it asks for counts as a failure, and is answered as the user
who sees the world would (the option the true change tells), so the next sentence starts from the completed change
as it would where the agent is deployed; goals likewise by
language/goals.py: named things or all things of a kind, then a choice among the goal literals the domain admits).
`--changes oracle` gives the state changes the true change, to measure the goals alone.
A run without a domain.toml whose domain has every predicate that kgplan's metadata for the
simulator's domain glosses (domains/l3mp/domain.toml) gets that metadata: glosses, the invariant
over where people are, worked examples.

    kgplan bench l3mp ../shared/bench/l3mp-household --variant R+V --llm oracle
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console
from rich.progress import track
from rich.table import Table

from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks import write_json
from kgplan.benchmarks.planning import needed_facts
from kgplan.domains.formula import And, Atom, Formula, GroundAtom, Not, atoms, to_pddl
from kgplan.domains.model import Domain, Problem
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import InputError, LLMError
from kgplan.graph.backends import open_graph
from kgplan.graph.model import Delta, Fact
from kgplan.graph.world import WorldGraph
from kgplan.language import goals, propose
from kgplan.language.llm import (
    LLM,
    CallRecord,
    LLMConfig,
    OpenAIClient,
    Recording,
    Replay,
    parse_reply,
    strict_schema,
)
from kgplan.language.update import (
    Clarification,
    Outcome,
    Retrieval,
    full_graph,
    select_entities,
    update,
    write_goal,
)
from kgplan.planners.execute import execute
from kgplan.planners.pipeline import PlanReport, parse_goal, plan
from kgplan.planners.problem import Task
from kgplan.planners.solve import expand_quantifiers, solve
from kgplan.planners.state import State, simulate

# variant -> (retriever, verify): "full" shows the whole graph, "select" the entities the LLM picks from the
# entity list (retrieval a), "search" the LLM's query graph grounded by embeddings (retrieval b)
VARIANTS = {"R-": ("full", False), "R-V": ("full", True), "R+": ("select", False), "R+V": ("select", True),
            "RS": ("search", False), "RSV": ("search", True), "PC": ("propose", True)}
METADATA = Path(__file__).resolve().parent.parent / "domains" / "l3mp" / "domain.toml"  # glosses, examples
Atoms = set[tuple[str, tuple[str, ...]]]


class Counting(Recording):
    """A `Recording` that counts prompt tokens with a real tokenizer and keeps with each reply the corruption the
    oracle (or its `Replay`) gave it, if any.

    The messages and the reply schema are counted apart: an OpenAI endpoint adds the schema to the prompt, a
    llama.cpp server turns it into a grammar instead.
    """

    def __init__(self, inner: LLM) -> None:
        super().__init__(inner)
        import bpe_openai

        self.encoding = bpe_openai.get_encoding("o200k_base")
        self.counted: list[int] = []
        self.schema_counted: list[int] = []

    def complete(self, messages: list[dict], schema: type[BaseModel]) -> tuple[BaseModel, CallRecord]:
        self._count(messages, schema)
        return super().complete(messages, schema)

    def complete_many(self, requests: Sequence[tuple[list[dict], type[BaseModel]]]
                      ) -> list[tuple[BaseModel, CallRecord] | LLMError]:
        for messages, schema in requests:
            self._count(messages, schema)
        return super().complete_many(requests)

    def _count(self, messages: list[dict], schema: type[BaseModel]) -> None:
        self.counted.append(sum(len(self.encoding.encode(m["content"])) for m in messages))
        self.schema_counted.append(len(self.encoding.encode(json.dumps(strict_schema(schema)))))

    def _keep(self, entry: dict) -> None:
        kind = getattr(self.inner, "last_corruption", None)
        super()._keep(entry | ({"corruption": kind} if kind else {}))

    def corruptions(self, start: int) -> list[str | None]:
        """The corruption of each state-change reply since call `start`."""
        return [r.get("corruption") for r in self.replies[start:] if r["schema"] == "StateChange"]


class CorruptionReplay(Replay):
    """The replies of a --record file in order, with the corruption of each (`last_corruption`, as `Oracle`)."""

    def __init__(self, entries: list[dict]) -> None:
        super().__init__(entries)
        self.labels = deque(e.get("corruption") for e in entries)
        self.last_corruption: str | None = None

    def complete(self, messages: list[dict], schema: type[BaseModel]) -> tuple[BaseModel, CallRecord]:
        self.last_corruption = self.labels.popleft() if self.labels else None
        return super().complete(messages, schema)


CORRUPTIONS = ("wrong_entity", "half_pair", "invented_predicate", "extra_location")


class Oracle(LLM):
    """Answers every prompt with the dataset's ground truth for the current step.

    With `corrupt` > 0, each state-change reply (re-prompted ones too) is corrupted with that probability,
    independently (seeded), the kinds in turn; `last_corruption` is the kind the last reply really carried
    (None when a corruption would leave it unchanged). Recovery thus measures whether bounded re-prompting
    converges, not an oracle that turns truthful when asked again.
    """

    def __init__(self, corrupt: float = 0.0, seed: int = 0) -> None:
        super().__init__()
        self.corrupt, self.rng = corrupt, random.Random(seed)
        self.truth: dict = {}
        self.last_corruption: str | None = None
        self.corrupted = 0  # corruptions drawn so far (they pick the kinds in turn)

    def new_step(self, truth: dict) -> None:
        """Set the ground truth of the next step."""
        self.truth = truth

    def complete(self, messages: list[dict], schema: type[BaseModel]) -> tuple[BaseModel, CallRecord]:
        name = schema.__name__
        self.last_corruption = None
        if name == "EntitySelection":
            text = json.dumps({"entities": self.truth["entities"]})
        elif name == "QueryGraph":  # each entity described by its name in words, with its type
            ents: list[str] = self.truth["entities"]
            objects: dict[str, str] = self.truth["objects"]
            text = json.dumps({
                "entities": [{"description": e.replace("_", " "), "type": objects.get(e)} for e in ents],
                "relations": [{"predicate": p, "args": [ents.index(a) for a in args]}
                              for p, args in sorted(self.truth["relations"])]})
        elif name == "StateChange":
            add, remove = set(self.truth["add"]), set(self.truth["remove"])
            if (add or remove) and self.rng.random() < self.corrupt:
                kind = CORRUPTIONS[self.corrupted % len(CORRUPTIONS)]
                self.corrupted += 1
                corrupted = self._corrupt(kind, add, remove)
                self.last_corruption = kind if corrupted != (add, remove) else None  # some cannot change a delta
                add, remove = corrupted
            text = json.dumps({"add": _facts(add), "remove": _facts(remove)})
        else:
            text = json.dumps({"goal": self.truth["goal"]})
        record = CallRecord("oracle", "json_schema", 0, 0, 0.0, 1, None)
        self.records.append(record)
        return parse_reply(text, schema), record  # the same validation as any reply

    def _corrupt(self, kind: str, add: Atoms, remove: Atoms) -> tuple[Atoms, Atoms]:
        objects: dict[str, str] = self.truth["objects"]
        facts = sorted(add | remove)
        p, args = self.rng.choice(facts)
        if kind == "invented_predicate":
            bad = (f"{p}_now", args)
        elif kind == "wrong_entity" and args:
            i = self.rng.randrange(len(args))
            other = self.rng.choice(sorted(o for o in objects if o != args[i]))
            bad = (p, (*args[:i], other, *args[i + 1:]))
        elif kind == "half_pair" and add and remove:  # e.g. the item's new place without its old one
            return (add, set()) if self.rng.random() < 0.5 else (set(), remove)
        elif kind == "half_pair" and len(facts) > 1:
            return add and set(sorted(add)[: len(add) // 2]), remove and set(sorted(remove)[: len(remove) // 2])
        else:  # extra_location (and the fallbacks): the item is also somewhere else of the same kind
            binary = sorted(a for a in add if len(a[1]) == 2) or [(p, args)]
            p, args = self.rng.choice(binary)
            same = sorted(o for o, t in objects.items() if t == objects.get(args[-1]) and o != args[-1])
            if not same:
                return add, set()
            return add | {(p, (*args[:-1], self.rng.choice(same)))}, remove
        return (add - {(p, args)}) | {bad} if (p, args) in add else add, \
            (remove - {(p, args)}) | ({bad} if (p, args) in remove else set())


def _facts(atoms_: Atoms) -> list[dict]:
    return [{"predicate": p, "args": list(a)} for p, a in sorted(atoms_)]


def steps(run: Path) -> list[Path]:
    return sorted(p for p in run.iterdir() if p.is_dir() and (p / "problem.pddl").is_file())


def _state(path: Path) -> tuple[Problem, Atoms]:
    problem = Problem.parse(path.read_text(), str(path.parent))
    return problem, set(problem.init)


class Reference:
    """Retrieval recall against ground-truth plans.

    The reference plan of a goal is planned on the full true state for the true goal (no pruning),
    with the steps it reaches the goal without dropped; the facts it needs are the initial facts its
    positive preconditions read. Planned once per goal and shared by all variants.
    """

    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout
        self.needed: dict[str, Atoms | None] = {}

    def recall(self, step: Path, domain: Domain, truth: Problem, true_init: Atoms, shown: Atoms,
               init: Atoms | None) -> dict:
        """The fraction of needed facts in what the LLM was shown and in the planner's :init."""
        key = str(step)
        if key not in self.needed:
            assert truth.goal is not None
            state = State(domain, truth.objects, true_init)
            res = solve(Task(domain, truth.objects, set(true_init), truth.goal), "fd", self.timeout)
            self.needed[key] = needed_facts(state, res.plan, truth.goal) if res.solved else None
        needed = self.needed[key]
        if not needed:  # no reference plan, or the goal holds already
            return {"needed_facts": None if needed is None else 0}
        return {"needed_facts": len(needed), "recall_shown": len(needed & shown) / len(needed),
                "recall_init": len(needed & init) / len(needed) if init is not None else None}


def evaluate(run: Path, variant: str, llm: Counting, oracle: Oracle | None, console: Console,
             max_rounds: int = 3, depth: int = 1, reference: Reference | None = None,
             limit: int | None = None, rows: list[dict] | None = None,
             on_step: Callable[[], object] | None = None, mine_invariants: bool = False,
             goal_oracle: Oracle | None = None, change_oracle: Oracle | None = None) -> list[dict]:
    """Run one variant over one run; a row per step, appended to `rows` (with retrieval recall on goals if
    `reference` is given); `on_step` is called after each. `goal_oracle` answers the goals (the true goal),
    to measure the state changes alone; `change_oracle` the state changes (the true change, verified), to measure
    the goals alone. `mine_invariants`: accept every invariant
    `kgplan invariants --suggest` proposes once the initial problem is loaded."""
    retriever, verify = VARIANTS[variant]
    rows = [] if rows is None else rows
    everything = steps(run)
    states = [_state(s / "problem.pddl") for s in everything]
    with tempfile.TemporaryDirectory() as tmp:
        domain = load_domain(run, Path(tmp))
        g = open_graph(f"sqlite:{Path(tmp) / 'agent.db'}")
        g.init(domain)
        start, prev = _state(run / "problem.pddl")  # prev: the true state before each step
        held = {p for _, state in states for p, _ in state | prev}  # the predicates the run's states record
        unrecorded = frozenset(domain.predicates) - held
        g.load_problem(start)
        if mine_invariants:
            g.accept_invariants(g.suggest_invariants().suggested)
        for i, step in enumerate(track(everything[:limit], description=f"{run.name} {variant}", console=console)):
            truth, true_init = states[i]
            is_goal = (step / "goal.txt").is_file()
            text = (step / ("goal.txt" if is_goal else "state_change.txt")).read_text().strip()
            calls_before, t0 = len(llm.counted), time.perf_counter()
            out = Outcome(text)
            expected = _truth(true_init, prev, truth, is_goal)
            for o in (oracle, goal_oracle, change_oracle):
                if o:
                    o.new_step(expected)
            before = _atoms(g)
            if change_oracle and not is_goal:
                retrieval = full_graph(g)  # the true change may name any entity
            elif retriever == "propose" or (goal_oracle and is_goal):
                retrieval = Retrieval({}, [])  # PC retrieves for itself; the goal oracle needs nothing
            else:
                retrieval = _retrieve(retriever, llm, g, text, depth, out)
            row = {"step": step.name, "kind": "goal" if is_goal else "state_change", "text": text}
            if is_goal:
                if retriever == "propose" and not goal_oracle:
                    goals.choose(llm, g, text, out=out)
                else:
                    write_goal(goal_oracle or llm, g, text, retrieval, max_rounds=max_rounds, out=out)
                scored, report = _score_plan(g, out, domain, truth, true_init)
                row |= scored | {"goal": out.goal, "goal_exact": _exact(out.goal, g, domain, truth, true_init),
                                 "clarification": out.clarification.question if out.clarification else None,
                                 "stages": out.stages}
                if reference is not None and retrieval.facts:
                    shown = {f.atom for f in retrieval.facts}
                    init = report.task.facts if report and report.task else None
                    row |= reference.recall(step, domain, truth, true_init, shown, init)
                if i + 1 < len(everything):  # the world after the task: the agent's plan, then what it missed
                    after, prev = after_goal(g, report, truth, true_init, states[i + 1][1], unrecorded)
                    row |= after
            else:
                asked = None
                if change_oracle:
                    update(change_oracle, g, text, retrieval, out=out)
                elif retriever == "propose":
                    asked = _told(llm, g, text, out, prev, true_init)
                else:
                    update(llm, g, text, retrieval, verify=verify, max_rounds=max_rounds, out=out)
                asked = asked or out.clarification
                after = _atoms(g)
                new_disc, changed, wanted = after ^ true_init, before ^ after, prev ^ true_init
                unscored = {a for a in changed if a[0] in unrecorded}  # the truth cannot tell them
                new_disc, changed = ({a for a in xs if a[0] not in unrecorded} for xs in (new_disc, changed))
                right = asked is None  # a question is no success, answered or not
                row |= {"strict": right and not new_disc, "success": right and new_disc <= before ^ prev,
                        "error": out.error, "retries": len(out.rounds), "discrepancies": len(new_disc),
                        "clarification": asked.question if asked else None,
                        "answered": asked is not None and out.clarification is None,
                        "exact": right and changed == wanted, "facts_changed": len(changed),
                        "facts_wanted": len(wanted),
                        "facts_right": len(changed & wanted), "facts_unscored": len(unscored),
                        "stages": out.stages}
                row |= _corruption(llm.corruptions(calls_before), out, expected)
                prev = true_init
            row |= {"prompt_tokens": sum(llm.counted[calls_before:]),
                    "schema_tokens": sum(llm.schema_counted[calls_before:]), "llm_calls": len(out.calls),
                    "llm_latency_s": sum(c.latency_s for c in out.calls), "seconds": time.perf_counter() - t0}
            rows.append(row)
            if on_step:
                on_step()
        g.close()
    return rows


def load_domain(run: Path, tmp: Path) -> Domain:
    """The run's domain; with kgplan's metadata for the simulator's domain (`METADATA`) where the run has no
    domain.toml and the domain has every predicate the metadata glosses."""
    import tomllib

    domain = Domain.load(run / "domain.pddl")
    glossed = tomllib.loads(METADATA.read_text())["predicates"]
    if (run / "domain.toml").is_file() or not set(glossed) <= set(domain.predicates):
        return domain
    folder = tmp / "domain"
    folder.mkdir()
    shutil.copy(run / "domain.pddl", folder / "domain.pddl")
    shutil.copy(METADATA, folder / "domain.toml")
    return Domain.load(folder / "domain.pddl")


def _atoms(g: WorldGraph) -> Atoms:
    return {f.atom for f in g.facts()}


def _corruption(kinds: list[str | None], out: Outcome, truth: dict) -> dict:
    """Whether a corrupted first reply was refused (caught) and the true change applied in the end (recovered)."""
    if not kinds or not kinds[0]:
        return {"corruption": None}
    applied = out.change.delta if out.change else None
    return {"corruption": kinds[0], "corrupted_replies": sum(bool(k) for k in kinds), "caught": bool(out.rounds),
            "recovered": applied is not None and bool(out.rounds)
            and {f.atom for f in applied.add} == truth["add"]
            and {f.atom for f in applied.remove} == truth["remove"]}


def after_goal(g: WorldGraph, report: PlanReport | None, truth: Problem, true_init: Atoms,
               next_init: Atoms, unrecorded: frozenset[str] = frozenset()) -> tuple[dict, Atoms]:
    """Execute the agent's plan on its graph, then correct what it did not explain by one sensor observation.

    The correction covers the facts whose subject (first argument) the task is about: the true goal's
    objects, the robot (objects of type `agent`: it knows where its task left it) and those whose facts the
    executed plan changed; they are brought to the next step's true state. Returns the row's fields and the
    true state the next sentence starts from. (Seed138: "make sure the bathroom light is on" held already, the
    agent's plan was empty, the simulator's robot went to the bathroom, and the next sentence was scored for it.)
    The true goal's ground literals hold after the task whatever the next step's state says: it holds the next
    sentence's change as well, which may undo one (seed194: "turn off all appliances", then "Thomas turned on the
    overhead light", the light observed on before the sentence was read). Not those of `unrecorded` predicates,
    which no state of the run holds: the generator never writes `dish_is_clean` into a problem file, so after
    "wash all the dishes" (seed391) the next sentence would be asked to remove ten facts it does not mention.
    """
    before, row = _atoms(g), {}
    if report is not None and report.solved:
        done = execute(g, report.plan, why=f"plan for: {report.goal}")
        row |= {"executed_steps": len(done.changes), "execution_failure": str(done.failure) if done.failure else None}
    after = _atoms(g)
    assert truth.goal is not None
    robots = {(o,) for o, t in truth.objects.items() if t == "agent"}
    subjects = {x.args[:1] for x in atoms(truth.goal)} | robots | {args[:1] for _, args in before ^ after}
    required = {a: holds for a, holds in _required(truth.goal).items() if a.predicate not in unrecorded}
    next_init = {a for a in next_init if required.get(a, True)} | {a for a, holds in required.items() if holds}
    add = {a for a in next_init - after if a[1][:1] in subjects}
    remove = {a for a in after - next_init if a[1][:1] in subjects}
    row |= {"sensor_facts": len(add) + len(remove), "sensor_error": None}
    if add or remove:
        try:
            g.apply(Delta(add=[Fact.of(a) for a in sorted(add)], remove=[Fact.of(a) for a in sorted(remove)],
                          source="sensor", text=f"observed after: {report.goal if report else 'the task'}"))
        except ChangeRefused as e:
            row["sensor_error"] = "; ".join(map(str, e.issues))
    # the plan's own changes are the dataset's transition for those subjects (whatever the graph held before)
    row["plan_reproduced"] = before ^ after == {a for a in true_init ^ next_init if a[1][:1] in subjects}
    return row, {a for a in true_init if a[1][:1] not in subjects} | {a for a in next_init if a[1][:1] in subjects}


def _required(goal: Formula) -> dict[GroundAtom, bool]:
    """The ground literals of a goal's top-level conjunction: atom -> whether it must hold."""
    out = {}
    for f in goal.args if isinstance(goal, And) else (goal,):
        a = f.arg if isinstance(f, Not) else f
        if isinstance(a, Atom) and not any(x.startswith("?") for x in a.args):
            out[GroundAtom(a.predicate, a.args)] = not isinstance(f, Not)
    return out


def _told(llm: LLM, g: WorldGraph, text: str, out: Outcome, prev: Atoms, truth: Atoms) -> Clarification | None:
    """`propose.tell`, its questions answered as the user who sees the world would (`_answer`): the deployed agent
    asks and the change completes, so the sentences after one are scored from there. The first question, if any."""
    propose.tell(llm, g, text, out=out)
    first, answers = out.clarification, {}
    while (c := out.clarification) and c.word not in answers and (pick := _answer(c, prev, truth)) is not None:
        answers[c.word], out.clarification = pick, None
        propose.tell(llm, g, text, answers=answers, out=out)
    return first


def _answer(c: Clarification, prev: Atoms, truth: Atoms) -> str | None:
    """The option of a question that the true change tells: the one fact that holds after it, or the one entity its
    new facts (else all it changed) are about; None where it tells none or several."""
    if all(o.startswith("(") for o in c.options):
        tells = [[o for o in c.options if Fact.parse(o).atom in truth]]
    else:
        tells = [[o for o in c.options if any(o in args for _, args in facts)]
                 for facts in (truth - prev, truth ^ prev)]  # its new facts first
    return next((fits[0] for fits in tells if len(fits) == 1), None)


def _retrieve(retriever: str, llm: LLM, g: WorldGraph, text: str, depth: int, out: Outcome) -> Retrieval:
    if retriever == "select":
        return select_entities(llm, g, text, depth, out)
    if retriever == "search":
        from kgplan.language.retrieval import search_retrieve  # loads torch: only when asked for

        return search_retrieve(llm, g, text, depth=depth, out=out)
    return full_graph(g)


def _truth(true_init: Atoms, prev: Atoms, truth: Problem, is_goal: bool) -> dict:
    if is_goal:
        assert truth.goal is not None
        entities = sorted({a for x in atoms(truth.goal) for a in x.args})
        return {"goal": to_pddl(truth.goal), "entities": entities, "objects": truth.objects,
                "relations": _among(true_init, entities)}
    add, remove = true_init - prev, prev - true_init
    entities = sorted({a for _, args in add | remove for a in args})
    return {"add": add, "remove": remove, "objects": truth.objects, "entities": entities,
            "relations": _among(prev, entities)}  # as the graph holds them: before the change


def _among(state: Atoms, entities: list[str]) -> Atoms:
    """The binary facts of `state` between two of `entities`."""
    names = set(entities)
    return {(p, args) for p, args in state if len(args) == 2 and set(args) <= names}


def _exact(goal: str | None, g: WorldGraph, domain: Domain, truth: Problem, true_init: Atoms) -> bool:
    """Whether a goal says what the true goal says: the same literals, quantifiers expanded over the true objects."""
    if goal is None:
        return False
    state = State(domain, truth.objects, true_init)

    def literals(f: Formula) -> set[str]:
        f = expand_quantifiers(f, state)
        return set().union(*map(literals, f.args)) if isinstance(f, And) else {to_pddl(f)}

    assert truth.goal is not None
    try:
        return literals(parse_goal(goal, g, truth.objects)) == literals(truth.goal)
    except InputError:
        return False


def _score_plan(g: WorldGraph, out: Outcome, domain: Domain, truth: Problem,
                true_init: Atoms) -> tuple[dict, PlanReport | None]:
    """The plan's score from the true state, and the planner's report (None when no planner ran)."""
    if out.goal is None or out.error:
        return {"success": False, "error": out.error, "retries": len(out.rounds), "planner_s": 0.0}, None
    report = plan(g, out.goal)
    if not report.solved:
        return {"success": False, "error": f"planner: {report.status} {report.message}", "planner_s": report.seconds,
                "retries": len(out.rounds)}, report
    failure = simulate(State(domain, truth.objects, true_init), report.plan, truth.goal)
    return {"success": failure is None, "error": str(failure) if failure else None, "planner_s": report.seconds,
            "plan_length": len(report.plan), "retries": len(out.rounds)}, report


def summarise(rows: list[dict]) -> dict:
    changes = [r for r in rows if r["kind"] == "state_change"]
    goals = [r for r in rows if r["kind"] == "goal"]
    after = [r for r in goals if "sensor_facts" in r]

    def rate(xs: list[dict], key: str = "success") -> float:
        return sum(bool(r.get(key)) for r in xs) / len(xs) if xs else 0.0

    def mean(xs: list[dict], key: str) -> float:
        return statistics.mean(r[key] for r in xs) if xs else 0.0

    recovery = {}
    for k in CORRUPTIONS:
        if xs := [r for r in changes if r.get("corruption") == k]:
            caught, recovered = sum(r["caught"] for r in xs), sum(r["recovered"] for r in xs)
            recovery[k] = {"n": len(xs), "caught": caught, "recovered": recovered,
                           "caught_rate": caught / len(xs), "recovered_rate": recovered / len(xs)}
    def stages(xs: list[dict]) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for r in xs:
            for name, st in (r.get("stages") or {}).items():
                for k, v in st.items():
                    out.setdefault(name, {}).setdefault(k, 0.0)
                    out[name][k] += v / len(xs)
        return out

    own = [r for r in changes if not r.get("clarification")]  # an answered question's facts are the user's
    right, changed = (sum(r.get(k, 0) for r in own) for k in ("facts_right", "facts_changed"))
    wanted = sum(r.get("facts_wanted", 0) for r in changes)
    facts = {"state_exact_rate": rate(changes, "exact"), "fact_precision": right / changed if changed else 0.0,
             "fact_recall": right / wanted if wanted else 0.0,
             "clarification_rate": rate(changes, "clarification"),
             "seconds_per_change": mean(changes, "seconds"), "stages_per_change": stages(changes),
             "goal_exact_rate": rate(goals, "goal_exact"), "goal_clarification_rate": rate(goals, "clarification"),
             "seconds_per_goal": mean(goals, "seconds"), "stages_per_goal": stages(goals)}
    recall = {}
    for key in ("recall_shown", "recall_init"):
        if xs := [r[key] for r in goals if r.get(key) is not None]:
            recall |= {f"min_{key}": min(xs), f"mean_{key}": statistics.mean(xs)}
    return {"state_strict_rate": rate(changes, "strict"), "state_success_rate": rate(changes),
            "plan_success_rate": rate(goals), "plan_reproduced_rate": rate(after, "plan_reproduced"),
            "sensor_facts_mean": mean(after, "sensor_facts"),
            "sensor_facts_total": sum(r["sensor_facts"] for r in after),
            "sensor_refused": sum(bool(r["sensor_error"]) for r in after),
            "state_changes": len(changes), "goals": len(goals)} | facts | recall | {
            "recovery": recovery, "corrupted": sum(bool(r.get("corruption")) for r in changes),
            "corrupted_replies": sum(r.get("corrupted_replies", 0) for r in changes),
            **{f"{kind}_tokens_per_{per}": mean(xs, f"{kind}_tokens") for kind in ("prompt", "schema")
               for per, xs in (("change", changes), ("plan", goals))},
            "llm_latency_s_mean": mean(rows, "llm_latency_s"), "planner_s_mean": mean(goals, "planner_s")}


def write(path: Path, results: dict[str, dict[str, list[dict]]], replies: list[dict], record: Path | None) -> dict:
    """Write the results so far (and the replies, for --record); after every step, so a stopped run keeps them."""
    summary = {v: summarise([r for rows in runs.values() for r in rows]) for v, runs in results.items()}
    top = next(iter(summary.values()))
    headline = {k: top[k] for k in ("state_strict_rate", "state_success_rate", "plan_success_rate")}
    outputs = [(path, {**headline, "variants": summary, "steps": results})] + ([(record, replies)] if record else [])
    for out, data in outputs:
        write_json(out, data)
    return summary


def plot(results: dict[str, dict[str, list[dict]]], path: Path) -> None:
    """Cumulative strict success over time per variant, state changes and plans, like the paper's figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, kind, key, title in ((axes[0], "state_change", "strict", "state changes"),
                                 (axes[1], "goal", "success", "plans")):
        for variant, runs in results.items():
            xs = [r for rows in runs.values() for r in rows if r["kind"] == kind]
            cum = [sum(r[key] for r in xs[: i + 1]) / (i + 1) for i in range(len(xs))]
            ax.plot(range(1, len(cum) + 1), cum, label=variant)
        ax.set(title=f"cumulative success: {title}", xlabel="step", ylabel="success rate", ylim=(0, 1.05))
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kgplan bench l3mp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+", type=Path, help="runs (folders with domain.pddl) or folders of runs")
    ap.add_argument("--variant", default="R+V", help=f"comma-separated, of {', '.join(VARIANTS)}, or 'all'")
    ap.add_argument("--llm", default="openai", choices=["openai", "oracle"],
                    help="openai: the endpoint from KGPLAN_LLM_* and OPENAI_API_KEY; oracle: the ground truth")
    ap.add_argument("--corrupt", type=float, default=0.0,
                    help="with --llm oracle: probability that a state-change reply (re-prompts too) is corrupted")
    ap.add_argument("--seed", type=int, default=0, help="seed of the oracle's corruptions")
    ap.add_argument("--llm-replay", type=Path, help="replay the replies recorded with --record")
    ap.add_argument("--goals", choices=["llm", "oracle"], default="llm",
                    help="oracle: the goals get the true goal, to measure the state changes alone (a replay needs "
                         "the same choice)")
    ap.add_argument("--changes", choices=["llm", "oracle"], default="llm",
                    help="oracle: the state changes get the true change, to measure the goals alone (a replay needs "
                         "the same choice)")
    ap.add_argument("--record", type=Path, nargs="?", const=True,
                    help="write every LLM reply (refusals and endpoint errors too) here, to replay the run exactly "
                         "(default: next to --json)")
    ap.add_argument("--no-recall", action="store_true",
                    help="skip retrieval recall (it plans every goal once more on the full true state)")
    ap.add_argument("--limit", type=int, help="only the first N steps of each run (for slow local models)")
    ap.add_argument("--max-rounds", type=int, default=3, help="replies per sentence (re-prompts + 1)")
    ap.add_argument("--mine-invariants", action="store_true",
                    help="accept the mined invariants (`kgplan invariants --suggest`) of each run's initial state")
    ap.add_argument("--json", type=Path, default=Path("results/l3mp.json"))
    ap.add_argument("--plot", type=Path, help="cumulative success figure (default: next to --json)")
    args = ap.parse_args(argv)
    variants = list(VARIANTS) if args.variant == "all" else args.variant.split(",")
    if bad := [v for v in variants if v not in VARIANTS]:
        ap.error(f"unknown variant(s) {bad}: choose from {', '.join(VARIANTS)}")
    if "PC" in variants and args.llm == "oracle" and not args.llm_replay and "llm" in (args.goals, args.changes):
        ap.error("the oracle writes changes; it cannot choose among PC's candidates: use another variant")
    runs = [d for root in args.datasets for d in ([root] if (root / "domain.pddl").is_file() else
                                                 sorted(p for p in root.iterdir() if (p / "domain.pddl").is_file()))]
    record = args.json.with_suffix(".replies.json") if args.record is True else args.record
    plot_path = args.plot or args.json.with_suffix(".png")
    console = bench_console()
    oracle = Oracle(args.corrupt, args.seed) if args.llm == "oracle" and not args.llm_replay else None
    inner: LLM = (CorruptionReplay(json.loads(args.llm_replay.read_text())) if args.llm_replay
                  else oracle or OpenAIClient(LLMConfig.from_env()))
    llm = Counting(inner)
    reference = None if args.no_recall else Reference()
    results: dict[str, dict[str, list[dict]]] = {v: {} for v in variants}
    for v in variants:
        for run in runs:
            rows = results[v][run.name] = []
            evaluate(run, v, llm, oracle, console, args.max_rounds, reference=reference, limit=args.limit, rows=rows,
                     on_step=lambda: write(args.json, results, llm.replies, record),
                     mine_invariants=args.mine_invariants, goal_oracle=Oracle() if args.goals == "oracle" else None,
                     change_oracle=Oracle() if args.changes == "oracle" else None)
    summary = write(args.json, results, llm.replies, record)
    t = Table("variant", "state success strict (no new discrepancy)", "plan success", "plan = dataset transition",
              "sensor facts/goal (total)", "prompt tok/change (+schema)", "prompt tok/plan (+schema)",
              "recall shown (min)", "recall :init (min)", "LLM s/step", "planner s",
              title=f"L3M+P harness, LLM: {args.llm_replay or args.llm}")
    for v, s in summary.items():
        t.add_row(v, f"{s['state_strict_rate']:.1%} ({s['state_success_rate']:.1%})", f"{s['plan_success_rate']:.1%}",
                  f"{s['plan_reproduced_rate']:.1%}", f"{s['sensor_facts_mean']:.1f} ({s['sensor_facts_total']})",
                  f"{s['prompt_tokens_per_change']:.0f} (+{s['schema_tokens_per_change']:.0f})",
                  f"{s['prompt_tokens_per_plan']:.0f} (+{s['schema_tokens_per_plan']:.0f})",
                  *(f"{s[f'mean_{k}']:.1%} ({s[f'min_{k}']:.1%})" if f"mean_{k}" in s else "-"
                    for k in ("recall_shown", "recall_init")),
                  f"{s['llm_latency_s_mean']:.2f}", f"{s['planner_s_mean']:.2f}")
    console.print(t)
    console.print("plan = dataset transition: after a goal, the changes of the agent's executed plan are the "
                  "dataset's transition for the objects of the task (the sensor observation corrects the rest); "
                  "recall: of the initial facts a reference plan (full true state, true goal, redundant steps "
                  "dropped) reads, the share in the facts shown to the LLM and in the planner's :init; mean (min) "
                  "over goals that need a plan")
    for v, s in summary.items():
        console.print(
            f"{v}: {s['state_exact_rate']:.1%} of state changes exact (the facts a sentence changed are those it "
            f"should), fact precision {s['fact_precision']:.1%}, recall {s['fact_recall']:.1%}, clarifications "
            f"{s['clarification_rate']:.1%} of state changes, {s['seconds_per_change']:.1f} s per state change"
            + "".join(f"; {name}: {st['seconds']:.2f} s, {st['prompt_tokens']:.0f}+{st['completion_tokens']:.0f} tokens"
                for name, st in s["stages_per_change"].items()))
        if s["recovery"]:
            console.print(f"{v}: {s['corrupted']} corrupted first replies ({s['corrupted_replies']} corrupted "
                          "replies in all); per kind: caught (refused by verification or the schema) / recovered "
                          "(the true change applied after re-prompting): " + ", ".join(
                              f"{k} {r['caught']}/{r['n']} / {r['recovered']}/{r['n']}"
                              for k, r in s["recovery"].items()))
        if s["sensor_refused"]:
            console.print(f"[red]{v}: {s['sensor_refused']} sensor observations refused by verification[/red]")
    plot(results, plot_path)
    console.print(f"results written to {args.json} and {plot_path}" + (f", replies to {record}" if record else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
