"""Benchmark of the history's reads: the graph as of a change, a fact's timeline, the difference between changes.

On a synthetic household world of ``--facts`` facts (`kgplan.domains.synthetic`) it writes a history of
``--changes`` changes (the load first, then true deltas of `graph_ops.HouseholdState`: items moved to other
furniture or containers, switches flipped, the robot walking to the next room, and undos of the change before)
and times, per backend, p50/p95 over ``--ops`` each after a warm-up: (a) an entity's neighbourhood as of a random
change (`WorldGraph.at(k).neighborhood`, what ``kgplan show ITEM --at K`` reads); (b) the whole graph's facts as
of a random change (what ``export`` and ``check --at`` read); (c) the timeline of a random item's place
(``(on ITEM *)``); (d) the difference between two random changes at most ``--window`` changes apart and (e)
between any two. The history is written through each backend's own write (`Tx.write`, one change each, many
per transaction; its deltas are true, so verification, which is not what is measured, is skipped). The neo4j
backend runs on a throwaway ArcadeDB server over Bolt (`kgplan.graph.bolt_server`); it is skipped with a message
if the server cannot start.

Targets (sqlite, the issue's): timeline and difference p95 < 100 ms on a 100,000-change history.

    kgplan bench history [--changes 100000] [--facts 2000] [--ops 200] [--window 1000]
                         [--backends sqlite,neo4j] [--neo4j-changes N] [--json results/history.json]

Exit status 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from kgplan.benchmarks import below, outcome, verdict, write_json
from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks.graph_ops import HouseholdState, percentile, step
from kgplan.domains.model import Problem, resolve_domain
from kgplan.domains.synthetic import household_world_with_facts
from kgplan.graph.model import Delta
from kgplan.graph.store import Tx
from kgplan.graph.world import WorldGraph, record

DEFAULT_JSON = "results/history.json"
BACKENDS = ("sqlite", "neo4j")
WARMUP = 10
BATCH = 500  # changes per write transaction while the history is written
TARGETS = {("sqlite", "timeline_p95_ms"): 100.0, ("sqlite", "diff_window_p95_ms"): 100.0,
           ("sqlite", "diff_any_p95_ms"): 100.0}
READS = {  # metric prefix -> what it times
    "asof_show": "(a) neighbourhood as of a change",
    "asof_facts": "(b) all facts as of a change",
    "timeline": "(c) timeline (on ITEM *)",
    "diff_window": "(d) difference, <= window apart",
    "diff_any": "(e) difference, any two changes",
}


def write_history(graph: WorldGraph, problem: Problem, changes: int, seed: int, progress: Progress) -> None:
    """Initialise `graph`, load `problem` (the first change), then write true changes until there are `changes`."""
    graph.init(resolve_domain("household"))
    graph.load_problem(problem)
    state, rng = HouseholdState(problem), random.Random(seed)
    last: list[Delta] = []  # the change before, which an undo undoes
    task = progress.add_task(f"  writing {changes:,} changes", total=changes)
    progress.advance(task)

    def batch(tx: Tx, n: int) -> None:
        for _ in range(n):
            kind = rng.random()
            undo = None
            if kind < 0.1 and last and last[-1].source != "undo":
                delta = last[-1].inverse()
                undo = -1
            else:
                used: set[str] = set()
                a, r = (state.move(rng, used) if kind < 0.55 else state.toggle(rng, used) if kind < 0.9
                        else state.walk(rng))
                delta = Delta(add=a, remove=r, source="sensor", text="benchmark")
            c = tx.write(record(tx, delta), None if undo is None else c_ids[-1])
            c_ids.append(c.id)
            state.applied(delta)
            last[:] = [delta]

    c_ids = [graph.history(1)[0].id]
    done = 1
    while done < changes:
        n = min(BATCH, changes - done)
        graph.in_transaction(lambda tx, n=n: batch(tx, n))
        done += n
        progress.advance(task, n)


def time_reads(graph: WorldGraph, items: list[str], ops: int, window: int, seed: int,
               progress: Progress) -> dict[str, float]:
    """p50/p95 of each read in `READS`, on random changes and items (the same on every backend)."""
    first, last = graph.store.bounds() or (0, 0)
    rng = random.Random(seed)

    def pair(span: int) -> tuple[int, int]:
        a = rng.randint(first, last)
        b = rng.randint(max(first, a - span), min(last, a + span))
        return a, b

    reads: dict[str, Callable[[], object]] = {
        "asof_show": lambda: graph.at(rng.randint(first, last)).neighborhood([rng.choice(items)], 1),
        "asof_facts": lambda: graph.at(rng.randint(first, last)).facts(),
        "timeline": lambda: graph.timeline(f"(on {rng.choice(items)} *)"),
        "diff_window": lambda: graph.difference(*pair(window)),
        "diff_any": lambda: graph.difference(*pair(last)),
    }
    out: dict[str, float] = {}
    for key, read in reads.items():
        n = ops if key != "asof_facts" else max(1, ops // 10)  # the whole graph: fewer
        task = progress.add_task(f"  {READS[key]}", total=WARMUP + n)
        times = []
        for i in range(WARMUP + n):
            t = time.perf_counter()
            read()
            if i >= WARMUP:
                times.append((time.perf_counter() - t) * 1000)
            progress.advance(task)
        out[f"{key}_p50_ms"], out[f"{key}_p95_ms"] = percentile(times, 50), percentile(times, 95)
    return out


def run(backend: str, problem: Problem, changes: int, ops: int, window: int, seed: int, progress: Progress,
        heap: str) -> dict[str, float]:
    """Write the history into a fresh store of `backend` and time the reads on it."""
    items = HouseholdState(problem).items
    with tempfile.TemporaryDirectory(prefix="kgplan-bench-history-") as tmp, ExitStack() as stack:
        if backend == "sqlite":
            from kgplan.graph.backends import open_graph

            graph = stack.enter_context(open_graph(f"sqlite:{tmp}/history.db"))
        else:
            from kgplan.graph.backends.neo4j import Neo4jStore
            from kgplan.graph.bolt_server import running_arcadedb

            with step(progress, "  starting ArcadeDB (Bolt)"):
                server = stack.enter_context(running_arcadedb(Path(tmp), max_heap=heap))
            graph = stack.enter_context(WorldGraph(Neo4jStore(server.uri, server.user, server.password,
                                                              server.database)))
        t = time.perf_counter()
        write_history(graph, problem, changes, seed, progress)
        out = {"changes": float(changes), "write_s": time.perf_counter() - t}
        return out | time_reads(graph, items, ops, window, seed + 1, progress)


def report(results: dict[str, dict[str, float]]) -> tuple[Table, list[dict[str, Any]]]:
    """The table (reads by backend, p50 and p95) and the target verdicts."""
    table = Table(title="history: the graph as of a change, timelines, differences", title_justify="left")
    for col in ("backend", "changes", "read", "p50", "p95", "target p95", "result"):
        table.add_column(col, no_wrap=True)
    verdicts = []
    for backend, m in results.items():
        for key, label in READS.items():
            limit = TARGETS.get((backend, f"{key}_p95_ms"))
            p95 = m[f"{key}_p95_ms"]
            cells = [backend, f"{m['changes']:,.0f}", label, f"{m[f'{key}_p50_ms']:.2f} ms", f"{p95:.2f} ms", "", ""]
            if limit is not None:
                verdicts.append(v := below(p95, limit, backend=backend, metric=f"{key}_p95_ms"))
                cells[5:] = [f"< {limit:.0f} ms", verdict(v["pass"])]
            table.add_row(*cells)
        table.add_section()
    return table, verdicts


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every target is met, 1 otherwise."""
    ap = argparse.ArgumentParser(prog="kgplan bench history", description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=100_000, help="changes in the history (default 100000)")
    ap.add_argument("--facts", type=int, default=2_000, help="facts in the synthetic world (default 2000)")
    ap.add_argument("--ops", type=int, default=200, help="timed reads per kind (default 200)")
    ap.add_argument("--window", type=int, default=1_000, help="most changes between (d)'s two (default 1000)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated: sqlite,neo4j")
    ap.add_argument("--neo4j-changes", type=int, default=None, help="changes for neo4j if fewer (in the report)")
    ap.add_argument("--json", default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})")
    ap.add_argument("--arcadedb-heap", default="4g", help="JVM heap of the ArcadeDB server (default 4g)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if unknown := [b for b in backends if b not in BACKENDS]:
        ap.error(f"unknown backend(s) {unknown}; choose from {', '.join(BACKENDS)}")
    if args.ops < 1 or args.changes < 2 or args.facts < 100 or args.window < 1:
        ap.error("--ops and --window must be at least 1, --changes 2 and --facts 100")

    console: Console = bench_console()
    results: dict[str, dict[str, float]] = {}
    skipped: dict[str, str] = {}
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console)
    with progress:
        with step(progress, f"generating a household world of {args.facts:,} facts"):
            problem = household_world_with_facts(args.facts, args.seed)
        for backend in backends:
            changes = args.neo4j_changes if backend == "neo4j" and args.neo4j_changes else args.changes
            progress.console.print(f"[bold]{backend}[/]: {changes:,} changes on {len(problem.init):,} facts")
            try:
                results[backend] = run(backend, problem, changes, args.ops, args.window, args.seed, progress,
                                       args.arcadedb_heap)
            except Exception as e:  # the Bolt server could not start (no Java, no arcadedb-embedded, ...)
                if backend == "sqlite":
                    raise
                skipped[backend] = f"{type(e).__name__}: {e}"
                progress.console.print(f"[yellow]{backend} skipped: {skipped[backend]}[/]")

    table, verdicts = report(results)
    console.print(table)
    passed = all(v["pass"] for v in verdicts)
    console.print(outcome(v["pass"] for v in verdicts))
    doc = {"benchmark": "history", "time": datetime.now(UTC).isoformat(),
           "config": {k: v for k, v in vars(args).items() if k != "json"},
           "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                       "sqlite": sqlite3.sqlite_version},
           "world": {"facts": len(problem.init), "objects": len(problem.objects)},
           "results": results, "skipped": skipped, "targets": verdicts, "passed": passed}
    if args.json:
        write_json(Path(args.json), doc)
        console.print(f"results written to {args.json}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
