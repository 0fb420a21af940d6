"""MCTS over a belief: the grounded model against the domain's own semantics, the DR-MCTS estimator on
hand-computed numbers, MC-DML memories with a scripted LLM, budgets, and a decision on a graph."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from kgplan.domains.formula import parse_formula
from kgplan.domains.model import Problem, resolve_domain
from kgplan.domains.sexpr import read
from kgplan.graph.backends import open_graph
from kgplan.graph.model import Delta, Unknown
from kgplan.language.llm import ScriptedLLM
from kgplan.planners import mcts
from kgplan.planners.mcts import belief as bl
from kgplan.planners.state import State

DOMAIN = resolve_domain("rearrange")
OBJECTS = {"kitchen": "room", "fridge": "container", "counter": "surface", "bed": "surface", "milk": "item"}
STATIC = {("in_room", (p, "kitchen")) for p in ("fridge", "counter", "bed")}
START = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("bed",))})


def goal(text: str = "(in milk fridge)"):
    return parse_formula(read(text, "goal")[0], "goal")


def searcher(prior=None, settings=None) -> mcts.Search:
    model = mcts.Model(DOMAIN, OBJECTS, set(START))
    prior = prior or mcts.UniformPrior()
    return mcts.Search(model, mcts.Goal(goal(), model), mcts.Observer(bl.BeliefSpec.of(DOMAIN), model, ["milk"]),
                       prior, mcts.UniformPrior(), settings, random.Random(0))


def test_grounded_model_agrees_with_the_domain_semantics() -> None:
    model = mcts.Model(DOMAIN, OBJECTS, set(START))
    places = ("fridge", "counter", "bed")
    for at, where, closed in itertools.product(places, (*places, None), (True, False)):
        s = set(STATIC) | {("agent_at", (at,))}
        s |= {("in", ("milk", where))} if where else {("holding", ("milk",))}
        s |= {("closed", ("fridge",))} if closed else set()
        state = State(DOMAIN, OBJECTS, s)
        fast = {model.actions[i].step for i in model.applicable(frozenset(s))}
        slow = {step for step in model.by_step if state.holds(*_pre(state, step))}
        assert fast == slow
        for step in fast:
            after = state.copy()
            after.apply(step)
            assert model.apply(model.by_step[step], frozenset(s)) == frozenset(after.facts)


def _pre(state: State, step):
    act, b = state.bind(step)
    return act.precondition, b


def test_goal_distance_is_the_relaxed_plan_length_with_helpful_actions() -> None:
    model = mcts.Model(DOMAIN, OBJECTS, set(START))
    g = mcts.Goal(goal(), model)
    s = START | {("in", ("milk", "counter"))}
    # the relaxed plan: walk to the counter, pick; walk to the fridge, open, put (h_add would count the walk
    # to the fridge twice, once for open and once for put: 7)
    assert g.helpful(s)[0] == 5
    # two goals that share the walk to and the opening of the fridge count them once
    g2 = mcts.Goal(goal("(and (in milk fridge) (in jam fridge))"),
                   mcts.Model(DOMAIN, OBJECTS | {"jam": "item"}, set(START)))
    # pick the jam here; walk to the counter, pick the milk; walk to the fridge, open, put both (h_add: 6 + 5)
    assert g2.helpful(s | {("in", ("jam", "bed"))})[0] == 7
    assert g.helpful(frozenset({*STATIC, ("in", ("milk", "fridge"))}))[0] == 0
    # helpful: the applicable first steps of the cheapest supports (walk to the counter, walk to the fridge)
    assert {str(a.step) for a in g.helpful(s)[1]} == {"(walk bed counter)", "(walk bed fridge)"}


def test_doubly_robust_on_a_hand_computed_trajectory() -> None:
    # V(s0)=.5, V(s1)=.6, s2 terminal; r = 0, 1; cumulative weights 2, 1; gamma .9
    v = mcts.doubly_robust([0.5, 0.6, 0.0], [0.0, 1.0], [2.0, 1.0], 0.9)
    assert v == pytest.approx(0.5 + 2 * (0 + 0.9 * 0.6 - 0.5) + 0.9 * 1 * (1 + 0 - 0.6))
    # with weights 1 the corrections telescope into the discounted return plus the bootstrap
    assert mcts.doubly_robust([0.3, 0.2, 0.7], [0.0, 0.0], [1.0, 1.0], 0.9) == pytest.approx(0.81 * 0.7)


def test_rollout_importance_weights_are_pi_over_mu_and_clipped() -> None:
    class Fixed:
        llm_calls = 0

        def __call__(self, history, actions, beliefs):
            return [1.0] + [0.0] * (len(actions) - 1) if len(actions) > 1 else [1.0]

    search = searcher(settings=mcts.Settings(estimator="dr", rho_max=3.0, rollout_depth=3))
    search.rollout_prior = Fixed()
    seen = []
    real = mcts.doubly_robust
    mcts.doubly_robust = lambda v, r, rho, gamma: seen.append(rho) or real(v, r, rho, gamma)
    belief = {"milk": {"counter": 0.5, "fridge": 0.5}}
    try:
        for _ in range(20):
            search._rollout(START | {("in", ("milk", "counter"))}, 0, belief, belief)
    finally:
        mcts.doubly_robust = real
    # each step multiplies by pi/mu: 0 off the prior's choice, 1/mu > 1 on it; clipped at 3
    assert all(0.0 <= w <= 3.0 for rho in seen for w in rho)
    assert any(w > 1.0 for rho in seen for w in rho) and any(w == 0.0 for rho in seen for w in rho)


def test_variance_minimising_beta() -> None:
    h = mcts.Hybrid(min_samples=2)
    for mc, dr in [(0, 0), (2, 1), (0, 1), (2, 0)]:
        h.add(mc, dr)
    # var(MC) = 4/3, var(DR) = 1/3, cov = 0: beta = (1/3) / (5/3)
    assert h.beta(visits=4) == pytest.approx(0.2)
    h2 = mcts.Hybrid(min_samples=2)
    for mc, dr in [(0, 0), (1, 1), (0, 1), (1, 0)]:
        h2.add(mc, dr)
    assert h2.beta(visits=4) == pytest.approx(0.5)


def test_beta_falls_back_to_the_schedule() -> None:
    h = mcts.Hybrid(beta_base=0.5, lam=0.1, min_samples=10)
    h.add(0.0, 0.3)
    assert h.beta(visits=10) == pytest.approx(0.5 * math.exp(-1.0))  # too few samples
    for _ in range(20):
        h.add(0.0, 0.4)
    assert h.beta(visits=0) == pytest.approx(0.5)  # MC never varied: its variance is unknown


def test_memory_keeps_k_reflections_and_puts_them_in_the_prompt() -> None:
    llm = ScriptedLLM([mcts.Reflection(reflection=f"lesson {k}") for k in range(5)])
    memory = mcts.Memory(k=3)
    prior = mcts.LLMPrior(llm, "put the milk in the fridge", memory, mcts.UniformPrior(), {}, max_calls=99)
    for k in range(5):
        prior.reflect([f"(walk bed counter) {k}"])
    assert list(memory.reflections) == ["lesson 2", "lesson 3", "lesson 4"]
    memory.trajectory.append("(walk bed counter)")
    llm.replies.append(mcts.ActionScores(scores=[mcts.ActionScore(action="open fridge", probability=0.9)]))
    model = mcts.Model(DOMAIN, OBJECTS, set(START))
    actions = [model.by_step and a.step for a in model.actions[:3]]
    p = prior(("(walk bed fridge)",), actions, {"milk": {"fridge": 0.7}})
    text = llm.prompts[-1][0]["content"]
    assert "lesson 4" in text and "lesson 1" not in text and "(walk bed counter)" in text and "fridge 70%" in text
    assert sum(p) == pytest.approx(1.0)
    calls = len(llm.prompts)
    assert prior(("(walk bed fridge)",), actions, {}) == p  # cached per history and node
    assert len(llm.prompts) == calls


def test_llm_prior_scores_actions_and_stops_at_its_call_limit() -> None:
    llm = ScriptedLLM([mcts.ActionScores(scores=[mcts.ActionScore(action="walk to fridge", probability=1.0)])])
    prior = mcts.LLMPrior(llm, "goal", mcts.Memory(), mcts.UniformPrior(), {"walk": "walk to {1}"}, max_calls=1)
    model = mcts.Model(DOMAIN, OBJECTS, set(START))
    acts = [model.actions[i].step for i in model.applicable(START)]
    p = prior((), acts, {})
    assert max(zip(p, acts, strict=True))[1].args[1] == "fridge"
    assert prior(("other",), acts, {}) == pytest.approx([1 / len(acts)] * len(acts))  # fallback, no call
    assert prior.llm_calls == 1


@pytest.mark.parametrize("budget", [mcts.Budget(simulations=37), mcts.Budget(simulations=10**6, seconds=0.05),
                                    mcts.Budget(simulations=60, llm_calls=2)])
def test_every_budget_is_respected(budget: mcts.Budget) -> None:
    llm = ScriptedLLM([mcts.ActionScores(scores=[]) for _ in range(100)])
    prior = mcts.LLMPrior(llm, "goal", mcts.Memory(), mcts.UniformPrior(), {})
    search = searcher(prior)
    for _ in range(2):  # a budget is per decision
        calls = len(llm.prompts)
        d = search.decide(START, {"milk": {"fridge": 0.5, "counter": 0.5}}, budget)
        if budget.seconds is None:
            assert d.simulations == budget.simulations  # LLM calls spent: the fallback prior goes on
        else:
            assert d.seconds < budget.seconds + 0.05  # checked before each simulation
        if budget.llm_calls is not None:
            assert d.llm_calls == len(llm.prompts) - calls <= 2


@pytest.mark.parametrize("estimator", ["mc", "dr"])
def test_search_reaches_a_goal_whose_item_is_unknown(estimator: str) -> None:
    search = searcher(settings=mcts.Settings(estimator=estimator))
    truth = START | {("in", ("milk", "counter"))}
    s, beliefs = START, {"milk": {"counter": 0.9, "bed": 0.1}}
    for _ in range(8):
        d = search.decide(s, beliefs, mcts.Budget(200))
        truth = search.model.apply(search.model.by_step[d.step], truth)
        if search.goal.holds(truth):
            break
        s = frozenset(a for a in truth if a[0] != "in" or a in search.observe(truth) or a[1][1] == "fridge")
        if search.observe(truth):
            beliefs = {}
    assert search.goal.holds(truth)


def test_decide_on_a_graph_stores_the_belief(tmp_path) -> None:
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(DOMAIN, problem=Problem.parse(
        "(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container counter bed - surface "
        "milk - item) (:init (in_room fridge kitchen) (in_room counter kitchen) (in_room bed kitchen) "
        "(closed fridge) (agent_at bed) (looked bed)))"))
    search = mcts.searcher(g, goal(), mcts.UniformPrior(), mcts.UniformPrior())
    assert mcts.unknown_in_goal(g, goal()) == ["milk"]
    g.apply(Delta(unknown=[Unknown(entity="milk", predicate="in")], source="sensor"))  # the open world's mark
    assert mcts.unknown_in_goal(g, goal()) == ["milk"]
    d = mcts.decide(g, search, mcts.Budget(20))
    assert d.step is not None and d.simulations == 20
    assert bl.read_belief(g, "milk") == pytest.approx({"fridge": 0.5, "counter": 0.5})  # bed was looked at
    g.close()


def test_agent_search_is_a_one_step_plan_that_run_executes(tmp_path) -> None:
    from kgplan.agent.agent import Agent

    with Agent(f"sqlite:{tmp_path / 'w.db'}") as agent:
        agent.graph.init(DOMAIN, problem=Problem.parse(
            "(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container "
            "counter bed - surface milk - item) (:init (in_room fridge kitchen) (in_room counter kitchen) "
            "(in_room bed kitchen) (closed fridge) (agent_at bed) (looked bed)))"))
        report = agent.search("(in milk bed)", simulations=30)
        assert report.solved and len(report.plan) == 1 and report.planner == "mcts"
        belief = agent.belief("milk")
        assert set(belief) == {"fridge", "counter"} and sum(belief.values()) == pytest.approx(1.0)
        _, steps, execution = agent.run()
        assert steps == 1 and execution.done


def test_a_domain_beyond_strips_is_refused_with_the_actions_named() -> None:
    from kgplan.errors import KgplanError

    with pytest.raises(KgplanError, match="prepare_meal"):
        mcts.Model(resolve_domain("cooking"), {}, set())


def test_a_search_where_every_simulation_fails_writes_a_reflection_within_k() -> None:
    lessons = iter(range(100))

    def reply(messages: list[dict]):
        if "This attempt failed" in messages[0]["content"]:
            return mcts.Reflection(reflection=f"lesson {next(lessons)}")
        return mcts.ActionScores(scores=[])

    llm = ScriptedLLM([reply] * 100)
    memory = mcts.Memory(k=3)
    prior = mcts.LLMPrior(llm, "put the milk in the fridge", memory, mcts.UniformPrior(), {}, max_calls=100)
    search = searcher(prior, mcts.Settings(horizon=1))  # one step can never reach the goal
    for _ in range(5):
        search.decide(START, {"milk": {"counter": 1.0}}, mcts.Budget(simulations=3))
        assert "This attempt failed" in llm.prompts[-1][0]["content"]
    assert list(memory.reflections) == ["lesson 2", "lesson 3", "lesson 4"]
    search.decide(START, {"milk": {"counter": 1.0}}, mcts.Budget(simulations=3))
    asked = [p[0]["content"] for p in llm.prompts if "Lessons from earlier failed attempts" in p[0]["content"]]
    assert asked and "lesson 4" in asked[-1] and "lesson 1" not in asked[-1]  # the memory is in the prompt


def test_cli_plan_search_mcts_and_show_belief(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from kgplan.interfaces.cli import app

    problem = tmp_path / "p.pddl"
    problem.write_text("(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container "
                       "counter bed - surface milk - item) (:init (in_room fridge kitchen) (in_room counter kitchen) "
                       "(in_room bed kitchen) (closed fridge) (agent_at bed) (looked bed)))")
    monkeypatch.setenv("KGPLAN_STORE", f"sqlite:{tmp_path / 'w.db'}")
    cli = CliRunner()
    assert cli.invoke(app, ["init", "--domain", "rearrange", "--problem", str(problem)]).exit_code == 0
    assert "no belief stored about milk" in cli.invoke(app, ["show", "--belief", "milk"]).output
    r = cli.invoke(app, ["plan", "--goal", "(in milk bed)", "--search", "mcts", "--simulations", "20"])
    assert r.exit_code == 0 and "by mcts" in r.output and "1. (" in r.output
    shown = cli.invoke(app, ["show", "--belief", "milk"]).output
    assert "fridge" in shown and "counter" in shown and "bed" not in shown.split("where milk is")[1]
    bad = cli.invoke(app, ["plan", "--goal", "(in milk bed)", "--search", "bfs"])
    assert bad.exit_code != 0 and "unknown search" in bad.output


def test_rearrange_bench_writes_each_method_and_family(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kgplan bench rearrange`'s JSON: per method, budget, family and limit the figures the issue asks for;
    the episodes are written as they end (a stopped run keeps them)."""
    import json

    from kgplan.benchmarks import rearrange

    written: list[int] = []
    write = rearrange.write_json
    monkeypatch.setattr(rearrange, "write_json", lambda path, data: (written.append(len(data["episodes"])),
                                                                     write(path, data)))
    out = tmp_path / "new" / "r.json"
    assert rearrange.main(["--seeds", "3", "--scenes", "generated", "--methods", "explore,uct",
                           "--families", "simple,comp2", "--simulations", "10,5", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert written == [1, 2, 3, 4, 5, 6, 6]  # 2 families x (explore + uct at 2 budgets), then the summary
    rows = {(r["method"], r["budget"], r["family"], r["limit"]): r for r in data["results"]}
    assert set(rows) == {(m, b, f, lim) for m, b in (("explore", 0), ("uct", 10), ("uct", 5))
                         for f in ("simple", "comp2") for lim in (10, 15)}
    for r in rows.values():
        assert {"success_rate", "wilson_95", "mean_steps", "simulations_per_decision",
                "llm_calls_per_decision", "seconds_per_decision"} <= set(r)
    assert rows["uct", 5, "simple", 15]["simulations_per_decision"] == 5
    assert out.with_suffix(".png").stat().st_size > 0


def test_rearrange_episode_with_a_scripted_llm_prior() -> None:
    """The benchmark's puct_llm wiring: LLM belief and LLM prior, within the calls per decision."""
    from kgplan.benchmarks import rearrange

    def reply(messages: list[dict]):
        text = messages[0]["content"]
        if "most likely to be" in text:
            return mcts.PlaceChoice(place="kitchen_counter")
        if "This attempt failed" in text:
            return mcts.Reflection(reflection="look on the counters first")
        return mcts.ActionScores(scores=[])

    scene = rearrange.Scene("tiny", {"fridge": ("container", "kitchen"), "kitchen_counter": ("surface", "kitchen"),
                                     "bed": ("surface", "bedroom")}, {"milk": "kitchen_counter"}, {"milk": "milk"})
    task = rearrange.Task("simple", ["milk"], "fridge", "bed")
    llm = ScriptedLLM([reply] * 500)
    ep = rearrange.episode(scene, task, "puct_llm", 0, simulations=30, limit=15, llm=llm, llm_calls=3)
    assert ep.success and ep.steps <= 8
    # five belief samples for the item, then at most 3 prior/reflection calls per decision
    assert 5 < ep.llm_calls <= 5 + 3 * ep.decisions and ep.llm_calls == len(llm.prompts)
    assert any("most likely to be" in p[0]["content"] for p in llm.prompts)


def test_a_small_lead_in_q_does_not_shut_out_an_untried_action() -> None:
    search = searcher()
    s = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("counter",)), ("in", ("milk", "counter"))})
    node = mcts._Node()
    node.actions = search.model.applicable(s)
    assert len(node.actions) == 3
    node.prior, node.na, node.q, node.n = [1 / 3] * 3, [3, 1, 0], [0.5, 0.45, 0.0], 4
    # the untried action counts at the node's mean (0.4875), not at the least seen value
    assert search._select(node, s) == 2
    node.na, node.q, node.n = [30, 10, 10], [0.9, 0.1, 0.1], 50
    assert search._select(node, s) == 0  # once all are tried, a clear lead wins


def test_a_rollout_cut_off_before_the_goal_is_worth_the_heuristic_value_where_it_stopped() -> None:
    gamma = 0.9
    search = searcher(settings=mcts.Settings(gamma=gamma, rollout_depth=1, rollout_epsilon=0.0))
    s = START | {("in", ("milk", "counter"))}
    # the greedy step from the bed, to the counter where the milk is, leaves 4 of the relaxed plan's 5 steps
    belief = {"milk": {"counter": 1.0}}
    values = {round(search._rollout(s, 0, belief, belief)[0], 9) for _ in range(20)}
    assert values == {round(gamma * gamma ** 4, 9)}
    # a rollout that reaches the goal is worth its discounted return
    at_fridge = frozenset(STATIC | {("agent_at", ("fridge",)), ("holding", ("milk",))})
    assert search._rollout(at_fridge, 0, {}, {})[0] == pytest.approx(1.0)


def test_the_greedy_policy_looks_where_most_belief_mass_is_per_step() -> None:
    search = searcher()
    bare = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("bed",))})
    names = {i: str(search.model.actions[i].step) for i in search.model.applicable(bare)}
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
    objects = OBJECTS | {"egg": "item"}
    model = mcts.Model(DOMAIN, objects, set(START))
    both = mcts.Goal(goal("(and (in milk fridge) (in egg fridge))"), model)
    search = mcts.Search(model, both, mcts.Observer(bl.BeliefSpec.of(DOMAIN), model, ["milk", "egg"]),
                         mcts.UniformPrior(), mcts.UniformPrior(), None, random.Random(0))
    s = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("counter",)), ("in", ("milk", "counter")),
                            ("in", ("egg", "bed"))})
    step = {i: str(model.actions[i].step) for i in model.applicable(s)}
    guess = {"egg": {"bed": 1.0}}
    # the milk is seen at the counter: pick it up before walking away
    assert {step[i] for i in search._greedy(s, guess)[1]} == {"(pick milk counter)"}
    holding = s - {("in", ("milk", "counter"))} | {("holding", ("milk",))}
    step = {i: str(model.actions[i].step) for i in model.applicable(holding)}
    # the walks to the fridge and to the bed shorten the relaxed plan alike; the bed is where the egg may be
    assert {step[i] for i in search._greedy(holding, guess)[1]} == {"(walk counter bed)"}
    # with both in hand, deliver
    both_held = holding - {("in", ("egg", "bed"))} | {("holding", ("egg",))}
    assert {step[i] for i in search._greedy(both_held, {})[1]} == {"(walk counter fridge)"}


@pytest.mark.parametrize("weight", [0.0, 0.7])
def test_the_prior_is_mixed_with_the_greedy_policy_by_its_weight(weight: float) -> None:
    search = searcher(settings=mcts.Settings(policy_weight=weight))
    search.decide(START, {"milk": {"counter": 0.9, "bed": 0.1}}, mcts.Budget(simulations=1))
    root = search._last  # the root, kept for the next decision
    names = [str(search.model.actions[i].step) for i in root.actions]
    # at the bed the milk is not there (the bed is seen): the greedy policy walks to the counter
    assert dict(zip(names, root.prior, strict=True)) == pytest.approx(
        {"(walk bed counter)": (1 - weight) / 2 + weight, "(walk bed fridge)": (1 - weight) / 2})
    search = searcher(settings=mcts.Settings(policy_weight=weight))
    at_fridge = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("fridge",))})
    search.decide(at_fridge, {"milk": {"counter": 0.9, "bed": 0.1}}, mcts.Budget(simulations=1))
    root = search._last
    prior = dict(zip([str(search.model.actions[i].step) for i in root.actions], root.prior, strict=True))
    u = 1 / 3  # the uniform prior, mixed with the greedy policy: open the fridge while there
    assert prior == pytest.approx({"(open fridge)": (1 - weight) * u + weight,
                                   "(walk fridge counter)": (1 - weight) * u,
                                   "(walk fridge bed)": (1 - weight) * u})


def test_belief_mass_prior_weighs_actions_by_where_the_unknown_items_may_be() -> None:
    prior = mcts.BeliefMassPrior(DOMAIN, floor=0.0)
    model = mcts.Model(DOMAIN, OBJECTS, set(START))
    at_fridge = frozenset(STATIC | {("closed", ("fridge",)), ("agent_at", ("fridge",))})
    acts = [model.actions[i].step for i in model.applicable(at_fridge)]
    p = dict(zip(map(str, acts), prior((), acts, {"milk": {"counter": 0.6, "fridge": 0.3, "bed": 0.1}}),
                 strict=True))
    # walk counts where it leads (not where it leaves), open the container it opens
    assert p == pytest.approx({"(walk fridge counter)": 0.6, "(open fridge)": 0.3, "(walk fridge bed)": 0.1})
    assert prior((), acts, {}) == pytest.approx([1 / 3] * 3)  # nothing unknown: uniform
