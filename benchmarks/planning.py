"""Planning benchmark: relevance-pruned vs full state, on the L3M+P runs and synthetic worlds.

For every goal of every run (its ground-truth state loaded into a sqlite graph), plan with
pruning through the agent's pipeline, plan again on the full state, and check the pruned
plan with unified-planning's validator on the full (unpruned) problem. A synthetic series
(the household generator at several sizes) shows how planning time grows with graph size.

    python -m benchmarks.planning ../shared/bench/l3mp-household [--scaling 1000,5000,20000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from agent.planning import PlanReport, plan
from benchmarks import console as bench_console
from domains.formula import And, Atom, Formula, Not, to_pddl
from domains.model import Domain, Problem, resolve_domain
from graph.backends.sqlite import SqliteGraph
from planners.problem import Task
from planners.relevance import Relevance, literals
from planners.solve import solve, validate
from planners.state import State, Step, ground, simulate

TARGET_SPEEDUP = 25.0
TARGET_MAX_PRUNED_S = 10.0
TARGET_RECALL = 0.99


def goal_steps(root: Path) -> list[tuple[Path, Path]]:
    """(run, goal step folder) for every goal under the given run or dataset folders."""
    runs = [root] if (root / "domain.pddl").is_file() else sorted(
        p for p in root.iterdir() if (p / "domain.pddl").is_file())
    return [(run, step) for run in runs for step in sorted(run.glob("time_*_goal"))]


def measure(g: SqliteGraph, domain: Domain, problem: Problem, goal: Formula, name: str, planner: str,
            timeout: float, full: bool) -> dict:
    """Plan with pruning and (optionally) on the full state; validate the pruned plan on the full problem."""
    g.init(domain, force=True)
    g.load_problem(problem, verified=False)
    r: PlanReport = plan(g, to_pddl(goal), planner=planner, timeout=timeout)
    full_task = Task(domain, problem.objects, {(a.predicate, a.args) for a in problem.init}, goal)
    row = {"goal": name, "status": r.status, "facts_full": r.facts_full, "facts_pruned": r.facts_pruned,
           "prune_s": r.prune_seconds, "pruned_s": r.seconds, "used_full_state": r.used_full_state,
           "plan_length": len(r.plan), "message": r.message}
    row["planner_called"] = r.seconds > 0  # not when the goal already holds
    row["valid_on_full"] = r.solved and validate(full_task, [Step.parse(s) for s in r.plan]) is None
    if full:
        res = solve(full_task, planner, timeout)
        row |= {"full_status": res.status, "full_s": res.seconds}
        if res.solved:  # retrieval recall: the initial facts the full-state plan reads, kept by pruning?
            state = State(domain, problem.objects, full_task.facts)
            needed = needed_facts(state, res.plan, goal)
            kept = Relevance(domain).prune(state, goal).facts
            row["recall"] = len(needed & kept) / len(needed) if needed else 1.0
        pruned_total = r.prune_seconds + r.seconds
        row["speedup"] = res.seconds / pruned_total if res.solved and r.solved and r.seconds > 0 else None
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
    return And((Not(on[-1]), Atom("holding", ("robot", items[-1].args[0]))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kgplan bench planning", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="*", type=Path, help="L3M+P runs or folders of runs")
    ap.add_argument("--planner", default="fd")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per planner call")
    ap.add_argument("--no-full", action="store_true", help="skip planning on the full state")
    ap.add_argument("--scaling", default="", help="synthetic sizes in objects, e.g. 1000,5000,20000")
    ap.add_argument("--json", type=Path, default=Path("results/planning.json"))
    args = ap.parse_args(argv)
    console = bench_console()
    rows, scaling = [], []
    with tempfile.TemporaryDirectory() as tmp:
        g = SqliteGraph(Path(tmp) / "bench.db")
        steps = [s for d in args.datasets for s in goal_steps(d)]
        for run, step in track(steps, description="L3M+P goals", console=console):
            problem = Problem.parse((step / "problem.pddl").read_text(), str(step))
            assert problem.goal is not None, step
            rows.append(measure(g, Domain.load(run / "domain.pddl"), problem, problem.goal,
                                f"{run.name}/{step.name}", args.planner, args.timeout, not args.no_full))
        if args.scaling:
            from benchmarks.synthetic import household_world

            household = resolve_domain("household")
            for n in track([int(x) for x in args.scaling.split(",")], description="synthetic", console=console):
                problem = household_world(n)
                scaling.append({"objects": len(problem.objects)} | measure(
                    g, household, problem, scaling_goal(problem), f"synthetic-{n}", args.planner,
                    args.timeout, not args.no_full))
        g.close()
    summary = summarise(rows)
    print_tables(console, rows, scaling, summary)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"summary": summary, "goals": rows, "scaling": scaling}, indent=1))
    console.print(f"results written to {args.json}")
    return 0 if summary.get("all_targets_met", True) else 1


def summarise(rows: list[dict]) -> dict:
    if not rows:
        return {}
    speedups = [r["speedup"] for r in rows if r.get("speedup")]
    out = {
        "goals": len(rows),
        "goals_already_true": sum(not r["planner_called"] for r in rows),
        "solved": sum(r["status"] == "solved" for r in rows),
        "valid_on_full": sum(r["valid_on_full"] for r in rows),
        "median_facts_full": statistics.median(r["facts_full"] for r in rows),
        "median_facts_pruned": statistics.median(r["facts_pruned"] for r in rows),
        "max_pruned_s": max(r["pruned_s"] + r["prune_s"] for r in rows),
        "median_pruned_s": statistics.median(r["pruned_s"] for r in rows),
    }
    if recalls := [r["recall"] for r in rows if "recall" in r]:
        out |= {"min_recall": min(recalls), "mean_recall": statistics.mean(recalls)}
    if speedups:
        out |= {"median_full_s": statistics.median(r["full_s"] for r in rows if r.get("full_s")),
                "median_speedup": statistics.median(speedups), "min_speedup": min(speedups)}
    out["all_targets_met"] = (out["valid_on_full"] == len(rows) and out["max_pruned_s"] < TARGET_MAX_PRUNED_S
                              and out.get("median_speedup", TARGET_SPEEDUP) >= TARGET_SPEEDUP
                              and out.get("min_recall", 1.0) >= TARGET_RECALL)
    return out


def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def print_tables(console: Console, rows: list[dict], scaling: list[dict], summary: dict) -> None:
    cols = ("goal", "facts full", "facts pruned", "prune s", "plan s (pruned)", "plan s (full)", "speedup",
            "plan len", "valid on full", "note")
    for title, data in (("L3M+P goals", rows), ("Synthetic scaling", scaling)):
        if not data:
            continue
        t = Table(*cols, title=title)
        for r in data:
            t.add_row(r["goal"], str(r["facts_full"]), str(r["facts_pruned"]), _f(r["prune_s"], 3),
                      _f(r["pruned_s"]), _f(r.get("full_s")) + ("" if r.get("full_status") in (None, "solved")
                                                                 else f" ({r['full_status']})"),
                      _f(r.get("speedup"), 1), str(r["plan_length"]), "yes" if r["valid_on_full"] else "NO",
                      ("full-state fallback" if r["used_full_state"] else "") + r["message"][:60])
        console.print(t)
    if summary:
        t = Table("measure", "value", "target", title="Summary")
        t.add_row("goals solved", f"{summary['solved']}/{summary['goals']}", "all")
        t.add_row("goals already true (no planner call, no speedup counted)", str(summary["goals_already_true"]), "")
        t.add_row("pruned plans valid on the full state", f"{summary['valid_on_full']}/{summary['goals']}", "all")
        t.add_row("median facts full / pruned", f"{summary['median_facts_full']} / {summary['median_facts_pruned']}",
                  "")
        t.add_row("max time with pruning (s)", _f(summary["max_pruned_s"]), f"< {TARGET_MAX_PRUNED_S:.0f}")
        if "median_speedup" in summary:
            t.add_row("median planner time full (s)", _f(summary["median_full_s"]), "")
            t.add_row("median speedup, full planner time / (pruning + pruned planner time), over goals "
                      "that needed a plan", _f(summary["median_speedup"], 1), f">= {TARGET_SPEEDUP:.0f}")
        if "min_recall" in summary:
            t.add_row("retrieval recall: initial facts the full-state plan (redundant steps dropped) reads that "
                      "pruning kept (min / mean)",
                      f"{summary['min_recall']:.1%} / {summary['mean_recall']:.1%}", ">= 99%")
        t.add_row("all targets met", str(summary["all_targets_met"]), "")
        console.print(t)


if __name__ == "__main__":
    raise SystemExit(main())
