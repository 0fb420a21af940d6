"""HTTP API benchmark: neighbourhood views of a large graph served by `kgplan serve`, per backend.

On a synthetic household world of ``--facts`` facts (`kgplan.domains.synthetic`), loaded through the Agent,
a real uvicorn server on 127.0.0.1 answers ``GET /api/entities/{name}?depth=K`` for names drawn uniformly
from all objects (K = 1 and 2; the page shows depth 2), timed at the client over HTTP, p50/p95 over
``--ops`` each after a warm-up. "page" is the requests the web page makes when it opens and when an entity
is selected (the page, the entity list, the history, the entity's facts) and a page of the 100k-fact load
change's diff, each timed the same way over ``--ops``/10 rounds after 2 warm-up rounds. The sqlite store
is a file in a temporary folder; neo4j is a throwaway ArcadeDB server over Bolt (`kgplan.graph.bolt_server`).

Targets: neighbourhood p95 < 100 ms at both depths and history p95 < 100 ms, on each backend (the other
requests are reported, not targets).

    kgplan bench api [--facts 100000] [--ops 200] [--backends sqlite,neo4j] [--json results/api.json]

Exit status 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from rich.table import Table

from kgplan.agent.agent import Agent
from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks.graph_ops import percentile
from kgplan.domains.model import Problem, resolve_domain
from kgplan.domains.synthetic import household_world_with_facts
from kgplan.interfaces.api import serving

DEFAULT_JSON = "results/api.json"
TARGET_MS = 100.0
WARMUP = 10
PAGE = {"page": "/", "entity_list": "/api/entities?limit=500", "history": "/api/history?limit=30",
        "entity_facts": "/api/facts?limit=500&entity={name}",  # what the page asks for besides neighbourhoods
        "diff_page": "/api/history/1?offset=50000&limit=500"}  # a page of the load change, opened further
TARGETS = ("depth1_p95_ms", "depth2_p95_ms", "history_p95_ms")  # each under TARGET_MS


def timed(client: httpx.Client, paths: Callable[[], list[str]], n: int, warmup: int = WARMUP) -> list[float]:
    """Milliseconds per round of GETs, after a warm-up; every answer must be 200."""
    times = []
    for i in range(warmup + n):
        t = time.perf_counter()
        for path in paths():
            r = client.get(path)
            if r.status_code != 200:
                raise RuntimeError(f"GET {path}: {r.status_code} {r.text[:200]}")
        if i >= warmup:
            times.append((time.perf_counter() - t) * 1000)
    return times


def measure(backend: str, store: str, problem: Problem, ops: int, seed: int) -> dict[str, float]:
    console = bench_console()
    with Agent(store) as agent:
        t = time.perf_counter()
        agent.graph.init(resolve_domain("household"))
        agent.graph.load_problem(problem)
        load_s = time.perf_counter() - t
        names = sorted(problem.objects)
        rng = random.Random(seed)
        out: dict[str, float] = {"facts": len(problem.init), "entities": len(names), "load_s": load_s}
        with serving(agent) as url, httpx.Client(base_url=url, timeout=60) as client:
            for depth in (1, 2):
                console.print(f"  {backend}: {ops} neighbourhoods at depth {depth}")
                ms = timed(client, lambda d=depth: [f"/api/entities/{rng.choice(names)}?depth={d}"], ops)
                out[f"depth{depth}_p50_ms"] = percentile(ms, 50)
                out[f"depth{depth}_p95_ms"] = percentile(ms, 95)
            rounds = max(ops // 10, 5)
            console.print(f"  {backend}: {rounds} rounds of the page's other requests")
            for key, path in PAGE.items():
                ms = timed(client, lambda p=path: [p.format(name=rng.choice(names))], rounds, warmup=2)
                out[f"{key}_p95_ms"] = percentile(ms, 95)
    return out


def run_neo4j(problem: Problem, ops: int, seed: int) -> dict[str, float]:
    from kgplan.graph.bolt_server import running_arcadedb

    with tempfile.TemporaryDirectory(prefix="kgplan-bench-arcadedb-") as tmp, ExitStack() as stack:
        server = stack.enter_context(running_arcadedb(Path(tmp)))
        os.environ.update(NEO4J_USER=server.user, NEO4J_PASSWORD=server.password,
                          KGPLAN_NEO4J_DATABASE=server.database)
        return measure("neo4j", server.uri, problem, ops, seed)


def run_sqlite(problem: Problem, ops: int, seed: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="kgplan-bench-api-") as tmp:
        return measure("sqlite", f"sqlite:{Path(tmp) / 'api.db'}", problem, ops, seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kgplan bench api", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=100_000, help="facts in the synthetic world")
    ap.add_argument("--ops", type=int, default=200, help="timed requests per depth")
    ap.add_argument("--backends", default="sqlite,neo4j", help="comma-separated: sqlite, neo4j")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=Path(DEFAULT_JSON), help=f"results file (default {DEFAULT_JSON})")
    args = ap.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if unknown := set(backends) - {"sqlite", "neo4j"}:
        ap.error(f"unknown backends: {', '.join(sorted(unknown))}")
    console = bench_console()
    console.print(f"building a world of {args.facts:,} facts")
    problem = household_world_with_facts(args.facts, args.seed)
    runs = {"sqlite": run_sqlite, "neo4j": run_neo4j}
    results = {b: runs[b](problem, args.ops, args.seed) for b in backends}

    table = Table("backend", "facts", "load s", "depth 1 p50 / p95 ms", "depth 2 p50 / p95 ms",
                  *(f"{k} p95 ms" for k in PAGE), "target met",
                  title=f"kgplan serve: neighbourhood views and history (target p95 < {TARGET_MS:.0f} ms)")
    ok = True
    for b, r in results.items():
        met = max(r[k] for k in TARGETS) < TARGET_MS
        ok &= met
        table.add_row(b, f"{r['facts']:,}", f"{r['load_s']:.1f}",
                      f"{r['depth1_p50_ms']:.1f} / {r['depth1_p95_ms']:.1f}",
                      f"{r['depth2_p50_ms']:.1f} / {r['depth2_p95_ms']:.1f}",
                      *(f"{r[k + '_p95_ms']:.1f}" for k in PAGE), "yes" if met else "NO")
    console.print(table)
    record: dict[str, Any] = {"benchmark": "api", "time": datetime.now(UTC).isoformat(), "facts": args.facts,
                              "ops": args.ops, "seed": args.seed, "target_p95_ms": TARGET_MS,
                              "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                              "results": results, "targets_met": ok}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record, indent=2))
    console.print(f"wrote {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
