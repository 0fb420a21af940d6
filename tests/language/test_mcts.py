"""The LLM's parts of the tree search with a scripted LLM: MC-DML's prior and memories, its call budget per
decision and reflections, LLM-MCTS's sampled belief, goals and steps in words."""

from __future__ import annotations

import pytest

from kgplan.language.llm import ScriptedLLM
from kgplan.language.mcts import (
    ActionScore,
    ActionScores,
    LLMPrior,
    Memory,
    PlaceChoice,
    Reflection,
    action_text,
    goal_text,
    llm_belief,
)
from kgplan.planners.grounding import GroundTask
from kgplan.planners.mcts.priors import UniformPrior
from kgplan.planners.mcts.search import Budget, Settings
from kgplan.planners.state import Step
from tests.support.kitchen import DOMAIN, OBJECTS, START, goal, searcher


def test_memory_keeps_k_reflections_and_puts_them_in_the_prompt() -> None:
    llm = ScriptedLLM([Reflection(reflection=f"lesson {k}") for k in range(5)])
    memory = Memory(k=3)
    prior = LLMPrior(llm, "put the milk in the fridge", memory, UniformPrior(), {}, max_calls=99)
    for k in range(5):
        prior.reflect([f"(walk bed counter) {k}"])
    assert list(memory.reflections) == ["lesson 2", "lesson 3", "lesson 4"]
    memory.trajectory.append("(walk bed counter)")
    llm.replies.append(ActionScores(scores=[ActionScore(action="open fridge", probability=0.9)]))
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    actions = [a.step for a in task.operators[:3]]
    p = prior(("(walk bed fridge)",), actions, {"milk": {"fridge": 0.7}})
    text = llm.prompts[-1][0]["content"]
    assert "lesson 4" in text and "lesson 1" not in text and "(walk bed counter)" in text and "fridge 70%" in text
    assert sum(p) == pytest.approx(1.0)
    calls = len(llm.prompts)
    assert prior(("(walk bed fridge)",), actions, {}) == p  # cached per history and node
    assert len(llm.prompts) == calls


def test_llm_prior_scores_actions_and_stops_at_its_call_limit() -> None:
    llm = ScriptedLLM([ActionScores(scores=[ActionScore(action="walk to fridge", probability=1.0)])])
    prior = LLMPrior(llm, "goal", Memory(), UniformPrior(), {"walk": "walk to {1}"}, max_calls=1)
    task = GroundTask(DOMAIN, OBJECTS, set(START))
    acts = [task.operators[i].step for i in task.applicable(START)]
    p = prior((), acts, {})
    assert max(zip(p, acts, strict=True))[1].args[1] == "fridge"
    assert prior(("other",), acts, {}) == pytest.approx([1 / len(acts)] * len(acts))  # fallback, no call
    assert prior.llm_calls == 1
    prior.limit_calls(1)  # a new decision's budget: one more call
    assert not prior.spent() and prior.max_calls == 2
    prior.limit_calls(None)
    assert prior.max_calls == 2


@pytest.mark.parametrize("budget", [Budget(simulations=60, llm_calls=2), Budget(simulations=60, llm_calls=0)])
def test_the_llm_call_budget_is_per_decision(budget: Budget) -> None:
    llm = ScriptedLLM([ActionScores(scores=[]) for _ in range(100)])
    search = searcher(LLMPrior(llm, "goal", Memory(), UniformPrior(), {}))
    for _ in range(2):
        calls = len(llm.prompts)
        d = search.decide(START, {"milk": {"fridge": 0.5, "counter": 0.5}}, budget)
        assert d.simulations == budget.simulations  # LLM calls spent: the fallback prior goes on
        assert d.llm_calls == len(llm.prompts) - calls <= budget.llm_calls


def test_a_search_where_every_simulation_fails_writes_a_reflection_within_k() -> None:
    lessons = iter(range(100))

    def reply(messages: list[dict]):
        if "This attempt failed" in messages[0]["content"]:
            return Reflection(reflection=f"lesson {next(lessons)}")
        return ActionScores(scores=[])

    llm = ScriptedLLM([reply] * 100)
    memory = Memory(k=3)
    prior = LLMPrior(llm, "put the milk in the fridge", memory, UniformPrior(), {}, max_calls=100)
    search = searcher(prior, Settings(horizon=1))  # one step can never reach the goal
    for _ in range(5):
        search.decide(START, {"milk": {"counter": 1.0}}, Budget(simulations=3))
        assert "This attempt failed" in llm.prompts[-1][0]["content"]
    assert list(memory.reflections) == ["lesson 2", "lesson 3", "lesson 4"]
    search.decide(START, {"milk": {"counter": 1.0}}, Budget(simulations=3))
    asked = [p[0]["content"] for p in llm.prompts if "Lessons from earlier failed attempts" in p[0]["content"]]
    assert asked and "lesson 4" in asked[-1] and "lesson 1" not in asked[-1]  # the memory is in the prompt


def test_llm_belief_counts_sampled_answers() -> None:
    llm = ScriptedLLM([PlaceChoice(place=p) for p in ("fridge", "fridge", "Bed", "the moon")])
    places = {"fridge": "container", "bed": "surface", "sink": "surface"}
    b = llm_belief(llm, samples=4, floor=0.0)({"milk": "item"}, places)
    assert b["milk"] == pytest.approx({"fridge": 2 / 3, "bed": 1 / 3})
    assert "milk" in llm.prompts[0][0]["content"] and "fridge, bed, sink" in llm.prompts[0][0]["content"]


def test_goals_and_steps_in_words() -> None:
    assert goal_text(DOMAIN, goal("(and (in milk fridge) (in wine_glass fridge))")) == \
        "item milk is in or on place fridge and item wine glass is in or on place fridge"
    assert action_text(Step("pick", ("milk", "kitchen_counter")), DOMAIN.meta["explore"]["actions"]) == \
        "pick up milk from kitchen counter"
    assert action_text(Step("pick", ("milk", "kitchen_counter")), {}) == "pick milk kitchen counter"
