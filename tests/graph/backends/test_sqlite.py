"""Durability of the sqlite store: SIGKILL mid-change and concurrent writers (real subprocesses).

The child processes run functions of this module (``python -c "from tests.graph.backends.test_sqlite import
..."`` from the repository root), so the code the parent checks against is the code the children run.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

import pytest

from kgplan.graph.backends import sqlite as backend
from kgplan.graph.backends.sqlite import SqliteStore
from kgplan.graph.model import Change, Delta, Entity, Fact
from kgplan.graph.store import Tx
from kgplan.graph.world import WorldGraph
from tests.conftest import HOUSEHOLD, ROOT

pytestmark = pytest.mark.integration

Atom = tuple[str, tuple[str, ...]]

BATCH = 300  # new entities per crash-test change: ~1200 fact rows written, ~60 ms per change
TRIALS = 24
MAX_KILL_DELAY = 0.45  # seconds after the child is ready; several changes fit in it
PER_WRITER = 500


# ---- deltas whose resulting states are known in closed form ---------------------------------------
def _f(predicate: str, *args: str) -> Fact:
    return Fact(predicate=predicate, args=args)


def batch_delta(k: int) -> Delta:
    """Change k (from 1): BATCH new cups on the kitchen table; batch k-1 goes into the cabinet."""
    new = [f"batch{k}_cup{i}" for i in range(BATCH)]
    old = [f"batch{k - 1}_cup{i}" for i in range(BATCH)] if k > 1 else []
    return Delta(
        new_entities=[Entity(name=n, type="cup", attrs={"batch": str(k)}) for n in new],
        add=[f for n in new for f in (_f("on", n, "kitchen_table"), _f("cup_empty", n), _f("clean", n))]
        + [_f("inside", n, "kitchen_cabinet") for n in old],
        remove=[f for n in old for f in (_f("on", n, "kitchen_table"), _f("clean", n))],
        source="sensor", text=f"batch {k}",
    )


def batch_state(base: set[Atom], k: int) -> set[Atom]:
    """The facts after batch changes 1..k on top of `base`."""
    out = set(base)
    for j in range(1, k + 1):
        cups = [f"batch{j}_cup{i}" for i in range(BATCH)]
        if j < k:
            out |= {a for c in cups for a in (("inside", (c, "kitchen_cabinet")), ("cup_empty", (c,)))}
        else:
            out |= {a for c in cups
                    for a in (("on", (c, "kitchen_table")), ("cup_empty", (c,)), ("clean", (c,)))}
    return out


def writer_delta(tag: str, i: int) -> Delta:
    """Writer `tag`'s change i (from 0): a new cup on the table; its previous cup goes in the cabinet."""
    cup, prev = f"{tag}_cup{i}", f"{tag}_cup{i - 1}"
    return Delta(
        new_entities=[Entity(name=cup, type="cup")],
        add=[_f("on", cup, "kitchen_table"), _f("cup_empty", cup), _f("clean", cup)]
        + ([_f("inside", prev, "kitchen_cabinet")] if i else []),
        remove=[_f("on", prev, "kitchen_table"), _f("clean", prev)] if i else [],
        source="sensor", text=f"{tag} {i}",
    )


def writer_state(tag: str, n: int) -> set[Atom]:
    """The facts writer `tag` adds in changes 0..n-1."""
    out: set[Atom] = set()
    for i in range(n):
        cup = f"{tag}_cup{i}"
        out |= ({("inside", (cup, "kitchen_cabinet")), ("cup_empty", (cup,))} if i < n - 1 else
                {("on", (cup, "kitchen_table")), ("cup_empty", (cup,)), ("clean", (cup,))})
    return out


# ---- helpers ---------------------------------------------------------------------------------------
def opened(path: str | Path) -> WorldGraph:
    """The world graph in the sqlite store at `path`."""
    return WorldGraph(SqliteStore(path))


def make_store(path: Path) -> None:
    """A fresh store bound to the household domain with the demo world loaded (change 1)."""
    from kgplan.domains.model import resolve_domain

    with opened(path) as g:
        g.init(resolve_domain("household"))
        g.load_problem((HOUSEHOLD / "world.pddl").read_text())


def atoms(g: WorldGraph) -> set[Atom]:
    return {f.atom for f in g.facts()}


def replay(facts: set[Atom], entities: dict[str, str], changes: list[Change]) -> None:
    """Apply `changes` in place, strictly: each remove must be present, each add absent."""
    for c in changes:
        rem, add = [f.atom for f in c.delta.remove], [f.atom for f in c.delta.add]
        assert set(rem) <= facts, f"change {c.id} removes facts that were not true"
        assert not set(add) & facts, f"change {c.id} adds facts that were already true"
        facts.difference_update(rem)
        facts.update(add)
        for e in c.delta.new_entities:
            assert entities.setdefault(e.name, e.type) == e.type


def check_store(g: WorldGraph, facts: set[Atom], entities: dict[str, str]) -> None:
    """Physical integrity, and the fact/argument index agrees with the fact table."""
    assert g.store.db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]  # type: ignore[attr-defined]
    assert {f.atom for f in g.facts_about([*entities, *g.domain.constants])} == facts


def entity_types(g: WorldGraph) -> dict[str, str]:
    return {e.name: e.type for e in g.entities()}


def spawn(func: str, *args: str, stderr: Path, stdin: bool = False) -> subprocess.Popen[str]:
    """A fresh Python process running ``func(*args)`` from this module; stderr goes to a file."""
    code = f"import sys; from tests.graph.backends.test_sqlite import {func}; {func}(*sys.argv[1:])"
    with stderr.open("w") as err:
        return subprocess.Popen(
            [sys.executable, "-c", code, *args], cwd=ROOT, text=True, bufsize=1, stderr=err,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
        )


@contextmanager
def reaped(*procs: subprocess.Popen[str]) -> Iterator[None]:
    """Kill the children still running when the block ends (a failed assertion, say)."""
    try:
        yield
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            for stream in (p.stdin, p.stdout):
                if stream is not None:
                    stream.close()


# ---- child processes -------------------------------------------------------------------------------
def crash_child(path: str, cache_pages: str) -> None:
    """Apply batch changes forever, printing markers: B k (transaction open), W k (writing), C k (done)."""
    current = [0]

    def emit(tag: str) -> None:
        sys.stdout.write(f"{tag} {current[0]}\n")
        sys.stdout.flush()

    class Marked(SqliteStore):
        @contextmanager
        def transaction(self) -> Iterator[Tx]:
            with super().transaction() as tx:
                emit("B")
                yield tx

    write = backend._SqliteTx.write

    def marked_write(self: backend._SqliteTx, delta: Delta, undo_of: int | None) -> Change:
        emit("W")
        return write(self, delta, undo_of)

    backend._SqliteTx.write = marked_write  # type: ignore[method-assign]
    store = Marked(path)
    g = WorldGraph(store)
    if int(cache_pages):  # a tiny page cache spills uncommitted pages into the WAL mid-change
        store.db.execute(f"PRAGMA cache_size={int(cache_pages)}")
    last = g.history(limit=1)[0].delta.text
    current[0] = int(last.split()[1]) if last.startswith("batch ") else 0
    _ = g.domain
    emit("ready")
    for _ in range(2000):  # the parent kills us long before
        current[0] += 1
        g.apply(batch_delta(current[0]))
        emit("C")


def writer_child(path: str, tag: str, n: str, pause: str) -> None:
    """Wait for 'go' on stdin, apply `n` verified writer deltas, print the change ids as JSON."""
    g = opened(path)
    _ = g.domain
    print("ready", flush=True)
    assert sys.stdin.readline().strip() == "go"
    ids = []
    for i in range(int(n)):
        ids.append(g.apply(writer_delta(tag, i)).id)
        time.sleep(float(pause))
    print(json.dumps(ids), flush=True)
    g.close()


# ---- tests -----------------------------------------------------------------------------------------
def test_sigkill_mid_change_leaves_a_whole_state(tmp_path: Path) -> None:
    """A process SIGKILLed while applying large deltas leaves the state before or after a change."""
    db = tmp_path / "world.db"
    make_store(db)
    with opened(db) as g:
        (load,) = g.history()
        base = atoms(g)
        facts: set[Atom] = set()
        entities: dict[str, str] = {}
        replay(facts, entities, [load])
        assert facts == base
        last_id = load.id
    rng = random.Random(20240611)
    k_prev, in_tx, in_write, started = 0, 0, 0, time.monotonic()
    for trial in range(TRIALS):
        cache = 8 if trial % 2 else 0
        err = tmp_path / f"child{trial}.err"
        child = spawn("crash_child", str(db), str(cache), stderr=err)
        assert child.stdout is not None
        with reaped(child):
            ready = child.stdout.readline()
            assert ready == f"ready {k_prev}\n", (ready, err.read_text())
            # the kill comes at a random moment after the child's first commit, so that every
            # trial commits something however slow a busy machine makes each change
            lines = [child.stdout.readline()]
            while lines[-1] and not lines[-1].startswith("C "):
                lines.append(child.stdout.readline())
            assert lines[-1], err.read_text()
            time.sleep(rng.uniform(0.0, MAX_KILL_DELAY))
            child.send_signal(signal.SIGKILL)
            assert child.wait(10) == -signal.SIGKILL, err.read_text()
            lines += child.stdout.read().splitlines()
            markers = [(t, int(k)) for t, k in (line.split() for line in lines)]
        done = max([k for t, k in markers if t == "C"], default=k_prev)
        begun = max([k for t, k in markers if t == "B"], default=k_prev)

        with opened(db) as g:
            last = g.history(limit=1)[0]
            k = int(last.delta.text.split()[1])
            # committed changes survive; a change whose transaction never opened cannot be there
            assert done <= k <= begun, (markers[-3:], k)
            got, got_entities = atoms(g), entity_types(g)
            check_store(g, got, got_entities)
            assert got == batch_state(base, k), f"trial {trial}: facts are not the state after change {k}"
            assert set(got_entities) == set(entities) | {
                f"batch{j}_cup{i}" for j in range(k_prev + 1, k + 1) for i in range(BATCH)}
            new = [c for c in g.history(limit=k - k_prev + 1) if c.id > last_id]
            assert [c.delta.text for c in new] == [f"batch {j}" for j in range(k_prev + 1, k + 1)]
            replay(facts, entities, new)
            assert facts == got, f"trial {trial}: replaying the history does not give the facts"
            assert got_entities == entities
        if markers and markers[-1][0] in "BW" and k == markers[-1][1] - 1:
            in_tx += 1  # killed inside an open write transaction that then did not survive
            in_write += markers[-1][0] == "W"
        last_id, k_prev = last.id, k
    elapsed = time.monotonic() - started
    print(f"{TRIALS} kills in {elapsed:.1f}s: {in_tx} inside a write transaction, {in_write} while "
          f"writing rows, {k_prev} changes committed in all")
    assert k_prev >= TRIALS // 2, "the children committed too few changes to test anything"
    assert in_tx >= TRIALS // 4 and in_write >= TRIALS // 8, "too few kills landed mid-change"


@pytest.mark.parametrize("pause", [0.0, 0.002], ids=["back_to_back", "interleaved"])
def test_two_writers_lose_nothing(tmp_path: Path, pause: float) -> None:
    """Two processes applying 500 verified deltas each to one store: every change is kept.

    Back to back, SQLite's busy handler (no queue) mostly lets the running writer take the lock
    again, so the other one waits on a busy store; with a moment's other work between changes, as
    an agent has, the two writers' changes interleave.
    """
    db = tmp_path / "world.db"
    make_store(db)
    with opened(db) as g:
        base, (load,) = atoms(g), g.history()
    tags = ("ann", "bob")
    errs = {t: tmp_path / f"{t}.err" for t in tags}
    procs = {t: spawn("writer_child", str(db), t, str(PER_WRITER), str(pause), stdin=True, stderr=errs[t])
             for t in tags}
    with reaped(*procs.values()):
        for t, p in procs.items():
            assert p.stdout is not None and p.stdout.readline() == "ready\n", errs[t].read_text()
        started = time.monotonic()
        for p in procs.values():
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = {t: p.communicate(timeout=120)[0] for t, p in procs.items()}
    elapsed = time.monotonic() - started
    for t, p in procs.items():
        assert p.returncode == 0, errs[t].read_text()
    ids = {t: json.loads(outs[t]) for t in tags}

    with opened(db) as g:
        got, got_entities = atoms(g), entity_types(g)
        check_store(g, got, got_entities)
        history = g.history()
        assert history[0].id == load.id
        changes = history[1:]
        assert len(changes) == 2 * PER_WRITER
        assert len({c.id for c in changes}) == len(changes)
        assert [c.id for c in history] == sorted(c.id for c in history)
        for t in tags:
            mine = [c for c in changes if c.delta.text.split()[0] == t]
            assert [c.id for c in mine] == ids[t], f"{t}'s changes are not in the history as returned"
            assert [c.delta for c in mine] == [writer_delta(t, i) for i in range(PER_WRITER)]
        facts: set[Atom] = set()
        entities: dict[str, str] = {}
        replay(facts, entities, history)
        expected = base | writer_state("ann", PER_WRITER) | writer_state("bob", PER_WRITER)
        assert got == facts == expected
        assert got_entities == entities
    switches = sum(a.delta.text.split()[0] != b.delta.text.split()[0] for a, b in pairwise(changes))
    print(f"{2 * PER_WRITER} changes by two writers in {elapsed:.1f}s, {switches} switches between them")
    if pause:
        assert switches >= 10, "the two writers did not actually run concurrently"


def test_a_full_disk_is_a_store_error_and_changes_nothing(tmp_path: Path) -> None:
    """Issue 21.10/11: "database or disk is full" was a 500 / a traceback. The database is capped at its size
    (SQLite's max_page_count: the same SQLITE_FULL a full disk gives) and a large change is written."""
    from kgplan.errors import StoreError
    from kgplan.graph.check import check_graph

    make_store(tmp_path / "w.db")
    with opened(tmp_path / "w.db") as g:
        before = (atoms(g), entity_types(g), len(g.history()))
        (pages,) = g.store.db.execute("PRAGMA page_count").fetchone()  # type: ignore[attr-defined]
        g.store.db.execute(f"PRAGMA max_page_count = {pages + 2}")  # type: ignore[attr-defined]
        for write in (lambda: g.apply(batch_delta(1)), lambda: g.set_meta({"note": "x" * 100_000})):
            with pytest.raises(StoreError, match="database or disk is full"):
                write()
        assert (atoms(g), entity_types(g), len(g.history())) == before and g.get_meta("note") is None
        check_store(g, *before[:2])
        g.store.db.execute("PRAGMA max_page_count = 1073741823")  # type: ignore[attr-defined]  # space again
        g.apply(batch_delta(1))
        assert atoms(g) == batch_state(before[0], 1) and check_graph(g) == []
