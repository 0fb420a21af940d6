"""DR-MCTS's and IS-MCTS's backups on hand-computed numbers and a hand-built node: the softmax(Q) target,
V-hat, the K-fold Q-hat, the importance weights, beta per (s, a) over its window and its N(s, a) fallback."""

from __future__ import annotations

import math
from collections import deque

import pytest

from kgplan.planners.mcts import estimators as est
from kgplan.planners.mcts import search as ms
from kgplan.planners.mcts.search import Budget, Settings
from tests.support.kitchen import START, searcher


def test_the_target_policy_is_softmax_of_q() -> None:
    assert est.target([0.0, math.log(3)]) == pytest.approx([0.25, 0.75])
    assert est.target([0.0, 2 * math.log(3)], temperature=2.0) == pytest.approx([0.25, 0.75])
    assert est.target([0.0, math.log(3)], uniform=0.5) == pytest.approx([0.375, 0.625])  # the paper's code


def test_v_hat_weighs_the_mean_return_of_each_tried_action_by_softmax_q() -> None:
    q = [0.0, math.log(3), 5.0]
    returns = [[1.0, 0.0, 0.5], [0.8], []]  # the third action not tried: no weight
    assert est.v_hat(q, returns) == pytest.approx(0.25 * 0.5 + 0.75 * 0.8)
    assert est.v_hat(q, [[], [], []]) == 0.0


def test_q_hat_is_the_mean_of_the_other_folds() -> None:
    # K = 2, folds by position: the newest return (index 3, fold 1) gets the mean of indices 0 and 2
    assert est.q_hat([1.0, 0.0, 0.6, 0.4]) == pytest.approx(0.8)
    assert est.q_hat([0.2, 0.6, 0.7]) == pytest.approx(0.6)  # index 2 (fold 0): index 1
    assert est.q_hat([0.3]) == pytest.approx(0.3)  # no other fold yet: the mean of all
    assert est.q_hat([0.1, 0.2, 0.3, 0.4, 0.5], k=3) == pytest.approx((0.1 + 0.3 + 0.4) / 3)  # index 4: fold 1


def test_importance_weights_are_pi_over_mu_clipped() -> None:
    assert est.weight(0.75, 0.25, 10.0) == pytest.approx(3.0)
    assert est.weight(0.75, 0.25, 2.0) == 2.0
    assert est.weight(0.5, 0.0, 10.0) == 10.0
    assert est.doubly_robust(0.5, 2.0, 0.9, 0.6) == pytest.approx(0.5 + 2 * 0.3)


def test_beta_minimises_the_variance_and_falls_back_to_n_sa() -> None:
    pairs = [(0.0, 0.0), (2.0, 1.0), (0.0, 1.0), (2.0, 0.0)]
    # var(G) = 4/3, var(X) = 1/3, cov = 0: beta = (1/3) / (5/3)
    assert est.beta(pairs, 4, 0.5, 0.05, min_samples=4) == pytest.approx(0.2)
    assert est.beta(pairs, 4, 0.5, 0.05, min_samples=5) == pytest.approx(0.5 * math.exp(-0.05 * 4))  # too few
    flat = [(1.0, 0.3)] * 8  # G never varied: its variance says nothing
    assert est.beta(flat, 7, 0.5, 0.1, min_samples=5) == pytest.approx(0.5 * math.exp(-0.7))


def node(estimator: str, window: int = 20) -> tuple[ms.Search, ms._Node]:
    """A node with two actions (prior 1/2 each), action 0 tried once (return 0.6) and visited now, action 1
    tried once (return 0.2); Q = 0.5 and 0.2."""
    search = searcher(settings=Settings(estimator=estimator, window=window))
    n = ms._Node()
    n.actions, n.prior, n.na, n.q, n.n = [0, 1], [0.5, 0.5], [2, 1], [0.5, 0.2], 3
    n.returns, n.pairs, n.beta = [[0.6], [0.2]], [deque(maxlen=window), deque(maxlen=window)], [0.5, 0.5]
    return search, n


def test_the_dr_backup_of_a_hand_built_node() -> None:
    search, n = node("dr")
    pi = math.exp(0.5) / (math.exp(0.5) + math.exp(0.2))  # softmax(Q) of action 0
    rho = pi / 0.5
    v = pi * (0.6 + 0.9) / 2 + (1 - pi) * 0.2  # V-hat with the new return 0.9
    dr = v + rho * (0.9 - 0.6)  # Q-hat of the new return (index 1, fold 1): the return of fold 0
    b = 0.5 * math.exp(-0.05 * 2)  # one pair: the fallback on N(s, a) = 2
    assert search._backup(n, 0, 0.9) == pytest.approx(b * 0.9 + (1 - b) * dr)
    assert n.returns[0] == [0.6, 0.9] and list(n.pairs[0]) == [(0.9, pytest.approx(dr))] and n.beta[0] == b
    assert n.returns[1] == [0.2] and not n.pairs[1]  # the other action untouched


def test_the_is_backup_of_a_hand_built_node() -> None:
    search, n = node("is")
    pi = math.exp(0.5) / (math.exp(0.5) + math.exp(0.2))
    b = 0.5 * math.exp(-0.05 * 2)
    assert search._backup(n, 0, 0.9) == pytest.approx(b * 0.9 + (1 - b) * (pi / 0.5) * 0.9)


@pytest.mark.parametrize(("behaviour", "mu"), [("uniform", 1 / 2), ("prior", 0.8)])
def test_the_behaviour_policy_is_uniform_or_the_nodes_prior(behaviour: str, mu: float) -> None:
    search, n = node("is")
    search.settings.behaviour = behaviour
    n.prior = [0.8, 0.2]
    pi = math.exp(0.5) / (math.exp(0.5) + math.exp(0.2))
    b = 0.5 * math.exp(-0.05 * 2)
    assert search._backup(n, 0, 0.9) == pytest.approx(b * 0.9 + (1 - b) * (pi / mu) * 0.9)


def test_beta_of_a_node_uses_its_last_window_of_pairs() -> None:
    search, n = node("dr", window=5)
    search.settings.min_samples = 5
    for k, g in enumerate([0.0, 1.0, 0.2, 0.9, 0.1, 0.8, 0.3]):
        n.na[0] += 1
        search._backup(n, 0, g)
        n.q[0] += (g - n.q[0]) / n.na[0]
        assert len(n.pairs[0]) == min(k + 1, 5)
    assert n.beta[0] == pytest.approx(est.beta(list(n.pairs[0]), n.na[0], 0.5, 0.05, 5))
    assert n.beta[0] != pytest.approx(0.5 * math.exp(-0.05 * n.na[0]))  # from the window, not the fallback


@pytest.mark.parametrize("estimator", ["is", "dr"])
def test_a_decision_at_few_simulations_reports_the_roots_beta(estimator: str) -> None:
    search = searcher(settings=Settings(estimator=estimator, ff_rollouts=False, policy_weight=0.0))
    d = search.decide(START, {"milk": {"fridge": 0.5, "counter": 0.5}}, Budget(5))
    assert d.simulations == 5 and d.step is not None
    assert d.beta is not None and 0.0 <= d.beta <= 0.5
    assert searcher().decide(START, {"milk": {"fridge": 1.0}}, Budget(5)).beta is None  # mc: no beta
