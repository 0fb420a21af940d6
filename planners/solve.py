"""Symbolic planners behind one call, run in a child process with a time limit and a memory cap.

Engines (all through unified-planning):
- ``fd``: Fast Downward, LAMA-first (the default: fast and robust on household tasks);
- ``fd-opt``: Fast Downward A* with LM-cut (optimal; quantified goals are compiled away first,
  as its translator would otherwise turn them into axioms that the heuristic rejects);
- ``symk-opt``: SymK, optimal symbolic search (handles ``forall`` natively).

Every plan is checked with unified-planning's sequential plan validator against the problem
it was found for before it is returned.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import resource
import shutil
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Literal

import unified_planning.model as upm
from unified_planning.plans import SequentialPlan

from planners.problem import Task, base_problem
from planners.state import Step

Status = Literal["solved", "unsolvable", "timeout", "memout", "error"]
ENGINES = {"fd": "fast-downward", "fd-opt": "fast-downward-opt", "symk-opt": "symk-opt"}
OUT_OF_MEMORY = ("MemoryError", "out of memory", "failed to map segment", "Cannot allocate memory")
GRACE_S = 10.0  # beyond the planner's own time limit, before the child is killed


@dataclass
class PlanResult:
    """What a planner returned for one problem."""

    status: Status
    planner: str
    seconds: float
    plan: list[Step] = field(default_factory=list)
    message: str = ""

    @property
    def solved(self) -> bool:
        return self.status == "solved"


def solve(task: Task, planner: str = "fd", timeout: float = 60.0, memory_mb: int = 4096) -> PlanResult:
    """Plan for `task`; never raises for planner failures (see `PlanResult.status`)."""
    if planner not in ENGINES:
        raise ValueError(f"unknown planner {planner!r}: choose one of {', '.join(ENGINES)}")
    start = time.perf_counter()
    base_problem(task.domain.compiled_pddl())  # parsed once per process, inherited by the child
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    # Fast Downward writes output.sas into its working directory: planners running side by side in
    # one directory would read each other's tasks, so each gets its own.
    workdir = tempfile.mkdtemp(prefix="kgplan-plan-")
    proc = ctx.Process(target=_child, args=(child, workdir, task, planner, timeout, memory_mb), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(timeout + GRACE_S):
            status, plan, message = parent.recv()
        else:
            status, plan, message = "timeout", [], f"no answer within {timeout:.0f} s"
    except EOFError:  # the child died without answering (e.g. killed for memory)
        status, plan, message = "memout", [], f"the planner process died (exit code {proc.exitcode})"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the planner's own subprocesses too
        proc.join()
        parent.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return PlanResult(status, planner, time.perf_counter() - start, [Step.parse(s) for s in plan], message)


def _child(conn: Connection, workdir: str, task: Task, planner: str, timeout: float, memory_mb: int) -> None:
    os.setpgid(0, 0)
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.chdir(workdir)
    try:
        conn.send(_run(task, planner, timeout))
    except MemoryError:
        conn.send(("memout", [], f"out of memory (cap {memory_mb} MB)"))
    except Exception as e:  # reported to the parent as a planner error
        conn.send(("error", [], f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"))


def _run(task: Task, planner: str, timeout: float) -> tuple[Status, list[str], str]:
    from unified_planning.engines import PlanGenerationResultStatus as S
    from unified_planning.shortcuts import OneshotPlanner, get_environment

    get_environment().credits_stream = None
    problem = task.to_up()
    if planner == "fd-opt" and (problem.kind.has_existential_conditions() or problem.kind.has_universal_conditions()):
        from unified_planning.shortcuts import CompilationKind, Compiler

        with Compiler(problem_kind=problem.kind, compilation_kind=CompilationKind.QUANTIFIERS_REMOVING) as c:
            problem = c.compile(problem, CompilationKind.QUANTIFIERS_REMOVING).problem
    with OneshotPlanner(name=ENGINES[planner]) as engine:
        engine.skip_checks = True  # the problem is built for this engine; its kind is costly to compute
        result = engine.solve(problem, timeout=timeout)
    log = "\n".join(str(m.message) for m in result.log_messages or [])
    if result.status in (S.SOLVED_SATISFICING, S.SOLVED_OPTIMALLY):
        if (reason := _validate(problem, result.plan)) is not None:
            return "error", [], f"{planner} returned a plan the validator rejects: {reason}"
        steps = [f"({' '.join((a.action.name, *(str(p) for p in a.actual_parameters)))})"
                 for a in result.plan.actions]
        return "solved", steps, ""
    if result.status == S.MEMOUT or any(m in log for m in OUT_OF_MEMORY):  # FD may then claim "unsolvable"
        return "memout", [], "the planner ran out of memory"
    if result.status in (S.UNSOLVABLE_PROVEN, S.UNSOLVABLE_INCOMPLETELY):
        return "unsolvable", [], "the planner proved that no plan exists"
    if result.status == S.TIMEOUT:
        return "timeout", [], f"no plan within {timeout:.0f} s"
    return "error", [], f"{planner} ended with {result.status.name}: {log[-2000:]}"


def validate(task: Task, plan: list[Step]) -> str | None:
    """Check a plan with unified-planning's validator on `task`; None if valid, else the reason."""
    from unified_planning.plans import ActionInstance
    from unified_planning.shortcuts import get_environment

    get_environment().credits_stream = None
    problem = task.to_up()
    try:
        up_plan = SequentialPlan([ActionInstance(problem.action(s.action), tuple(map(problem.object, s.args)))
                                  for s in plan])
    except Exception as e:
        return f"the plan does not fit the problem: {e}"
    return _validate(problem, up_plan)


def _validate(problem: upm.Problem, plan: SequentialPlan) -> str | None:
    """unified-planning's sequential plan validator: None if valid, else its reason."""
    from unified_planning.engines import ValidationResultStatus
    from unified_planning.shortcuts import PlanValidator

    with PlanValidator(name="sequential_plan_validator") as validator:
        validator.skip_checks = True
        check = validator.validate(problem, plan)
    return None if check.status == ValidationResultStatus.VALID else str(check.reason)
