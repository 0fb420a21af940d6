"""A one-room rearrange world for the search tests: a closed fridge, a counter and a bed, the agent at the
bed, the milk's place unknown."""

from __future__ import annotations

import random

from kgplan.domains.formula import Formula, parse_formula
from kgplan.domains.model import Problem, resolve_domain
from kgplan.domains.sexpr import read
from kgplan.planners.grounding import GroundTask
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts.observe import Observer
from kgplan.planners.mcts.priors import Prior, UniformPrior
from kgplan.planners.mcts.search import Search, Settings
from kgplan.planners.relaxation import Goal

DOMAIN = resolve_domain("rearrange")
OBJECTS = {"kitchen": "room", "fridge": "container", "counter": "surface", "bed": "surface", "milk": "item"}
STATIC = {("in_room", (p, "kitchen")) for p in ("fridge", "counter", "bed")}
START = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("bed",))})
# the same world as a PDDL problem, the bed looked at
PROBLEM = Problem.parse(
    "(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container counter bed - surface "
    "milk - item) (:init (in_room fridge kitchen) (in_room counter kitchen) (in_room bed kitchen) "
    "(closed fridge) (agent_at bed) (looked bed)))", "kitchen")


def goal(text: str = "(in milk fridge)") -> Formula:
    return parse_formula(read(text, "goal")[0], "goal")


def searcher(prior: Prior | None = None, settings: Settings | None = None) -> Search:
    """A searcher for the milk in the fridge (uniform priors unless `prior` is given)."""
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    return Search(task, Goal(goal(), task), Observer(bl.BeliefSpec.of(DOMAIN), task, ["milk"]),
                  prior or UniformPrior(), UniformPrior(), settings, random.Random(0))
