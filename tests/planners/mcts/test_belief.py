"""The belief over unknown places: prior, observation updates (through kgplan.planners.mcts.beliefs_for), storage
beside the graph (both backends)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgplan.domains.model import Problem, resolve_domain
from kgplan.errors import KgplanError
from kgplan.graph.world import WorldGraph
from kgplan.planners.mcts import belief as bl

PLACES = {"fridge": "container", "bed": "surface", "sink": "surface"}


def table_scorer(items: list[str], places: list[str]) -> np.ndarray:
    """Similarity 1 for the pairs named below, 0 otherwise (a stand-in for embeddings)."""
    pairs = {("milk", "fridge"), ("pillow", "bed")}
    return np.array([[1.0 if (i.split()[0], p.split()[0]) in pairs else 0.0 for p in places] for i in items])


def test_prior_follows_the_scores_and_is_floored() -> None:
    b = bl.prior({"milk": "item", "pillow": "item"}, PLACES, table_scorer, floor=0.05)
    assert max(b["milk"], key=b["milk"].get) == "fridge"
    assert max(b["pillow"], key=b["pillow"].get) == "bed"
    for dist in b.values():
        assert sum(dist.values()) == pytest.approx(1.0)
        assert min(dist.values()) >= 0.05 / (1 + 0.05 * len(PLACES))  # floored, then renormalised
        assert set(dist) == set(PLACES)


def test_absent_renormalises() -> None:
    d = {"fridge": 0.5, "bed": 0.3, "sink": 0.2}
    after = bl.absent(d, "fridge")
    assert after == pytest.approx({"bed": 0.6, "sink": 0.4})
    assert bl.absent(bl.absent(after, "bed"), "sink") == {}  # nowhere left


def test_beliefs_from_what_the_graph_knows(empty_graph: WorldGraph) -> None:
    """Seen there: certain; looked at and absent: zero there, renormalised (uniform prior, so the mixture
    with the uniform belief changes nothing); the beliefs are stored with the graph."""
    from kgplan.planners.mcts import beliefs_for

    domain = resolve_domain("rearrange")
    empty_graph.init(domain, problem=Problem.parse(
        "(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container bed sink - surface "
        "milk pillow - item) (:init (in_room fridge kitchen) (in_room bed kitchen) (in_room sink kitchen) "
        "(agent_at bed) (looked fridge) (in pillow bed)))"))
    objects, facts, _ = empty_graph.snapshot()
    out = beliefs_for(empty_graph, bl.BeliefSpec.of(domain), ["milk", "pillow"], None, set(facts), objects)
    assert out["milk"] == pytest.approx({"bed": 0.5, "sink": 0.5})
    assert out["pillow"] == {"bed": 1.0}
    assert bl.read_belief(empty_graph, "milk") == pytest.approx({"bed": 0.5, "sink": 0.5})


def test_sample_draws_by_probability() -> None:
    rng = random.Random(1)
    draws = [bl.sample({"milk": {"fridge": 0.9, "bed": 0.1}}, rng)["milk"] for _ in range(2000)]
    assert 0.85 < draws.count("fridge") / len(draws) < 0.95
    assert bl.sample({"milk": {}}, rng) == {}


def test_a_domain_without_a_belief_table_is_refused() -> None:
    with pytest.raises(KgplanError, match=r"\[belief\]"):
        bl.BeliefSpec.of(resolve_domain("household"))


def test_unknown_items_and_storage_on_each_backend(empty_graph: WorldGraph) -> None:
    domain = resolve_domain("rearrange")
    empty_graph.init(domain, problem=Problem.parse(
        "(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container bed - surface "
        "milk pillow - item) (:init (in_room fridge kitchen) (in_room bed kitchen) (agent_at bed) (in pillow bed)))"))
    spec = bl.BeliefSpec.of(domain)
    objects, facts, _ = empty_graph.snapshot()
    assert bl.unknown_items(spec, domain, objects, set(facts)) == ["milk"]
    assert bl.read_belief(empty_graph, "milk") is None
    bl.write_beliefs(empty_graph, {"milk": {"fridge": 0.75, "bed": 0.25}})
    bl.write_beliefs(empty_graph, {"pillow": {"bed": 1.0}})
    assert bl.read_belief(empty_graph, "milk") == {"fridge": 0.75, "bed": 0.25}
    assert set(bl.read_beliefs(empty_graph)) == {"milk", "pillow"}


def test_llm_belief_counts_sampled_answers() -> None:
    from kgplan.language.llm import ScriptedLLM
    from kgplan.planners.mcts import PlaceChoice, llm_belief

    llm = ScriptedLLM([PlaceChoice(place=p) for p in ("fridge", "fridge", "Bed", "the moon")])
    b = llm_belief(llm, samples=4, floor=0.0)({"milk": "item"}, PLACES)
    assert b["milk"] == pytest.approx({"fridge": 2 / 3, "bed": 1 / 3})
    assert "milk" in llm.prompts[0][0]["content"] and "fridge, bed, sink" in llm.prompts[0][0]["content"]


def test_reliability_weighs_the_prior_by_how_it_predicted_the_episode() -> None:
    places = ["fridge", "counter", "bed"]
    milk, apple = {"fridge": 0.8, "counter": 0.1, "bed": 0.1}, {"fridge": 0.6, "counter": 0.3, "bed": 0.1}
    # milk found where the prior expected it: 0.8 against uniform's 1/3
    assert bl.reliability({"milk": milk}, {"milk": "fridge"}, ["fridge"], places) == pytest.approx(0.8 / (0.8 + 1 / 3))
    # milk found on the bed (0.1 against 1/3), apple in neither the fridge nor the bed (0.3 against 1/3)
    w = bl.reliability({"milk": milk, "apple": apple}, {"milk": "bed"}, ["fridge", "bed"], places)
    assert w == pytest.approx(0.1 * 0.3 / (0.1 * 0.3 + 1 / 3 * 1 / 3))
    mixed = bl.mixed(apple, w, places, ["fridge"])
    assert mixed == pytest.approx({"counter": w * 0.75 + (1 - w) * 0.5, "bed": w * 0.25 + (1 - w) * 0.5})
    assert bl.mixed(apple, 0.3, places, places) == {}  # looked everywhere: nowhere left
