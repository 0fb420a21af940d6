"""The time and memory limits of one plan call, for the work done in the caller's process (goal grounding,
relevance pruning) as well as the planner's.

`bounded(timeout, memory_mb)` sets a budget for the calling thread (a context variable: each API job thread
has its own); the loops that can grow with the number of ground instances (`State.bindings`, the relevance
explorer's joins and bindings) call `tick()`, which raises `Exhausted` once the deadline has passed or the
process has grown by more than the memory cap since the call began, and rings the budget's alarm once its
time has come (the pipeline starts the full-state planner then, however long pruning takes). Outside `bounded`,
`tick` costs one lookup. A goal whose grounding alone would explode is refused before any of it (`check_instances`).
"""

from __future__ import annotations

import contextvars
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kgplan.errors import InputError, PlannerError

CHECK_EVERY = 1024  # ticks between two looks at the clock and the resident memory
INSTANCE_BYTES = 1024  # the least a ground instance costs once grounded (our formulas, the planner's operators)
PAGE = os.sysconf("SC_PAGE_SIZE")


class Exhausted(PlannerError):
    """The plan call ran out of time ('timeout') or memory ('memout') before the planner answered."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def _rss() -> int:
    """This process's resident memory in bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        return 0


@dataclass
class Budget:
    deadline: float  # time.monotonic()
    timeout: float
    memory_mb: int
    rss0: int  # the resident memory when the call began
    ticks: int = 0
    alarm: tuple[float, Callable[[], None]] | None = None  # (time.monotonic(), what a check past then calls, once)

    def left(self) -> float:
        """Seconds left before the deadline (at least a little, so a planner call can still say TIMEOUT)."""
        return max(self.deadline - time.monotonic(), 0.01)

    def check(self) -> None:
        if self.alarm is not None and time.monotonic() >= self.alarm[0]:
            then, self.alarm = self.alarm[1], None
            then()
        if time.monotonic() > self.deadline:
            raise Exhausted("timeout", f"goal grounding and pruning ran past the timeout ({self.timeout:g} s)")
        if self.rss0 and _rss() - self.rss0 > self.memory_mb * 2**20:
            raise Exhausted("memout", f"goal grounding and pruning grew past the memory cap ({self.memory_mb} MB)")


_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("kgplan_budget", default=None)


@contextmanager
def bounded(timeout: float, memory_mb: int) -> Iterator[Budget]:
    """A budget of `timeout` seconds from now and `memory_mb` MB over today's memory, for this thread."""
    budget = Budget(time.monotonic() + timeout, timeout, memory_mb, _rss())
    token = _budget.set(budget)
    try:
        yield budget
    finally:
        _budget.reset(token)


def tick() -> None:
    """Count one unit of grounding work; every `CHECK_EVERY`, raise `Exhausted` if the budget is spent."""
    budget = _budget.get()
    if budget is not None:
        budget.ticks += 1
        if budget.ticks % CHECK_EVERY == 0:
            budget.check()


def check_instances(what: str, count: int, memory_mb: int) -> None:
    """Refuse (InputError) grounding `count` instances of `what` when even `INSTANCE_BYTES` each would pass the
    memory cap."""
    most = memory_mb * 2**20 // INSTANCE_BYTES
    if count > most:
        raise InputError(f"{what} would need {count:,} ground instances; the memory cap ({memory_mb} MB) allows at "
                         f"most {most:,}: name objects instead of quantifying over them, or narrow the types")
