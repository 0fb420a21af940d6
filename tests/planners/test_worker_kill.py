"""Whatever kills a plan's caller, its worker or its search (SIGKILL included), no planner process and
no planner file outlives the plan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kgplan.planners.solve import FOLDER_PREFIX, SCRATCH, solve, sweep
from kgplan.planners.worker import worker
from tests.planners.test_solve import _alive, _children, exploding_task

ROOT = Path(__file__).parents[2]
SCRATCH_DIR = Path(SCRATCH) if SCRATCH else Path(os.environ.get("TMPDIR", "/tmp"))
# A caller that starts its fd worker, prints its pid, then plans a task the translator cannot finish.
CALLER = """
from kgplan.planners.solve import solve
from kgplan.planners.worker import worker
from tests.planners.test_solve import exploding_task
w = worker("fd")
w.start()
print(w.pid, flush=True)
solve(exploding_task(), timeout=600)
"""


def _descendants(pid: int) -> list[int]:
    out = [pid]
    for child in _children(pid):
        out += _descendants(child)
    return out


def _folders(owner: int) -> list[Path]:
    return list(SCRATCH_DIR.glob(f"{FOLDER_PREFIX}{owner}-*"))


def _start_caller() -> tuple[subprocess.Popen, int]:
    """A caller mid-plan: its process and its worker's pid, once the worker's planner child runs."""
    caller = subprocess.Popen([sys.executable, "-c", CALLER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert caller.stdout is not None
    worker_pid = int(caller.stdout.readline())
    t = time.perf_counter()
    while not (_children(worker_pid) and _folders(caller.pid)):
        assert time.perf_counter() - t < 30, "the plan did not start"
        time.sleep(0.01)
    return caller, worker_pid


def _assert_gone(pids: list[int], owner: int) -> None:
    t = time.perf_counter()
    while any(map(_alive, pids)) or _folders(owner):
        assert time.perf_counter() - t < 5, (f"left behind: processes {[p for p in pids if _alive(p)]}, "
                                             f"folders {_folders(owner)}")
        time.sleep(0.02)


@pytest.mark.integration
def test_a_killed_caller_takes_its_worker_search_and_files_along() -> None:
    """SIGKILL of the planning process (the CLI, the server) mid-plan: its worker kills the search's
    process group, removes the plan's folder and exits (they ran on to the deadline before)."""
    caller, worker_pid = _start_caller()
    planners = _descendants(worker_pid)
    caller.kill()
    caller.wait()
    _assert_gone(planners, caller.pid)


@pytest.mark.integration
def test_a_search_whose_worker_and_caller_die_together_dies_and_its_folder_is_swept() -> None:
    """The worker killed while its caller cannot act (stopped, then killed): the kernel kills the search
    (its parent-death signal); the folder, named by the dead caller's pid, goes at the next start."""
    caller, worker_pid = _start_caller()
    planners = _descendants(worker_pid)
    caller.send_signal(signal.SIGSTOP)
    os.kill(worker_pid, signal.SIGKILL)
    t = time.perf_counter()
    while any(map(_alive, planners)):
        assert time.perf_counter() - t < 5, "the search outlived its worker"
        time.sleep(0.02)
    caller.kill()
    caller.wait()
    assert _folders(caller.pid)
    sweep.cache_clear()
    sweep()
    assert not _folders(caller.pid)


@pytest.mark.parametrize("target", ["worker", "search"])
def test_a_killed_worker_or_search_is_an_error_naming_the_signal_with_nothing_left(target: str) -> None:
    runner = worker("fd")
    runner.start()
    killed: list[int] = []

    def kill() -> None:
        t = time.perf_counter()
        while not (children := _children(runner.pid)) and time.perf_counter() - t < 30:
            time.sleep(0.01)
        victim = runner.pid if target == "worker" else children[0]
        killed.extend(_descendants(victim))
        os.kill(victim, signal.SIGKILL)

    threading.Thread(target=kill, daemon=True).start()
    r = solve(exploding_task(), timeout=60)
    assert r.status == "error" and "SIGKILL" in r.message, r.message
    _assert_gone(killed, os.getpid())


def test_lapkt_leaves_no_temporary_file(tmp_path: Path) -> None:
    """LAPKT's grounder (tarski, running gringo) writes its files to the plan's folder: in the temporary
    folder it left gringo's warnings (here: an atom no action adds) and what a killed grounder had begun."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = """if True:
        from kgplan.domains.formula import Atom
        from kgplan.domains.model import Domain
        from kgplan.planners.problem import Task
        from kgplan.planners.solve import solve
        domain = Domain.parse('''(define (domain warn) (:requirements :strips :typing) (:types thing)
          (:predicates (p ?a - thing) (q ?a - thing) (never ?a - thing))
          (:action make :parameters (?a - thing) :precondition (q ?a) :effect (p ?a))
          (:action odd :parameters (?a - thing) :precondition (never ?a) :effect (p ?a)))''')
        r = solve(Task(domain, {"t": "thing"}, {("q", ("t",))}, Atom("p", ("t",))), "lapkt")
        assert r.solved, r.message
    """
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp)}, check=True)
    assert list(tmp.iterdir()) == []
