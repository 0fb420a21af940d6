"""Planning from the world graph (L3M+P Algorithm 4 with the goal given in PDDL).

Goal -> checked against the domain and the graph's objects -> relevance-pruned state (the
objects of a relaxed plan) -> planner -> plan checked on the full state. A pruned state on which
the goal is not even relaxed-reachable is widened without calling the planner; one that yields
no valid plan is widened too (`Relevance.prunings`), and the full state is tried last.
"""

from __future__ import annotations

import gc
import json
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, fields

from kgplan.domains.formula import Formula, Quantified, children, parse_formula
from kgplan.domains.sexpr import PDDLError, read
from kgplan.domains.verify import IssueKind, check_goal
from kgplan.errors import InputError
from kgplan.graph.world import WorldGraph
from kgplan.planners.budget import Budget, Exhausted, bounded, check_instances
from kgplan.planners.engines import PLANNERS
from kgplan.planners.problem import Task
from kgplan.planners.relevance import Relevance
from kgplan.planners.solve import (
    Attempt,
    PlanResult,
    Status,
    cancel,
    check_limits,
    finish,
    prepare,
    start,
    universal_goal_grounded,
)
from kgplan.planners.state import State, Step, simulate
from kgplan.planners.whynot import Cause, GoalRefused, contradictions, explain, explain_graph

LAST_PLAN = "last_plan"
# From this long after pruning begins, the full state is planned on beside the pruned tasks (0.1 s, or 50 us a fact
# of the state beyond 2,000 facts: writing a large state's problem costs the caller 10-15 us a fact and its
# translation the full-state planner 0.3-16 ms a fact, measured). At 0.25 s, 10 of 428 public problems answered by
# the full state came 0.5-1.1 s after it alone (the wait, and pruning beside the planner slowing it).
HEDGE_S, HEDGE_S_PER_FACT = 0.1, 50e-6
POLL_S = 0.02  # how often pruning, once the full state plans beside it, looks whether that planner has ended
DECISIVE = (Status.SOLVED, Status.UNSOLVABLE, Status.TIMEOUT)  # a full-state answer that ends the call


@dataclass
class PlanReport:
    """The outcome of planning for one goal, with the measurements `kgplan plan --json` prints."""

    goal: str
    status: Status
    planner: str
    plan: list[Step] = field(default_factory=list)
    seconds: float = 0.0  # wall-clock time of the planner attempts, the pruning between them excluded
    planner_cpu_seconds: float = 0.0  # CPU time of the planner processes, all attempts
    planner_peak_mb: float = 0.0  # the largest resident memory of a planner child
    prune_seconds: float = 0.0
    facts_full: int = 0
    facts_pruned: int = 0
    used_full_state: bool = False
    widenings: int = 0  # pruned states given up (goal not relaxed-reachable on it, or no valid plan)
    fallback: bool = False  # pruning was tried and the full state answered
    raced: bool = False  # the full state was planned on beside a pruned attempt (it took longer than HEDGE_S)
    winner: str = ""  # what answered: "pruned (LEVEL)", "full", or "relaxation" (unreachable even relaxed)
    message: str = ""
    cost: float | None = None  # the plan's (total-cost) under :action-costs
    why: list[Cause] = field(default_factory=list)  # an unsolvable goal's causes (planners/whynot.py)
    alternative: str | None = None  # the closest goal that can be reached (relaxed-reachable), as PDDL
    task: Task | None = field(default=None, repr=False)  # the attempt that produced the answer

    @property
    def solved(self) -> bool:
        return self.status == Status.SOLVED

    @property
    def problem_pddl(self) -> str:
        """The problem of the attempt that produced the answer (rendered only when asked for)."""
        return self.task.to_pddl() if self.task else ""

    def to_json(self) -> dict:
        """The report as JSON data: the steps as PDDL text."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "task"}
        return out | {"status": self.status.value, "plan": [str(s) for s in self.plan],
                      "why": [c.to_json() for c in self.why]}


def parse_goal(text: str, graph: WorldGraph, objects: dict[str, str]) -> Formula:
    """Parse a PDDL goal and check it against the domain and the graph's objects (GoalRefused)."""
    exprs = read(text, "goal")
    if len(exprs) != 1:
        raise PDDLError("a goal is one formula, e.g. (and (not (light_on kitchen_light)))", 1, 1, "goal")
    goal = parse_formula(exprs[0], "goal")
    if issues := check_goal(graph.domain, goal, objects):
        raise GoalRefused(issues, goal)
    return goal


def plan(graph: WorldGraph, goal_text: str, *, planner: str = "fd", timeout: float = 60.0,
         prune: bool = True, memory_mb: int = 4096, progress: Callable[[str], None] = lambda _: None) -> PlanReport:
    """Plan for a PDDL goal on the graph's current state; the plan is remembered for `run`. `progress` is
    told each phase: the state read, each pruned state (its level, widening) and each planner call.
    `timeout` and `memory_mb` bound the whole call: grounding the goal and pruning count against them (a
    TIMEOUT or MEMOUT report), the planner gets what is left; a goal whose grounding would pass the memory
    cap is refused (InputError) before it starts."""
    check_limits(timeout, memory_mb)  # before the state is read
    with bounded(timeout, memory_mb) as budget:
        prepare(planner)  # the planner's process gets ready while the domain and the state are read, and pruned
        domain = graph.domain
        prepare(planner, domain)
        with _gc_paused():
            objects, atoms, numbers = graph.snapshot()
            state = State(domain, objects, atoms, numbers)
        progress(f"read the state: {len(objects)} objects, {len(state.facts)} facts")
        try:
            goal = parse_goal(goal_text, graph, objects)
        except GoalRefused as e:  # names not in the graph: why, and the goal without them
            if any(i.kind != IssueKind.UNKNOWN_ENTITY for i in e.issues):
                raise
            with suppress(Exhausted):
                e = GoalRefused(e.issues, e.goal, explain(state, e.goal))
            raise e from None
        check_instances("the goal", instances(goal, state), memory_mb)
        report = PlanReport(goal=goal_text, status=Status.ERROR, planner=planner, facts_full=len(state.facts))
        notes: list[str] = []
        try:
            if contradictions(state, goal):  # no planner needed to see it
                report.status = Status.UNSOLVABLE
                notes.append("the goal contradicts itself or the domain's invariants: no planner was run")
                _why(report, graph, state, goal, notes)
            else:
                _plan(report, graph, state, objects, universal_goal_grounded(goal, state), prune, budget, notes,
                      progress)
        except Exhausted as e:
            report.status, report.plan, report.winner = Status(e.status), [], ""
            notes.append(str(e))
    report.message = "; ".join(notes)
    return report


def instances(f: Formula, state: State) -> int:
    """How many ground instances of its parts a formula's quantifiers make over `state`'s objects (at least 1)."""
    if isinstance(f, Quantified):
        n = 1
        for p in f.params:
            n *= len(state.of_type(p.types))
        return n * instances(f.body, state)
    return max(1, sum(instances(g, state) for g in children(f)))


def _plan(report: PlanReport, graph: WorldGraph, state: State, objects: dict[str, str], goal: Formula, prune: bool,
          budget: Budget, notes: list[str], progress: Callable[[str], None]) -> None:
    """`plan` within the budget set for it: fills `report`, its message's parts in `notes`."""
    planner = report.planner
    if state.holds(goal):
        report.status = Status.SOLVED
        notes.append("the goal already holds: nothing to do")
        remember(graph, report.goal, report.plan)
        return
    if prune and PLANNERS[planner].optimal:  # a pruned state may lack the objects of a cheaper plan
        prune = False
        notes.append(f"{planner} is optimal: it plans on the full state (pruning does not keep optimality)")
    relevance = Relevance(state.domain)
    pruned = _pruned(report, state, goal, relevance, notes, progress) if prune else iter(())
    try:
        _race(report, state, objects, goal, pruned, budget, notes, progress)
    except _Hopeless:
        report.status, report.winner = Status.UNSOLVABLE, "relaxation"
        notes.append("the goal is not reachable even with every deletion ignored (relaxed): no planner was run")
    report.fallback = prune and report.used_full_state
    if report.status == Status.UNSOLVABLE:
        _why(report, graph, state, goal, notes, relevance)
    if report.solved:
        remember(graph, report.goal, report.plan)


def _why(report: PlanReport, graph: WorldGraph, state: State, goal: Formula, notes: list[str],
         relevance: Relevance | None = None) -> None:
    """Why an unsolvable goal is so, and the closest goal that can be reached, into the report (with the relaxed
    exploration that pruning made, if it did)."""
    try:
        why = explain_graph(graph, state, goal, relevance)
    except Exhausted:
        notes.append("no time was left to say why")
        return
    report.why, report.alternative = why.causes, why.alternative


class _FullEnded(Exception):
    """The full state's planner gave a decisive answer while pruning still ran: pruning stops."""


class _Hopeless(Exception):
    """The goal is not relaxed-reachable on the full state: no plan exists, no planner needs to say so."""


def _pruned(report: PlanReport, state: State, goal: Formula, relevance: Relevance, notes: list[str],
            progress: Callable[[str], None]) -> Iterator[tuple[str, Task]]:
    """The pruned tasks to plan on, ever wider (`Relevance.prunings`), pruned as they are asked for; those on which
    the goal is not relaxed-reachable are given up at once (a widening); _Hopeless if it is not on the full state."""
    t = time.perf_counter()
    progress("pruning the state to what the goal needs")
    for pruned in relevance.prunings(state, goal):
        report.prune_seconds += time.perf_counter() - t
        if pruned.hopeless:
            raise _Hopeless
        report.facts_pruned = len(pruned.facts)
        progress(f"pruned state ({pruned.level}): {len(pruned.facts)} of {len(state.facts)} facts")
        if pruned.reachable:
            yield f"pruned ({pruned.level})", Task(state.domain, pruned.objects, pruned.facts, goal, state.numbers)
        else:
            notes.append(f"pruned state ({pruned.level}): goal not relaxed-reachable")
            progress("the goal is not relaxed-reachable on it: widening")
            report.widenings += 1
        t = time.perf_counter()


def _race(report: PlanReport, state: State, objects: dict[str, str], goal: Formula, pruned: Iterator[tuple[str, Task]],
          budget: Budget, notes: list[str], progress: Callable[[str], None]) -> None:
    """Plan on the `pruned` tasks in turn and on the full state beside them, from `HEDGE_S` on (or once they are
    spent, if sooner), in a second planner process: the first valid plan is the answer and the other attempt is
    killed at once; pruning that still runs when the full state's planner has a plan or a proof stops there (it
    looks every `POLL_S`). A pruned task that gives no valid plan is given up (a widening) while the full state
    plans on;
    the full state's answer is final when it proves the goal unsolvable, and when no pruned task is left. So the
    call never takes much longer than planning on the full state alone (`HEDGE_S` more, and what the two planners
    take from each other on a busy machine). A full-state planner out of memory beside a pruned one plans again
    alone once the pruned tasks are spent."""
    planner = report.planner
    t0 = time.perf_counter()
    hedge_s = max(HEDGE_S, HEDGE_S_PER_FACT * len(state.facts))
    hedge_at = t0 + hedge_s  # when the full state joins in (never again once it ran out of memory beside one)
    facts = set(state.facts)  # as given: pruning runs steps on `state` for a while (undone at its end)
    current: tuple[str, Task, Attempt] | None = None  # the pruned attempt in flight
    full: tuple[str, Task, Attempt] | None = None  # the full state's in flight
    full_answer: tuple[str, Task, PlanResult] | None = None  # the full state's failure, final once pruning is spent
    spent = False  # no pruned task is left
    early: tuple[Attempt, PlanResult] | None = None  # the full state's end, seen while pruning ran
    pruning = False  # whether pruning runs (poll stops only that: ticks come from checking plans too)
    whole = False  # the pruned task in flight kept every fact and object

    def hedge() -> None:
        nonlocal full
        if full is None and full_answer is None:
            progress(f"{planner} on the full state" + ("" if spent else f" beside the pruned ones (after {hedge_s} s)"))
            report.raced |= not spent
            task = Task(state.domain, objects, facts, goal, state.numbers)
            full = ("full", task, start(task, planner, budget.left(), budget.memory_mb))
            budget.alarm = (time.monotonic() + POLL_S, poll)

    def poll() -> None:  # rung while pruning runs (however long it takes): has the full state's planner ended?
        nonlocal early
        if full is not None and early is None:
            if pruning:
                early = finish([full[2]], 0.0)
            if early is None:
                budget.alarm = (time.monotonic() + POLL_S, poll)
            elif early[1].status in (Status.SOLVED, Status.UNSOLVABLE):  # a timeout: pruning's own budget says so
                raise _FullEnded

    budget.alarm = (time.monotonic() + hedge_s, hedge)  # rung while pruning, however long that takes
    try:
        while True:
            if current is None and not spent:
                pruning = True
                try:
                    pruned_task = next(pruned, None)
                except _FullEnded:
                    pruned_task = None
                finally:
                    pruning = False
                if pruned_task is None:
                    spent = True
                elif (whole := len(pruned_task[1].facts) == len(facts) and pruned_task[1].objects == objects) \
                        and full is not None:
                    spent = True  # it kept everything and the full state already plans: no twin on the other core
                else:
                    if whole:  # it is the full task: planned once (no twin raced beside it), its answer final
                        hedge_at, budget.alarm = math.inf, None
                    progress(f"{planner} on the {pruned_task[0]} state")
                    current = (*pruned_task, start(pruned_task[1], planner, budget.left(), budget.memory_mb))
            if current is None and full is None:  # the pruned tasks are spent
                if full_answer is not None:
                    _answer(report, state, *full_answer, notes, progress)
                    return
                hedge()
            if early is not None:
                ended, early = early, None
            else:
                racing = [a[2] for a in (current, full) if a is not None]
                ended = finish(racing, hedge_at if full is None and full_answer is None else math.inf)
                if ended is None:
                    hedge()
                    continue
            attempt, result = ended
            _account(report, result)
            if full is not None and attempt is full[2]:
                (name, task, _), full = full, None
                if result.status == Status.MEMOUT and current is not None:  # alone once the pruned tasks are spent
                    notes.append(f"full state beside a pruned one: memout: {result.message}")
                    hedge_at = math.inf
                elif result.status in DECISIVE or current is None:
                    _answer(report, state, name, task, result, notes, progress)
                    return
                else:
                    full_answer = name, task, result
            else:
                assert current is not None
                (name, task, _), current = current, None
                if _answer(report, state, name, task, result, notes, progress) or result.status == Status.TIMEOUT \
                        or whole:
                    return
                report.widenings += 1
                spent |= result.status == Status.MEMOUT  # a wider pruned task would not be smaller
    finally:
        budget.alarm = None
        report.seconds = time.perf_counter() - t0 - report.prune_seconds
        for flight in (current, full):
            if flight is not None:
                _account(report, cancel(flight[2]))


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a large state is read and indexed: it would
    rescan its hundreds of thousands of new containers (none in a cycle) again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _account(report: PlanReport, result: PlanResult) -> None:
    report.planner_cpu_seconds += result.cpu_seconds
    report.planner_peak_mb = max(report.planner_peak_mb, result.peak_mb)


def _answer(report: PlanReport, state: State, name: str, task: Task, result: PlanResult, notes: list[str],
            progress: Callable[[str], None]) -> bool:
    """Make an attempt's result the report's answer, its plan checked on the full state; whether it is a valid plan
    (else its failure is noted)."""
    report.status, report.task, report.winner, report.used_full_state = result.status, task, name, name == "full"
    if result.solved and (failure := _check(state, result, task.goal)) is not None:
        report.status, result.message = Status.ERROR, f"invalid on the full state: {failure}"
    if report.solved:
        report.plan = result.plan
        report.cost = state.plan_cost(result.plan)
        return True
    notes.append(f"{name} state: {report.status}: {result.message}")
    progress(f"{name} state: {report.status}")
    return False


def remember(graph: WorldGraph, goal: str, plan: list[Step]) -> None:
    """Keep a plan for a goal in the store for `kgplan run`."""
    at = graph.changes(1)
    graph.set_meta({LAST_PLAN: json.dumps({"goal": goal, "plan": [str(s) for s in plan], "at": at[0].id if at else 0})})


def _check(state: State, result: PlanResult, goal: Formula) -> str | None:
    """Why the plan fails on the full state, or None if it reaches the goal. The state is put
    back as it was (cheaper than copying a large state)."""
    before = set(state.facts)
    try:
        failure = simulate(state, result.plan, goal)
    finally:
        added, removed = list(state.facts - before), list(before - state.facts)
        for f in added:
            state.discard(f)
        for f in removed:
            state.add(f)
    return str(failure) if failure else None


def last_plan(graph: WorldGraph) -> tuple[str, list[Step]]:
    """The goal and plan of the last successful `plan` on this store; InputError if there is none, or if it
    has run already (a plan runs once: its steps changed the graph it was made for)."""
    raw = graph.get_meta(LAST_PLAN)
    if raw is None:
        raise InputError("no plan yet: run `kgplan plan --goal ...` first")
    data = json.loads(raw)
    if "ran" in data:
        changes = ", ".join(f"#{c}" for c in data["ran"]) or "no change"
        raise InputError(f"the last plan (for {data['goal']}) has already run ({changes}); a plan runs once: "
                         "plan again (`kgplan plan`) to run it anew")
    return data["goal"], [Step.parse(s) for s in data["plan"]]


def planned_at(graph: WorldGraph) -> int | None:
    """The newest change when the last plan was made (None if unknown)."""
    return json.loads(graph.get_meta(LAST_PLAN) or "{}").get("at")


def mark_ran(graph: WorldGraph, goal: str, plan: list[Step], changes: list[int]) -> None:
    """Record that the last plan, this one, has run (as these changes), so that it is not run again (a newer plan
    stored meanwhile, by another process, is left as it is)."""
    data = json.loads(graph.get_meta(LAST_PLAN) or "{}")
    if data.get("goal") == goal and data.get("plan") == [str(s) for s in plan]:
        graph.set_meta({LAST_PLAN: json.dumps(data | {"ran": changes})})
