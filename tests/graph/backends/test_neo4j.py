"""The Neo4j backend against a real Bolt server (ArcadeDB): many writers at once, a server that restarts."""

from __future__ import annotations

import threading

import pytest

from kgplan.graph.backends import open_graph
from kgplan.graph.check import check_graph
from kgplan.graph.model import Change, Delta, Entity, Fact
from kgplan.graph.world import WorldGraph

pytestmark = pytest.mark.integration
WRITERS, CHANGES = 8, 15


@pytest.fixture
def neo4j_url(bolt_server, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("NEO4J_USER", bolt_server.user)
    monkeypatch.setenv("NEO4J_PASSWORD", bolt_server.password)
    monkeypatch.setenv("KGPLAN_NEO4J_DATABASE", bolt_server.database)
    return bolt_server.uri


def test_many_concurrent_valid_writes_all_apply(neo4j_url: str, household, world_problem) -> None:
    """Issue 21.15: 1 of 176 valid concurrent writes was refused ("clashed twice ... try again"). Writers on
    connections of their own race on the writers' lock and the change counter; each change applies."""
    with open_graph(neo4j_url) as g:
        g.clear()
        g.init(household, problem=world_problem)
        start = len(g.history())
    applied: list[Change] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(WRITERS)

    def writer(n: int) -> None:
        try:
            with open_graph(neo4j_url) as g:
                _ = g.domain
                barrier.wait()
                for k in range(CHANGES):
                    cup = f"cup{n}_{k}"
                    applied.append(g.apply(Delta(new_entities=[Entity(name=cup, type="cup")],
                                                 add=[Fact(predicate="on", args=(cup, "kitchen_table"))])))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]
    with open_graph(neo4j_url) as g:
        history = g.history()
        assert len(applied) == WRITERS * CHANGES and len(history) == start + WRITERS * CHANGES
        assert sorted(c.id for c in applied) == [c.id for c in history[start:]]  # ids unique, none lost
        assert {f"cup{n}_{k}" for n in range(WRITERS) for k in range(CHANGES)} <= {e.name for e in g.entities()}
        assert check_graph(g) == []


def test_writes_and_reads_go_on_across_a_server_restart(tmp_path, household) -> None:
    """Issue 21.10: an ArcadeDB restart failed requests ("BEGIN not expected in state AUTHENTICATION", "credentials
    ... no longer valid"): a write or read in flight across a restart is retried until the server is back."""
    import logging
    import os
    import time

    from kgplan.graph.bolt_server import running_arcadedb

    logging.getLogger("neo4j").setLevel(logging.ERROR)  # the driver logs each connection the restart drops
    done, errors, stop = [0], [], threading.Event()

    def hammer(g: WorldGraph, n: int) -> None:
        k = 0
        while not stop.is_set():
            try:
                k += 1
                g.count()
                g.apply(Delta(new_entities=[Entity(name=f"room{n}_{k}", type="room")]))
                done[0] += 1
            except BaseException as e:
                errors.append(e)

    with running_arcadedb(tmp_path, 8631) as server:  # a port of this test's own
        os.environ.update(NEO4J_USER=server.user, NEO4J_PASSWORD=server.password, KGPLAN_NEO4J_DATABASE=server.database)
        graphs = [open_graph(server.uri) for _ in range(3)]
        graphs[0].init(household)
        threads = [threading.Thread(target=hammer, args=(g, n)) for n, g in enumerate(graphs)]
        for t in threads:
            t.start()
        time.sleep(1)
    for _ in range(2):
        with running_arcadedb(tmp_path, 8631):
            before, waited = done[0], 0.0
            while done[0] == before and waited < 60:  # the writers reconnect (the driver's retries back off)
                time.sleep(0.5)
                waited += 0.5
            assert done[0] > before
    stop.set()
    with running_arcadedb(tmp_path, 8631):
        for t in threads:
            t.join(timeout=120)
        assert not errors, {f"{type(e).__name__}: {e}"[:200] for e in errors}
        assert graphs[0].count()[0] == done[0]
        for g in graphs:
            g.close()
