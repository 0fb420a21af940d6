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

With ``--load SECONDS`` it is a load test instead: `kgplan serve` in a process of its own, on the bundled household
world in a sqlite file, for that long takes ``--readers`` clients reading what the page reads (neighbourhoods, the
entity list, facts, the history), ``--writers`` clients each adding and removing an entity of its own (one verified
change each), and ``--planners`` clients each keeping one plan job in flight (polled to its end) and now and then
planning synchronously. Targets: reads p95 < 200 ms while plans run, no error (any answer but the expected one),
the server's memory flat (it grows by less than 50 MiB from the first half of the run to its end), and every
acknowledged change in the history as acknowledged.

    kgplan bench api [--facts 100000] [--ops 200] [--backends sqlite,neo4j] [--json results/api.json]
    kgplan bench api --load 120 [--readers 4] [--writers 2] [--planners 4] [--json results/api_load.json]

Exit status 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
from rich.table import Table

from kgplan.agent.agent import Agent
from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks import write_json
from kgplan.benchmarks.graph_ops import percentile
from kgplan.domains.model import Problem, resolve_domain
from kgplan.domains.synthetic import household_world_with_facts
from kgplan.interfaces.api import serving

DEFAULT_JSON = "results/api.json"
DEFAULT_LOAD_JSON = "results/api_load.json"
TARGET_MS = 100.0
WARMUP = 10
PAGE = {"page": "/", "entity_list": "/api/entities?limit=500", "history": "/api/history?limit=30",
        "entity_facts": "/api/facts?limit=500&entity={name}",  # what the page asks for besides neighbourhoods
        "diff_page": "/api/history/1?offset=50000&limit=500"}  # a page of the load change, opened further
TARGETS = ("depth1_p95_ms", "depth2_p95_ms", "history_p95_ms")  # each under TARGET_MS
LOAD_TARGET_MS = 200.0  # reads p95 while plans run
MEMORY_GROWTH_MIB = 50.0  # the server's RSS from the first half of a load run to its end
HOUSEHOLD = Path(__file__).parents[1] / "domains" / "household" / "world.pddl"
GOALS = ("(not (switched_on kitchen_light))", "(holding robot apple)", "(switched_on bedroom_light)")
READS = ("/api/entities/{name}?depth=2", "/api/entities?limit=500", "/api/facts?limit=500&entity={name}",
         "/api/history?limit=30", "/api/unknowns")


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


@contextmanager
def server_process(store: str) -> Iterator[tuple[str, psutil.Process]]:
    """`kgplan serve` on a free port of 127.0.0.1 in a process of its own: its URL and its process."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", "from kgplan.interfaces.cli import app; app()", "-s", store,
                             "serve", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/api/settings").status_code == 200:
                    break
            except httpx.TransportError:
                if proc.poll() is not None:
                    raise RuntimeError(f"kgplan serve ended: {proc.stderr.read().decode()[-2000:]}") from None
            time.sleep(0.1)
        yield url, psutil.Process(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)


class Load:
    """What the clients of a load run saw: read times (and whether a plan was running), errors, acknowledged
    changes, plans."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reads: list[tuple[float, bool]] = []
        self.errors: list[str] = []
        self.acknowledged: dict[int, tuple[list[str], list[str]]] = {}  # change id: (entities added, removed)
        self.plans = self.writes = self.planning = 0

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)


def reader(url: str, names: list[str], load: Load, until: float, seed: int) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=60) as c:
        while time.perf_counter() < until:
            path = rng.choice(READS).format(name=rng.choice(names))
            planning = load.planning > 0
            t = time.perf_counter()
            r = c.get(path)
            ms = (time.perf_counter() - t) * 1000
            with load.lock:
                load.reads.append((ms, planning and load.planning > 0))
            if r.status_code != 200:
                load.error(f"GET {path}: {r.status_code} {r.text[:200]}")


def writer(url: str, load: Load, until: float, index: int) -> None:
    """Adds a light of its own in the hallway, then removes it again, one verified change each."""
    with httpx.Client(base_url=url, timeout=60) as c:
        n = 0
        while time.perf_counter() < until:
            name = f"bench_light_{index}_{n}"
            for body, added, removed in [
                ({"new_entities": [{"name": name, "type": "light"}], "add": [f"(in_room {name} hallway)"]}, [name], []),
                ({"removed_entities": [name]}, [], [name]),
            ]:
                r = c.post("/api/changes", json={**body, "note": f"bench writer {index}"})
                if r.status_code != 200:
                    load.error(f"POST /api/changes: {r.status_code} {r.text[:200]}")
                    return
                with load.lock:
                    load.acknowledged[r.json()["id"]] = (added, removed)
                    load.writes += 1
            n += 1


def planner(url: str, load: Load, until: float, index: int) -> None:
    """Keeps one plan job in flight, polled to its end; every fourth plan is a synchronous POST /api/plan."""
    with httpx.Client(base_url=url, timeout=300) as c:
        n = 0
        while time.perf_counter() < until:
            goal = {"goal": GOALS[(index + n) % len(GOALS)]}
            with load.lock:
                load.planning += 1
            try:
                if n % 4 == 3:
                    r = c.post("/api/plan", json=goal)
                    ok = r.status_code == 200 and r.json()["status"] == "solved"
                else:
                    r = c.post("/api/jobs/plan", json=goal)
                    job = r.json()
                    while r.status_code in (200, 202) and job["status"] == "running":
                        time.sleep(0.2)
                        r = c.get(f"/api/jobs/{job['id']}")
                        job = r.json()
                    ok = r.status_code == 200 and job["status"] == "done" and job["result"]["status"] == "solved"
            finally:
                with load.lock:
                    load.planning -= 1
            if not ok:
                load.error(f"plan {goal['goal']}: {r.status_code} {r.text[:300]}")
                return
            with load.lock:
                load.plans += 1
            n += 1


def missing_changes(url: str, acknowledged: dict[int, tuple[list[str], list[str]]]) -> list[int]:
    """The acknowledged changes the history lacks or holds otherwise than acknowledged."""
    seen: dict[int, tuple[list[str], list[str]]] = {}
    with httpx.Client(base_url=url, timeout=60) as c:
        before = None
        while True:
            page = c.get("/api/history", params={"limit": 1000, **({"before": before} if before else {})}).json()
            if not page:
                break
            for ch in page:
                seen[ch["id"]] = ([e["name"] for e in ch["new_entities"]], ch["removed_entities"])
            before = page[-1]["id"]
    return sorted(i for i, what in acknowledged.items() if seen.get(i) != what)


def run_load(seconds: float, readers: int, writers: int, planners: int, seed: int) -> dict[str, Any]:
    """The load test (see the module's doc)."""
    console = bench_console()
    with tempfile.TemporaryDirectory(prefix="kgplan-bench-load-") as tmp:
        store = f"sqlite:{Path(tmp) / 'load.db'}"
        with Agent(store) as agent:
            agent.init("household", HOUSEHOLD)
            names = [e.name for e in agent.entities()]
        with server_process(store) as (url, proc):
            load = Load()
            until = time.perf_counter() + seconds
            threads = [threading.Thread(target=reader, args=(url, names, load, until, seed + i))
                       for i in range(readers)]
            threads += [threading.Thread(target=writer, args=(url, load, until, i)) for i in range(writers)]
            threads += [threading.Thread(target=planner, args=(url, load, until, i)) for i in range(planners)]
            console.print(f"  {seconds:.0f} s: {readers} readers, {writers} writers, {planners} planners on {url}")
            for t in threads:
                t.start()
            memory: list[float] = []
            while any(t.is_alive() for t in threads):
                memory.append(proc.memory_info().rss / 2**20)
                time.sleep(1)
            for t in threads:
                t.join()
            missing = missing_changes(url, load.acknowledged)
    during = [ms for ms, planning in load.reads if planning]
    half = memory[: max(1, len(memory) // 2)]
    return {"seconds": seconds, "readers": readers, "writers": writers, "planners": planners,
            "reads": len(load.reads), "reads_while_planning": len(during),
            "read_p50_ms": percentile(during or [0.0], 50), "read_p95_ms": percentile(during or [0.0], 95),
            "read_max_ms": max(during or [0.0]), "writes": load.writes, "plans": load.plans,
            "errors": len(load.errors), "first_errors": load.errors[:5],
            "rss_first_half_max_mib": max(half), "rss_end_mib": memory[-1], "rss_max_mib": max(memory),
            "acknowledged": len(load.acknowledged), "missing_from_history": missing}


def load_main(args: argparse.Namespace) -> int:
    r = run_load(args.load, args.readers, args.writers, args.planners, args.seed)
    growth = r["rss_end_mib"] - r["rss_first_half_max_mib"]
    checks = {"reads p95 < 200 ms while planning": r["read_p95_ms"] < LOAD_TARGET_MS, "no error": not r["errors"],
              f"memory flat (+{growth:.1f} MiB < {MEMORY_GROWTH_MIB:.0f})": growth < MEMORY_GROWTH_MIB,
              "every acknowledged change in the history": not r["missing_from_history"]}
    table = Table("clients (read/write/plan)", "seconds", "reads (while planning)", "read p50 / p95 / max ms",
                  "writes", "plans", "errors", "server RSS MiB (half / end / max)", "acknowledged, missing",
                  title=f"kgplan serve under load (targets: {'; '.join(checks)})")
    table.add_row(f"{r['readers']}/{r['writers']}/{r['planners']}", f"{r['seconds']:.0f}",
                  f"{r['reads']} ({r['reads_while_planning']})",
                  f"{r['read_p50_ms']:.1f} / {r['read_p95_ms']:.1f} / {r['read_max_ms']:.0f}", str(r["writes"]),
                  str(r["plans"]), str(r["errors"]),
                  f"{r['rss_first_half_max_mib']:.0f} / {r['rss_end_mib']:.0f} / {r['rss_max_mib']:.0f}",
                  f"{r['acknowledged']}, {len(r['missing_from_history'])}")
    console = bench_console()
    console.print(table)
    for name, met in checks.items():
        console.print(f"  {'met' if met else 'NOT MET'}: {name}")
    for e in r["first_errors"]:
        console.print(f"  error: {e}", markup=False)
    ok = all(checks.values())
    json_path = args.json if args.json != Path(DEFAULT_JSON) else Path(DEFAULT_LOAD_JSON)
    write_json(json_path, {"benchmark": "api-load", "time": datetime.now(UTC).isoformat(), "seed": args.seed,
                           "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                           "results": r, "targets": checks, "targets_met": ok})
    console.print(f"wrote {json_path}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kgplan bench api", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=100_000, help="facts in the synthetic world")
    ap.add_argument("--ops", type=int, default=200, help="timed requests per depth")
    ap.add_argument("--backends", default="sqlite,neo4j", help="comma-separated: sqlite, neo4j")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=Path(DEFAULT_JSON), help=f"results file (default {DEFAULT_JSON}; "
                    f"{DEFAULT_LOAD_JSON} with --load)")
    ap.add_argument("--load", type=float, default=0, metavar="SECONDS", help="a load test of this length instead")
    ap.add_argument("--readers", type=int, default=4, help="with --load: reading clients")
    ap.add_argument("--writers", type=int, default=2, help="with --load: writing clients")
    ap.add_argument("--planners", type=int, default=4, help="with --load: planning clients")
    args = ap.parse_args(argv)
    if args.load:
        return load_main(args)
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
