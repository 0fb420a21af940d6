"""MCTS on a world graph: beliefs from what the graph knows, stored beside it (both backends), the goal's
unknown items, and a decision on the graph."""

from __future__ import annotations

import pytest

from kgplan.domains.model import Problem
from kgplan.graph.backends import open_graph
from kgplan.graph.model import Delta, Fact, Unknown
from kgplan.graph.world import WorldGraph
from kgplan.planners.mcts import belief as bl
from kgplan.planners.mcts import graph_io
from kgplan.planners.mcts.priors import UniformPrior
from kgplan.planners.mcts.search import Budget
from tests.support.kitchen import DOMAIN, PROBLEM, goal


def test_beliefs_from_what_the_graph_knows(empty_graph: WorldGraph) -> None:
    """Seen there: certain; looked at and absent: zero there, renormalised (uniform prior, so the mixture
    with the uniform belief changes nothing); the beliefs are stored with the graph."""
    empty_graph.init(DOMAIN, problem=Problem.parse(
        "(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container bed sink - surface "
        "milk pillow - item) (:init (in_room fridge kitchen) (in_room bed kitchen) (in_room sink kitchen) "
        "(agent_at bed) (looked fridge) (in pillow bed)))"))
    objects, facts, _ = empty_graph.snapshot()
    out = graph_io.beliefs_for(empty_graph, bl.BeliefSpec.of(DOMAIN), ["milk", "pillow"], None, set(facts), objects)
    assert out["milk"] == pytest.approx({"bed": 0.5, "sink": 0.5})
    assert out["pillow"] == {"bed": 1.0}
    assert graph_io.read_belief(empty_graph, "milk") == pytest.approx({"bed": 0.5, "sink": 0.5})


def test_unknown_items_and_storage_on_each_backend(empty_graph: WorldGraph) -> None:
    empty_graph.init(DOMAIN, problem=Problem.parse(
        "(define (problem p) (:domain rearrange) (:objects kitchen - room fridge - container bed - surface "
        "milk pillow - item) (:init (in_room fridge kitchen) (in_room bed kitchen) (agent_at bed) (in pillow bed)))"))
    spec = bl.BeliefSpec.of(DOMAIN)
    objects, facts, _ = empty_graph.snapshot()
    assert graph_io.unknown_items(empty_graph, spec, objects, set(facts)) == ["milk"]
    assert graph_io.read_belief(empty_graph, "milk") is None
    graph_io.write_beliefs(empty_graph, {"milk": {"fridge": 0.75, "bed": 0.25}})
    graph_io.write_beliefs(empty_graph, {"pillow": {"bed": 1.0}})
    assert graph_io.read_belief(empty_graph, "milk") == {"fridge": 0.75, "bed": 0.25}
    assert set(graph_io.read_beliefs(empty_graph)) == {"milk", "pillow"}


def test_decide_on_a_graph_stores_the_belief(tmp_path) -> None:
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(DOMAIN, problem=PROBLEM)
    search = graph_io.searcher(g, goal(), UniformPrior(), UniformPrior())
    assert graph_io.unknown_in_goal(g, goal()) == ["milk"]
    g.apply(Delta(unknown=[Unknown(entity="milk", predicate="in")], source="sensor"))  # the open world's mark
    assert graph_io.unknown_in_goal(g, goal()) == ["milk"]
    d = graph_io.decide(g, search, Budget(20))
    assert d.step is not None and d.simulations == 20
    assert graph_io.read_belief(g, "milk") == pytest.approx({"fridge": 0.5, "counter": 0.5})  # bed was looked at
    assert graph_io.unknown_in_goal(g, goal("(agent_at fridge)")) == []
    g.close()


def top(dist: bl.Dist | None) -> str:
    """The most likely place."""
    assert dist
    return max(dist, key=dist.__getitem__)


def test_lifelong_belief_remembers_where_the_graph_saw_an_item(tmp_path) -> None:
    """A sensor saw the milk at the counter; the milk was then moved, put back (not a sighting), and is unknown
    again: its belief, made anew, puts the counter first over a base that says fridge."""
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(DOMAIN, problem=PROBLEM)
    spec = bl.BeliefSpec.of(DOMAIN)
    search = graph_io.searcher(g, goal(), UniformPrior(), UniformPrior())
    base = bl.learned_prior({"milk": {"fridge": 1}})
    graph_io.decide(g, search, Budget(5), bl.Lifelong(base))
    assert top(graph_io.read_belief(g, "milk")) == "fridge"
    at_counter, held = Fact(predicate="in", args=["milk", "counter"]), Fact(predicate="holding", args=["milk"])
    g.apply(Delta(add=[at_counter], source="sensor"))
    g.apply(Delta(add=[held], remove=[at_counter], source="plan"))
    g.apply(Delta(add=[at_counter], remove=[held], source="plan"))
    assert graph_io.sightings(g, spec) == {"milk": {"counter": 1}}
    g.apply(Delta(remove=[at_counter], unknown=[Unknown(entity="milk", predicate="in")], source="user"))
    graph_io.decide(g, search, Budget(5), bl.Lifelong(base))
    assert top(graph_io.read_belief(g, "milk")) == "counter"
    g.close()


def test_an_item_found_and_unknown_again_gets_a_new_prior(empty_graph: WorldGraph) -> None:
    """The prior is made once per search for an item: found, then unknown again (moved), it is made anew."""
    empty_graph.init(DOMAIN, problem=PROBLEM)
    spec = bl.BeliefSpec.of(DOMAIN)

    def belief(make: bl.BeliefPrior) -> bl.Dist:
        objects, facts, _ = empty_graph.snapshot()
        return graph_io.beliefs_for(empty_graph, spec, ["milk"] if ("in", ("milk", "fridge")) not in facts else [],
                                    make, set(facts), objects).get("milk", {})

    fridge, counter = bl.learned_prior({"milk": {"fridge": 1}}), bl.learned_prior({"milk": {"counter": 1}})
    assert top(belief(fridge)) == "fridge"
    assert top(belief(counter)) == "fridge"  # the stored prior: made once per search
    at = Fact(predicate="in", args=["milk", "fridge"])
    empty_graph.apply(Delta(add=[at], source="sensor"))
    belief(counter)  # found: recorded as evidence
    empty_graph.apply(Delta(remove=[at], unknown=[Unknown(entity="milk", predicate="in")], source="user"))
    assert top(belief(counter)) == "counter"
