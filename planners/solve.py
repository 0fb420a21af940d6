"""Symbolic planners behind one call, each in a forked child bounded in wall-clock time and memory.

Engines, all fed the PDDL text of `Task.to_pddl()` and `Domain.compiled_pddl()`:
- ``fd``: Fast Downward, LAMA-first (the default: fast and robust on household tasks);
- ``fd-opt``: Fast Downward A* with LM-cut (optimal; quantified goals are expanded over the
  objects first, as the translator would otherwise turn them into axioms that LM-cut rejects);
- ``symk-opt``: SymK, optimal symbolic bidirectional search (handles ``forall`` natively);
- ``lapkt``: LAPKT's SIW, then BFS(f) if SIW fails (the L3M+P paper's planner; quantified goals
  expanded first and vacuous universal effects dropped, as its Tarski front end fails on both).

For the Fast Downward engines and SymK the child runs Fast Downward's translator in-process
(imported once by the parent, with the domain's invariants found once, so no interpreter starts
per call), then replaces itself with the search binary shipped in ``up-fast-downward`` or
``up-symk``. LAPKT grounds and searches in the child. The parent kills the child's process group
at the deadline, translation included, and when the child grows beyond the memory cap over the
address space it inherited (the search binary also runs under the cap as its address-space
limit). A child that dies otherwise is reported by its signal or exit code. Plans are not
validated here: the agent simulates every plan on the full state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import functools
import io
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Literal

from domains import formula
from domains.formula import TRUE, And, Atom, Effect, Equals, Formula, Imply, Not, Or, Quantified, scoped, to_pddl
from domains.model import Domain
from planners.problem import Task
from planners.state import State, Step, substitute

FALSE = Or(())
Status = Literal["solved", "unsolvable", "timeout", "memout", "error"]


def _binary(package: str, build: str) -> Path:
    spec = find_spec(package)
    assert spec is not None and spec.origin is not None, f"{package} is not installed"
    return Path(spec.origin).parent / build / "builds/release/bin/downward"


LAMA_FIRST = ("let(hlm, eval_modify_costs(landmark_sum(lm_factory=lm_reasonable_orders_hps(lm_rhw()),pref=false),"
              "cost_type=one),let(hff, eval_modify_costs(ff(),cost_type=one),lazy_greedy([hff,hlm],"
              "preferred=[hff,hlm],cost_type=one,reopen_closed=false)))")  # Fast Downward's lama-first alias
SEARCH = {"fd": ("up_fast_downward", "downward", LAMA_FIRST),
          "fd-opt": ("up_fast_downward", "downward", "astar(lmcut())"),
          "symk-opt": ("up_symk", "symk", "sym_bd()")}
ENGINES = (*SEARCH, "lapkt")
OPTIMAL = {"fd-opt", "symk-opt"}  # plans of least cost (or length): only on the full state
GOAL_ACTION, GOAL_ATOM = "kgplan-reach-goal", "kgplan-goal-reached"  # see _goal_as_action
EXPAND_QUANTIFIERS = {"fd-opt", "lapkt"}
# Exit codes of Fast Downward's components (driver/returncodes.py); the child uses the translator's.
EXIT_STATUS: dict[int, tuple[Status, str]] = {
    10: ("unsolvable", "the translator proved that no plan exists"),
    11: ("unsolvable", "the planner proved that no plan exists"),
    12: ("unsolvable", "the search space was exhausted without a plan"),
    20: ("memout", "the translator ran out of memory"),
    22: ("memout", "the search ran out of memory"),
    24: ("memout", "the search ran out of memory"),
    34: ("error", "the search configuration does not support this task"),
}
TRANSLATE_UNSOLVABLE, TRANSLATE_OUT_OF_MEMORY, TRANSLATE_CRITICAL_ERROR, PLAN_FILE = 10, 20, 30, "plan"
POLL_S = 0.02  # how often the parent looks at the child's address space


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
    if planner == "lapkt":
        from lapkt.pddl.tarski import ground_generate_task  # noqa: F401  (imported once, inherited by children)
    else:
        import fast_downward.translate.main  # noqa: F401
    invariants = None if planner == "lapkt" else domain_invariants(task.domain.compiled_pddl())
    goal_action = planner == "fd-opt" and not _literals_only(task.goal) and _existential(task.goal)
    if planner in EXPAND_QUANTIFIERS and not goal_action:
        state = State(task.domain, task.objects, ())
        domain = _live_effects(task.domain, state) if planner == "lapkt" else task.domain
        task = Task(domain, task.objects, task.facts, expand_quantifiers(task.goal, state), task.numbers)
    domain_pddl = task.domain.compiled_pddl()
    if goal_action:
        domain_pddl, task = _goal_as_action(domain_pddl, task)
    workdir = Path(tempfile.mkdtemp(prefix="kgplan-plan-"))
    try:
        (workdir / "domain.pddl").write_text(domain_pddl)
        (workdir / "problem.pddl").write_text(task.to_pddl())
        sys.stdout.flush()
        sys.stderr.flush()
        cap = memory_mb * 2**20
        limit = _address_space(os.getpid()) + cap  # what the child may grow to before it counts as a memout
        pid = os.fork()
        if pid == 0:
            _child(workdir, planner, cap, limit, invariants)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also done by the child: whichever runs first
        status, message = _wait(pid, start + timeout, limit, workdir)
        if status == "timeout":
            message = f"no plan within {timeout:g} s"
        elif status == "memout":
            message += f" (cap {memory_mb} MB)"
        plan = [s for s in _read_plan(workdir / PLAN_FILE) if s.action != GOAL_ACTION] if status == "solved" else []
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return PlanResult(status, planner, time.perf_counter() - start, plan, message)


def _wait(pid: int, deadline: float, limit: int, workdir: Path) -> tuple[Status, str]:
    """Wait for the child, watching its address space; kill its process group at the deadline or
    when it outgrows `limit`. Status and message."""
    pidfd = os.pidfd_open(pid)
    try:
        while not select.select([pidfd], [], [], min(POLL_S, max(0.0, deadline - time.perf_counter())))[0]:
            over = _address_space(pid) > limit
            if over or time.perf_counter() >= deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return ("memout", "the planner needed more memory") if over else ("timeout", "")
    finally:
        os.close(pidfd)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # anything the planner left behind
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        sig = signal.Signals(os.WTERMSIG(wait_status)).name
        return "error", f"the planner was killed by {sig}: {_log_tail(workdir)}"
    code = os.WEXITSTATUS(wait_status)
    if code == 0:
        if (workdir / PLAN_FILE).is_file():
            return "solved", ""
        return "unsolvable", "the planner found no plan"
    status, message = EXIT_STATUS.get(code, ("error", f"the planner failed with exit code {code}"))
    return status, message if status != "error" else f"{message}: {_log_tail(workdir)}"


def _log_tail(workdir: Path) -> str:
    log = workdir / "log"
    return log.read_text(errors="replace")[-2000:].strip() if log.is_file() else ""


def _literals_only(goal: Formula) -> bool:
    """Whether a goal is a conjunction of literals (what Fast Downward's LM-cut accepts as a goal)."""
    parts = goal.args if isinstance(goal, And) else (goal,)
    return all(isinstance(p.arg if isinstance(p, Not) else p, Atom) for p in parts)


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


def _child(workdir: Path, planner: str, cap: int, limit: int, invariants: tuple | None) -> None:
    """In the forked child: translate (or ground) and search, reporting through the exit code.

    The parent kills the child when it outgrows `limit`; the address-space limit set here, twice
    the cap above it, only catches an allocation too large and too quick for the parent to see
    (near that limit Python slows to a crawl instead of failing). The search binary gets the cap."""
    code = TRANSLATE_CRITICAL_ERROR
    try:
        os.setpgid(0, 0)
        os.chdir(workdir)
        log = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.stdout = sys.stderr = open(log, "w")  # noqa: SIM115  (Python-level output too, e.g. under pytest)
        faulthandler.disable()  # a crash is reported by the parent, not dumped on an inherited stream
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit + cap, hard))
        if planner == "lapkt":
            code = _lapkt()
        else:
            _translate(invariants)
            package, build, config = SEARCH[planner]
            os.dup2(os.open("output.sas", os.O_RDONLY), 0)
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
            sys.stdout.flush()
            binary = str(_binary(package, build))
            os.execv(binary, [binary, "--search", config, "--internal-plan-file", PLAN_FILE])
    except MemoryError:
        code = TRANSLATE_OUT_OF_MEMORY
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
        os._exit(code)


def _address_space(pid: int) -> int:
    """The virtual memory size of a process in bytes (0 once it is gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _translate(invariants: tuple | None) -> None:
    from fast_downward.translate import invariant_finder, main, options

    options.set_options(["domain.pddl", "problem.pddl", "--sas-file", "output.sas"])
    if invariants is not None:
        invariant_finder.find_invariants = lambda task, reachable_action_params: iter(invariants)
    main.main()


@functools.lru_cache(maxsize=8)
def domain_invariants(domain_pddl: str) -> tuple | None:
    """Fast Downward's invariants of a domain, synthesised once per process on the domain alone
    (an empty problem, every action instance counted), so they hold in every problem of it: each
    translator reuses them instead of synthesising them again (a third of its time on a small
    task). None if that fails or takes a second: each translator then synthesises its own."""
    from fast_downward.translate import invariant_finder, normalize, options
    from fast_downward.translate.pddl_parser import lisp_parser, parsing_functions

    start = time.process_time()
    try:
        options.set_options(["domain.pddl", "problem.pddl", "--invariant-generation-max-time", "1"])
        domain = lisp_parser.parse_nested_list(domain_pddl.splitlines())
        problem = f"(define (problem empty) (:domain {domain[1][1]}) (:init) (:goal (and)))"
        task = parsing_functions.parse_task(domain, lisp_parser.parse_nested_list([problem]))
        normalize.normalize(task)
        with contextlib.redirect_stdout(io.StringIO()):
            invariants = tuple(invariant_finder.find_invariants(task, None))
    except (Exception, SystemExit):
        return None
    return invariants if time.process_time() - start < 1 else None


def _lapkt() -> int:
    """SIW, then BFS(f) if SIW fails, on the PDDL files: 0 whether or not a plan was found, or
    the translator's code for a goal that is not even relaxed-reachable."""
    from lapkt.pddl.tarski import ground_generate_task
    from lapkt.planner import SIW_PLUS_BFS_F_Planner
    from tarski.grounding.errors import ReachabilityLPUnsolvable

    search = SIW_PLUS_BFS_F_Planner()
    search.enable_siw_plus = False  # plain SIW, as in the L3M+P paper
    search.log_filename, search.plan_filename = "lapkt.log", PLAN_FILE
    try:
        ground_generate_task("domain.pddl", "problem.pddl", search)
    except ReachabilityLPUnsolvable:
        return TRANSLATE_UNSOLVABLE
    search.setup(True)
    search.solve()
    return 0


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


def _fold(kind: type[And] | type[Or], parts: list[Formula]) -> Formula:
    """A conjunction or disjunction of `parts` with constant parts folded."""
    unit, zero = (TRUE, FALSE) if kind is And else (FALSE, TRUE)
    if zero in parts:
        return zero
    rest = tuple(p for p in parts if p != unit)
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
