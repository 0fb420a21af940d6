"""FF's relaxed-plan heuristic on a ground task (planners/grounding.py): a goal's test, its distance h(s)
and FF's helpful actions, as MCTS's rollouts, value estimates and greedy policy use them.

Relevance pruning (planners/relevance.py) keeps its own lifted relaxed exploration and FF extraction:
it grounds lazily from states of 100k facts, where the full grounding this heuristic needs is
impossible.
"""

from __future__ import annotations

import math

from kgplan.domains.formula import Atom, Formula, GroundAtom, Not
from kgplan.planners.grounding import GroundOperator, GroundState, GroundTask, literals
from kgplan.planners.state import State, ground


class Goal:
    """A goal test, and the value heuristic of rollouts and the DR estimator: V(s) = gamma**h(s), where h is
    FF's heuristic, the number of distinct actions in the relaxed plan that the additive heuristic's
    cheapest supports make (an atom costs 0 if it holds, else 1 plus its cheapest achiever's precondition
    costs, computed backwards from the goal on demand; a cycle counts as unreachable). h_add itself counts
    a shared step once per goal that needs it (being at the target looks as good as twice a step)."""

    def __init__(self, goal: Formula, task: GroundTask) -> None:
        self.formula, self.task = goal, task
        lits = literals(goal)
        self.pos = frozenset(ground(a, {}) for a in (lits or ()) if isinstance(a, Atom))
        self.neg = frozenset(ground(a.arg, {}) for a in (lits or ()) if isinstance(a, Not) and isinstance(a.arg, Atom))
        self.literal = lits is not None and len(self.pos) + len(self.neg) == len(lits)
        self.cache: dict[GroundState, tuple[float, set[GroundOperator]]] = {}

    def holds(self, s: GroundState) -> bool:
        if self.literal:
            return self.pos <= s and not (self.neg & s)
        return State(self.task.domain, self.task.objects, s).holds(self.formula)

    def helpful(self, s: GroundState) -> tuple[float, set[GroundOperator]]:
        """h(s), and the helpful actions: those applicable in `s` that the relaxed plan begins with (as in
        FF); remembered per state (simulations revisit states)."""
        if (known := self.cache.get(s)) is not None:
            return known
        if len(self.cache) > 200_000:
            self.cache.clear()
        self.cache[s] = out = self._helpful(s)
        return out

    def _helpful(self, s: GroundState) -> tuple[float, set[GroundOperator]]:
        if not self.literal:
            return (0 if self.holds(s) else 1), set()
        memo: dict[tuple[GroundAtom, bool], tuple[float, GroundOperator | None]] = {}

        def cost(q: GroundAtom, positive: bool) -> float:
            if (q in s) == positive:
                return 0
            key = (q, positive)
            if key in memo:
                return memo[key][0]
            achievers = (self.task.adders if positive else self.task.deleters).get(q, ())
            for a in achievers:
                if a.pre <= s and not (a.pre_not & s):  # the cheapest possible: no need to cost the others
                    memo[key] = (1, a)
                    return 1
            memo[key] = (math.inf, None)  # in progress: a cycle back here is no way to reach it
            best: tuple[float, GroundOperator | None] = (math.inf, None)
            for a in achievers:  # stop costing an achiever once it is no cheaper than the best
                c = 1.0
                for p in a.pre:
                    if p not in s:
                        m = memo.get((p, True))
                        c += m[0] if m is not None else cost(p, True)
                        if c >= best[0]:
                            break
                else:
                    for p in a.pre_not:
                        if p in s:
                            m = memo.get((p, False))
                            c += m[0] if m is not None else cost(p, False)
                            if c >= best[0]:
                                break
                if c < best[0]:
                    best = (c, a)
            memo[key] = best
            return best[0]

        goals = [(g, True) for g in self.pos] + [(g, False) for g in self.neg]
        if sum(cost(*g) for g in goals) == math.inf:
            return 99, set()
        helpful: set[GroundOperator] = set()
        plan: set[GroundOperator] = set()
        todo, done = [g for g in goals if g in memo], set()
        while todo:
            key = todo.pop()
            if key in done or (a := memo[key][1]) is None:
                continue
            done.add(key)
            plan.add(a)
            unmet = [k for k in [(p, True) for p in a.pre] + [(p, False) for p in a.pre_not] if k in memo]
            if memo[key][0] <= 1:
                helpful.add(a)
            todo += unmet
        return min(len(plan), 99), helpful
