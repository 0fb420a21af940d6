"""What the agent sees: the items at an open place it stands at, and the goals of seeing each place."""

from __future__ import annotations

from kgplan.planners.grounding import GroundTask
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts.observe import Observer
from tests.support.kitchen import DOMAIN, OBJECTS, START, STATIC


def test_the_observer_sees_open_places_where_the_agent_stands() -> None:
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    see = Observer(bl.BeliefSpec.of(DOMAIN), task, ["milk"])
    milk_in_fridge = ("in", ("milk", "fridge"))
    closed = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("fridge",)), milk_in_fridge})
    assert see.visible(closed) == [] and see(closed) == frozenset()
    opened = closed - {("closed", ("fridge",))}
    assert see.visible(opened) == ["fridge"] and see(opened) == {milk_in_fridge}
    assert set(see.reach) == {"fridge", "counter", "bed"}
    assert see.reach["fridge"].helpful(START)[0] == 2  # walk there, open it
    assert see.reach["bed"].holds(START)
