"""The planners kgplan can call, by name: what each one is, what it can do, and how it runs.

Adding a planner is one `PLANNERS.add(Planner(...))`: `kgplan plan --planner`, the API's and MCP's planner
fields, the benchmarks' `--planners` and `--help` all read this registry. Every planner is fed the PDDL
of `Task.to_pddl()` and `Domain.compiled_pddl()` and runs in this process's planner worker
(`kgplan.planners.worker`): family ``fd`` translates with Fast Downward's translator, then runs the search
binary of `package`/`build` with `search` as its configuration; family ``lapkt`` grounds and searches with
LAPKT. `kgplan.planners.solve` prepares a task for what a planner declares it can take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kgplan.registry import Registry

LAMA_FIRST = ("let(hlm, eval_modify_costs(landmark_sum(lm_factory=lm_reasonable_orders_hps(lm_rhw()),pref=false),"
              "cost_type=one),let(hff, eval_modify_costs(ff(),cost_type=one),lazy_greedy([hff,hlm],"
              "preferred=[hff,hlm],cost_type=one,reopen_closed=false)))")  # Fast Downward's lama-first alias


@dataclass(frozen=True)
class Planner:
    """A planner and its capabilities.

    `optimal`: its plans are of least cost (or length), so the pipeline plans on the full state (a pruned one
    may lack the objects of a cheaper plan). `quantified_goals`: ``native`` (taken as they are), ``expand``
    (expanded over the task's objects first), or ``compile`` (an existential goal that is not a conjunction
    of literals becomes an action that achieves a new goal atom; other quantified goals are expanded).
    `vacuous_effects`: whether it accepts universal effects over no object (else they are dropped first).
    """

    name: str
    help: str
    family: Literal["fd", "lapkt"]
    search: str = ""
    package: str = "up_fast_downward"
    build: str = "downward"
    optimal: bool = False
    quantified_goals: Literal["native", "expand", "compile"] = "native"
    vacuous_effects: bool = True


PLANNERS: Registry[Planner] = Registry("planner")
PLANNERS.add(Planner("fd", "Fast Downward, LAMA-first: fast and robust (the default)", "fd", LAMA_FIRST))
PLANNERS.add(Planner("fd-opt", "Fast Downward, A* with LM-cut: optimal", "fd", "astar(lmcut())", optimal=True,
                     quantified_goals="compile"))
PLANNERS.add(Planner("symk-opt", "SymK, symbolic bidirectional search: optimal", "fd", "sym_bd()", "up_symk", "symk",
                     optimal=True))
PLANNERS.add(Planner("lapkt", "LAPKT, SIW then BFS(f): the L3M+P paper's planner", "lapkt",
                     quantified_goals="expand", vacuous_effects=False))
