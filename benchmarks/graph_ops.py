"""Acceptance benchmark of the world-graph backends: bulk load, verified deltas, neighbourhoods.

On a synthetic household world of ``--facts`` facts (`kgplan.domains.synthetic`) it times, per
backend: (a) the bulk load (``init`` + ``load_problem``: verified, one change); (b) verify+apply
of true 1-fact deltas (switching a device, opening a window or container, a phone ringing) and
of true 20-fact deltas (the robot walks to a neighbouring room, six items move to other furniture
or containers of their room, six switches), p50/p95 over ``--ops`` each after a warm-up;
(c) ``neighborhood([name], 2)`` for names drawn uniformly from all objects. The sqlite store is a
file in a temporary folder; the neo4j backend talks to a throwaway ArcadeDB server over Bolt
(`kgplan.graph.bolt_server`). For neo4j the same writes are also made by a hand-written batch with the
driver: one transaction, a parameterised ``UNWIND`` statement per kind of write (unary facts as
properties, one per relationship type and direction), no verification, no history. Its bulk load
goes to a second database of the same server (both paths warmed up first on scratch databases);
its deltas alternate with the backend's on the same graph.

Targets: sqlite bulk load < 10 s, delta p50 < 5 ms, neighbourhood p50 < 10 ms; neo4j within 3x
of the hand-written batch (bulk load time, delta p50s).

    kgplan bench graph_ops [--facts 100000] [--ops 200] [--backends sqlite,neo4j]
                                   [--json results/graph_ops.json]

Exit status 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from kgplan.benchmarks import below, outcome, verdict
from kgplan.benchmarks import console as bench_console
from kgplan.domains.model import Problem, resolve_domain
from kgplan.domains.synthetic import household_world_with_facts
from kgplan.graph.model import Delta, Fact
from kgplan.graph.world import WorldGraph

DEFAULT_JSON = "results/graph_ops.json"
BACKENDS = ("sqlite", "neo4j")
WARMUP = 10  # untimed operations of each kind before the timed ones
RAW_BATCH = 10_000  # rows per statement of the hand-written bulk load
RAW_DB, WARM_DB, WARM_RAW_DB = "kgplan_raw", "kgplan_warmup", "kgplan_warmup_raw"


@dataclass(frozen=True)
class Target:
    """An acceptance target: `metric` of `backend` must stay below `limit`."""

    backend: str
    metric: str
    limit: float


TARGETS = (
    Target("sqlite", "load_s", 10.0),
    Target("sqlite", "delta1_p50_ms", 5.0),
    Target("sqlite", "delta20_p50_ms", 5.0),
    Target("sqlite", "neighborhood_p50_ms", 10.0),
    Target("neo4j", "load_ratio", 3.0),
    Target("neo4j", "delta1_ratio", 3.0),
    Target("neo4j", "delta20_ratio", 3.0),
)
# metric -> (label, unit), in table order
METRICS = {
    "facts": ("facts loaded", ""),
    "load_s": ("(a) bulk load, verified", "s"),
    "load_rate": ("(a) bulk load rate", "facts/s"),
    "raw_load_s": ("(a) hand-written UNWIND load", "s"),
    "load_ratio": ("(a) load / hand-written", "x"),
    "delta1_p50_ms": ("(b) 1-fact delta p50", "ms"),
    "delta1_p95_ms": ("(b) 1-fact delta p95", "ms"),
    "raw_delta1_p50_ms": ("(b) 1-fact hand-written p50", "ms"),
    "delta1_ratio": ("(b) 1-fact p50 / hand-written", "x"),
    "delta20_p50_ms": ("(b) 20-fact delta p50", "ms"),
    "delta20_p95_ms": ("(b) 20-fact delta p95", "ms"),
    "raw_delta20_p50_ms": ("(b) 20-fact hand-written p50", "ms"),
    "delta20_ratio": ("(b) 20-fact p50 / hand-written", "x"),
    "neighborhood_p50_ms": ("(c) depth-2 neighbourhood p50", "ms"),
    "neighborhood_p95_ms": ("(c) depth-2 neighbourhood p95", "ms"),
    "neighborhood_facts": ("(c) facts per neighbourhood", ""),
}
CAPTION = ("(b) deltas are verified and applied as one change each; hand-written = parameterised UNWIND "
           "with the neo4j driver, same writes, no verification or history")

# ---- true deltas ------------------------------------------------------------------------------
TOGGLES = {  # unary predicate -> the object types it may hold for
    "switched_on": ("light", "tv", "faucet", "stove"),
    "window_open": ("window",),
    "closed": ("fridge", "cabinet", "drawer", "washer", "dryer"),
    "phone_ringing": ("phone",),
}
FURNITURE = ("table", "shelf", "counter", "sofa", "bed")
CONTAINERS = ("fridge", "cabinet", "drawer", "laundrybasket", "washer", "dryer", "sink")
LOCATIONS = ("on", "inside", "held_by")


class HouseholdState:
    """A mirror of a household world that proposes true deltas and follows them once applied."""

    def __init__(self, problem: Problem) -> None:
        self.types = dict(problem.objects)
        self.switches = [(p, o) for p, ts in sorted(TOGGLES.items()) for o, t in sorted(self.types.items())
                         if t in ts]
        self.true: set[tuple[str, str]] = set()
        self.room_of: dict[str, str] = {}  # fixture or person -> room
        self.places: dict[str, list[str]] = defaultdict(list)  # room -> furniture and containers
        self.doors: dict[str, list[str]] = defaultdict(list)
        self.where: dict[str, Fact] = {}  # item -> its location fact
        self.robot: Fact | None = None
        for a in problem.init:
            if a.predicate in TOGGLES:
                self.true.add((a.predicate, a.args[0]))
            elif a.predicate in ("in_room", "person_at"):
                self.room_of[a.args[0]] = a.args[1]
                if self.types[a.args[0]] in FURNITURE + CONTAINERS:
                    self.places[a.args[1]].append(a.args[0])
            elif a.predicate == "connected":
                self.doors[a.args[0]].append(a.args[1])
            elif a.predicate in LOCATIONS:
                self.where[a.args[0]] = Fact(predicate=a.predicate, args=a.args)
            elif a.predicate == "agent_at":
                self.robot = Fact(predicate=a.predicate, args=a.args)
        self.items = sorted(self.where)

    def toggle(self, rng: random.Random, used: set[str]) -> tuple[list[Fact], list[Fact]]:
        """Flip one unary fact of an object not in `used`: ([added], []) or ([], [removed])."""
        while (pick := rng.choice(self.switches))[1] in used:
            pass
        pred, obj = pick
        used.add(obj)
        f = Fact(predicate=pred, args=(obj,))
        return ([], [f]) if (pred, obj) in self.true else ([f], [])

    def move(self, rng: random.Random, used: set[str]) -> tuple[list[Fact], list[Fact]]:
        """Move an item not in `used` to other furniture or another container of its room."""
        while (item := rng.choice(self.items)) in used:
            pass
        used.add(item)
        old = self.where[item]
        room = self.room_of[old.args[1]]
        spots = [p for p in self.places[room] if p != old.args[1]]
        spots = spots or [p for r in self.doors[room] for p in self.places[r]]  # next door, else anywhere
        spot = rng.choice(spots or self.places[rng.choice(sorted(self.places))])
        new = Fact(predicate="on" if self.types[spot] in FURNITURE else "inside", args=(item, spot))
        return [new], [old]

    def walk(self, rng: random.Random) -> tuple[list[Fact], list[Fact]]:
        """The robot goes through a door to a neighbouring room."""
        assert self.robot is not None
        agent, room = self.robot.args
        return [Fact(predicate="agent_at", args=(agent, rng.choice(self.doors[room])))], [self.robot]

    def delta(self, rng: random.Random, n_facts: int) -> Delta:
        """A true delta of `n_facts` facts: 1 -> one toggle; 20 -> a walk, 6 moves, 6 toggles."""
        add: list[Fact] = []
        remove: list[Fact] = []
        used: set[str] = set()
        parts: list[Callable[[], tuple[list[Fact], list[Fact]]]] = []
        if n_facts >= 2 and self.robot is not None:
            parts.append(lambda: self.walk(rng))
        budget = n_facts - 2 * len(parts)
        moves = budget // 3
        parts += [lambda: self.move(rng, used)] * moves
        parts += [lambda: self.toggle(rng, used)] * (budget - 2 * moves)
        for make in parts:
            a, r = make()
            add += a
            remove += r
        return Delta(add=add, remove=remove, source="sensor", text="benchmark")

    def applied(self, delta: Delta) -> None:
        """Follow a delta the store accepted."""
        for f in delta.remove:
            if f.predicate in TOGGLES:
                self.true.discard((f.predicate, f.args[0]))
        for f in delta.add:
            if f.predicate in TOGGLES:
                self.true.add((f.predicate, f.args[0]))
            elif f.predicate in LOCATIONS:
                self.where[f.args[0]] = f
            elif f.predicate == "agent_at":
                self.robot = f


# ---- measuring --------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


@contextmanager
def step(progress: Progress, text: str) -> Iterator[None]:
    """A spinner line while one long call runs."""
    task = progress.add_task(text, total=None)
    try:
        yield
    finally:
        progress.update(task, total=1, completed=1)


def measure_graph(graph: WorldGraph, problem: Problem, ops: int, seed: int, progress: Progress,
                  raw_delta: Callable[[Delta], None] | None = None) -> dict[str, float]:
    """Load `problem` into the empty `graph` and time deltas and neighbourhoods on it.

    With `raw_delta`, every delta kind is also written by it (alternating with the backend's
    applies, on the same graph, each on a fresh true delta).
    """
    out: dict[str, float] = {}
    graph.init(resolve_domain("household"))
    with step(progress, f"  bulk load of {len(problem.init):,} facts"):
        t = time.perf_counter()
        graph.load_problem(problem)
        out["load_s"] = time.perf_counter() - t
    out["facts"] = graph.count()[1]
    out["load_rate"] = len(problem.init) / out["load_s"]
    state = HouseholdState(problem)
    rng = random.Random(seed)
    writers: list[tuple[str, Callable[[Delta], object]]] = [("", graph.apply)]
    if raw_delta:
        writers.append(("raw_", raw_delta))
    for n in (1, 20):
        times: dict[str, list[float]] = {p: [] for p, _ in writers}
        label = f"  {n}-fact deltas" + (" (backend and hand-written, alternating)" if raw_delta else "")
        task = progress.add_task(label, total=(WARMUP + ops) * len(writers))
        for i in range(WARMUP + ops):
            for prefix, write in writers:
                delta = state.delta(rng, n)
                t = time.perf_counter()
                write(delta)
                if i >= WARMUP:
                    times[prefix].append((time.perf_counter() - t) * 1000)
                state.applied(delta)
                progress.advance(task)
        for prefix, ts in times.items():
            out[f"{prefix}delta{n}_p50_ms"] = statistics.median(ts)
            if not prefix:
                out[f"delta{n}_p95_ms"] = percentile(ts, 95)
        if raw_delta:
            out[f"delta{n}_ratio"] = out[f"delta{n}_p50_ms"] / out[f"raw_delta{n}_p50_ms"]

    names = sorted(problem.objects)
    rng = random.Random(seed + 1)  # the same names on every backend
    sizes: list[int] = []
    times_nb: list[float] = []
    task = progress.add_task("  depth-2 neighbourhoods", total=WARMUP + ops)
    for i in range(WARMUP + ops):
        name = rng.choice(names)
        t = time.perf_counter()
        _, facts = graph.neighborhood([name], 2)
        if i >= WARMUP:
            times_nb.append((time.perf_counter() - t) * 1000)
            sizes.append(len(facts))
        progress.advance(task)
    out["neighborhood_p50_ms"] = statistics.median(times_nb)
    out["neighborhood_p95_ms"] = percentile(times_nb, 95)
    out["neighborhood_facts"] = statistics.fmean(sizes)
    return out


def run_sqlite(problem: Problem, ops: int, seed: int, progress: Progress) -> dict[str, float]:
    from kgplan.graph.backends import open_graph

    with tempfile.TemporaryDirectory(prefix="kgplan-bench-") as tmp, open_graph(f"sqlite:{tmp}/bench.db") as g:
        return measure_graph(g, problem, ops, seed, progress)


# ---- the neo4j backend and the hand-written baseline -------------------------------------------
RAW_ENTITIES = "UNWIND $rows AS r CREATE (:Entity {name: r.name, type: r.type, attrs: r.attrs})"
RAW_PROPS = "UNWIND $rows AS r MATCH (n:Entity {name: r.a}) SET n += r.props"
RAW_ADD_EDGES = ("UNWIND $rows AS r MATCH (a:Entity {name: r.a}), (b:Entity {name: r.b}) "
                 "CREATE (a)-[:`{p}`]->(b)")
RAW_DEL_EDGES = "UNWIND $rows AS r MATCH (:Entity {name: r.a})-[x:`{p}`]->(:Entity {name: r.b}) DELETE x"


def raw_statements(add: list[Fact], remove: list[Fact]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The hand-written statements for a change of unary and binary facts (the backend's mapping).

    Predicate names come from the domain (plain identifiers); all data travels as parameters.
    """
    props: dict[str, dict[str, bool | None]] = defaultdict(dict)
    edges: dict[tuple[str, bool], list[dict[str, str]]] = defaultdict(list)
    for added, facts in ((False, remove), (True, add)):
        for f in facts:
            if len(f.args) == 1:
                props[f.args[0]][f.predicate] = True if added else None
            elif len(f.args) == 2:
                edges[f.predicate, added].append({"a": f.args[0], "b": f.args[1]})
            else:
                raise ValueError(f"the hand-written baseline writes unary and binary facts only: {f}")
    out = [(RAW_PROPS, [{"a": a, "props": p} for a, p in props.items()])] if props else []
    for (p, added), rows in sorted(edges.items(), key=lambda kv: kv[0][1]):
        out.append(((RAW_ADD_EDGES if added else RAW_DEL_EDGES).replace("{p}", p), rows))
    return out


def raw_load(driver: Any, database: str, problem: Problem, progress: Progress | None) -> float:
    """Write a problem's entities and facts with hand-written UNWIND batches in one transaction."""
    facts = [Fact.of(a) for a in dict.fromkeys(problem.init)]
    entities = [{"name": n, "type": t, "attrs": "{}"} for n, t in problem.objects.items()]
    batches = [(RAW_ENTITIES, entities[i : i + RAW_BATCH]) for i in range(0, len(entities), RAW_BATCH)]
    for query, rows in raw_statements(facts, []):
        batches += [(query, rows[i : i + RAW_BATCH]) for i in range(0, len(rows), RAW_BATCH)]
    task = progress.add_task(f"  hand-written UNWIND load of {len(facts):,} facts", total=len(batches) + 1) \
        if progress else None
    t = time.perf_counter()
    with driver.session(database=database) as s:
        tx = s.begin_transaction()
        for query, rows in batches:
            tx.run(query, {"rows": rows}).consume()
            if task is not None and progress:
                progress.advance(task)
        tx.commit()
    elapsed = time.perf_counter() - t
    if task is not None and progress:
        progress.advance(task)
    return elapsed


def raw_writer(driver: Any, database: str) -> Callable[[Delta], None]:
    """Apply a delta's facts with hand-written UNWIND statements in one transaction."""

    def write(delta: Delta) -> None:
        statements = raw_statements(delta.add, delta.remove)

        def work(tx: Any) -> None:
            for query, rows in statements:
                tx.run(query, {"rows": rows}).consume()

        with driver.session(database=database) as s:
            s.execute_write(work)

    return write


def run_neo4j(problem: Problem, ops: int, seed: int, progress: Progress, heap: str) -> dict[str, float]:
    from neo4j import GraphDatabase

    from kgplan.graph.backends.neo4j import Neo4jStore
    from kgplan.graph.bolt_server import running_arcadedb

    small = household_world_with_facts(min(2_000, len(problem.init)), seed + 1)
    with tempfile.TemporaryDirectory(prefix="kgplan-bench-arcadedb-") as tmp, ExitStack() as stack:
        with step(progress, "  starting ArcadeDB (Bolt)"):
            server = stack.enter_context(running_arcadedb(Path(tmp), extra_databases=(RAW_DB, WARM_DB, WARM_RAW_DB),
                                                          max_heap=heap))
        graphs = {db: stack.enter_context(WorldGraph(Neo4jStore(server.uri, server.user, server.password, db)))
                  for db in (server.database, RAW_DB, WARM_DB, WARM_RAW_DB)}  # each gets the schema
        driver = stack.enter_context(GraphDatabase.driver(server.uri, auth=server.auth))
        with step(progress, f"  warm-up: both loads of {len(small.init):,} facts into scratch databases"):
            graphs[WARM_DB].init(resolve_domain("household"))
            graphs[WARM_DB].load_problem(small)
            raw_load(driver, WARM_RAW_DB, small, None)
        raw_s = raw_load(driver, RAW_DB, problem, progress)
        out = measure_graph(graphs[server.database], problem, ops, seed, progress, raw_writer(driver, server.database))
    out["raw_load_s"] = raw_s
    out["load_ratio"] = out["load_s"] / raw_s
    return out


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


# ---- report -----------------------------------------------------------------------------------
def _fmt(value: float, unit: str) -> str:
    if unit in ("", "facts/s"):
        return f"{value:,.0f}" + (f" {unit}" if unit else "")
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:.3f} s" if unit == "s" else f"{value:.2f} ms"


def report(results: dict[str, dict[str, float]], console: Console) -> tuple[Table, list[dict[str, Any]]]:
    """The table of measured values against targets, and the target verdicts."""
    table = Table(title="graph_ops: world-graph backends", title_justify="left", caption=CAPTION,
                  caption_justify="left")
    for col, justify in (("backend", "left"), ("measurement", "left"), ("measured", "right"),
                         ("target", "right"), ("result", "center")):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    verdicts = []
    for backend, metrics in results.items():
        for key, (label, unit) in METRICS.items():
            if key not in metrics:
                continue
            target = next((t for t in TARGETS if t.backend == backend and t.metric == key), None)
            cells = [backend, label, _fmt(metrics[key], unit), "", ""]
            if target:
                verdicts.append(v := below(metrics[key], target.limit, backend=backend, metric=key, label=label,
                                           unit=unit))
                cells[3:] = ["< " + _fmt(target.limit, unit), verdict(v["pass"])]
            table.add_row(*cells)
        table.add_section()
    return table, verdicts


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every target is met, 1 otherwise."""
    ap = argparse.ArgumentParser(prog="kgplan bench graph_ops", description=__doc__.split("\n\n")[0])
    ap.add_argument("--facts", type=int, default=100_000, help="facts in the synthetic world (default 100000)")
    ap.add_argument("--ops", type=int, default=200, help="timed operations per kind (default 200)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated: sqlite,neo4j")
    ap.add_argument("--json", default=DEFAULT_JSON, help=f"results file (default {DEFAULT_JSON})")
    ap.add_argument("--neo4j-facts", type=int, default=None,
                    help="facts for the neo4j backend if fewer than --facts (printed in the report)")
    ap.add_argument("--arcadedb-heap", default="4g", help="JVM heap of the ArcadeDB server (default 4g)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if unknown := [b for b in backends if b not in BACKENDS]:
        ap.error(f"unknown backend(s) {unknown}; choose from {', '.join(BACKENDS)}")
    if args.ops < 1 or args.facts < 100:
        ap.error("--ops must be at least 1 and --facts at least 100")

    console = bench_console()
    results: dict[str, dict[str, float]] = {}
    worlds: dict[str, dict[str, Any]] = {}
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console)
    with progress:
        cache: dict[int, Problem] = {}
        for backend in backends:
            n = args.neo4j_facts if backend == "neo4j" and args.neo4j_facts else args.facts
            if n not in cache:
                with step(progress, f"generating a household world of {n:,} facts"):
                    cache[n] = household_world_with_facts(n, args.seed)
            problem = cache[n]
            worlds[backend] = {"facts": len(problem.init), "objects": len(problem.objects), "name": problem.name}
            progress.console.print(f"[bold]{backend}[/]: {len(problem.init):,} facts, "
                                   f"{len(problem.objects):,} objects")
            if backend == "sqlite":
                results[backend] = run_sqlite(problem, args.ops, args.seed, progress)
            else:
                results[backend] = run_neo4j(problem, args.ops, args.seed, progress, args.arcadedb_heap)

    table, verdicts = report(results, console)
    console.print(table)
    if "neo4j" in worlds and worlds["neo4j"]["facts"] < args.facts * 0.99:
        console.print(f"[yellow]note: the neo4j backend ran on {worlds['neo4j']['facts']:,} facts, "
                      f"not {args.facts:,}[/]")
    passed = all(v["pass"] for v in verdicts)
    console.print(outcome(v["pass"] for v in verdicts))
    doc = {
        "benchmark": "graph_ops",
        "time": datetime.now(UTC).isoformat(),
        "config": {"facts": args.facts, "ops": args.ops, "warmup": WARMUP, "seed": args.seed,
                   "backends": backends, "arcadedb_heap": args.arcadedb_heap},
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "sqlite": sqlite3.sqlite_version,
                    "arcadedb_embedded": _version("arcadedb-embedded") if "neo4j" in backends else None},
        "worlds": worlds,
        "results": results,
        "targets": verdicts,
        "passed": passed,
    }
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
        console.print(f"results written to {path}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
