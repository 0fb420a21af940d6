"""The store backends, registered in one place: each with its URL schemes and how to open a store at a URL.

Adding a backend is one `BACKENDS.add` of a `Backend` whose `open` returns a `graph.store.Store`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kgplan.errors import InputError
from kgplan.graph.store import Store
from kgplan.graph.world import WorldGraph
from kgplan.registry import Registry

DEFAULT_STORE = "sqlite:kgplan.db"


@dataclass(frozen=True)
class Backend:
    """A store backend: the URL prefixes it answers, and how to open its store at such a URL."""

    name: str
    help: str
    schemes: tuple[str, ...]
    open: Callable[[str], Store]


BACKENDS: Registry[Backend] = Registry("store backend")


def _sqlite(url: str) -> Store:
    from kgplan.graph.backends.sqlite import SqliteStore

    return SqliteStore(url.removeprefix("sqlite:").removeprefix("//") or "kgplan.db")


def _neo4j(url: str) -> Store:
    from kgplan.graph.backends.neo4j import Neo4jStore

    return Neo4jStore(url, user=os.environ.get("NEO4J_USER", "neo4j"),
                      password=os.environ.get("NEO4J_PASSWORD", ""),
                      database=os.environ.get("KGPLAN_NEO4J_DATABASE", "neo4j"))


BACKENDS.add(Backend("sqlite", "one SQLite file (the default): sqlite:PATH", ("sqlite:",), _sqlite))
BACKENDS.add(Backend(
    "neo4j", "a Neo4j or other Bolt server: neo4j://HOST:PORT or bolt://HOST:PORT; credentials and database "
    "from $NEO4J_USER, $NEO4J_PASSWORD and $KGPLAN_NEO4J_DATABASE (default neo4j)",
    ("neo4j://", "neo4j+s://", "neo4j+ssc://", "bolt://", "bolt+s://", "bolt+ssc://"), _neo4j))


def open_graph(url: str | None = None) -> WorldGraph:
    """Open the world graph in the store named by `url`, else $KGPLAN_STORE, else ./kgplan.db."""
    url = url or os.environ.get("KGPLAN_STORE") or DEFAULT_STORE
    for backend in BACKENDS:
        if url.startswith(backend.schemes):
            return WorldGraph(backend.open(url))
    schemes = ", ".join(s for b in BACKENDS for s in b.schemes)
    raise InputError(f"unknown store URL {url!r}: it must start with one of {schemes}")


@contextmanager
def creating(url: str | None = None) -> Iterator[WorldGraph]:
    """Open a store to initialise it: if the block raises, what opening it created is removed again (a new
    sqlite file and its journal files, see `Store.discard`), so a failed `init` leaves no store behind."""
    g = open_graph(url)
    try:
        yield g
    except BaseException:
        g.store.discard()
        raise
    g.close()
