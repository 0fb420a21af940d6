"""DR-MCTS's estimators on hand-computed numbers."""

from __future__ import annotations

import math

import pytest

from kgplan.planners.mcts.estimators import Hybrid, doubly_robust


def test_doubly_robust_on_a_hand_computed_trajectory() -> None:
    # V(s0)=.5, V(s1)=.6, s2 terminal; r = 0, 1; cumulative weights 2, 1; gamma .9
    v = doubly_robust([0.5, 0.6, 0.0], [0.0, 1.0], [2.0, 1.0], 0.9)
    assert v == pytest.approx(0.5 + 2 * (0 + 0.9 * 0.6 - 0.5) + 0.9 * 1 * (1 + 0 - 0.6))
    # with weights 1 the corrections telescope into the discounted return plus the bootstrap
    assert doubly_robust([0.3, 0.2, 0.7], [0.0, 0.0], [1.0, 1.0], 0.9) == pytest.approx(0.81 * 0.7)


def test_variance_minimising_beta() -> None:
    h = Hybrid(min_samples=2)
    for mc, dr in [(0, 0), (2, 1), (0, 1), (2, 0)]:
        h.add(mc, dr)
    # var(MC) = 4/3, var(DR) = 1/3, cov = 0: beta = (1/3) / (5/3)
    assert h.beta(visits=4) == pytest.approx(0.2)
    h2 = Hybrid(min_samples=2)
    for mc, dr in [(0, 0), (1, 1), (0, 1), (1, 0)]:
        h2.add(mc, dr)
    assert h2.beta(visits=4) == pytest.approx(0.5)


def test_beta_falls_back_to_the_schedule() -> None:
    h = Hybrid(beta_base=0.5, lam=0.1, min_samples=10)
    h.add(0.0, 0.3)
    assert h.beta(visits=10) == pytest.approx(0.5 * math.exp(-1.0))  # too few samples
    for _ in range(20):
        h.add(0.0, 0.4)
    assert h.beta(visits=0) == pytest.approx(0.5)  # MC never varied: its variance is unknown
