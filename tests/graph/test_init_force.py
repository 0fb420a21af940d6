"""`kgplan init --force` is all or nothing (issue 21.7): SIGKILLed at random moments, on every backend, it leaves
the old graph or the new one, never an empty or a half-loaded store.

The child runs the real CLI command in a fresh process (``python -c "from tests.graph.test_init_force import
..."`` from the repository root) and says when its write transaction starts and ends, so that the kills land
before, inside and after it.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgplan.domains.model import Problem, resolve_domain
from kgplan.domains.synthetic import household_world
from kgplan.graph.backends import open_graph
from kgplan.graph.model import Delta, Fact
from kgplan.graph.world import WorldGraph
from tests.conftest import HOUSEHOLD, ROOT

pytestmark = pytest.mark.integration
TRIALS = 8
OBJECTS = {"sqlite": 20_000, "neo4j": 3_000}  # the new world: its load takes about a second or more


def init_child(url: str, problem: str) -> None:
    """`kgplan --store URL init --force --problem PROBLEM`, printing B when its write transaction starts and C
    when it has committed."""
    from kgplan.interfaces.cli import app

    run = WorldGraph.in_transaction

    def marked(self: WorldGraph, work):
        print("B", flush=True)
        out = run(self, work)
        print("C", flush=True)
        return out

    WorldGraph.in_transaction = marked  # type: ignore[method-assign]
    app(["--store", url, "init", "--force", "--domain", "household", "--problem", problem])


def observe_child(url: str, path: str) -> None:
    """`kgplan --store URL observe PATH`, printing A after each change it has applied."""
    from kgplan.interfaces.cli import app

    apply = WorldGraph.apply

    def marked(self: WorldGraph, *args, **kwargs):
        out = apply(self, *args, **kwargs)
        print("A", flush=True)
        return out

    WorldGraph.apply = marked  # type: ignore[method-assign]
    app(["--store", url, "observe", path])


def state(g: WorldGraph) -> tuple:
    """What tells one graph from another: the counts, the entities, the history's provenance."""
    return g.count(), frozenset(e.name for e in g.entities()), tuple(c.delta.text for c in g.history()), g.get_meta(
        "domain_pddl") is not None


def settled(g: WorldGraph) -> tuple:
    """The state once a server has finished what a killed client left it (a commit it had asked for): read
    (in several transactions) until two readings half a second apart agree. A sqlite file has no server: the
    killed client was its only writer, so its first reading is the state."""
    then = state(g)
    for _ in range(60 if not g.url.startswith("sqlite:") else 0):
        time.sleep(0.5)
        if (now := state(g)) == then:
            break
        then = now
    return then


def test_sigkill_during_init_force_leaves_the_old_graph_or_the_new_one(store_url: str, tmp_path: Path) -> None:
    backend = store_url.split(":")[0].replace("bolt", "neo4j")
    big = household_world(OBJECTS[backend])
    (tmp_path / "big.pddl").write_text(big.to_pddl())
    world = Problem.parse((HOUSEHOLD / "world.pddl").read_text())
    household = resolve_domain("household")
    with open_graph(store_url) as g:
        g.clear()
        g.init(household, force=True, problem=big)
        new = state(g)
        g.init(household, force=True, problem=world)
        old = state(g)
    assert new != old and new[0][0] >= OBJECTS[backend]
    rng = random.Random(21)
    outcomes, inside, window = [], 0, 0.5
    for trial in range(TRIALS):
        err = tmp_path / f"child{trial}.err"
        with err.open("w") as stderr:
            child = subprocess.Popen([sys.executable, "-c", "import sys; from tests.graph.test_init_force import "
                                      "init_child; init_child(*sys.argv[1:])", store_url, str(tmp_path / "big.pddl")],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True)
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == "B\n", err.read_text()
            began = time.monotonic()
            if trial == 0:  # the first runs to the end: how long the transaction takes
                assert child.stdout.readline() == "C\n" and child.wait(60) == 0, err.read_text()
                window = time.monotonic() - began
            else:
                time.sleep(delay := rng.uniform(0, window))
                child.send_signal(signal.SIGKILL)
                assert child.wait(10) in (0, -signal.SIGKILL), err.read_text()  # or it had finished
                inside += child.stdout.read() == ""  # killed before the commit was reported
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()  # type: ignore[union-attr]
        with open_graph(store_url) as g:
            got = settled(g)
            assert got in (old, new), f"trial {trial}: neither the old graph nor the new one: {got[0]}, {got[2]}"
            outcomes.append("new" if got == new else "old")
            if trial and got == new:
                window = delay  # the first run is the slowest: kill sooner
            g.init(household, force=True, problem=world)  # the old graph again for the next trial
    print(f"{backend}: kills within {window:.2f} s of the start; after the kills: {outcomes[1:]}, "
          f"{inside} before the commit")
    assert outcomes[0] == "new" and inside >= TRIALS // 4, "too few kills landed inside the transaction"


def test_sigkill_during_observe_leaves_whole_observations(tmp_path: Path) -> None:
    """Issue 21 acceptance: `kgplan observe` SIGKILLed at random moments leaves the first k observations applied,
    each whole (its facts and its history entry), and the others not at all."""
    lights = ["hallway_light", "kitchen_light", "bedroom_light", "bathroom_light"]
    # all on, then each light off in turn, then each on again, ...: every observation applies
    observations = [{("add" if (i // len(lights)) % 2 else "remove"): [f"(switched_on {lights[i % len(lights)]})"],
                     "text": f"observation {i}"} for i in range(600)]
    (tmp_path / "obs.json").write_text(json.dumps(observations))
    url = f"sqlite:{tmp_path / 'g.db'}"
    world = Problem.parse((HOUSEHOLD / "world.pddl").read_text())
    rng = random.Random(7)
    midway = 0
    for trial in range(4):
        with open_graph(url) as g:
            g.init(resolve_domain("household"), force=True, problem=world)
            on = {f.args[0] for f in g.facts("switched_on")}
            g.apply(Delta(add=[Fact.parse(f"(switched_on {x})") for x in lights if x not in on]))
        child = subprocess.Popen([sys.executable, "-c", "import sys; from tests.graph.test_init_force import "
                                  "observe_child; observe_child(*sys.argv[1:])", url, str(tmp_path / "obs.json")],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert child.stdout is not None
        for _ in range(rng.randrange(1, 500)):  # the child says each change it has applied
            child.stdout.readline()
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        child.stdout.close()
        with open_graph(url) as g:
            texts = [c.delta.text for c in g.history() if c.delta.source == "sensor"]
            on = {f.args[0] for f in g.facts("switched_on")} & set(lights)
        k = len(texts)
        assert texts == [f"observation {i}" for i in range(k)], f"trial {trial}: the recorded ones are no prefix"
        expected = set(lights)
        for o in observations[:k]:
            expected |= {f[len("(switched_on "):-1] for f in o.get("add", [])}
            expected -= {f[len("(switched_on "):-1] for f in o.get("remove", [])}
        assert on == expected, f"trial {trial}: {k} observations recorded, but the lights do not match them"
        midway += 0 < k < len(observations)
    assert midway >= 2, "too few kills landed while observations were being applied"
