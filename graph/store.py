"""Open a world graph from a store URL: ``sqlite:PATH`` (default) or ``neo4j://...``/``bolt://...``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kgplan.errors import InputError
from kgplan.graph.base import WorldGraph

DEFAULT_STORE = "sqlite:kgplan.db"
NEO4J_SCHEMES = ("neo4j://", "neo4j+s://", "neo4j+ssc://", "bolt://", "bolt+s://", "bolt+ssc://")


def open_graph(url: str | None = None) -> WorldGraph:
    """Open the store named by `url`, else $KGPLAN_STORE, else ./kgplan.db.

    Neo4j credentials and database come from $NEO4J_USER, $NEO4J_PASSWORD and
    $KGPLAN_NEO4J_DATABASE (default ``neo4j``).
    """
    url = _url(url)
    if url.startswith("sqlite:"):
        from kgplan.graph.backends.sqlite import SqliteGraph

        return SqliteGraph(_sqlite_path(url))
    if url.startswith(NEO4J_SCHEMES):
        from kgplan.graph.backends.neo4j import Neo4jGraph

        return Neo4jGraph(
            url,
            user=os.environ.get("NEO4J_USER", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD", ""),
            database=os.environ.get("KGPLAN_NEO4J_DATABASE", "neo4j"),
        )
    raise InputError(f"unknown store URL {url!r}: use sqlite:PATH or neo4j://HOST:PORT (or bolt://)")


@contextmanager
def creating(url: str | None = None) -> Iterator[WorldGraph]:
    """Open a store to initialise it: a sqlite file that did not exist is removed again (with its
    journal files) if the block raises, so a failed `init` leaves no store behind."""
    url = _url(url)
    path = Path(_sqlite_path(url)) if url.startswith("sqlite:") else None
    new = path is not None and not path.exists()
    g = open_graph(url)
    try:
        yield g
    except BaseException:
        g.close()
        if new:
            for extra in ("", "-wal", "-shm", "-journal"):
                Path(f"{path}{extra}").unlink(missing_ok=True)
        raise
    g.close()


def _url(url: str | None) -> str:
    return url or os.environ.get("KGPLAN_STORE") or DEFAULT_STORE


def _sqlite_path(url: str) -> str:
    return url.removeprefix("sqlite:").removeprefix("//") or "kgplan.db"
