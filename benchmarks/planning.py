"""Planning benchmark: relevance-pruned vs full state, on the L3M+P runs and synthetic worlds.

For every goal of every run (its ground-truth state loaded into a sqlite graph), and for each
planner asked for (Fast Downward LAMA-first and LAPKT by default, side by side), plan with
pruning through the agent's pipeline in this process (as `kgplan plan` does after start-up),
plan again on the full state with the first planner (the baseline: seconds per goal), and
check each pruned plan on the full (unpruned) state: by simulation and, for worlds small
enough for it, by unified-planning's validator. A synthetic series (the household generator
at several sizes) shows how planning time and memory grow with the size of the world.

The cost bound (no goal's pruned end to end above the full-state planner time + 0.5 s) can only
fail for a goal whose pruned end to end is above 0.5 s: with `--full-sample N` the baseline runs
on every such goal and on N goals drawn at random (`--seed`) among all, which alone give the
speedup and the recall; the table and the JSON say so.

Times are wall-clock; "cpu" is the CPU time of this process and of the planner processes over
the same call, which a busy machine inflates less. The targets apply to the first planner.

    kgplan bench planning ../shared/bench/l3mp-household [--scaling 1000,5000,20000,100000] [--full-sample 60]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import track
from rich.table import Table

from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks import outcome, target_table
from kgplan.domains.formula import And, Atom, Formula, Not, to_pddl
from kgplan.domains.model import Domain, Problem, resolve_domain
from kgplan.graph.backends import open_graph
from kgplan.graph.world import WorldGraph
from kgplan.planners.engines import PLANNERS
from kgplan.planners.pipeline import HEDGE_S, PlanReport, plan
from kgplan.planners.problem import Task
from kgplan.planners.relevance import Relevance, literals
from kgplan.planners.solve import solve, validate
from kgplan.planners.state import State, Step, ground, simulate

TARGET_SPEEDUP = 150.0  # median, full-state planner time / pruned end to end
TARGET_MEDIAN_PRUNED_S = 0.03  # median pruned end to end (pruning + planning)
TARGET_MAX_PRUNED_S = 2.0
TARGET_OVER_FULL_S = 0.5  # no goal's pruned end to end above the full-state planner time + this
TARGET_SCALING_S = {20_000: 1.0, 100_000: 5.0}  # whole pruned plan call, by world size in objects
TARGET_RECALL = 1.0
VALIDATOR_MAX_OBJECTS = 2000  # unified-planning's validator finds objects by name in a list: quadratic beyond
T = TypeVar("T")


def goal_steps(root: Path) -> list[tuple[Path, Path]]:
    """(run, goal step folder) for every goal under the given run or dataset folders."""
    runs = [root] if (root / "domain.pddl").is_file() else sorted(
        p for p in root.iterdir() if (p / "domain.pddl").is_file())
    return [(run, step) for run in runs for step in sorted(run.glob("time_*_goal"))]


def timed(fn: Callable[[], T]) -> tuple[T, float, float]:
    """`fn()` with its wall-clock seconds and CPU seconds (this process and its reaped children)."""
    def cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    wall, c = time.perf_counter(), cpu()
    out = fn()
    return out, time.perf_counter() - wall, cpu() - c


def peak_rss_mb() -> float:
    """The largest resident set so far of this process or any of its reaped children, in MB (not
    the planner children: they are the planner worker's, see `PlanReport.planner_peak_mb`)."""
    return max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


def measure(g: WorldGraph, domain: Domain, problem: Problem, goal: Formula, name: str, planners: list[str],
            timeout: float, full_timeout: float | None, sampled: bool = True) -> dict:
    """Per planner: plan with pruning and validate the plan on the full state; with the first planner, also
    plan on the full state (unless `full_timeout` is None) if the goal is `sampled` (then for speedup and
    recall too) or took more than `TARGET_OVER_FULL_S` (for the cost bound)."""
    g.init(domain, force=True)
    g.load_problem(problem, verified=False)
    full_task = Task(domain, problem.objects, set(problem.init), goal)
    row: dict = {"goal": name, "objects": len(problem.objects), "sampled": sampled}
    for planner in planners:
        r: PlanReport
        r, wall, cpu = timed(lambda p=planner: plan(g, to_pddl(goal), planner=p, timeout=timeout))
        row |= {"facts_full": r.facts_full, "facts_pruned": r.facts_pruned}
        m = {"status": r.status, "prune_s": r.prune_seconds, "plan_s": r.seconds,
             "pruned_s": r.prune_seconds + r.seconds, "call_s": wall, "call_cpu_s": cpu + r.planner_cpu_seconds,
             "used_full_state": r.used_full_state, "widenings": r.widenings, "fallback": r.fallback,
             "raced": r.raced, "winner": r.winner,
             "plan_length": len(r.plan), "plan": [str(s) for s in r.plan], "message": r.message,
             "planner_peak_mb": r.planner_peak_mb,
             "planner_called": r.seconds > 0}  # not when the goal already holds
        steps = r.plan
        m["valid_on_full"] = r.solved and simulate(State(domain, problem.objects, full_task.facts), steps, goal) is None
        if r.solved and len(problem.objects) <= VALIDATOR_MAX_OBJECTS:  # and by an independent validator
            m["valid_on_full"] &= validate(full_task, steps) is None
        if full_timeout is not None and planner == planners[0] and (sampled or m["pruned_s"] > TARGET_OVER_FULL_S):
            res = solve(full_task, planner, full_timeout)
            m |= {"full_status": res.status, "full_s": res.seconds,
                  "planner_peak_mb": max(m["planner_peak_mb"], res.peak_mb),
                  "over_full": m["pruned_s"] - res.seconds if res.solved else None}
            m["speedup"] = res.seconds / m["pruned_s"] if res.solved and r.solved and r.seconds > 0 else None
            if res.solved and sampled:  # recall: the initial facts the full-state plan reads, kept by pruning?
                state = State(domain, problem.objects, full_task.facts)
                needed = needed_facts(state, res.plan, goal)
                kept = Relevance(domain).prune(state, goal).facts
                row["recall"] = len(needed & kept) / len(needed) if needed else 1.0
        row[planner] = m
    row["peak_rss_mb"] = max(peak_rss_mb(), *(row[p]["planner_peak_mb"] for p in planners))
    return row


def needed_facts(state: State, plan: list[Step], goal: Formula) -> set[tuple[str, tuple[str, ...]]]:
    """The initial facts a task needs: those the plan, redundant steps dropped, reads from `state`."""
    return read_facts(state.copy(), drop_redundant(state, plan, goal))


def drop_redundant(state: State, plan: list[Step], goal: Formula) -> list[Step]:
    """The plan without steps it reaches the goal without (greedy action elimination), so that a
    satisficing planner's detours do not count as facts the task needs."""
    plan = list(plan)
    i = 0
    while i < len(plan):
        shorter = plan[:i] + plan[i + 1:]
        if simulate(state.copy(), shorter, goal) is None:
            plan = shorter
        else:
            i += 1
    return plan


def read_facts(state: State, plan: list[Step]) -> set[tuple[str, tuple[str, ...]]]:
    """The initial facts that a plan's positive preconditions read (not produced by earlier steps)."""
    initial, produced, out = set(state.facts), set(), set()
    for step in plan:
        act, b = state.bind(step)
        out |= {ground(atom, b) for atom, pos in literals(act.precondition) if pos} & initial - produced
        added, _ = state.apply(step)
        produced |= added
    return out


def scaling_goal(problem: Problem) -> Formula:
    """A task on a synthetic world: switch off a device at the far end and fetch an item from there."""
    on = [a for a in problem.init if a.predicate == "switched_on"]
    items = [a for a in problem.init if a.predicate == "on"]
    return And((Not(Atom(*on[-1])), Atom("holding", ("robot", items[-1].args[0]))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kgplan bench planning", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="*", type=Path, help="L3M+P runs or folders of runs")
    ap.add_argument("--planners", default="fd,lapkt",
                    help="planners side by side, the first one judged by the targets (of "
                         f"{', '.join(PLANNERS.names())})")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per pruned planner call")
    ap.add_argument("--full-timeout", type=float, default=None,
                    help="seconds per full-state planner call (default: --timeout)")
    ap.add_argument("--no-full", action="store_true", help="skip planning on the full state")
    ap.add_argument("--full-sample", type=int, default=None, metavar="N",
                    help="plan on the full state only for N goals drawn at random (speedup, recall) and for every goal "
                         f"whose pruned end to end is above {TARGET_OVER_FULL_S:g} s (the cost bound); default: all")
    ap.add_argument("--seed", type=int, default=0, help="the seed of the --full-sample draw")
    ap.add_argument("--scaling", default="", help="synthetic sizes in objects, e.g. 1000,5000,20000,100000")
    ap.add_argument("--json", type=Path, default=Path("results/planning.json"))
    args = ap.parse_args(argv)
    planners = args.planners.split(",")
    if unknown := [p for p in planners if p not in PLANNERS]:
        ap.error(f"unknown planner(s) {', '.join(unknown)}: choose from {', '.join(PLANNERS.names())}")
    full_timeout = None if args.no_full else args.full_timeout or args.timeout
    console = bench_console()
    rows, scaling, baseline = [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        g = open_graph(f"sqlite:{Path(tmp) / 'bench.db'}")
        steps = [s for d in args.datasets for s in goal_steps(d)]
        n = len(steps) if args.full_sample is None else min(args.full_sample, len(steps))
        sample = set(random.Random(args.seed).sample(range(len(steps)), n))
        baseline = {"sampled": n, "of": len(steps), "seed": args.seed if n < len(steps) else None,
                    "and_every_goal_above_s": TARGET_OVER_FULL_S}
        for i, (run, step) in enumerate(track(steps, description="L3M+P goals", console=console)):
            problem = Problem.parse((step / "problem.pddl").read_text(), str(step))
            assert problem.goal is not None, step
            rows.append(measure(g, Domain.load(run / "domain.pddl"), problem, problem.goal,
                                f"{run.name}/{step.name}", planners, args.timeout, full_timeout, i in sample))
        if args.scaling:
            from kgplan.domains.synthetic import household_world

            household = resolve_domain("household")
            for n in track([int(x) for x in args.scaling.split(",")], description="synthetic", console=console):
                problem = household_world(n)
                scaling.append({"size": n} | measure(g, household, problem, scaling_goal(problem), f"synthetic-{n}",
                                                     planners, args.timeout, full_timeout))
        g.close()
    summary = {p: summarise(rows, p) for p in planners} if rows else {}
    targets = check_targets(summary.get(planners[0], {}), scaling, planners[0])
    if full_timeout is None:
        baseline = {}
    print_tables(console, rows, scaling, planners, summary, targets, baseline)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"summary": summary, "targets": targets, "full_state_baseline": baseline,
                                     "goals": rows, "scaling": scaling}, indent=1))
    console.print(f"results written to {args.json}")
    return 0 if all(targets.values()) else 1


def summarise(rows: list[dict], planner: str) -> dict:
    """One planner's figures over the goals; times over the goals that needed a plan."""
    ms = [r[planner] for r in rows]
    called = [m for m in ms if m["planner_called"]] or ms
    speedups = [m["speedup"] for r, m in zip(rows, ms, strict=True) if m.get("speedup") and r["sampled"]]
    over = [m["over_full"] for m in ms if m.get("over_full") is not None]
    out = {
        "goals": len(ms),
        "goals_already_true": sum(not m["planner_called"] for m in ms),
        "solved": sum(m["status"] == "solved" for m in ms),
        "valid_on_full": sum(m["valid_on_full"] for m in ms),
        "full_state_used": sum(m["used_full_state"] for m in ms),
        "fallbacks": sum(m["fallback"] for m in ms),
        "widenings": sum(m["widenings"] for m in ms),
        "raced": sum(m["raced"] for m in ms),
        "goals_with_baseline": len(over),
        "goals_above_full_bound": sum(o > TARGET_OVER_FULL_S for o in over),
        "max_over_full_s": max(over, default=None),
        "goals_above_max_s": sum(m["pruned_s"] > TARGET_MAX_PRUNED_S for m in ms),
        "median_facts_full": statistics.median(r["facts_full"] for r in rows),
        "median_facts_pruned": statistics.median(r["facts_pruned"] for r in rows),
        "median_pruned_s": statistics.median(m["pruned_s"] for m in called),
        "median_pruned_cpu_s": statistics.median(m["call_cpu_s"] for m in called),
        "max_pruned_s": max(m["pruned_s"] for m in ms),
    }
    if speedups:
        out |= {"median_full_s": statistics.median(m["full_s"] for r, m in zip(rows, ms, strict=True)
                                                   if m.get("full_s") and r["sampled"]),
                "median_speedup": statistics.median(speedups), "min_speedup": min(speedups)}
    if recalls := [r["recall"] for r in rows if "recall" in r]:  # (sampled goals only)
        out |= {"min_recall": min(recalls), "mean_recall": statistics.mean(recalls)}
    return out


def check_targets(s: dict, scaling: list[dict], planner: str) -> dict[str, bool]:
    """Each acceptance target for the first planner: met or not."""
    out = {}
    if s:
        out |= {"all L3M+P goals planned and valid on the full state": s["valid_on_full"] + s["goals_already_true"]
                >= s["goals"] and s["solved"] == s["goals"],
                f"median pruned end to end <= {TARGET_MEDIAN_PRUNED_S * 1000:.0f} ms":
                    s["median_pruned_s"] <= TARGET_MEDIAN_PRUNED_S,
                f"no goal above {TARGET_MAX_PRUNED_S:g} s": s["max_pruned_s"] <= TARGET_MAX_PRUNED_S}
        if s["goals_with_baseline"]:
            out[f"no goal above the full-state planner time + {TARGET_OVER_FULL_S:g} s"] = (
                s["goals_above_full_bound"] == 0)
        if "median_speedup" in s:
            out[f"median speedup >= {TARGET_SPEEDUP:.0f}x"] = s["median_speedup"] >= TARGET_SPEEDUP
        if "min_recall" in s:
            out[f"recall {'=' if TARGET_RECALL == 1 else '>='} {TARGET_RECALL:.0%}"] = s["min_recall"] >= TARGET_RECALL
    for r in scaling:
        m = r[planner]
        out[f"{r['goal']}: pruned plan valid on the full state"] = m["valid_on_full"]
        if (limit := TARGET_SCALING_S.get(r["size"])) is not None:
            out[f"{r['goal']}: whole pruned plan call <= {limit:g} s"] = m["call_s"] <= limit
    return out


def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _full(m: dict) -> str:
    if "full_status" not in m:
        return "-"
    return _f(m["full_s"]) + ("" if m["full_status"] == "solved" else f" ({m['full_status']})")


def print_tables(console: Console, rows: list[dict], scaling: list[dict], planners: list[str], summary: dict,
                 targets: dict[str, bool], baseline: dict) -> None:
    for title, data in (("L3M+P goals", rows), ("Synthetic scaling", scaling)):
        if not data:
            continue
        cols = ["goal", "objects", "facts full", "facts pruned"]
        for p in planners:
            cols += [f"{p} pruned s", f"{p} call s", f"{p} full s", f"{p} speedup", f"{p} len", f"{p} valid"]
        t = Table(*cols, "peak RSS MB", "note", title=title)
        for r in data:
            cells = [r["goal"], str(r["objects"]), str(r["facts_full"]), str(r["facts_pruned"])]
            notes = []
            for p in planners:
                m = r[p]
                cells += [_f(m["pruned_s"], 3), _f(m["call_s"], 3), _full(m), _f(m.get("speedup"), 0),
                          str(m["plan_length"]), "yes" if m["valid_on_full"] else "NO"]
                if m["used_full_state"] or m["widenings"] or m["status"] != "solved" or m["raced"]:
                    widened = f", {m['widenings']} widenings" if m["widenings"] else ""
                    raced = ", raced by the full state" if m["raced"] else ""
                    notes.append(f"{p}: {m['status']}{' on the full state' if m['used_full_state'] else ''}"
                                 f"{widened}{raced}")
                if (m.get("over_full") or 0) > TARGET_OVER_FULL_S:
                    notes.append(f"{p}: {m['over_full']:.2f} s above the full state")
            t.add_row(*cells, f"{r['peak_rss_mb']:.0f}", "; ".join(notes))
        console.print(t)
    if summary:
        t = Table("measure", *planners, title="Summary (times over the goals that needed a plan)")

        def line(label: str, fn: Callable[[dict], str]) -> None:
            t.add_row(label, *(fn(summary[p]) for p in planners))

        line("goals solved", lambda s: f"{s['solved']}/{s['goals']}")
        line("goals already true (no planner call)", lambda s: str(s["goals_already_true"]))
        line("pruned plans valid on the full state", lambda s: f"{s['valid_on_full']}/{s['goals']}")
        line("answered by the full state", lambda s: str(s["full_state_used"]))
        line("fallbacks to the full state / widenings of the pruned state",
             lambda s: f"{s['fallbacks']} / {s['widenings']}")
        line(f"raced: the full state planned beside the pruned (after {HEDGE_S:g} s)", lambda s: str(s["raced"]))
        line(f"goals above the full-state planner time + {TARGET_OVER_FULL_S:g} s / with a baseline",
             lambda s: f"{s['goals_above_full_bound']} / {s['goals_with_baseline']}")
        line("most above the full-state planner time (s)", lambda s: _f(s["max_over_full_s"]))
        line(f"goals above {TARGET_MAX_PRUNED_S:g} s", lambda s: str(s["goals_above_max_s"]))
        line("median facts full / pruned", lambda s: f"{s['median_facts_full']} / {s['median_facts_pruned']}")
        line("median pruned end to end, pruning + planner (ms)", lambda s: _f(s["median_pruned_s"] * 1000, 1))
        line("median CPU of the whole plan call (ms)", lambda s: _f(s["median_pruned_cpu_s"] * 1000, 1))
        line("max pruned end to end (s)", lambda s: _f(s["max_pruned_s"]))
        if baseline:
            drawn = ("every goal" if baseline["seed"] is None
                     else f"{baseline['sampled']} of {baseline['of']} goals drawn with seed {baseline['seed']}")
            t.add_row("full-state baseline (speedup, recall: the drawn goals)",
                      f"{drawn}, and every goal above {baseline['and_every_goal_above_s']:g} s (the bound)")
        line("median full-state planner time (s)", lambda s: _f(s.get("median_full_s")))
        line("median / min speedup", lambda s: f"{_f(s.get('median_speedup'), 0)} / {_f(s.get('min_speedup'), 0)}")
        line("retrieval recall min / mean", lambda s: f"{s['min_recall']:.1%} / {s['mean_recall']:.1%}"
             if "min_recall" in s else "-")
        console.print(t)
    if targets:
        console.print(target_table(f"Targets ({planners[0]})", targets))
        console.print(outcome(targets.values()))


if __name__ == "__main__":
    raise SystemExit(main())
