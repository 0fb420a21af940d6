"""Symbolic planners behind one call, bounded in wall-clock time and memory, with a typed result.

The planners are those of the registry `kgplan.planners.engines.PLANNERS`; a task is prepared for what
the planner declares (quantified goals expanded or compiled into an action, vacuous universal effects
dropped). Each call writes the task's files to a temporary folder and hands it to this process's
planner worker (`kgplan.planners.worker`: a small server process that forks a bounded child per plan,
which translates in-process and runs the search binary). Plans are not validated here: the pipeline
simulates every plan on the full state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from kgplan.domains import formula
from kgplan.domains.formula import TRUE, And, Atom, Effect, Equals, Formula, Imply, Not, Or, Quantified, scoped, to_pddl
from kgplan.domains.model import Domain
from kgplan.errors import InputError
from kgplan.planners.engines import PLANNERS
from kgplan.planners.problem import Task
from kgplan.planners.state import State, Step, conjuncts, substitute
from kgplan.planners.worker import PLAN_FILE, worker

FALSE = Or(())
MAX_TIMEOUT = 86_400.0  # seconds: a day
MAX_MEMORY_MB = 2**20  # a TiB
GOAL_ACTION, GOAL_ATOM = "kgplan-reach-goal", "kgplan-goal-reached"  # see _goal_as_action


class Status(StrEnum):
    """How a planner call ended: a plan, a proof that none exists, or a limit or failure that says nothing
    about whether one exists."""

    SOLVED = "solved"
    UNSOLVABLE = "unsolvable"
    TIMEOUT = "timeout"
    MEMOUT = "memout"
    ERROR = "error"


def _scratch() -> str | None:
    """Where the planner's files go: memory (/dev/shm) where the system offers a roomy one (on a disk,
    creating and removing them costs milliseconds per plan); the default temporary folder otherwise."""
    with contextlib.suppress(OSError):
        shm = os.statvfs("/dev/shm")
        if os.access("/dev/shm", os.W_OK) and shm.f_bavail * shm.f_frsize >= 2**30:
            return "/dev/shm"
    return None


SCRATCH = _scratch()
FOLDER_PREFIX = "kgplan-plan-"  # then the pid of the process that plans, a dash and mkdtemp's suffix


@functools.cache
def sweep() -> None:
    """Remove the planner folders of processes that are gone (once per process; a plan's worker removes
    its folder when its caller dies, this catches what a worker killed with it left behind)."""
    for path in Path(SCRATCH or tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        owner = path.name.removeprefix(FOLDER_PREFIX).split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True


@dataclass
class PlanResult:
    """What a planner returned for one problem."""

    status: Status
    planner: str
    seconds: float
    plan: list[Step] = field(default_factory=list)
    message: str = ""
    cpu_seconds: float = 0.0  # the planner processes' CPU time (the worker's and its child's)
    peak_mb: float = 0.0  # the planner child's peak resident memory

    @property
    def solved(self) -> bool:
        return self.status == Status.SOLVED


def check_limits(timeout: float, memory_mb: int) -> None:
    """Refuse (InputError) a planner limit that bounds nothing: a timeout that is not a positive number of seconds
    up to `MAX_TIMEOUT`, a memory cap that is not a positive number of MB up to `MAX_MEMORY_MB`."""
    if not 0 < timeout <= MAX_TIMEOUT:
        raise InputError(f"the timeout must be more than 0 and at most {MAX_TIMEOUT} seconds, not {timeout}")
    if not 0 < memory_mb <= MAX_MEMORY_MB:
        raise InputError(f"the memory cap must be more than 0 and at most {MAX_MEMORY_MB} MB, not {memory_mb}")


@dataclass
class Attempt:
    """A planner call in flight (`start`), until `finish` or `cancel` ends it."""

    planner: str
    timeout: float
    memory_mb: int
    folder: Path
    plan_id: int
    started: float  # perf_counter

    def end(self, reply: dict | None) -> PlanResult:
        """The result from the worker's reply (None: cancelled before it started), the folder removed."""
        reply = reply or {"status": "error", "message": "cancelled", "cpu": 0.0, "peak_mb": 0.0}
        status, message = reply["status"], reply["message"]
        try:
            if status == "timeout":
                message = f"no plan within {self.timeout:g} s"
            elif status == "memout":
                message += f" (cap {self.memory_mb} MB)"
            plan = [] if status != "solved" else [
                s for s in _read_plan(self.folder / PLAN_FILE) if s.action != GOAL_ACTION]
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
        return PlanResult(Status(status), self.planner, time.perf_counter() - self.started, plan, message,
                          reply["cpu"], reply["peak_mb"])


def start(task: Task, planner: str = "fd", timeout: float = 60.0, memory_mb: int = 4096) -> Attempt:
    """Start planning for `task` with a planner of the registry (InputError for an unknown one or limits out of
    range, see `check_limits`) in this process's planner worker; `finish` or `cancel` ends it."""
    check_limits(timeout, memory_mb)
    spec = PLANNERS[planner]
    started = time.perf_counter()
    goal_action = (spec.quantified_goals == "compile" and not _literals_only(task.goal)
                   and _existential(task.goal))
    if spec.quantified_goals != "native" and not goal_action:
        state = State(task.domain, task.objects, ())
        domain = task.domain if spec.vacuous_effects else _live_effects(task.domain, state)
        task = Task(domain, task.objects, task.facts, expand_quantifiers(task.goal, state), task.numbers)
    domain_pddl = task.domain.compiled_pddl()
    if goal_action:
        domain_pddl, task = _goal_as_action(domain_pddl, task)
    sweep()
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-", dir=SCRATCH))
    try:
        (folder / "domain.pddl").write_text(domain_pddl)
        (folder / "problem.pddl").write_text(task.to_pddl())
        plan_id = worker(spec.family).submit(folder, spec, memory_mb * 2**20, started + timeout)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Attempt(planner, timeout, memory_mb, folder, plan_id, started)


def finish(attempts: list[Attempt], until: float = math.inf) -> tuple[Attempt, PlanResult] | None:
    """Wait for the first of `attempts` (one planner's) to end, until `until` (perf_counter) at most: that attempt
    and its result, or None."""
    ended = worker(PLANNERS[attempts[0].planner].family).wait([a.plan_id for a in attempts], until)
    if ended is None:
        return None
    attempt = next(a for a in attempts if a.plan_id == ended[0])
    return attempt, attempt.end(ended[1])


def cancel(attempt: Attempt) -> PlanResult:
    """End an attempt: its planner is killed (and gone) when this returns; what it had used."""
    return attempt.end(worker(PLANNERS[attempt.planner].family).cancel(attempt.plan_id))


def solve(task: Task, planner: str = "fd", timeout: float = 60.0, memory_mb: int = 4096) -> PlanResult:
    """Plan for `task` with a planner of the registry (InputError for an unknown one or limits out of range, see
    `check_limits`); never raises for planner failures (see `PlanResult.status`)."""
    attempt = start(task, planner, timeout, memory_mb)
    ended = None
    try:
        ended = finish([attempt])
    finally:
        if ended is None:  # interrupted
            cancel(attempt)
    assert ended is not None
    return ended[1]


def prepare(planner: str = "fd", domain: Domain | None = None) -> None:
    """Start the planner's worker now (it imports the translator meanwhile) and have it prepare a
    domain, so that a plan soon after (once the state is read and pruned) waits for neither."""
    worker(PLANNERS[planner].family).start(None if domain is None else domain.compiled_pddl())


def _literals_only(goal: Formula) -> bool:
    """Whether a goal is a conjunction of literals (what Fast Downward's LM-cut accepts as a goal)."""
    return all(isinstance(p.arg if isinstance(p, Not) else p, Atom) for p in conjuncts(goal))


def _existential(f: Formula, positive: bool = True) -> bool:
    """Whether a formula has no universal quantifier once negations are pushed inward (Fast Downward
    turns `exists` and `or` in a precondition into parameters and split actions, `forall` into axioms)."""
    if isinstance(f, Quantified) and (f.kind == "exists") != positive:
        return False
    return all(_existential(g, p) for g, p in formula.polar_children(f, positive))


def _goal_as_action(domain_pddl: str, task: Task) -> tuple[str, Task]:
    """The usual compilation of an existential goal that is not a conjunction of literals (Fast Downward
    would make it an axiom, which LM-cut rejects): an action whose precondition is the goal achieves a
    new atom, the new goal. The goal's objects become the action's parameters, each pinned by a
    one-object predicate set in the problem (a domain cannot name a problem's objects). The action costs
    nothing under action costs and one step otherwise, so optimal plans stay optimal; its step is
    dropped from the plan."""
    d = task.domain
    names = sorted({a for f, _ in scoped(task.goal) for a in (f.args if isinstance(f, Atom) else (f.left, f.right))
                    if not a.startswith("?") and a not in d.constants})
    var = {o: f"?kgplan-o{i}" for i, o in enumerate(names)}
    pin = {o: f"kgplan-is-o{i}" for i, o in enumerate(names)}
    pre = And((*(Atom(pin[o], (var[o],)) for o in names), substitute(task.goal, var)))
    params = " ".join(f"{var[o]} - {d.type_text((task.objects[o],))}" for o in names)
    action = (f"  (:action {GOAL_ACTION}\n    :parameters ({params})\n    :precondition "
              f"{to_pddl(d.compile_formula(pre), d.type_text)}\n    :effect ({GOAL_ATOM}))\n")
    preds = "".join(f"    ({p} ?x)\n" for p in pin.values())
    head, tail = domain_pddl.rsplit(")", 1)
    head = head.replace("  (:predicates\n", f"  (:predicates\n    ({GOAL_ATOM})\n{preds}", 1)
    domain_pddl = head + action + ")" + tail
    facts = set(task.facts) | {(pin[o], (o,)) for o in names}
    return domain_pddl, dataclasses.replace(task, facts=facts, goal=Atom(GOAL_ATOM, ()))


def _read_plan(path: Path) -> list[Step]:
    return [Step.parse(line) for line in path.read_text().splitlines() if line.strip() and not line.startswith(";")]


def _live_effects(domain: Domain, state: State) -> Domain:
    """`domain` without the universal effects that quantify over no object of `state` (vacuous;
    LAPKT's Tarski front end fails on them)."""
    def live(e: Effect) -> bool:
        return not e.params or next(state.bindings(e.params), None) is not None

    return dataclasses.replace(domain, actions={
        n: dataclasses.replace(a, effects=tuple(filter(live, a.effects))) for n, a in domain.actions.items()})


def expand_quantifiers(f: Formula, state: State) -> Formula:
    """`f` without quantifiers, implications or equalities: each expanded over `state`'s objects,
    constant parts folded away (LAPKT's front end fails on nested constants)."""
    if isinstance(f, Quantified):
        parts = [expand_quantifiers(substitute(f.body, b), state) for b in state.bindings(f.params)]
        return _fold(And if f.kind == "forall" else Or, parts)
    if isinstance(f, Equals):
        return TRUE if f.left == f.right else FALSE
    if isinstance(f, Not):
        arg = expand_quantifiers(f.arg, state)
        return FALSE if arg == TRUE else TRUE if arg == FALSE else Not(arg)
    if isinstance(f, And | Or):
        return _fold(type(f), [expand_quantifiers(a, state) for a in f.args])
    if isinstance(f, Imply):
        return expand_quantifiers(Or((Not(f.left), f.right)), state)
    return f


def universal_goal_grounded(goal: Formula, state: State) -> Formula:
    """A goal of literals and `forall`s over literals (every clothing washed, every phone silent) as the conjunction
    of its instances over `state`'s objects (a plan makes none, so the two are the same goal); any other goal as it
    is. Fast Downward makes a `forall` goal an axiom, which its heuristics see through poorly (the laundry goal over
    every cloth ran past 60 s, its conjunction took 1 s), and pruning regresses each literal of a conjunction."""
    def universal(f: Formula) -> bool:
        if isinstance(f, Not):
            return isinstance(f.arg, Atom | Equals)
        if isinstance(f, And):
            return all(map(universal, f.args))
        if isinstance(f, Quantified):
            return f.kind == "forall" and universal(f.body)
        return isinstance(f, Atom | Equals)

    if not universal(goal) or not formula.quantifiers(goal):
        return goal
    ground = expand_quantifiers(goal, state)
    return ground if _literals_only(ground) else goal


def _fold(kind: type[And] | type[Or], parts: list[Formula]) -> Formula:
    """A conjunction or disjunction of `parts` with constant parts folded, nested ones of its kind merged into it
    and repeated parts dropped."""
    unit, zero = (TRUE, FALSE) if kind is And else (FALSE, TRUE)
    if zero in parts:
        return zero
    rest = tuple(dict.fromkeys(q for p in parts for q in (p.args if isinstance(p, kind) else (p,)) if q != unit))
    return rest[0] if len(rest) == 1 else kind(rest)


def validate(task: Task, plan: list[Step]) -> str | None:
    """Check a plan with unified-planning's validator on `task`; None if valid, else the reason."""
    from unified_planning.engines import ValidationResultStatus
    from unified_planning.plans import ActionInstance, SequentialPlan
    from unified_planning.shortcuts import PlanValidator, get_environment

    get_environment().credits_stream = None
    problem = task.to_up()
    try:
        up_plan = SequentialPlan([ActionInstance(problem.action(s.action), tuple(map(problem.object, s.args)))
                                  for s in plan])
    except Exception as e:
        return f"the plan does not fit the problem: {e}"
    with PlanValidator(name="sequential_plan_validator") as validator:
        validator.skip_checks = True
        check = validator.validate(problem, up_plan)
    return None if check.status == ValidationResultStatus.VALID else str(check.reason)
