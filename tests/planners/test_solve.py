"""The planner call: engines on real tasks, honest limits (time, memory, crashes), quantifier expansion."""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kgplan.domains.formula import And, Atom, Formula, Not, Or, parse_formula
from kgplan.domains.model import Domain, Problem
from kgplan.domains.sexpr import read
from kgplan.errors import InputError
from kgplan.planners.engines import PLANNERS
from kgplan.planners.problem import Task
from kgplan.planners.solve import cancel, expand_quantifiers, finish, solve, start
from kgplan.planners.state import State, simulate
from kgplan.planners.worker import prepared_domain, shortcuts, worker
from tests.conftest import DATA

DOMAINS = DATA / "domains"
# Grounding this domain makes 40^6 atoms: Fast Downward's translator cannot finish it.
EXPLODING = Domain.parse("""(define (domain explode) (:requirements :strips :typing) (:types thing)
  (:predicates (p ?a ?b ?c ?d ?e ?f - thing))
  (:action make :parameters (?a ?b ?c ?d ?e ?f - thing) :precondition (and) :effect (p ?a ?b ?c ?d ?e ?f)))""")


def exploding_task() -> Task:
    objects = {f"t{i}": "thing" for i in range(40)}
    return Task(EXPLODING, objects, set(), Atom("p", ("t1", "t2", "t3", "t4", "t5", "t6")))


def goal(text: str) -> Formula:
    return parse_formula(read(text, "goal")[0], "goal")


def world_task(household: Domain, world_problem: Problem, text: str) -> Task:
    return Task(household, world_problem.objects, set(world_problem.init), goal(text))


@pytest.mark.parametrize("planner", PLANNERS.names())
def test_every_engine_plans_a_quantified_goal(household: Domain, world_problem: Problem, planner: str) -> None:
    """fd-opt and lapkt get the goal with its quantifiers expanded over the objects."""
    task = world_task(household, world_problem, "(and (forall (?d - light) (not (switched_on ?d))) "
                                                "(forall (?c - cup) (imply (= ?c red_mug) (holding robot ?c))))")
    r = solve(task, planner, timeout=60)
    assert r.solved, r.message
    assert simulate(State(household, task.objects, task.facts), r.plan, task.goal) is None


@pytest.mark.parametrize("planner", ["fd-opt", "symk-opt"])
def test_optimal_engines_plan_an_existential_goal(household: Domain, world_problem: Problem, planner: str) -> None:
    """fd-opt's LM-cut rejects the axiom Fast Downward makes of a disjunctive goal: the goal becomes an
    action's precondition instead, and that step is not part of the plan; both engines agree on the length."""
    task = world_task(household, world_problem, "(or (exists (?r - room) (and (agent_at robot ?r) "
                                                "(not (= ?r hallway)))) (holding robot red_mug))")
    r = solve(task, planner, timeout=60)
    assert r.solved and len(r.plan) == 1, (r.message, r.plan)
    assert simulate(State(household, task.objects, task.facts), r.plan, task.goal) is None


@pytest.mark.parametrize("planner", PLANNERS.names())
def test_every_engine_reports_an_unsolvable_goal(household: Domain, world_problem: Problem, planner: str) -> None:
    """Nothing moves people: no plan exists."""
    r = solve(world_task(household, world_problem, "(person_at omar bedroom)"), planner, timeout=60)
    assert r.status == "unsolvable" and not r.plan, r.message


def test_lapkt_on_a_task_without_the_objects_a_universal_effect_ranges_over(
        household: Domain, world_problem: Problem) -> None:
    """A pruned task often keeps no cloth: run_washer's forall over clothes is then vacuous."""
    objects = {o: t for o, t in world_problem.objects.items() if t in ("agent", "room", "light")}
    facts = {(a.predicate, a.args) for a in world_problem.init if set(a.args) <= set(objects)}
    task = Task(household, objects, facts, goal("(not (switched_on kitchen_light))"))
    r = solve(task, "lapkt")
    assert r.solved, r.message
    assert simulate(State(household, objects, facts), r.plan, task.goal) is None


def test_timeout_bounds_the_whole_call_translation_included() -> None:
    t = time.perf_counter()
    r = solve(exploding_task(), timeout=2)
    assert r.status == "timeout" and not r.plan
    assert time.perf_counter() - t < 3


def test_memory_cap_applies_to_the_planner_itself() -> None:
    """The translator's own growth counts, not the address space it inherited (this process's)."""
    r = solve(exploding_task(), timeout=60, memory_mb=100)
    assert r.status == "memout" and "cap 100 MB" in r.message, r.message


@pytest.mark.parametrize(("timeout", "memory_mb", "words"), [
    (60, -1, "memory cap"), (60, 0, "memory cap"), (60, 2**60, "memory cap"), (float("inf"), 100, "timeout"),
    (float("nan"), 100, "timeout"), (-1, 100, "timeout"), (0, 100, "timeout")])
def test_limits_that_bound_nothing_are_refused(timeout: float, memory_mb: int, words: str) -> None:
    """Issue 21.6/11: `--memory -1` removed the memory cap; `--timeout inf` was an OverflowError."""
    with pytest.raises(InputError, match=f"the {words} must be more than 0"):
        solve(exploding_task(), timeout=timeout, memory_mb=memory_mb)


def test_search_binary_runs_under_the_cap(household: Domain, world_problem: Problem) -> None:
    """A small task fits a small cap: only what the planner uses counts."""
    r = solve(world_task(household, world_problem, "(holding robot apple)"), memory_mb=64)
    assert r.solved, r.message


def test_a_crash_is_an_error_not_a_memout() -> None:
    """The planner child (the worker's child) killed by a signal is reported by that signal."""
    runner = worker("fd")
    runner.start()

    def crash() -> None:
        time.sleep(0.5)
        for pid in _children(runner.pid):
            os.kill(pid, signal.SIGSEGV)

    threading.Thread(target=crash, daemon=True).start()
    r = solve(exploding_task(), timeout=30)
    assert r.status == "error" and "SIGSEGV" in r.message, r.message


def test_a_dead_worker_takes_its_planner_along_and_is_replaced(household: Domain, world_problem: Problem) -> None:
    """The worker killed mid-plan: the call says so at once, its planner child is killed, the next
    call starts a new worker."""
    runner, old, planners = _signal_mid_plan(signal.SIGKILL, to_worker=True)
    t = time.perf_counter()
    r = solve(exploding_task(), timeout=30)
    assert r.status == "error" and "SIGKILL" in r.message, r.message
    assert time.perf_counter() - t < 5
    assert planners
    _wait_dead(planners)
    r = solve(world_task(household, world_problem, "(holding robot apple)"))
    assert r.solved and runner.pid not in (0, old), r.message


def test_an_interrupted_call_leaves_no_planner_behind() -> None:
    """Ctrl-C during a plan: the call raises, the planner child and the worker are killed. The plan runs on a
    worker of its own (no plan of an earlier test in flight beside it) and Ctrl-C is the interpreter's."""
    worker("fd").stop()
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        runner, old, planners = _signal_mid_plan(signal.SIGINT, to_worker=False)
        with pytest.raises(KeyboardInterrupt):
            r = solve(exploding_task(), timeout=30)
            pytest.fail(f"the plan ended before Ctrl-C: {r}")
    finally:
        signal.signal(signal.SIGINT, handler)
    assert planners and runner.pid == 0
    _wait_dead([*planners, old])


def test_the_worker_keeps_none_of_the_callers_files(household: Domain, world_problem: Problem) -> None:
    """A pipe the caller had open when its worker was forked ends when the caller closes it (a
    socket or pipe kept open by the worker would keep a server or a child waiting)."""
    runner = worker("fd")
    runner.stop()
    read_end, write_end = os.pipe()
    try:
        assert solve(world_task(household, world_problem, "(holding robot apple)")).solved  # a new worker
        os.close(write_end)
        assert select.select([read_end], [], [], 2)[0] and os.read(read_end, 1) == b""
    finally:
        os.close(read_end)


def _signal_mid_plan(sig: int, to_worker: bool):
    """The fd worker started; half a second later (mid-plan) its planner children are listed into the
    returned list and `sig` goes to the worker or to this process. Returns (runner, worker pid, children)."""
    runner = worker("fd")
    runner.start()
    old, planners = runner.pid, []

    def send() -> None:
        time.sleep(0.5)
        planners.extend(_children(old))
        os.kill(old if to_worker else os.getpid(), sig)

    threading.Thread(target=send, daemon=True).start()
    return runner, old, planners


def _wait_dead(pids: list[int]) -> None:
    t = time.perf_counter()
    while any(_alive(pid) for pid in pids):  # SIGKILL takes effect when the process next runs
        assert time.perf_counter() - t < 2, "a planner process outlived the call"
        time.sleep(0.01)


def _children(parent: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(parent):
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not: it waits for a parent that may never reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _translation_cases() -> list:
    """Every domain of tests/domains with its first problem, and household."""
    cases = [pytest.param(p.parent, p, id=p.parent.name) for p in sorted(DOMAINS.glob("*/p01.pddl"))]
    return [*cases, pytest.param(None, None, id="household")]


@pytest.mark.parametrize(("folder", "problem_file"), _translation_cases())
def test_a_prepared_domain_translates_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, household: Domain,
                                               world_problem: Problem, folder: Path | None,
                                               problem_file: Path | None) -> None:
    """The translator given what the worker found once per domain (on an empty problem): the domain's parse, its
    invariants and its rules split into joins, writes the task it writes when it finds them itself."""
    from fast_downward.translate import main, options

    if folder is None or problem_file is None:
        task = world_task(household, world_problem, "(and (clean sandra_jeans) (dry sandra_jeans))")
    else:
        problem = Problem.parse(problem_file.read_text(), str(problem_file))
        assert problem.goal is not None
        task = Task(Domain.load(folder), problem.objects, {(a.predicate, a.args) for a in problem.init},
                    problem.goal, {(a.predicate, a.args): v for a, v in problem.numbers.items()})
    (tmp_path / "domain.pddl").write_text(task.domain.compiled_pddl())
    (tmp_path / "problem.pddl").write_text(task.to_pddl())
    prepared = prepared_domain.__wrapped__(task.domain.compiled_pddl())  # fresh: translating changes it
    assert all(part is not None for part in prepared)
    split = len(prepared[2])
    assert split, "the domain's rules, split"
    for name in ("found.sas", "given.sas"):
        options.set_options([str(tmp_path / "domain.pddl"), str(tmp_path / "problem.pddl"),
                             "--sas-file", str(tmp_path / name)])
        if name == "given.sas":
            for module, attribute, value in shortcuts(prepared):
                monkeypatch.setattr(module, attribute, value)
        with contextlib.redirect_stdout(io.StringIO()):
            main.main()
    assert len(prepared[2]) < split, "the translator took the domain's split rules"
    assert (tmp_path / "found.sas").read_text() == (tmp_path / "given.sas").read_text()


def test_expand_quantifiers(household: Domain, world_problem: Problem) -> None:
    state = State(household, world_problem.objects, ())
    lights = sorted(o for o, t in world_problem.objects.items() if t == "light")
    assert expand_quantifiers(goal("(forall (?d - light) (not (switched_on ?d)))"), state) == And(
        tuple(Not(Atom("switched_on", (d,))) for d in lights))
    assert expand_quantifiers(goal("(imply (dry apple) (clean apple))"), state) == Or(
        (Not(Atom("dry", ("apple",))), Atom("clean", ("apple",))))
    assert expand_quantifiers(goal("(and (clean apple) (not (= apple robot)))"), state) == Atom("clean", ("apple",))


def test_planning_imports_no_heavy_library() -> None:
    """`kgplan plan` loads neither unified-planning nor torch."""
    code = ("import sys, kgplan.interfaces.cli, kgplan.planners.pipeline, kgplan.planners.solve; "
            "print(sorted(m for m in ('unified_planning', 'torch', 'lapkt') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_plans_at_once_share_the_memory_cap() -> None:
    """Two plans in flight (the pipeline's race) grow within one memory cap together: the newest is killed first."""
    first = start(exploding_task(), timeout=60, memory_mb=300)
    second = start(exploding_task(), timeout=60, memory_mb=300)
    ended = {}
    while len(ended) < 2:
        done = finish([a for a in (first, second) if a.plan_id not in ended])
        assert done is not None
        ended[done[0].plan_id] = done[1]
    assert ended[second.plan_id].status == "memout", ended[second.plan_id]
    assert "beside another plan" in ended[second.plan_id].message
    assert ended[first.plan_id].status == "memout", ended[first.plan_id]


def test_a_cancelled_plan_leaves_no_process_nor_folder(household: Domain, world_problem: Problem) -> None:
    """The race's loser: its planner is killed and reaped, its folder removed, before `cancel` returns; the
    worker plans on."""
    attempt = start(exploding_task(), timeout=60)
    time.sleep(0.3)  # translating
    r = cancel(attempt)
    assert r.status == "error" and r.message == "cancelled"
    assert not [pid for pid in _children(worker("fd").pid) if _alive(pid)] and not attempt.folder.exists()
    assert solve(world_task(household, world_problem, "(holding robot apple)")).solved
