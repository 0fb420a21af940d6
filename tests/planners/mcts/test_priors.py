"""The prior policies without an LLM, and the protocol's hooks (no-ops for them)."""

from __future__ import annotations

import pytest

from kgplan.planners.grounding import GroundTask
from kgplan.planners.mcts.priors import BeliefMassPrior, UniformPrior
from tests.support.kitchen import DOMAIN, OBJECTS, START, STATIC

AT_FRIDGE = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("fridge",))})


def test_belief_mass_prior_weighs_actions_by_where_the_unknown_items_may_be() -> None:
    prior = BeliefMassPrior(DOMAIN, floor=0.0)
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    acts = [task.operators[i].step for i in task.applicable(AT_FRIDGE)]
    p = dict(zip(map(str, acts), prior((), acts, {"milk": {"counter": 0.6, "fridge": 0.3, "bed": 0.1}}),
                 strict=True))
    # walk counts where it leads (not where it leaves), open the container it opens
    assert p == pytest.approx({"(walk fridge counter)": 0.6, "(open fridge)": 0.3, "(walk fridge bed)": 0.1})
    assert prior((), acts, {}) == pytest.approx([1 / 3] * 3)  # nothing unknown: uniform


def test_priors_without_an_llm_make_no_calls_and_ignore_the_hooks() -> None:
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    acts = [task.operators[i].step for i in task.applicable(AT_FRIDGE)]
    for prior in (UniformPrior(), BeliefMassPrior(DOMAIN)):
        before = prior((), acts, {"milk": {"counter": 1.0}})
        prior.limit_calls(0)
        prior.reflect(["(walk fridge counter)"])
        assert prior((), acts, {"milk": {"counter": 1.0}}) == before and prior.llm_calls == 0
    assert UniformPrior()((), acts, {}) == pytest.approx([1 / 3] * 3)
