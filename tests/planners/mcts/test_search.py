"""The tree search: importance weights of rollouts, budgets, PUCT selection, rollout values, the belief-greedy
policy and its mixing into the prior, and a goal reached whose item is unknown."""

from __future__ import annotations

import random

import pytest

from kgplan.planners.grounding import GroundTask
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts import search as ms
from kgplan.planners.mcts.observe import Observer
from kgplan.planners.mcts.priors import UniformPrior
from kgplan.planners.mcts.search import Budget, Search, Settings
from kgplan.planners.relaxation import Goal
from tests.support.kitchen import DOMAIN, OBJECTS, START, STATIC, goal, searcher


def test_random_rollouts_draw_from_the_rollout_prior_and_are_worth_nothing_when_cut_off() -> None:
    class Fixed(UniformPrior):
        def __call__(self, history, actions, beliefs):  # always the first action (walk, in grounding order)
            return [1.0] + [0.0] * (len(actions) - 1)

    search = searcher(settings=Settings(ff_rollouts=False, horizon=3))
    search.rollout_prior = Fixed()
    s = START | {("in", ("milk", "counter"))}
    assert {search._rollout(s, 0, {}, {}) for _ in range(10)} == {0.0}  # three walks never reach the goal
    search.rollout_prior = UniformPrior()
    at_fridge = frozenset(STATIC | {("agent_at", ("fridge",)), ("holding", ("milk",))})
    assert search._rollout(at_fridge, 0, {}, {}) in {1.0, 0.95, 0.95 ** 2, 0.0}


@pytest.mark.parametrize("budget", [Budget(simulations=37), Budget(simulations=10**6, seconds=0.05)])
def test_every_budget_is_respected(budget: Budget) -> None:
    search = searcher()
    for _ in range(2):  # a budget is per decision
        d = search.decide(START, {"milk": {"fridge": 0.5, "counter": 0.5}}, budget)
        if budget.seconds is None:
            assert d.simulations == budget.simulations
        else:
            assert d.seconds < budget.seconds + 0.05  # checked before each simulation
        assert d.llm_calls == 0


@pytest.mark.parametrize("estimator", ["mc", "is", "dr"])
def test_search_reaches_a_goal_whose_item_is_unknown(estimator: str) -> None:
    search = searcher(settings=Settings(estimator=estimator))
    truth = START | {("in", ("milk", "counter"))}
    s, beliefs = START, {"milk": {"counter": 0.9, "bed": 0.1}}
    for _ in range(8):
        d = search.decide(s, beliefs, Budget(200))
        truth = search.task.apply(search.task.by_step[d.step], truth)
        if search.goal.holds(truth):
            break
        s = frozenset(a for a in truth if a[0] != "in" or a in search.observe(truth) or a[1][1] == "fridge")
        if search.observe(truth):
            beliefs = {}
    assert search.goal.holds(truth)


def test_a_small_lead_in_q_does_not_shut_out_an_untried_action() -> None:
    search = searcher()
    s = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("counter",)), ("in", ("milk", "counter"))})
    node = ms._Node()
    node.actions = search.task.applicable(s)
    assert len(node.actions) == 3
    node.prior, node.na, node.q, node.n = [1 / 3] * 3, [3, 1, 0], [0.5, 0.45, 0.0], 4
    # the untried action counts at the node's mean (0.4875), not at the least seen value
    assert search._select(node, s) == 2
    node.na, node.q, node.n = [30, 10, 10], [0.9, 0.1, 0.1], 50
    assert search._select(node, s) == 0  # once all are tried, a clear lead wins


def test_a_rollout_cut_off_before_the_goal_is_worth_the_heuristic_value_where_it_stopped() -> None:
    gamma = 0.9
    search = searcher(settings=Settings(gamma=gamma, rollout_depth=1, rollout_epsilon=0.0))
    s = START | {("in", ("milk", "counter"))}
    # the greedy step from the bed, to the counter where the milk is, leaves 4 of the relaxed plan's 5 steps
    belief = {"milk": {"counter": 1.0}}
    values = {round(search._rollout(s, 0, belief, belief), 9) for _ in range(20)}
    assert values == {round(gamma * gamma ** 4, 9)}
    # a rollout that reaches the goal is worth its discounted return
    at_fridge = frozenset(STATIC | {("agent_at", ("fridge",)), ("holding", ("milk",))})
    assert search._rollout(at_fridge, 0, {}, {}) == pytest.approx(1.0)


def test_the_greedy_policy_looks_where_most_belief_mass_is_per_step() -> None:
    search = searcher()
    bare = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("bed",))})
    names = {i: str(search.task.operators[i].step) for i in search.task.applicable(bare)}
    # the counter is one step away (walk), the fridge two (walk, open): 0.4 per step against 0.3
    guess = {"milk": {"counter": 0.4, "fridge": 0.6}}
    assert search._next_place(bare, guess) == "counter"
    assert {names[i] for i in search._greedy(bare, guess)[1]} == {"(walk bed counter)"}
    # 0.2 per step against 0.4: go and look in the fridge
    guess = {"milk": {"counter": 0.2, "fridge": 0.8}}
    assert search._next_place(bare, guess) == "fridge"
    h, chosen = search._greedy(bare, guess)
    assert {names[i] for i in chosen} == {"(walk bed fridge)"}
    assert h == 0  # guessed in the fridge, the milk is where the goal wants it
    assert search._next_place(bare, {}) is None  # nothing unknown


def test_the_greedy_policy_finds_every_item_before_it_delivers() -> None:
    task = GroundTask(DOMAIN, OBJECTS | {"egg": "item"}, set(START))
    both = Goal(goal("(and (in milk fridge) (in egg fridge))"), task)
    search = Search(task, both, Observer(bl.BeliefSpec.of(DOMAIN), task, ["milk", "egg"]),
                    UniformPrior(), UniformPrior(), None, random.Random(0))
    s = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("counter",)), ("in", ("milk", "counter")),
                            ("in", ("egg", "bed"))})
    step = {i: str(task.operators[i].step) for i in task.applicable(s)}
    guess = {"egg": {"bed": 1.0}}
    # the milk is seen at the counter: pick it up before walking away
    assert {step[i] for i in search._greedy(s, guess)[1]} == {"(pick milk counter)"}
    holding = s - {("in", ("milk", "counter"))} | {("holding", ("milk",))}
    step = {i: str(task.operators[i].step) for i in task.applicable(holding)}
    # the walks to the fridge and to the bed shorten the relaxed plan alike; the bed is where the egg may be
    assert {step[i] for i in search._greedy(holding, guess)[1]} == {"(walk counter bed)"}
    # with both in hand, deliver
    both_held = holding - {("in", ("egg", "bed"))} | {("holding", ("egg",))}
    assert {step[i] for i in search._greedy(both_held, {})[1]} == {"(walk counter fridge)"}


@pytest.mark.parametrize("weight", [0.0, 0.7])
def test_the_prior_is_mixed_with_the_greedy_policy_by_its_weight(weight: float) -> None:
    search = searcher(settings=Settings(policy_weight=weight))
    search.decide(START, {"milk": {"counter": 0.9, "bed": 0.1}}, Budget(simulations=1))
    root = search._last  # the root, kept for the next decision
    names = [str(search.task.operators[i].step) for i in root.actions]
    # at the bed the milk is not there (the bed is seen): the greedy policy walks to the counter
    assert dict(zip(names, root.prior, strict=True)) == pytest.approx(
        {"(walk bed counter)": (1 - weight) / 2 + weight, "(walk bed fridge)": (1 - weight) / 2})
    search = searcher(settings=Settings(policy_weight=weight))
    at_fridge = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("fridge",))})
    search.decide(at_fridge, {"milk": {"counter": 0.9, "bed": 0.1}}, Budget(simulations=1))
    root = search._last
    prior = dict(zip([str(search.task.operators[i].step) for i in root.actions], root.prior, strict=True))
    u = 1 / 3  # the uniform prior, mixed with the greedy policy: open the fridge while there
    assert prior == pytest.approx({"(open fridge)": (1 - weight) * u + weight,
                                   "(walk fridge counter)": (1 - weight) * u,
                                   "(walk fridge bed)": (1 - weight) * u})


def test_the_prior_hooks_are_called_per_decision() -> None:
    """The search knows no LLM: it gives the prior its call budget, and the line it tried most after a
    decision whose simulations all failed."""

    class Hooked(UniformPrior):
        def __init__(self) -> None:
            self.limits: list[int | None] = []
            self.lines: list[list[str]] = []

        def limit_calls(self, calls: int | None) -> None:
            self.limits.append(calls)

        def reflect(self, trajectory) -> None:
            self.lines.append(list(trajectory))

    prior = Hooked()
    search = searcher(prior, Settings(horizon=1))  # one step can never reach the goal
    search.decide(START, {"milk": {"counter": 1.0}}, Budget(simulations=3, llm_calls=2), ("(earlier step)",))
    assert prior.limits == [2]
    assert len(prior.lines) == 1 and prior.lines[0][0] == "(earlier step)" and len(prior.lines[0]) == 2
    search = searcher(prior)
    search.decide(START, {"milk": {"fridge": 1.0}}, Budget(simulations=30))
    assert prior.limits == [2, None] and len(prior.lines) == 1  # some simulations reached the goal
