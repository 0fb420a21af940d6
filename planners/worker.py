"""The planner worker: a process that forks one child per plan, bounded in time and memory.

`solve` writes a task's PDDL files to a folder and asks this process's `Worker` (one per engine
family) to plan on them. The worker is a fork of the caller made at its first plan
(`kgplan.planners.pipeline.plan` makes it before it reads the domain and the state), so it is as small as
the caller was then. It imports Fast Downward's translator (or LAPKT) and keeps what every task
of a domain shares (the parsed domain, the translator's invariants of it). A plan then costs the
fork of that process, whatever the caller has loaded since (torch, unified-planning), and no
interpreter start. The child translates in-process, then replaces itself with the search binary
shipped in ``up-fast-downward`` or ``up-symk``, or grounds and searches with LAPKT.

Several plans may run at once (the pipeline races a pruned task against the full one): each has an
id, and the caller may cancel one (its child is killed and reaped before the reply). The worker kills
a child's process group at its deadline, translation included, and when the children together grow
beyond the memory cap over the address space they inherited (the newest child goes first; the search
binary runs under the cap as its address-space limit); a child that dies otherwise is reported by its
signal or exit code. Requests and replies are JSON lines over two pipes. A worker that dies is
reported (its children killed) and forked again; one that does not answer within `GRACE_S` of a
deadline is killed with its children, and so is one whose caller is interrupted. Whatever ends the
caller (SIGKILL included), its end of the request pipe closes: the worker then kills its children's
process groups, removes their plans' folders and exits; a child whose worker dies is killed by the
kernel (its parent-death signal). The child's temporary files (those of LAPKT's grounder too) go
to the plan's folder.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import ctypes
import faulthandler
import functools
import gc
import importlib
import importlib.util
import io
import itertools
import json
import math
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kgplan.planners.engines import Planner

PRELOAD = {"fd": "fast_downward.translate.main", "lapkt": "lapkt.pddl.tarski"}  # what a worker imports, by family
# Exit codes of Fast Downward's components (driver/returncodes.py); the child uses the translator's.
EXIT_STATUS: dict[int, tuple[str, str]] = {
    10: ("unsolvable", "the translator proved that no plan exists"),
    11: ("unsolvable", "the planner proved that no plan exists"),
    12: ("unsolvable", "the search space was exhausted without a plan"),
    20: ("memout", "the translator ran out of memory"),
    22: ("memout", "the search ran out of memory"),
    24: ("memout", "the search ran out of memory"),
    34: ("error", "the search configuration does not support this task"),
}
TRANSLATE_UNSOLVABLE, TRANSLATE_OUT_OF_MEMORY, TRANSLATE_CRITICAL_ERROR, PLAN_FILE = 10, 20, 30, "plan"
TRANSLATE_ARGS = ["domain.pddl", "problem.pddl", "--sas-file", "output.sas"]  # the translator's, in the plan's folder
POLL_S = 0.02  # how often the worker looks at the child's address space
GRACE_S = 0.5  # how long after the deadline the caller waits for the worker before killing it
PR_SET_PDEATHSIG = 1  # prctl(2), Linux


class Channel:
    """JSON lines over a pair of pipe ends."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd, self.buffer = read_fd, write_fd, b""

    def send(self, message: dict) -> None:
        data = json.dumps(message).encode() + b"\n"
        while data:
            data = data[os.write(self.write_fd, data):]

    def receive(self, deadline: float | None = None) -> dict | None:
        """The next message; None at end of file. TimeoutError past `deadline` (perf_counter)."""
        while b"\n" not in self.buffer:
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            if not select.select([self.read_fd], [], [], wait)[0]:
                raise TimeoutError
            if not (chunk := os.read(self.read_fd, 1 << 16)):
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def drain(self) -> list[dict] | None:
        """The messages that have come, reading once (the pipe is readable); None at end of file."""
        if not (chunk := os.read(self.read_fd, 1 << 16)):
            return None
        *lines, self.buffer = (self.buffer + chunk).split(b"\n")
        return [json.loads(line) for line in lines]


class Worker:
    """The caller's side of one worker process: started on first use, started again if it died.
    Thread-safe; plans are submitted, waited for and cancelled by their ids."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.pid = 0
        self.channel: Channel | None = None
        self.owner = 0  # the process that started it (a forked copy of the caller starts its own)
        self.lock = threading.RLock()
        self.ids = itertools.count(1)
        self.running: dict[int, list] = {}  # the plans in flight: id -> [deadline, its child's pid or 0]
        self.ended: dict[int, dict] = {}  # the replies of ended plans not yet waited for

    def start(self, domain_pddl: str | None = None) -> None:
        """Start the worker unless it runs, and have it prepare a domain (`prepared_domain`) while
        the caller works on: a plan then waits for neither. The worker is a fork of the caller:
        start it before the caller grows (a plan forks the worker)."""
        with self.lock:
            if not self._running():
                self._forget("error", "the planner process died")
                self._fork()
            if domain_pddl is not None and self.family == "fd":
                assert self.channel is not None
                with contextlib.suppress(BrokenPipeError):  # noticed by the next plan
                    self.channel.send({"prepare": domain_pddl})

    def _fork(self) -> None:
        requests, replies = os.pipe(), os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                keep = {0, 1, 2, requests[0], replies[1]}
                for fd in map(int, os.listdir("/proc/self/fd")):  # the caller's files, sockets and pipes
                    if fd not in keep:  # (another worker's too) are the caller's to close
                        with contextlib.suppress(OSError):
                            os.close(fd)
                serve(self.family, Channel(requests[0], replies[1]))
            except BrokenPipeError:  # the caller is gone
                pass
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)  # never the caller's exit handlers
        os.close(requests[0])
        os.close(replies[1])
        self.pid, self.owner, self.channel = pid, os.getpid(), Channel(replies[0], requests[1])

    def submit(self, folder: Path, planner: Planner, cap: int, deadline: float) -> int:
        """Have the worker plan on domain.pddl and problem.pddl in `folder` (the plan is written there) until
        `deadline` (perf_counter), its child within `cap` bytes (with the others in flight); the plan's id."""
        with self.lock:
            self.start()
            assert self.channel is not None
            plan_id = next(self.ids)
            self.running[plan_id] = [deadline, 0]
            search = [planner.package, planner.build, planner.search] if planner.family == "fd" else None
            with contextlib.suppress(BrokenPipeError):  # it died: `wait` reports it
                self.channel.send({"id": plan_id, "folder": str(folder), "search": search, "cap": cap,
                                   "seconds": deadline - time.perf_counter()})
            return plan_id

    def wait(self, ids: Collection[int], until: float = math.inf) -> tuple[int, dict] | None:
        """The first of the plans `ids` to end by `until` (perf_counter) and its reply (status, message, the CPU
        seconds the worker and the child spent on it, the child's peak resident memory in MB); None if none
        has by then. A worker that dies ends every plan in flight (an error); one that has not answered
        `GRACE_S` past a plan's deadline is killed (the plans in flight time out), and so is one whose caller
        is interrupted."""
        with self.lock:
            while not (done := [i for i in ids if i in self.ended]):
                overdue = min(self.running[i][0] for i in ids if i in self.running) + GRACE_S
                assert self.channel is not None
                try:
                    reply = self.channel.receive(min(until, overdue))
                except TimeoutError:
                    if until < overdue:
                        return None
                    self.stop("timeout", "")
                    continue
                except BaseException:
                    self.stop()
                    raise
                if reply is None:
                    self.stop()
                elif "pid" in reply:
                    self.running[reply["id"]][1] = reply["pid"]
                else:
                    del self.running[reply["id"]]
                    self.ended[reply["id"]] = reply
            return done[0], self.ended.pop(done[0])

    def cancel(self, plan_id: int) -> dict | None:
        """End a plan: its child is killed and reaped before this returns (the worker is killed if it does not
        answer at once); its reply, if it had not been waited for."""
        with self.lock:
            if plan_id in self.running:
                assert self.channel is not None
                with contextlib.suppress(BrokenPipeError):
                    self.channel.send({"cancel": plan_id})
                if self.wait([plan_id], time.perf_counter() + GRACE_S) is None:
                    self.stop()
            return self.ended.pop(plan_id, None)

    def stop(self, status: str = "error", message: str = "") -> str:
        """Kill the worker and its children's process groups; the plans in flight end with `status` and `message`
        (by default an error naming how the worker ended). How the worker ended."""
        for _, pid in self.running.values():
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
        ended = ""
        if self.pid and self.owner == os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                code = os.waitpid(self.pid, 0)[1]
                ended = (f"killed by {signal.Signals(os.WTERMSIG(code)).name}" if os.WIFSIGNALED(code)
                         else f"exit code {os.WEXITSTATUS(code)}")
        self._forget(status, message or f"the planner process died ({ended})")
        return ended

    def close(self) -> None:
        """End an idle worker: it exits at the end of its input (killed after a second)."""
        if self._running():
            assert self.channel is not None
            with contextlib.suppress(ChildProcessError):
                os.close(self.channel.write_fd)
                self.channel.write_fd = -1
                deadline = time.perf_counter() + 1
                while not os.waitpid(self.pid, os.WNOHANG)[0]:
                    if time.perf_counter() > deadline:
                        self.stop()
                        return
                    time.sleep(0.001)
        self._forget()

    def _running(self) -> bool:
        if not self.pid or self.owner != os.getpid():
            return False
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:
            return False

    def _forget(self, status: str = "error", message: str = "") -> None:
        """Let go of the worker (gone); the plans in flight end with `status` and `message`."""
        for plan_id in self.running:
            self.ended[plan_id] = {"status": status, "message": message, "cpu": 0.0, "peak_mb": 0.0}
        self.running.clear()
        if self.channel is not None and self.owner == os.getpid():
            for fd in (self.channel.read_fd, self.channel.write_fd):
                if fd >= 0:
                    os.close(fd)
        self.pid, self.channel = 0, None


@dataclass
class _Plan:
    """A plan in the worker: its child, the child's pidfd and folder, its deadline (perf_counter), memory cap and
    the address space it inherited (bytes), the worker's CPU seconds spent starting it, and why the worker
    ended it (a limit, a cancel), if it did."""

    pid: int
    pidfd: int
    folder: Path
    deadline: float
    cap: int
    inherited: int
    cpu: float
    ended: tuple[str, str] | None = None


def serve(family: str, channel: Channel) -> None:
    """The worker's loop: requests (prepare a domain, start a plan, cancel one) until the caller closes its end;
    each plan's reply when its child ends."""
    os.setsid()  # out of the terminal's process group: the caller decides what an interrupt ends
    faulthandler.disable()  # a crash is reported by the caller
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the caller's handler
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # nothing the translator prints reaches the caller's output
    os.close(null)
    _preload(family)
    gc.freeze()  # neither this process's collections nor its children's scan the caller's objects
    plans: dict[int, _Plan] = {}  # in the order they started
    try:
        while True:
            wait = min((p.deadline for p in plans.values()), default=None)
            wait = None if wait is None else min(POLL_S, max(0.0, wait - time.perf_counter()))
            ready = select.select([channel.read_fd, *(p.pidfd for p in plans.values())], [], [], wait)[0]
            if channel.read_fd in ready:
                if (requests := channel.drain()) is None:
                    return  # the caller is gone: its plans' children and files go with it (below)
                for request in requests:
                    if "prepare" in request:
                        prepared_domain(request["prepare"])
                    elif "cancel" in request:
                        if (plan := plans.get(request["cancel"])) is not None:
                            _kill(plan, ("error", "cancelled"))
                    else:
                        try:
                            plans[request["id"]] = _begin(request, channel)
                        except Exception as e:
                            channel.send({"id": request["id"], "status": "error", "cpu": 0.0, "peak_mb": 0.0,
                                          "message": f"the planner process failed: {e!r}"})
                            continue
                        channel.send({"id": request["id"], "pid": plans[request["id"]].pid})
            _limits([p for p in plans.values() if p.ended is None and p.pidfd not in ready])
            for plan_id, plan in list(plans.items()):
                if plan.ended is not None or plan.pidfd in ready:
                    del plans[plan_id]
                    channel.send({"id": plan_id, **_end(plan)})
    finally:
        for plan in plans.values():
            _kill(plan, ("error", ""))
            _end(plan)
            shutil.rmtree(plan.folder, ignore_errors=True)


def _preload(family: str) -> None:
    """What every child would otherwise do again, done once in the worker: import the family's planner; for Fast
    Downward's translator, also set its options (the same for every task: the child runs in the plan's folder) and
    import the Latin-1 codec it reads PDDL with (a tenth of translating a small task, together)."""
    importlib.import_module(PRELOAD[family])
    if family == "fd":
        from fast_downward.translate import options

        options.set_options(TRANSLATE_ARGS)
        codecs.lookup("iso-8859-1")


def _begin(request: dict, channel: Channel) -> _Plan:
    """Fork the child of a plan request."""
    used = _cpu()
    folder, search, cap = Path(request["folder"]), request["search"], request["cap"]
    deadline = time.perf_counter() + request["seconds"]
    domain = None if search is None else prepared_domain((folder / "domain.pddl").read_text())
    inherited = _address_space(os.getpid())
    gc.freeze()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(channel.write_fd)  # the worker's death must end its replies
        _child(parent, folder, search, cap, inherited + cap, domain)
    return _Plan(pid, os.pidfd_open(pid), folder, deadline, cap, inherited, _cpu() - used)


def _limits(live: list[_Plan]) -> None:
    """Kill the children past their deadline, and the newest while together they outgrow the newest one's cap."""
    now = time.perf_counter()
    for plan in live:
        if now >= plan.deadline:
            _kill(plan, ("timeout", ""))
    live = [p for p in live if p.ended is None]
    grown = [_growth(p) for p in live]
    while live and sum(grown) > live[-1].cap:
        grown.pop()
        plan = live.pop()
        _kill(plan, ("memout", "the planner needed more memory" + (" (beside another plan)" if live else "")))


def _growth(plan: _Plan) -> int:
    """How much a child has grown: its address space beyond the worker's that it inherited, or all of it once it
    runs the search binary."""
    size = _address_space(plan.pid)
    with contextlib.suppress(OSError):
        if os.readlink(f"/proc/{plan.pid}/exe") != os.readlink("/proc/self/exe"):
            return size
    return max(0, size - plan.inherited)


def _kill(plan: _Plan, why: tuple[str, str]) -> None:
    if plan.ended is None:
        plan.ended = why
        with contextlib.suppress(ProcessLookupError):
            os.killpg(plan.pid, signal.SIGKILL)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _end(plan: _Plan) -> dict:
    """Reap an ended (or killed) child: the plan's reply."""
    os.close(plan.pidfd)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(plan.pid, signal.SIGKILL)  # anything the planner left behind (it is not reaped yet)
    _, wait_status, usage = os.wait4(plan.pid, 0)
    status, message = plan.ended or _outcome(wait_status, plan.folder)
    return {"status": status, "message": message, "cpu": usage.ru_utime + usage.ru_stime + plan.cpu,
            "peak_mb": usage.ru_maxrss / 1024}


def _outcome(wait_status: int, folder: Path) -> tuple[str, str]:
    """Status and message of a child that ended on its own."""
    if os.WIFSIGNALED(wait_status):
        sig = signal.Signals(os.WTERMSIG(wait_status)).name
        return "error", f"the planner was killed by {sig}: {_log_tail(folder)}"
    code = os.WEXITSTATUS(wait_status)
    if code == 0:
        if (folder / PLAN_FILE).is_file():
            return "solved", ""
        return "unsolvable", "the planner found no plan"
    status, message = EXIT_STATUS.get(code, ("error", f"the planner failed with exit code {code}"))
    return status, message if status != "error" else f"{message}: {_log_tail(folder)}"


def _log_tail(folder: Path) -> str:
    log = folder / "log"
    return log.read_text(errors="replace")[-2000:].strip() if log.is_file() else ""


def _child(parent: int, folder: Path, search: list[str] | None, cap: int, limit: int, domain: tuple | None) -> None:
    """In the forked child: translate (or ground) and search, reporting through the exit code.

    The worker kills the child when it outgrows `limit`; the address-space limit set here, twice
    the cap above it, only catches an allocation too large and too quick for the worker to see
    (near that limit Python slows to a crawl instead of failing). The search binary gets the cap."""
    code = TRANSLATE_CRITICAL_ERROR
    try:
        _die_with(parent)
        os.setsid()  # its own process group to kill, and its own CPU share (Linux schedules sessions fairly)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # ignored by the worker; an ignored signal stays so in exec
        os.chdir(folder)
        os.environ["TMPDIR"] = tempfile.tempdir = str(folder)  # (tarski's grounder leaves files in its own)
        log = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        sys.stdout = sys.stderr = open(log, "w")  # noqa: SIM115  (Python-level output too)
        faulthandler.disable()  # a crash is reported by the worker, not dumped on an inherited stream
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit + cap, hard))
        if search is None:
            code = _lapkt()
        else:
            _translate(domain)
            package, build, config = search
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


def _die_with(parent: int) -> None:
    """Have the kernel SIGKILL this process when its `parent` (the single-threaded worker) dies, kept
    across exec; exit at once if it has died already."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(TRANSLATE_CRITICAL_ERROR)


def _binary(package: str, build: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, f"{package} is not installed"
    return Path(spec.origin).parent / build / "builds/release/bin/downward"


def _address_space(pid: int) -> int:
    """The virtual memory size of a process in bytes (0 once it is gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _translate(domain: tuple | None) -> None:
    """Fast Downward's translator on the folder's files (its options set by `_preload`), given what
    `prepared_domain` found."""
    from fast_downward.translate import main

    for module, name, value in shortcuts(domain):  # (this process is a fork: the worker's copy stays as it was)
        setattr(module, name, value)
    main.main()


def shortcuts(domain: tuple | None) -> list[tuple[object, str, object]]:
    """The translator's functions to replace (module, name, replacement) by what `prepared_domain` found once for
    the domain: its parse (the domain file is not read again), its invariants, and the splits of its rules."""
    from fast_downward.translate import invariant_finder, split_rules
    from fast_downward.translate.pddl_parser import parsing_functions, pddl_file

    parsed, invariants, rules = domain or (None, None, None)
    out: list[tuple[object, str, object]] = []
    if parsed is not None:
        read = pddl_file.parse_pddl_file
        out += [(parsing_functions, "parse_domain_pddl", lambda context, pddl: iter(parsed)),
                (pddl_file, "parse_pddl_file", lambda kind, name: [] if kind == "domain" else read(kind, name))]
    if invariants is not None:
        out.append((invariant_finder, "find_invariants", lambda task, reachable_action_params: iter(invariants)))
    if rules is not None:
        split = split_rules.split_rule

        def split_rule(rule: Any, name_generator: Any) -> list:
            """A rule of the domain's as the worker split it (once: the child's copy is changed by its use)."""
            atoms = (rule.effect, *rule.conditions)
            if (known := rules.pop(_rule_key(atoms), None)) is None:
                return split(rule, name_generator)
            source, result = known
            theirs = {id(a.predicate): b.predicate for a, b in zip(source, atoms, strict=True)
                      if not isinstance(a.predicate, str)}  # the worker's actions and axioms: this task's instead
            for r in result:
                r.effect = _repointed(r.effect, theirs)
                r.conditions = [_repointed(c, theirs) for c in r.conditions]
            return result

        out.append((split_rules, "split_rule", split_rule))
    return out


def _rule_key(atoms: tuple) -> tuple:
    """A translator rule's head and body, its actions and axioms by name (their objects differ between tasks)."""
    return tuple((a.predicate if isinstance(a.predicate, str) else (type(a.predicate).__name__, a.predicate.name),
                  a.args) for a in atoms)


def _repointed(atom: Any, predicates: dict[int, object]) -> Any:
    from fast_downward.translate import pddl

    if isinstance(atom.predicate, str):
        return atom
    return pddl.Atom(predicates[id(atom.predicate)], atom.args)


@functools.lru_cache(maxsize=8)
def prepared_domain(domain_pddl: str) -> tuple[tuple | None, tuple | None, dict | None]:
    """What the translator finds in a domain alone, once per worker and domain: the domain part of
    its parse (None if that fails: the child then parses and reports), `domain_invariants` and `domain_rules`."""
    from fast_downward.translate.pddl_parser import lisp_parser, parsing_functions

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            parsed = tuple(parsing_functions.parse_domain_pddl(
                parsing_functions.Context(), lisp_parser.parse_nested_list(domain_pddl.splitlines())))
    except (Exception, SystemExit):
        parsed = None
    return parsed, domain_invariants(domain_pddl), None if parsed is None else domain_rules(domain_pddl, parsed[0])


def domain_rules(domain_pddl: str, name: str) -> dict | None:
    """The translator's exploration rules of the domain's actions and axioms (from an empty problem: every task of
    the domain has them) split into joins as it splits them, by `_rule_key`, with the atoms they were split from:
    two fifths of translating a small task. None if that fails (each translator then splits its own)."""
    from fast_downward.translate import normalize, options, pddl_to_prolog, split_rules
    from fast_downward.translate.pddl_parser import lisp_parser, parsing_functions

    split, previous, rules = split_rules.split_rule, options.options, {}
    names = (f"p$kgplan{i}" for i in itertools.count())  # apart from the translator's own p$0, p$1, ...

    def record(rule: Any, _: Any) -> list:
        atoms = (rule.effect, *rule.conditions)
        rules[_rule_key(atoms)] = atoms, (result := split(rule, names))
        return result

    empty = f"(define (problem kgplan-rules) (:domain {name}) (:objects) (:init) (:goal (and)))"
    try:
        split_rules.split_rule = record
        options.set_options(TRANSLATE_ARGS)
        with contextlib.redirect_stdout(io.StringIO()):
            task = parsing_functions.parse_task(*(lisp_parser.parse_nested_list(t.splitlines())
                                                  for t in (domain_pddl, empty)))
            normalize.normalize(task)
            pddl_to_prolog.translate(task)
    except (Exception, SystemExit):
        return None
    finally:
        split_rules.split_rule, options.options = split, previous
    return rules


@functools.lru_cache(maxsize=8)
def domain_invariants(domain_pddl: str) -> tuple | None:
    """Fast Downward's invariants of a domain (`kgplan.domains.invariants.fd_invariants`: they hold in every
    problem of it), so that each translator reuses them instead of synthesising them again (a third of its
    time on a small task). None if that fails or takes a second: each translator then synthesises its own."""
    from kgplan.domains.invariants import fd_invariants

    start = time.process_time()
    try:
        _, invariants, _ = fd_invariants(domain_pddl, 1)
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


def worker(family: str) -> Worker:
    """This process's worker for a family of planners (`Planner.family`)."""
    return _WORKERS.setdefault(family, Worker(family))


_WORKERS: dict[str, Worker] = {}


@atexit.register
def _close_all() -> None:
    for w in _WORKERS.values():
        w.close()
