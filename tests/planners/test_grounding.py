"""The ground task against the domain's own semantics (planners/state.py), and its refusal of richer actions."""

from __future__ import annotations

import itertools

import pytest

from kgplan.domains.model import resolve_domain
from kgplan.errors import DomainError
from kgplan.planners.grounding import GroundTask
from kgplan.planners.state import State
from tests.support.kitchen import DOMAIN, OBJECTS, START, STATIC


def test_ground_task_agrees_with_the_domain_semantics() -> None:
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    places = ("fridge", "counter", "bed")
    for at, where, closed in itertools.product(places, (*places, None), (True, False)):
        s = set(STATIC) | {("agent_at", (at,))}
        s |= {("in", ("milk", where))} if where else {("holding", ("milk",))}
        s |= {("closed", ("fridge",))} if closed else set()
        state = State(DOMAIN, OBJECTS, s)
        fast = {task.operators[i].step for i in task.applicable(frozenset(s))}
        slow = {step for step in task.by_step if state.holds(*_pre(state, step))}
        assert fast == slow
        for step in fast:
            after = state.copy()
            after.apply(step)
            assert task.apply(task.by_step[step], frozenset(s)) == frozenset(after.facts)


def _pre(state: State, step):
    act, b = state.bind(step)
    return act.precondition, b


def test_static_preconditions_are_evaluated_once() -> None:
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    # walking between places of one room: in_room is static, so no operator keeps it as a precondition
    assert all(q[0] != "in_room" for op in task.operators for q in op.pre | op.pre_not)
    assert {q for op in task.adders[("holding", ("milk",))] for q in op.delete} >= {("in", ("milk", "counter"))}


def test_a_domain_beyond_strips_is_refused_with_the_actions_named() -> None:
    with pytest.raises(DomainError, match="prepare_meal"):
        GroundTask(resolve_domain("cooking"), {}, set())
