"""The search-method registry: the methods as the rearrange benchmark ran them, `Agent.search` built from it
(puct_dr as the agent's search was before the registry), a method added with existing kinds."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgplan.agent.agent import Agent
from kgplan.agent.search import BELIEFS, PAPER, PRIORS, SEARCH_METHODS, SearchMethod, configured
from kgplan.errors import InputError, LLMError
from kgplan.graph.backends import open_graph
from kgplan.graph.model import Fact
from kgplan.language.llm import ScriptedLLM
from kgplan.language.mcts import ActionScores, LLMPolicy, LLMPrior
from kgplan.language.retrieval import similarity
from kgplan.planners.mcts import graph_io
from kgplan.planners.mcts.belief import embedding_prior
from kgplan.planners.mcts.priors import BeliefMassPrior, UniformPrior
from kgplan.planners.mcts.search import Budget, Decision, Settings
from tests.support.kitchen import DOMAIN, PROBLEM, goal


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    with Agent(f"sqlite:{tmp_path / 'w.db'}") as a:
        a.graph.init(DOMAIN, problem=PROBLEM)
        yield a


def test_the_methods_and_their_kinds() -> None:
    assert SEARCH_METHODS.names() == ["explore", "uct", "llm_mcts", "llm_mcts_no_policy", "llm_mcts_uniform_belief",
                                      "llm_mcts_full_obs", "is_mcts", "dr_mcts", "puct", "puct_dr", "puct_lifelong",
                                      "puct_llm"]
    assert all(m.help for m in SEARCH_METHODS) and BELIEFS.names() == ["uniform", "embedding", "llm", "llm_logprob",
                                                                       "learned", "lifelong"]
    assert PRIORS.names() == ["uniform", "belief_mass", "llm", "llm_policy"]
    assert not SEARCH_METHODS["explore"].tree
    assert [m.name for m in SEARCH_METHODS if m.needs_llm] == ["puct_llm"]
    with pytest.raises(InputError, match="unknown prior 'greedy'"):
        SearchMethod("bad", "a prior nobody registered", "uniform", "greedy")


def test_each_method_builds_its_belief_priors_and_settings(tmp_path: Path) -> None:
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(DOMAIN, problem=PROBLEM)
    llm = ScriptedLLM()
    built = {m.name: m.searcher(g, goal(), llm) for m in SEARCH_METHODS if m.tree}
    uct, puct, dr, with_llm = (built[n] for n in ("uct", "puct", "puct_dr", "puct_llm"))
    assert isinstance(uct.search.prior, UniformPrior) and isinstance(uct.search.rollout_prior, UniformPrior)
    assert uct.belief is None and uct.search.settings == PAPER
    for s in (puct, dr):
        assert isinstance(s.search.prior, BeliefMassPrior) and isinstance(s.search.rollout_prior, BeliefMassPrior)
        assert s.belief is not None
    assert puct.search.settings == Settings() and dr.search.settings == Settings(estimator="dr")
    prior = with_llm.search.prior
    assert isinstance(prior, LLMPrior) and prior.fallback is with_llm.search.rollout_prior
    assert isinstance(prior.fallback, BeliefMassPrior) and with_llm.search.settings == Settings()
    assert prior.goal == "item milk is in or on place fridge" and prior.templates["walk"] == "walk to {1}"
    assert not llm.prompts  # nothing asked before a decision
    with pytest.raises(InputError, match="needs an LLM"):
        SEARCH_METHODS["puct_llm"].searcher(g, goal())
    with pytest.raises(InputError, match="no tree search"):
        SEARCH_METHODS["explore"].searcher(g, goal())
    g.close()


def test_the_papers_configurations_and_kgplans_switches(tmp_path: Path) -> None:
    """uct, llm_mcts (and its ablations), is_mcts and dr_mcts: the papers' settings, none of kgplan's
    improvements; the LLM's belief and policy where an LLM is given, else a uniform belief and the policy of
    its mass (but for the ablation without a policy); switches add kgplan's
    improvements to any of them, and any setting can be assigned."""
    assert PAPER.c == 1.2 and PAPER.horizon == 20 and PAPER.gamma == 0.95
    assert not (PAPER.policy_weight or PAPER.ff_rollouts or PAPER.handover or PAPER.averaging)
    assert (PAPER.beta_base, PAPER.lam, PAPER.kfold, PAPER.rho_max) == (0.5, 0.05, 2, 10.0)
    assert {m: SEARCH_METHODS[m].settings.estimator for m in ("uct", "llm_mcts", "is_mcts", "dr_mcts")} == {
        "uct": "mc", "llm_mcts": "mc", "is_mcts": "is", "dr_mcts": "dr"}
    assert SEARCH_METHODS["llm_mcts_full_obs"].settings.fully_observable
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(DOMAIN, problem=PROBLEM)
    kinds = {m: (SEARCH_METHODS[m].kinds(None), SEARCH_METHODS[m].kinds(ScriptedLLM()))
             for m in ("llm_mcts", "llm_mcts_no_policy", "llm_mcts_uniform_belief", "dr_mcts")}
    assert kinds == {"llm_mcts": (("uniform", "belief_mass"), ("llm", "llm_policy")),
                     "llm_mcts_no_policy": (("uniform", "uniform"), ("llm", "uniform")),
                     "llm_mcts_uniform_belief": (("uniform", "belief_mass"), ("uniform", "llm_policy")),
                     "dr_mcts": (("uniform", "belief_mass"), ("llm", "llm_policy"))}
    without = SEARCH_METHODS["dr_mcts"].searcher(g, goal())  # no LLM: it still searches
    assert without.belief is None and isinstance(without.search.prior, BeliefMassPrior)
    assert isinstance(without.search.rollout_prior, UniformPrior)  # random rollouts
    with_llm = SEARCH_METHODS["dr_mcts"].searcher(g, goal(), ScriptedLLM()).search.prior
    assert isinstance(with_llm, LLMPolicy) and with_llm.goal == "item milk is in or on place fridge"
    assert isinstance(with_llm.fallback, UniformPrior) and (with_llm.samples, with_llm.lam) == (5, 0.5)
    set_ = configured("dr_mcts", "llm_samples=3,llm_lambda=0.25,llm_temperature=1").searcher(g, goal(), ScriptedLLM())
    assert (set_.search.prior.samples, set_.search.prior.lam, set_.search.prior.temperature) == (3, 0.25, 1.0)
    uct = configured("uct+llm")  # DR-MCTS's comparison: UCT with the LLM policy as its prior, where one is given
    assert uct.kinds(ScriptedLLM()) == ("uniform", "llm_policy") and uct.kinds(None) == ("uniform", "uniform")
    assert uct.settings == PAPER and not uct.needs_llm
    m = configured("dr_mcts+ff+handover", "c=2,averaging=true,window=7")
    assert m.name == "dr_mcts+ff+handover" and m.belief == "llm"
    assert (m.settings.ff_rollouts, m.settings.handover, m.settings.averaging, m.settings.policy_weight) == (
        True, True, True, 0.0)
    assert (m.settings.c, m.settings.window, m.settings.estimator) == (2.0, 7, "dr")
    assert configured("uct+greedy").settings.policy_weight == 0.7
    for bad, said in (("uct+magic", "unknown switch magic"), ("bfs", "unknown search method 'bfs'")):
        with pytest.raises(InputError, match=said):
            configured(bad)
    with pytest.raises(InputError, match="FIELD=VALUE"):
        configured("uct", "speed=3")
    with pytest.raises(InputError, match="unknown estimator"):
        configured("uct", "estimator=td")
    g.close()


def test_puct_dr_is_the_agents_search_as_it_was(agent: Agent, tmp_path: Path) -> None:
    """The combination Agent.search hard-coded before the registry, on a copy of the graph: same decision."""
    g = open_graph(f"sqlite:{tmp_path / 'copy.db'}")
    g.init(DOMAIN, problem=PROBLEM)
    prior = BeliefMassPrior(DOMAIN)
    search = graph_io.searcher(g, goal(), prior, prior, Settings(estimator="dr"))
    before = graph_io.decide(g, search, Budget(40), embedding_prior(similarity))
    g.close()
    d = agent.search("(in milk fridge)", simulations=40)
    assert (d.step, d.visits, d.value, d.beta) == (before.step, before.visits, before.value, before.beta)


def test_agent_search_is_a_one_step_plan_that_run_executes(agent: Agent) -> None:
    d = agent.search("(in milk bed)", simulations=30)
    assert d.step is not None and d.simulations == 30
    belief = agent.belief("milk")
    assert set(belief) == {"fridge", "counter"} and sum(belief.values()) == pytest.approx(1.0)
    _, steps, execution = agent.run()
    assert steps == 1 and execution.done
    with pytest.raises(InputError, match="unknown search method 'bfs'"):
        agent.search("(in milk bed)", method="bfs")


def test_agent_search_takes_switches_and_asks_the_llm_only_where_one_is_given(tmp_path: Path) -> None:
    def reply(messages: list[dict]):
        asked = messages[0]["content"]
        return "counter" if "Name the places of a home" in asked else ActionScores(scores=[])

    llm = ScriptedLLM([reply] * 200)
    with Agent(f"sqlite:{tmp_path / 'a.db'}", llm=llm) as a:
        a.graph.init(DOMAIN, problem=PROBLEM)
        d = a.search("(in milk fridge)", method="llm_mcts", simulations=10)
        assert d.simulations == 10 and d.llm_calls > 0 and llm.prompts  # its policy asked the LLM
        belief = a.belief("milk")
        assert max(belief, key=belief.__getitem__) == "counter"  # its belief: the LLM's answers
    with Agent(f"sqlite:{tmp_path / 'b.db'}") as b:
        b.graph.init(DOMAIN, problem=PROBLEM)
        d = b.search("(in milk fridge)", method="llm_mcts+ff", simulations=10)  # no LLM: uniform
        assert d.llm_calls == 0 and b.belief("milk") == pytest.approx({"fridge": 0.5, "counter": 0.5})


def test_agent_search_takes_a_belief_in_place_of_the_methods_own(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`belief` (a kind of BELIEFS) replaces the method's own; a stored belief of another kind is made anew (the
    LLM asked once per item kind), one of the same kind is kept; the LLM's belief needs an LLM."""
    llm = ScriptedLLM(["counter"] * 5)
    with Agent(f"sqlite:{tmp_path / 'a.db'}", llm=llm) as a:
        a.graph.init(DOMAIN, problem=PROBLEM)
        a.search("(in milk fridge)", method="uct", simulations=5)
        assert a.belief("milk") == pytest.approx({"fridge": 0.5, "counter": 0.5}) and not llm.prompts
        d = a.search("(in milk fridge)", method="uct", simulations=5, belief="llm")
        assert len(llm.prompts) == 5 and llm.prompts[0][-1]["content"].endswith("Item: milk") and d.llm_calls == 0
        belief = a.belief("milk")
        assert belief["counter"] == pytest.approx(1 / 1.001) and belief["fridge"] == pytest.approx(0.001 / 1.001)
        a.search("(in milk fridge)", method="uct", simulations=5, belief="llm")
        assert len(llm.prompts) == 5 and a.belief("milk") == belief  # the same kind: kept, not asked again
        a.search("(in milk fridge)", method="uct", simulations=5, belief="uniform")
        assert a.belief("milk") == pytest.approx({"fridge": 0.5, "counter": 0.5})
        with pytest.raises(InputError, match="unknown belief 'minilm'"):
            a.search("(in milk fridge)", method="uct", belief="minilm")
    for name in ("KGPLAN_LLM_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with Agent(f"sqlite:{tmp_path / 'b.db'}") as b:
        b.graph.init(DOMAIN, problem=PROBLEM)
        with pytest.raises(LLMError, match="no LLM is configured"):
            b.search("(in milk fridge)", method="uct", belief="llm")


def test_a_tell_during_a_search_is_applied_while_the_search_goes_on(tmp_path: Path) -> None:
    """The search holds the writers' lock only to store the belief and its step: a sentence told while it searches
    (here: while its policy waits on the LLM) is applied then, not after the search."""
    searching, told = threading.Event(), threading.Event()
    waited: list[bool] = []

    def policy(messages: list[dict]) -> str | ActionScores:
        if "Name the places of a home" in messages[0]["content"]:
            return "counter"
        if not searching.is_set():
            searching.set()
            waited.append(told.wait(120))  # False (after 120 s, not a hang) if the tell waits for the search
        return ActionScores(scores=[])

    def choose_in(messages: list[dict]) -> dict[str, str]:
        assert "- now: item milk is in or on place counter" in messages[-1]["content"].split("\n")
        return {"in": "now: item milk is in or on place counter"}

    llm = ScriptedLLM([policy] * 200)
    with Agent(f"sqlite:{tmp_path / 'a.db'}", llm=llm) as a:
        a.graph.init(DOMAIN, problem=PROBLEM)
        decided: list[Decision] = []
        search = threading.Thread(target=lambda: decided.append(
            a.search("(in milk fridge)", method="llm_mcts", simulations=10)))
        search.start()
        assert searching.wait(120)
        choice = [lambda m: json.dumps(choose_in(m))] * 2  # asked twice
        llm.replies.extendleft([*choice, json.dumps({"mentions": ["milk", "counter"]})])
        out = a.tell("The milk is on the counter.")
        told.set()
        search.join()
        assert out.change is not None and Fact.parse("(in milk counter)") in out.change.delta.add, out.error
        assert waited == [True] and decided and decided[0].step is not None


@pytest.fixture
def toy() -> Iterator[SearchMethod]:
    method = SEARCH_METHODS.add(SearchMethod("toy", "uniform belief, belief-mass prior, short horizon", "uniform",
                                             "belief_mass", "uniform", Settings(horizon=6, estimator="dr")))
    yield method
    SEARCH_METHODS.remove("toy")


def test_a_method_added_with_existing_kinds_decides_through_the_agent(agent: Agent, toy: SearchMethod) -> None:
    assert "toy" in SEARCH_METHODS.names() and "toy: uniform belief" in SEARCH_METHODS.describe()
    d = agent.search("(in milk fridge)", method="toy", simulations=12)
    assert d.step is not None and d.simulations == 12 and d.beta is not None  # the DR estimator ran
    assert agent.belief("milk") == pytest.approx({"fridge": 0.5, "counter": 0.5})  # the uniform belief
    built = toy.searcher(agent.graph, goal(), rng=random.Random(1))
    assert isinstance(built.search.prior, BeliefMassPrior) and built.search.settings.horizon == 6
