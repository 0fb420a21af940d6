"""DR-MCTS's leaf values: the doubly robust estimate of a rollout, and the hybrid that mixes it with the
Monte Carlo return by the variance-minimising weight."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Hybrid:
    """Online statistics of paired (V_MC, V_DR) samples and the weight beta of V_MC that minimises the
    variance of ``beta*V_MC + (1-beta)*V_DR``; with too few samples (or no variance) the schedule
    ``beta_base*exp(-lam*N)``. Samples that never vary (every rollout failed) say nothing of a variance,
    so they count as too few."""

    beta_base: float = 0.5
    lam: float = 0.01
    min_samples: int = 10
    n: int = 0
    mean_mc: float = 0.0
    mean_dr: float = 0.0
    m2_mc: float = 0.0
    m2_dr: float = 0.0
    c: float = 0.0

    def add(self, mc: float, dr: float) -> None:
        self.n += 1
        d_mc = mc - self.mean_mc
        self.mean_mc += d_mc / self.n
        d_dr = dr - self.mean_dr
        self.mean_dr += d_dr / self.n
        self.m2_mc += d_mc * (mc - self.mean_mc)
        self.m2_dr += d_dr * (dr - self.mean_dr)
        self.c += d_mc * (dr - self.mean_dr)

    def beta(self, visits: int) -> float:
        if self.n >= max(self.min_samples, 2):
            v_mc, v_dr, cov = self.m2_mc / (self.n - 1), self.m2_dr / (self.n - 1), self.c / (self.n - 1)
            denom = v_mc + v_dr - 2 * cov
            if min(v_mc, v_dr) > 1e-12 and denom > 1e-12:
                return min(1.0, max(0.0, (v_dr - cov) / denom))
        return self.beta_base * math.exp(-self.lam * visits)


def doubly_robust(v: Sequence[float], rewards: Sequence[float], rho: Sequence[float], gamma: float) -> float:
    """V_DR of one trajectory s_0 a_0 r_0 s_1 ... s_T: ``V(s_0) + sum_t gamma^t rho_{0:t} (r_t + gamma V(s_{t+1})
    - Q(s_t, a_t))`` with Q(s, a) = V(s); `v` has T+1 values (0 for a terminal state), `rho` the T
    cumulative importance weights prod pi/mu."""
    out = v[0]
    for t, (r, w) in enumerate(zip(rewards, rho, strict=True)):
        out += gamma ** t * w * (r + gamma * v[t + 1] - v[t])
    return out
