"""Partially observed worlds: the Coin Collector sensor, placeholder rooms, and the PDDLEGO loop on
TextWorld-Express (those tests need textworld-express and Java 17, and are skipped without them)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from agent.core import Agent
from agent.environments import CoinSensor, Observation
from agent.explore import start
from benchmarks.twx import seed_range, wilson
from domains.model import resolve_domain
from graph.base import ChangeRefused
from graph.model import Fact, Unknown

needs_twx = pytest.mark.skipif(
    importlib.util.find_spec("textworld_express") is None or shutil.which("java") is None,
    reason="needs textworld-express (pip install textworld-express) and Java 17 on the PATH")


@pytest.fixture
def coin_world(tmp_path):
    agent = Agent(f"sqlite:{tmp_path / 'w.db'}")
    start(agent, resolve_domain("coin_collector"), CoinSensor(), Observation("", []))
    yield agent
    agent.close()


def sense(agent: Agent, sensor: CoinSensor, action: str | None, admissible: list[str], score: float = 0.0):
    delta = sensor.delta(set(agent.facts()), {e.name for e in agent.entities()}, action,
                         Observation("", admissible, score))
    return agent.observe([delta])[0]


def test_placeholder_room_becomes_known(coin_world):
    sensor = CoinSensor()
    sense(coin_world, sensor, None, ["move north", "open door to north", "look around"])
    assert Fact.parse("(unknown room_0_1)") in coin_world.facts()
    assert Fact.parse("(door_closed room_0_0 room_0_1)") in coin_world.facts()
    assert coin_world.unknowns() == [Unknown(entity="room_0_1")]  # a placeholder in the graph too
    assert not coin_world.plan(goal="(exists (?c - item) (carrying ?c))").solved  # no coin known yet
    sub = coin_world.plan(goal="(exists (?r - room) (and (at ?r) (unknown ?r)))")
    assert sub.plan == ["(open_door room_0_0 north room_0_1)", "(move room_0_0 north room_0_1)"]
    sense(coin_world, sensor, "open door to north", ["move north"])
    sense(coin_world, sensor, "move north", ["move south", "take coin"])
    facts = set(coin_world.facts())
    assert {Fact.parse("(visited room_0_1)"), Fact.parse("(at room_0_1)"),
            Fact.parse("(coin_in coin room_0_1)")} <= facts
    assert Fact.parse("(unknown room_0_1)") not in facts and Fact.parse("(at room_0_0)") not in facts
    assert coin_world.unknowns() == []
    assert coin_world.plan(goal="(exists (?c - item) (carrying ?c))").plan == ["(take coin room_0_1)"]
    assert coin_world.check() == []


def test_refused_observation_leaves_graph_unchanged(coin_world):
    sense(coin_world, CoinSensor(), None, ["move east"])
    before = (set(coin_world.facts()), coin_world.entities(), len(coin_world.history()))
    with pytest.raises(ChangeRefused):  # two places at once breaks the derived exactly-one invariant
        coin_world.change(add=["(at room_1_0)"], note="a sensor glitch")
    assert (set(coin_world.facts()), coin_world.entities(), len(coin_world.history())) == before


def test_wilson_and_seeds():
    lo, hi = wilson(50, 50)
    assert lo == pytest.approx(50 / (50 + 1.96**2)) and hi == 1.0  # all successes: n / (n + z²)
    lo, hi = wilson(5, 10)
    assert round(lo, 4) == 0.2366 and round(hi, 4) == 0.7634
    assert seed_range("10-12,15") == [10, 11, 12, 15]


@pytest.fixture(scope="module")
def coin_env():
    from agent.environments import TextWorldExpress

    env = TextWorldExpress("coin")
    yield env
    env.close()


@needs_twx
@pytest.mark.parametrize("seed", [2, 3])
def test_loop_reaches_the_coin(coin_env, seed):
    from agent.explore import explore

    ep = explore(coin_env, "coin", seed)
    assert ep.success, ep.reason
    assert ep.invalid == 0 and ep.optimal <= ep.steps <= coin_env.budget


@needs_twx
def test_budget_exhaustion_is_a_failure(coin_env, monkeypatch):
    from agent.explore import explore

    monkeypatch.setattr(coin_env, "budget", 3)
    ep = explore(coin_env, "coin", 0)  # the coin is 7 steps away at best
    assert not ep.success and ep.steps == 3 and ep.reason == "budget spent"


@needs_twx
def test_cooking_placeholder_room_is_merged_when_entered(tmp_path):
    from agent.environments import TextWorldExpress
    from agent.explore import explore

    env = TextWorldExpress("cooking-easy")
    try:
        ep = explore(env, "cooking-easy", 0, store=f"sqlite:{tmp_path / 'c.db'}")
    finally:
        env.close()
    assert ep.success, ep.reason
    with Agent(f"sqlite:{tmp_path / 'c.db'}") as agent:
        merged = [e for c in agent.history() for e in c.delta.removed_entities]
        names = {e.name for e in agent.entities()}
        assert merged and all(e.name.startswith("unseen_") and e.name not in names for e in merged)
        assert not any(f.args[0].startswith("unseen_") for f in agent.facts("unknown")), "entered rooms stay unknown"
        assert agent.check() == []
        marked = {u for c in agent.history() for u in c.delta.unknown}
        learnt = {u for c in agent.history() for u in c.delta.known}
        # placeholder rooms, a closed container's contents and the recipe's items' places were unknown,
        # and each of the recipe's items' places became known (the meal was made from them)
        assert {u.predicate for u in marked} == {None, "in", "item_at"}
        assert {u for u in marked if u.predicate == "item_at"} <= learnt
        assert {u.entity for u in agent.unknowns()} <= {u.entity for u in marked} - {u.entity for u in learnt}
