"""Open a world graph from a store URL: ``sqlite:PATH`` (default) or ``neo4j://...``/``bolt://...``."""

from __future__ import annotations

import os

from graph.base import GraphError, WorldGraph

DEFAULT_STORE = "sqlite:kgplan.db"
NEO4J_SCHEMES = ("neo4j://", "neo4j+s://", "neo4j+ssc://", "bolt://", "bolt+s://", "bolt+ssc://")


def open_graph(url: str | None = None) -> WorldGraph:
    """Open the store named by `url`, else $KGPLAN_STORE, else ./kgplan.db.

    Neo4j credentials and database come from $NEO4J_USER, $NEO4J_PASSWORD and
    $KGPLAN_NEO4J_DATABASE (default ``neo4j``).
    """
    url = url or os.environ.get("KGPLAN_STORE") or DEFAULT_STORE
    if url.startswith("sqlite:"):
        from graph.backends.sqlite import SqliteGraph

        return SqliteGraph(url.removeprefix("sqlite:").removeprefix("//") or "kgplan.db")
    if url.startswith(NEO4J_SCHEMES):
        from graph.backends.neo4j import Neo4jGraph

        return Neo4jGraph(
            url,
            user=os.environ.get("NEO4J_USER", "neo4j"),
            password=os.environ.get("NEO4J_PASSWORD", ""),
            database=os.environ.get("KGPLAN_NEO4J_DATABASE", "neo4j"),
        )
    raise GraphError(f"unknown store URL {url!r}: use sqlite:PATH or neo4j://HOST:PORT (or bolt://)")
