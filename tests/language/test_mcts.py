"""The LLM's parts of the tree search with a scripted LLM: MC-DML's prior and memories, its call budget per
decision and reflections, LLM-MCTS's sampled belief and its policy (retrieved examples, sampled answers, the
cache), DR-MCTS over the LLM policy, goals and steps in words."""

from __future__ import annotations

import math

import pytest

from kgplan.language.llm import ScriptedLLM, TokenChoice
from kgplan.language.mcts import (
    ActionScore,
    ActionScores,
    Example,
    LLMPolicy,
    LLMPrior,
    Memory,
    Reflection,
    action_text,
    allowed_actions,
    goal_text,
    llm_belief,
)
from kgplan.planners.grounding import GroundTask
from kgplan.planners.mcts.priors import UniformPrior
from kgplan.planners.mcts.search import Budget, Settings
from kgplan.planners.state import Step
from tests.support.fake_llm import FakeServer, ok
from tests.support.kitchen import DOMAIN, OBJECTS, START, goal, searcher

TEMPLATES = DOMAIN.meta["explore"]["actions"]


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


def test_llm_belief_counts_the_places_of_sampled_3_shot_answers_matched_by_embeddings() -> None:
    """LLM-MCTS's belief: M answers to a 3-shot prompt, each naming one or more places (matched to the place kinds
    by MiniLM, counted once per answer; a kind's count shared among its copies), normalised and floored at 1e-3;
    asked once per item kind and set of places."""
    llm = ScriptedLLM(["fridge, kitchen counter", "the refrigerator", "Bed and fridge and the fridge", "fridge."])
    places = {"fridge": "container", "kitchen_counter": "surface", "bed": "surface", "bed_2": "surface",
              "sink": "surface"}
    b = llm_belief(llm, samples=4)
    milk = b({"milk": "item", "milk_2": "item"}, places)
    z = 1 + 1e-3
    assert milk["milk"] == pytest.approx({"fridge": 4 / 6 / z, "kitchen_counter": 1 / 6 / z, "bed": 1 / 12 / z,
                                          "bed_2": 1 / 12 / z, "sink": 1e-3 / z})
    assert milk["milk_2"] == milk["milk"] and len(llm.prompts) == 4  # one item kind: asked 4 times
    prompt = llm.prompts[0]  # the instructions, 3 examples as earlier turns, then the question
    assert [m["role"] for m in prompt] == ["system", *["user", "assistant"] * 3, "user"]
    assert prompt[1]["content"].endswith("Item: stapler") and prompt[2]["content"] == "desk, bookshelf"
    assert prompt[-1]["content"] == "Places: bed, fridge, kitchen counter, sink.\nItem: milk"
    assert b({"milk": "item"}, places) == {"milk": milk["milk"]} and len(llm.prompts) == 4  # cached
    llm.replies.extend(["sink"] * 4)
    other = b({"milk": "item"}, {"sink": "surface", "bed": "surface"})["milk"]
    assert other["sink"] > other["bed"]
    assert len(llm.prompts) == 8  # another set of places: asked again


def test_llm_belief_by_log_probabilities_shares_a_first_token_among_the_places_it_begins() -> None:
    """One call per item kind: each of the reply's first-token alternatives gives its probability to the place
    kinds whose words begin with it, split among them (the two kitchen places share 'kitchen')."""
    top = {" fridge": math.log(0.5), "kitchen": math.log(0.3), " bed": math.log(0.1), "The": math.log(0.1)}
    llm = ScriptedLLM([TokenChoice("fridge", top)])
    places = {"fridge": "container", "kitchen_counter": "surface", "kitchen_table": "surface", "bed": "surface",
              "bed_2": "surface"}
    b = llm_belief(llm, logprobs=True, floor=0.0)
    milk = b({"milk": "item", "milk_2": "item"}, places)
    assert milk["milk"] == pytest.approx({"fridge": 0.5 / 0.9, "kitchen_counter": 0.15 / 0.9,
                                          "kitchen_table": 0.15 / 0.9, "bed": 0.05 / 0.9, "bed_2": 0.05 / 0.9})
    assert milk["milk_2"] == milk["milk"] and len(llm.prompts) == 1
    assert llm.prompts[0][-1]["content"] == "Places: bed, fridge, kitchen counter, kitchen table.\nItem: milk"


def test_goals_and_steps_in_words() -> None:
    assert goal_text(DOMAIN, goal("(and (in milk fridge) (in wine_glass fridge))")) == \
        "item milk is in or on place fridge and item wine glass is in or on place fridge"
    assert action_text(Step("pick", ("milk", "kitchen_counter")), DOMAIN.meta["explore"]["actions"]) == \
        "pick up milk from kitchen counter"
    assert action_text(Step("pick", ("milk", "kitchen_counter")), {}) == "pick milk kitchen counter"


def policy(llm, examples=(), **kw) -> LLMPolicy:
    return LLMPolicy(llm, "item milk is in or on place fridge", examples, UniformPrior(), TEMPLATES,
                     allowed_actions(DOMAIN, TEMPLATES), **kw)


WALKS = [Step("walk", ("bed", "fridge")), Step("walk", ("bed", "counter")), Step("open", ("fridge",))]


def test_llm_policy_prompts_with_the_k_examples_most_like_the_task(server: FakeServer) -> None:
    """LLM-MCTS: the k demonstrations whose task is most like the goal, each cut where what had been seen is
    most like what is seen now; five answers sampled at 0.6, cut at the first comma."""
    fridge = Example("item milk is in or on place fridge", ("walk to counter", "pick up milk from counter",
                                                            "walk to fridge", "open fridge", "put milk in fridge"),
                     ("Not found yet: milk.", "Every item of the task has been found.",
                      "Every item of the task has been found.", "Every item of the task has been found.",
                      "Every item of the task has been found."), "Objects: counter, fridge, milk.")
    cheese = Example("item cheese is in or on place fridge", ("walk to fridge", "open fridge"),
                     ("Not found yet: cheese.", "Not found yet: cheese."))
    other = [Example("switch the television on", ("walk to sofa",), ("",)),
             Example("water the plants in the garden", ("walk to garden",), ("",))]
    server.script = [ok("walk to counter")] * 5
    p = policy(server.client(), [other[0], cheese, other[1], fridge], k=2)
    p((), WALKS, {"milk": {"counter": 0.5, "fridge": 0.5}})
    assert len(server.requests) == 5 and server.requests[0]["n"] == 5 and server.requests[-1]["n"] == 1
    assert {r["temperature"] for r in server.requests} == {0.6} and server.requests[0]["stop"] == [",", "\n"]
    text = server.requests[0]["messages"][0]["content"]
    assert "walk to <place>, open <container>, pick up <item> from <place>, put <item> in <place>" in text
    assert "item cheese is in or on place fridge" in text and "television" not in text and "garden" not in text
    assert ("item milk is in or on place fridge\nObjects: counter, fridge, milk.\nNot found yet: milk.\nPrevious "
            "actions: .\nNext actions: walk to counter, pick up milk from counter, walk to fridge, open fridge, put "
            "milk in fridge") in text
    assert text.endswith("Now, complete the following task.\nitem milk is in or on place fridge\n"
                         "Objects: bed, counter, fridge.\nNot found yet: milk.\nPrevious actions: .\nNext actions:")
    assert p.llm_calls == 5


def test_llm_policy_prior_from_sampled_answers(server: FakeServer) -> None:
    """Five answers, three naming the walk to the fridge (one with more after a comma, one numbered), one the
    walk to the counter, one opening the fridge: each matched to its action (softmax of 100 * cosine: one-hot
    here), counted, then mixed with uniform by 0.5: 0.5*3/5 + 0.5/3 and 0.5*1/5 + 0.5/3."""
    server.script = [ok(t) for t in ("walk to fridge", "walk to fridge, open fridge", "walk to counter",
                                     "open fridge", "1. Walk to fridge.")]
    p = policy(server.client())
    assert p(("(walk bed counter)",), WALKS, {}) == pytest.approx([0.5 * 3 / 5 + 0.5 / 3, 0.5 / 5 + 0.5 / 3,
                                                                  0.5 / 5 + 0.5 / 3], abs=1e-6)
    text = server.requests[0]["messages"][0]["content"]
    assert text.endswith("Objects: bed, counter, fridge.\nEvery item of the task has been found.\n"
                         "Previous actions: walk to counter.\nNext actions:")


def test_llm_policy_is_cached_per_state_and_actions(server: FakeServer) -> None:
    """The same state description and actions again: no request; another state: new samples; the budget
    spent: the fallback, no request."""
    server.script = [ok("walk to fridge")] * 10
    p = policy(server.client(), max_calls=10)
    first = p(("(walk bed counter)",), WALKS, {"milk": {"fridge": 1.0}})
    assert len(server.requests) == 5
    assert p(("(walk bed counter)",), WALKS, {"milk": {"fridge": 1.0}}) == first and len(server.requests) == 5
    assert p(("(walk bed counter)",), WALKS[:2], {"milk": {"fridge": 1.0}}) != first  # other actions: asked
    assert len(server.requests) == 10 and p.llm_calls == 10
    assert p((), WALKS, {}) == pytest.approx([1 / 3] * 3) and len(server.requests) == 10  # spent: the fallback


def test_a_failing_llm_leaves_the_node_to_the_fallback(server: FakeServer) -> None:
    from tests.support.fake_llm import error

    server.script = [error(400, "bad request")]
    p = policy(server.client())
    assert p((), WALKS, {}) == pytest.approx([1 / 3] * 3) and p.llm_calls == 1


@pytest.mark.parametrize("estimator", ["mc", "is", "dr"])
def test_few_simulations_follow_the_llm_policy(estimator: str) -> None:
    """DR-MCTS (and MC, IS) at 10 simulations with the LLM policy as the prior and the behaviour policy: the
    decision is the walk the LLM's answers favour (to the fridge; with a uniform prior the same search walks to
    the counter); the decision counts its LLM calls, one per sample, and a state seen again is not asked
    again."""
    llm = ScriptedLLM(["walk to fridge"] * 1000)
    paper = Settings(c=1.2, horizon=20, policy_weight=0.0, ff_rollouts=False, handover=False, averaging=False,
                     estimator=estimator, behaviour="prior")  # the papers' settings (kgplan.agent.search.PAPER)
    search = searcher(policy(llm, samples=3), paper)
    d = search.decide(START, {"milk": {"fridge": 0.5, "counter": 0.5}}, Budget(simulations=10, llm_calls=30))
    assert d.step == Step("walk", ("bed", "fridge")) and d.simulations == 10
    assert searcher(UniformPrior(), paper).decide(START, {"milk": {"fridge": 0.5, "counter": 0.5}},
                                                  Budget(simulations=10)).step == Step("walk", ("bed", "counter"))
    assert 3 <= d.llm_calls == len(llm.prompts) <= 30 and d.llm_calls % 3 == 0
    again = searcher(search.prior, search.settings)  # the same policy, its cache: the root is not asked again
    assert again.decide(START, {"milk": {"fridge": 0.5, "counter": 0.5}}, Budget(simulations=1)).llm_calls == 0
