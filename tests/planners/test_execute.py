"""Plan execution reads, checks and writes each step in one transaction."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kgplan.graph.backends import open_graph
from kgplan.graph.model import Delta, Fact
from kgplan.graph.world import WorldGraph
from kgplan.planners.execute import execute
from kgplan.planners.state import State, Step

F = Fact.parse


def test_a_concurrent_change_cannot_come_between_check_and_write(
        world: WorldGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a step's preconditions are being checked, another connection moves the robot away.

    The move must wait for the step's transaction: the step is written on the state it was
    checked on, and the move lands after it (never between the check and the write)."""
    move = Delta(remove=[F("(agent_at robot hallway)")], add=[F("(agent_at robot kitchen)")],
                 source="sensor", text="concurrent move")
    moved: list[int] = []

    def other_writer() -> None:
        with open_graph(world.url) as other:
            moved.append(other.apply(move).id)

    thread = threading.Thread(target=other_writer)
    checked = State.failed_conjunct

    def check_then_wait(self: State, *args: Any, **kwargs: Any) -> Any:
        if not thread.is_alive() and not moved:
            thread.start()
            time.sleep(0.5)  # ample time for the other writer, were it not held off
        return checked(self, *args, **kwargs)

    monkeypatch.setattr(State, "failed_conjunct", check_then_wait)
    result = execute(world, [Step.parse("(switch_on robot hallway_light hallway)")])
    thread.join(timeout=30)
    assert result.done and moved, result.failure
    (step_id,) = result.changes
    assert moved[0] > step_id, "the concurrent move landed between the step's check and its write"
    assert [c.id for c in world.history()[-2:]] == [step_id, moved[0]]
    facts = set(world.facts())
    assert {F("(switched_on hallway_light)"), F("(agent_at robot kitchen)")} <= facts
