"""DR-MCTS's and IS-MCTS's backups at one tree node (s, a) of a simulation, from the return sample
``G = r + gamma*v(s')`` (v(s') the value backed up from below): the target policy softmax(Q), V-hat as the
softmax(Q)-weighted empirical mean of the returns of the node's actions, Q-hat by K-fold cross-validated
returns, the importance weight pi/mu, and the hybrid ``beta*G + (1-beta)*V_X`` with beta per (s, a) over a
sliding window of paired samples (variance-minimising), falling back to ``beta_base*exp(-lam*N(s, a))``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean


def softmax(q: Sequence[float], temperature: float = 1.0) -> list[float]:
    top = max(q)
    z = [math.exp((x - top) / temperature) for x in q]
    return [x / sum(z) for x in z]


def target(q: Sequence[float], temperature: float = 1.0, uniform: float = 0.0) -> list[float]:
    """The target policy pi over a node's actions: softmax(Q / temperature), mixed with uniform by `uniform`
    (0 in the paper; the paper's code mixes at 0.5)."""
    return [(1 - uniform) * p + uniform / len(q) for p in softmax(q, temperature)]


def v_hat(q: Sequence[float], returns: Sequence[Sequence[float]], temperature: float = 1.0) -> float:
    """V-hat(s): the empirical mean return of each action tried at s, weighted by softmax(Q) over those."""
    tried = [j for j, r in enumerate(returns) if r]
    if not tried:
        return 0.0
    w = softmax([q[j] for j in tried], temperature)
    return sum(p * fmean(returns[j]) for p, j in zip(w, tried, strict=True))


def q_hat(returns: Sequence[float], k: int = 2) -> float:
    """Q-hat(s, a) for the newest return (the one being backed up), cross-validated: the mean of the returns
    outside its fold (folds by position, i mod k); the mean of all while the other folds are empty."""
    fold = (len(returns) - 1) % k
    rest = [g for i, g in enumerate(returns) if i % k != fold]
    return fmean(rest or returns)


def weight(pi: float, mu: float, rho_max: float) -> float:
    """The importance weight pi/mu of one step, clipped at `rho_max`."""
    return min(pi / mu, rho_max) if mu > 0 else rho_max


def doubly_robust(v: float, rho: float, g: float, q: float) -> float:
    """V_DR(s) = V-hat(s) + rho*(G - Q-hat(s, a)) (the recursive form: G carries the DR value below)."""
    return v + rho * (g - q)


def beta(window: Sequence[tuple[float, float]], visits: int, beta_base: float, lam: float,
         min_samples: int) -> float:
    """The weight of the Monte Carlo return G against V_X (IS or DR) at (s, a): the variance-minimising
    ``(Var X - Cov) / (Var G + Var X - 2 Cov)`` over the window's (G, V_X) pairs, in [0, 1]; with fewer than
    `min_samples` pairs, or no variance in either, ``beta_base*exp(-lam*N(s, a))``."""
    n = len(window)
    if n >= max(min_samples, 2):
        mg, mx = fmean(g for g, _ in window), fmean(x for _, x in window)
        vg = sum((g - mg) ** 2 for g, _ in window) / (n - 1)
        vx = sum((x - mx) ** 2 for _, x in window) / (n - 1)
        cov = sum((g - mg) * (x - mx) for g, x in window) / (n - 1)
        denom = vg + vx - 2 * cov
        if min(vg, vx) > 1e-12 and denom > 1e-12:
            return min(1.0, max(0.0, (vx - cov) / denom))
    return beta_base * math.exp(-lam * visits)
