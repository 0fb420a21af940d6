"""The belief over unknown places: the commonsense prior, observation updates, sampling, the [belief] table,
how far the prior is trusted."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgplan.domains.model import resolve_domain
from kgplan.errors import KgplanError
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


def test_sample_draws_by_probability() -> None:
    rng = random.Random(1)
    draws = [bl.sample({"milk": {"fridge": 0.9, "bed": 0.1}}, rng)["milk"] for _ in range(2000)]
    assert 0.85 < draws.count("fridge") / len(draws) < 0.95
    assert bl.sample({"milk": {}}, rng) == {}


def test_a_domain_without_a_belief_table_is_refused() -> None:
    with pytest.raises(KgplanError, match=r"\[belief\]"):
        bl.BeliefSpec.of(resolve_domain("household"))


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


def test_learned_belief_leaves_the_evaluated_scene_out() -> None:
    """Counts by kind (copy numbers dropped) over the other scenes only: scene `a` alone puts milk in the
    fridge, and leaving `a` out nothing of it is counted."""
    scenes = {"a": {"milk": "fridge", "cup": "fridge"}, "b": {"milk": "bed", "cup_2": "sink_2"},
              "c": {"milk_3": "bed_2"}}
    assert bl.place_counts(scenes, leave_out="a") == {"milk": {"bed": 2}, "cup": {"sink": 1}}
    assert bl.place_counts(scenes)["milk"] == {"fridge": 1, "bed": 2}
    homes_a = {"fridge": "container", "bed": "surface", "bed_2": "surface", "sink": "surface"}
    b = bl.learned_prior(bl.place_counts(scenes, leave_out="a"), floor=0.01)({"milk": "item", "cup": "item"}, homes_a)
    assert b["milk"]["bed"] == b["milk"]["bed_2"] > b["milk"]["sink"] == b["milk"]["fridge"]  # shared by the 2 beds
    assert max(b["cup"], key=b["cup"].get) == "sink"
    assert all(sum(d.values()) == pytest.approx(1.0) and min(d.values()) > 0 for d in b.values())


def test_learned_belief_of_an_unknown_kind_is_where_any_item_was() -> None:
    b = bl.learned_prior({"milk": {"fridge": 3}, "cup": {"sink": 1}})({"kettle": "item"}, PLACES)
    assert b["kettle"]["fridge"] > b["kettle"]["sink"] > b["kettle"]["bed"]
    assert bl.learned_prior({})({"kettle": "item"}, PLACES)["kettle"] == pytest.approx(dict.fromkeys(PLACES, 1 / 3))


def test_learned_belief_from_a_file(tmp_path) -> None:
    path = tmp_path / "counts.json"
    path.write_text('{"milk": {"fridge": 2}}')
    b = bl.learned_from(str(path))({"milk_2": "item"}, PLACES)
    assert max(b["milk_2"], key=b["milk_2"].get) == "fridge"
    for bad in (None, str(tmp_path / "none.json")):
        with pytest.raises(KgplanError, match=r"KGPLAN_PLACE_COUNTS|cannot read"):
            bl.learned_from(bad)


def test_lifelong_belief_ranks_a_place_seen_before_first() -> None:
    """The base belief says fridge; a milk seen once at the sink (any copy) puts the sink first; a kind never
    seen keeps the base belief."""
    base = lambda items, places: bl.prior(items, places, table_scorer)  # noqa: E731
    seen = bl.Lifelong(base, seen={"milk": {"sink": 1}})({"milk_2": "item", "pillow": "item"}, PLACES)
    assert max(seen["milk_2"], key=seen["milk_2"].get) == "sink"
    assert seen["pillow"] == pytest.approx(base({"pillow": "item"}, PLACES)["pillow"])
    assert bl.Lifelong(base)({"milk": "item"}, PLACES)["milk"] == pytest.approx(base({"milk": "item"}, PLACES)["milk"])
