"""FF's relaxed-plan heuristic on the ground task: distances, shared steps counted once, helpful actions."""

from __future__ import annotations

from kgplan.planners.grounding import GroundTask
from kgplan.planners.relaxation import Goal
from tests.support.kitchen import DOMAIN, OBJECTS, START, STATIC, goal


def test_goal_distance_is_the_relaxed_plan_length_with_helpful_actions() -> None:
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    g = Goal(goal(), task)
    s = START | {("in", ("milk", "counter"))}
    # the relaxed plan: walk to the counter, pick; walk to the fridge, open, put (h_add would count the walk
    # to the fridge twice, once for open and once for put: 7)
    assert g.helpful(s)[0] == 5
    # two goals that share the walk to and the opening of the fridge count them once
    g2 = Goal(goal("(and (in milk fridge) (in jam fridge))"), GroundTask(DOMAIN, OBJECTS | {"jam": "item"}, set(START)))
    # pick the jam here; walk to the counter, pick the milk; walk to the fridge, open, put both (h_add: 6 + 5)
    assert g2.helpful(s | {("in", ("jam", "bed"))})[0] == 7
    assert g.helpful(frozenset({*STATIC, ("in", ("milk", "fridge"))}))[0] == 0
    # helpful: the applicable first steps of the cheapest supports (walk to the counter, walk to the fridge)
    assert {str(a.step) for a in g.helpful(s)[1]} == {"(walk bed counter)", "(walk bed fridge)"}


def test_an_unreachable_goal_and_a_goal_beyond_literals() -> None:
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    # the milk is nowhere: nothing achieves (in milk ?) but put, which needs it held, which needs it somewhere
    assert Goal(goal(), task).helpful(START) == (99, set())
    either = Goal(goal("(or (agent_at fridge) (agent_at counter))"), task)
    assert not either.literal and either.helpful(START) == (1, set())
    assert either.holds(START | {("agent_at", ("counter",))}) and not either.holds(START)
