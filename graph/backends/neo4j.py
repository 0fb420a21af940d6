"""The Neo4j backend: the official driver, Cypher 5, parameterised and batched queries.

Mapping: entities are ``(:Entity {name, type, attrs})`` nodes (``attrs`` as JSON); unary facts
are ``true`` node properties named after the predicate, binary facts are relationships typed by
the predicate, nullary facts are properties of one ``(:World)`` node, and higher arities (and
numeric functions' values) are ``(:Fact {predicate, args[, value]})`` nodes with ``[:ARG {pos}]``
edges. Unknown marks are the ``Unknown`` list property of their entity's node (predicate names, ''
for a placeholder; capitalised, so no predicate can take the name). The history is ``(:Change {id,
time, undo_of, summary})`` nodes, each change's delta in a ``(:Delta {id, delta})`` node of its own (a
record is read whole: the history lists summaries without reading a large delta), metadata
``(:Meta {key, value})`` nodes. The domain's constants get ``(:Entity)`` nodes when a fact or mark uses
them, which entity reads and counts leave out (as sqlite has no rows for them). User data only ever
travels as parameters; the only names put into query text are the domain's predicate
names (checked, backtick-quoted) and this module's own labels.

Round trips: a transaction takes the writers' lock with its first statement; a small change is
verified from one prefetching read and written by one statement (its UNWIND writes chained with
``WITH count(*)``, the history record last); large ones are written in chunks of `CHUNK` rows.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

from neo4j import READ_ACCESS, WRITE_ACCESS, GraphDatabase, ManagedTransaction, Session
from neo4j.exceptions import (
    AuthError,
    ClientError,
    ConfigurationError,
    ConstraintError,
    DatabaseError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
)

from kgplan.domains.formula import GroundAtom
from kgplan.domains.model import Domain
from kgplan.domains.verify import Mark
from kgplan.errors import DomainError, InputError, StoreError
from kgplan.graph.model import Change, Delta, Entity, Fact, Stamp, Unknown, by_atom, summary_json
from kgplan.graph.store import OPEN, ChangeRow, Span, Store, T, Tx

CHUNK = 2000  # rows per UNWIND write
TIMEOUT = 5.0  # seconds to connect
RETRY_SECONDS, RETRY_PAUSE = 30.0, 0.01  # how long what passes is retried (see Neo4jStore._retried); first pause
RESTARTED = ("not expected in state", "no longer valid", "Type with name")  # a restarting server answers these
LABELS = ("Entity", "Fact", "Change", "Delta", "Meta", "World", "FactSpan", "EntitySpan", "MarkSpan")
POSITIONS = 4  # a fact span's first arguments, indexed (as a0, a1, ...): how its entities find it
WINDOW = 2000  # a difference between changes at most this far apart looks each change's spans up
RESERVED_TYPES = {*LABELS, "ARG"}  # ArcadeDB: labels and relationship types share one namespace
RESERVED_PROPS = {"name", "type", "attrs"}
IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
SCHEMA = (
    "CREATE CONSTRAINT kgplan_entity_name IF NOT EXISTS FOR (n:Entity) REQUIRE n.name IS UNIQUE",
    "CREATE INDEX kgplan_entity_type IF NOT EXISTS FOR (n:Entity) ON (n.type)",
    "CREATE INDEX kgplan_fact IF NOT EXISTS FOR (f:Fact) ON (f.predicate, f.args)",
    "CREATE CONSTRAINT kgplan_change_id IF NOT EXISTS FOR (c:Change) REQUIRE c.id IS UNIQUE",
    "CREATE CONSTRAINT kgplan_delta_id IF NOT EXISTS FOR (d:Delta) REQUIRE d.id IS UNIQUE",
    "CREATE CONSTRAINT kgplan_meta_key IF NOT EXISTS FOR (m:Meta) REQUIRE m.key IS UNIQUE",
    "CREATE INDEX kgplan_change_time IF NOT EXISTS FOR (c:Change) ON (c.time)",
    "CREATE INDEX kgplan_fact_span IF NOT EXISTS FOR (s:FactSpan) ON (s.predicate, s.args, s.closed)",
    "CREATE INDEX kgplan_entity_span IF NOT EXISTS FOR (s:EntitySpan) ON (s.name, s.closed)",
    "CREATE INDEX kgplan_mark_span IF NOT EXISTS FOR (s:MarkSpan) ON (s.entity, s.closed)",
    *(f"CREATE INDEX kgplan_{label.lower()}_{end} IF NOT EXISTS FOR (s:{label}) ON (s.{end})"
      for label in ("FactSpan", "EntitySpan", "MarkSpan") for end in ("opened", "closed")),
    *(f"CREATE INDEX kgplan_factspan_a{i} IF NOT EXISTS FOR (s:FactSpan) ON (s.a{i})" for i in range(POSITIONS)),
)
LOCK = "MERGE (l:Meta {key: 'lock'}) SET l.at = timestamp()"  # every writer touches it first
SINGLETONS = "MERGE (:Meta {key: 'lock'}) MERGE (s:Meta {key: 'change_seq'}) ON CREATE SET s.seq = 0"

# Reads: each part answers one arity class; parts are joined with UNION ALL into one query.
PRESENT = {
    0: "UNWIND $a0 AS r MATCH (w:World) WHERE w[r.p] = true RETURN r.i AS i",
    1: "UNWIND $a1 AS r MATCH (n:Entity {name: r.a}) WHERE n[r.p] = true RETURN r.i AS i",
    2: "UNWIND $a2 AS r MATCH (:Entity {name: r.a})-[x]->(:Entity {name: r.b}) "
       "WHERE type(x) = r.p RETURN r.i AS i",
    3: "UNWIND $a3 AS r MATCH (f:Fact {predicate: r.p, args: r.j}) RETURN r.i AS i",
}
ABOUT = (
    "UNWIND $names AS nm MATCH (n:Entity {name: nm}) "
    "UNWIND [p IN $unary WHERE n[p] = true] AS p RETURN p, [nm] AS args",
    "UNWIND $names AS nm MATCH (:Entity {name: nm})-[x]-(:Entity) "
    "RETURN type(x) AS p, [startNode(x).name, endNode(x).name] AS args",
    "UNWIND $names AS nm MATCH (:Entity {name: nm})<-[:ARG]-(f:Fact) "
    "RETURN DISTINCT f.predicate AS p, f.args AS args",
)
# The types of the named entities and, for the subjects among them, every fact about them.
PREFETCH = (
    "UNWIND $names AS nm MATCH (n:Entity {name: nm}) WITH nm, n, nm IN $subjects AS s "
    "RETURN nm, n.type AS type, "
    "CASE WHEN s THEN [p IN $unary WHERE n[p] = true] ELSE [] END AS unary, "
    "CASE WHEN s THEN [(n)-[x]-(:Entity) | [type(x), startNode(x).name, endNode(x).name]] ELSE [] END AS edges, "
    "CASE WHEN s THEN [(n)<-[:ARG]-(f:Fact) | [f.predicate, f.args]] ELSE [] END AS reified"
)
OF = {
    0: "MATCH (w:World) UNWIND [p IN $nullary WHERE w[p] = true] AS p RETURN p, [] AS args",
    1: "MATCH (n:Entity) UNWIND [p IN $unary WHERE n[p] = true] AS p RETURN p, [n.name] AS args",
    2: "MATCH (a:Entity)-[x:{types}]->(b:Entity) RETURN type(x) AS p, [a.name, b.name] AS args",
    3: "MATCH (f:Fact) WHERE f.predicate IN $reified RETURN f.predicate AS p, f.args AS args",
}
# Writes.
MERGE_ENTITIES = ("UNWIND $rows AS r MERGE (n:Entity {name: r.name}) "
                  "ON CREATE SET n.type = r.type, n.attrs = r.attrs")
SET_PROPS = "UNWIND $rows AS r MATCH (n:Entity {name: r.a}) SET n += r.props"
SET_WORLD = "UNWIND $rows AS r MERGE (w:World) SET w += r.props"
ADD_EDGES = ("UNWIND $rows AS r MATCH (a:Entity {name: r.a}), (b:Entity {name: r.b}) "
             "MERGE (a)-[:`{p}`]->(b)")
DEL_EDGES = ("UNWIND $rows AS r MATCH (:Entity {name: r.a})-[x:`{p}`]->(:Entity {name: r.b}) "
             "DELETE x")
ADD_FACTS = ("UNWIND $rows AS r MERGE (f:Fact {predicate: r.p, args: r.j}) SET f.value = r.v WITH f, r "
             "UNWIND range(0, size(r.args) - 1) AS i MATCH (e:Entity {name: r.args[i]}) "
             "MERGE (f)-[:ARG {pos: i}]->(e)")
DEL_FACTS = "UNWIND $rows AS r MATCH (f:Fact {predicate: r.p, args: r.j}) DETACH DELETE f"
SET_UNKNOWN = ("UNWIND $rows AS r MATCH (n:Entity {name: r.a}) "
               "SET n.Unknown = [x IN coalesce(n.Unknown, []) WHERE NOT x IN r.drop] + r.add")
UNKNOWN = ("{match} WHERE n.Unknown IS NOT NULL UNWIND n.Unknown AS p "
           "RETURN n.name AS name, p ORDER BY name, p")
SET_META = "UNWIND $rows AS r MERGE (m:Meta {key: r.k}) SET m.value = r.v"
DEL_ENTITIES = "UNWIND $rows AS r MATCH (n:Entity {name: r.name}) DETACH DELETE n"
ADD_CHANGE = ("MERGE (s:Meta {key: 'change_seq'}) ON CREATE SET s.seq = 0 SET s.seq = s.seq + 1 "
              "CREATE (c:Change {id: s.seq, time: $time, undo_of: $undo_of, summary: $summary}) "
              "CREATE (:Delta {id: s.seq, delta: $delta}) "
              "RETURN c.id AS id")
CHANGE_FIELDS = " MATCH (d:Delta {id: c.id}) RETURN c.id AS id, c.time AS time, c.undo_of AS undo_of, d.delta AS delta"
# The history indexed (see `Store.entities_at`): each span a node, opened and closed by the change whose id `at`
# is (the next in the counter as a change is written: its record comes last), in the order sqlite's `_index` keeps.
AT = "MATCH (q:Meta {key: 'change_seq'}) WITH q.seq + 1 AS at "
SPAN_WRITES = (
    ("known", f"UNWIND $rows AS r MATCH (s:MarkSpan {{entity: r.a, predicate: r.p, closed: {OPEN}}}) "
              "SET s.closed = at"),
    ("gone", f"UNWIND $rows AS r MATCH (s:MarkSpan {{entity: r.a, closed: {OPEN}}}) SET s.closed = at"),
    ("unknown", f"UNWIND $rows AS r CREATE (:MarkSpan {{entity: r.a, predicate: r.p, opened: at, closed: {OPEN}}})"),
    ("new", f"UNWIND $rows AS r MERGE (s:EntitySpan {{name: r.a, closed: {OPEN}}}) "
            "ON CREATE SET s.type = r.type, s.attrs = r.attrs, s.opened = at"),
    ("remove", f"UNWIND $rows AS r MATCH (s:FactSpan {{predicate: r.p, args: r.j, closed: {OPEN}}}) SET s.closed = at"),
    ("gone", f"UNWIND $rows AS r MATCH (s:EntitySpan {{name: r.a, closed: {OPEN}}}) SET s.closed = at"),
    ("add", f"UNWIND $rows AS r MERGE (s:FactSpan {{predicate: r.p, args: r.j, closed: {OPEN}}}) "
            "ON CREATE SET s.opened = at, s.value = r.v, "
            + ", ".join(f"s.a{i} = r.args[{i}]" for i in range(POSITIONS))),
)
# `+ 0`: a bound on the indexed `opened` or `closed` would have ArcadeDB range-scan that index, whose entries of removed
# and closed spans it keeps until it compacts it (a read 100 times slower after a hundred `init --force`); filtered,
# the spans are found by the label or by the other, exact, condition
HOLDS = "s.opened + 0 <= $at AND s.closed + 0 > $at"
COUNT = ("MATCH (n:Entity) WITH count(CASE WHEN NOT n.name IN $consts THEN 1 END) AS e, "
         "sum(size([p IN $unary WHERE n[p] = true])) AS u OPTIONAL MATCH (w:World) "
         "RETURN e, u + size([p IN $nullary WHERE w[p] = true]) "
         "+ COUNT { (:Entity)-->(:Entity) } + COUNT { (:Fact) } AS f")


def _key(args: Collection[str]) -> str:
    return json.dumps(list(args), separators=(",", ":"))


def _chunks(rows: list[Any]) -> Iterator[list[Any]]:
    for i in range(0, len(rows), CHUNK):
        yield rows[i : i + CHUNK]


def _arities(domain: Domain) -> dict[str, int]:
    """The domain's predicate arities (functions count as 3: their facts are reified, with a
    value); refuses names this mapping cannot store safely."""
    for p in domain.predicates.values():
        if not IDENT.fullmatch(p.name):
            raise DomainError(f"predicate '{p.name}' cannot be stored in Neo4j: "
                             "use letters, digits, '_' and '-', starting with a letter")
        if p.name in RESERVED_TYPES:
            raise DomainError(f"predicate '{p.name}' cannot be stored in Neo4j: "
                             f"{', '.join(sorted(RESERVED_TYPES))} are reserved labels")
        if p.arity == 1 and p.name in RESERVED_PROPS:
            raise DomainError(f"unary predicate '{p.name}' cannot be stored in Neo4j: "
                             f"{', '.join(sorted(RESERVED_PROPS))} are reserved properties")
    return {name: p.arity for name, p in domain.predicates.items()} | dict.fromkeys(domain.functions, 3)


def _atoms(rows: Iterator[Any]) -> list[GroundAtom]:
    """(predicate, args) rows, args a list or JSON; duplicates dropped."""
    out = ((r["p"], tuple(json.loads(a) if isinstance(a, str) else a)) for r in rows
           for a in [r["args"]])
    return list(dict.fromkeys(out))


def _entity_types(q: ManagedTransaction, names: Collection[str], lead: str = "") -> dict[str, str]:
    rows = q.run(lead + "UNWIND $names AS nm MATCH (n:Entity {name: nm}) RETURN nm, n.type AS type",
                 {"names": list(names)})
    return {r["nm"]: r["type"] for r in rows}


def _entities(q: ManagedTransaction, names: Collection[str] | None, consts: Collection[str]) -> list[Entity]:
    """All entities or those named, constants of the domain excluded, by name."""
    query = "MATCH (n:Entity)" if names is None else "UNWIND $names AS nm MATCH (n:Entity {name: nm})"
    query += " WHERE NOT n.name IN $consts RETURN n.name AS name, n.type AS type, n.attrs AS attrs"
    rows = q.run(query + " ORDER BY name", {"names": list(names or ()), "consts": list(consts)})
    return [Entity(name=r["name"], type=r["type"], attrs=json.loads(r["attrs"])) for r in rows]


def _present(q: ManagedTransaction, atoms: Collection[GroundAtom], functions: Collection[str]) -> set[GroundAtom]:
    atoms = list(atoms)
    if not atoms:
        return set()
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for i, (p, args) in enumerate(atoms):
        row = {"i": i, "p": p, "j": _key(args), **dict(zip("ab", args, strict=False))}
        groups[3 if p in functions else min(len(args), 3)].append(row)
    query = " UNION ALL ".join(PRESENT[k] for k in sorted(groups))
    return {atoms[r["i"]] for r in q.run(query, {f"a{k}": rows for k, rows in groups.items()})}


def _facts_about(q: ManagedTransaction, names: Collection[str], arity: dict[str, int]) -> list[GroundAtom]:
    unary = [p for p, n in arity.items() if n == 1]
    return _atoms(q.run(" UNION ALL ".join(ABOUT), {"names": list(names), "unary": unary}))


def _facts_of(q: ManagedTransaction, predicates: Collection[str], arity: dict[str, int]) -> list[GroundAtom]:
    by: dict[int, list[str]] = {k: [] for k in OF}
    for p in predicates:
        if p in arity:
            by[min(arity[p], 3)].append(p)
    types = "|".join(f"`{p}`" for p in by[2])  # names checked by _arities
    parts = [OF[k].replace("{types}", types) for k in OF if by[k]]
    if not parts:
        return []
    return _atoms(q.run(" UNION ALL ".join(parts),
                        {"nullary": by[0], "unary": by[1], "reified": by[3]}))


def _unknowns(q: ManagedTransaction, names: Collection[str] | None, lead: str = "") -> list[Mark]:
    match = "MATCH (n:Entity)" if names is None else "UNWIND $names AS nm MATCH (n:Entity {name: nm})"
    rows = q.run(lead + UNKNOWN.replace("{match}", match), {"names": list(names or ())})
    return [(r["name"], r["p"] or None) for r in rows]


def _span_rows(delta: Delta) -> dict[str, list[dict[str, Any]]]:
    """The rows of `SPAN_WRITES` for a recorded delta."""
    def marks(us: list[Unknown]) -> list[dict[str, Any]]:
        return [{"a": u.entity, "p": u.predicate or ""} for u in us]

    def facts(fs: list[Fact]) -> list[dict[str, Any]]:
        return [{"p": f.predicate, "j": _key(f.args), "args": list(f.args), "v": f.value} for f in dict.fromkeys(fs)]

    return {"known": marks(delta.known), "gone": [{"a": n} for n in delta.removed_names()],
            "unknown": marks(delta.unknown), "remove": facts(delta.remove), "add": facts(delta.add),
            "new": [{"a": e.name, "type": e.type, "attrs": json.dumps(e.attrs)} for e in delta.new_entities]}


def _span_fact(r: Any) -> Fact:
    return Fact(predicate=r["p"], args=tuple(json.loads(r["j"])), value=r["v"])


def _change(r: Any) -> Change:
    return Change(id=r["id"], time=r["time"], undo_of=r["undo_of"],
                  delta=Delta.model_validate_json(r["delta"]))


class _Neo4jTx(Tx):
    """One write transaction; it takes the writers' lock with its first statement.

    Writers are serialised, so what the transaction reads stands until it writes. It remembers
    which entities are absent, updated by its own writes (no fact mentions an absent entity),
    and `prefetch` reads everything verifying a small change needs in one round trip.
    """

    def __init__(self, tx: ManagedTransaction, store: Neo4jStore) -> None:
        self.tx, self.store = tx, store
        self.locked = False
        self.absent: set[str] = set()
        self.typed: dict[str, str | None] = {}  # prefetched: name -> type, None if absent
        self.about: dict[str, set[GroundAtom]] = {}  # prefetched: name -> every fact about it

    def _lead(self) -> str:
        """The lock clause to put before this transaction's first statement (once), else ''."""
        if self.locked:
            return ""
        self.locked = True
        return LOCK + " WITH count(*) AS locked "  # the aggregation finishes the lock first

    def _lock(self) -> None:
        if lead := self._lead():
            self.tx.run(lead + "RETURN locked").consume()

    def prefetch(self, delta: Delta) -> None:
        """A small change's state in one statement: the types of the entities `delta` mentions and every
        fact about the subjects (first arguments) of its facts, the answers of verification's reads."""
        facts = [*delta.add, *delta.remove]
        gone = set(delta.removed_names())
        if len(facts) + len(delta.new_entities) + len(gone) > CHUNK:
            return
        names = sorted({a for f in facts for a in f.args} | {e.name for e in delta.new_entities} | gone)
        subjects = sorted({f.args[0] for f in facts if f.args} | gone)
        if not names and self.locked:
            return
        unary = [p for p, n in self.store.arities().items() if n == 1]
        rows = self.tx.run(self._lead() + PREFETCH, {"names": names, "subjects": subjects, "unary": unary})
        typed: dict[str, str | None] = dict.fromkeys(names)
        about: dict[str, set[GroundAtom]] = {s: set() for s in subjects}
        for r in rows:
            typed[r["nm"]] = r["type"]
            if r["nm"] in about:
                about[r["nm"]] = {(p, (r["nm"],)) for p in r["unary"]} | {
                    (p, (a, b)) for p, a, b in r["edges"]} | {
                    (p, tuple(json.loads(j))) for p, j in r["reified"]}
        self.typed, self.about = typed, about
        self.absent |= {n for n, t in typed.items() if t is None}

    def entity_types(self, names: Collection[str]) -> dict[str, str]:
        if self.typed.keys() >= set(names):
            found = {n: t for n in names if (t := self.typed[n]) is not None}
        else:
            found = _entity_types(self.tx, names, self._lead())
            self.absent |= set(names) - found.keys()
        consts = self.store.constants()
        return {n: t for n, t in found.items() if n not in consts}  # constants' nodes are no entities

    def entities(self, names: Collection[str] | None = None) -> list[Entity]:
        self._lock()
        return _entities(self.tx, names, self.store.constants())

    def present(self, atoms: Collection[GroundAtom]) -> set[GroundAtom]:
        self._lock()
        atoms = [a for a in atoms if self.absent.isdisjoint(a[1])]
        known = [a for a in atoms if a[1] and a[1][0] in self.about]
        rest = [a for a in atoms if not (a[1] and a[1][0] in self.about)]
        return {a for a in known if a in self.about[a[1][0]]} | _present(self.tx, rest, self.store.functions())

    def facts_about(self, names: Collection[str]) -> list[GroundAtom]:
        self._lock()
        names = [n for n in names if n not in self.absent]
        out = [a for n in names if n in self.about for a in self.about[n]]
        if rest := [n for n in names if n not in self.about]:
            out += _facts_about(self.tx, rest, self.store.arities())
        return list(dict.fromkeys(out))

    def facts_of(self, predicates: Collection[str]) -> list[GroundAtom]:
        self._lock()
        return _facts_of(self.tx, predicates, self.store.arities())

    def unknown(self, names: Collection[str]) -> set[Mark]:
        return set(_unknowns(self.tx, names, self._lead()))

    def write(self, delta: Delta, undo_of: int | None) -> Change:
        functions, consts = self.store.functions(), self.store.constants()
        add, remove = list(dict.fromkeys(delta.add)), list(dict.fromkeys(delta.remove))
        self._lock()
        self.typed, self.about = {}, {}  # facts change now
        used = {a for f in add for a in f.args} | {u.entity for u in delta.unknown}
        rows = [{"name": e.name, "type": e.type, "attrs": json.dumps(e.attrs)}
                for e in delta.new_entities]
        rows += [{"name": c, "type": t, "attrs": "{}"}
                 for c, t in sorted(consts.items()) if c in used]  # constants get nodes on use
        gone = set(delta.removed_names())
        self.absent = (self.absent - {r["name"] for r in rows}) | gone

        props: dict[str, dict[str, bool | None]] = defaultdict(dict)  # entity -> unary changes
        world: dict[str, bool | None] = {}
        edges: dict[tuple[str, bool], list[dict[str, str]]] = defaultdict(list)
        reified: dict[bool, list[dict[str, Any]]] = defaultdict(list)
        for added, facts in ((False, remove), (True, add)):  # removals first, as sqlite does
            for f in facts:
                value = True if added else None  # a null property is removed
                if f.predicate in functions:
                    reified[added].append({"p": f.predicate, "j": _key(f.args), "args": f.args, "v": f.value})
                elif not f.args:
                    world[f.predicate] = value
                elif len(f.args) == 1:
                    props[f.args[0]][f.predicate] = value
                elif len(f.args) == 2:
                    edges[f.predicate, added].append({"a": f.args[0], "b": f.args[1]})
                else:
                    reified[added].append({"p": f.predicate, "j": _key(f.args), "args": f.args})
        writes = [(MERGE_ENTITIES, rows), (SET_WORLD, [{"props": world}] if world else []),
                  (SET_PROPS, [{"a": a, "props": p} for a, p in props.items()])]
        writes += [((ADD_EDGES if added else DEL_EDGES).replace("{p}", p), pairs)
                   for (p, added), pairs in sorted(edges.items(), key=lambda kv: kv[0][1])]
        marks: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"add": [], "drop": []})
        for key, us in (("drop", delta.known), ("add", delta.unknown)):
            for u in us:
                marks[u.entity][key].append(u.predicate or "")
        writes += [(DEL_FACTS, reified[False]), (ADD_FACTS, reified[True]),
                   (SET_UNKNOWN, [{"a": a, **m} for a, m in marks.items() if a not in gone]),
                   (DEL_ENTITIES, [{"name": n} for n in sorted(gone)])]
        spans = _span_rows(delta)
        writes += [(AT + q, spans[kind]) for kind, q in SPAN_WRITES]
        writes = [(q, r) for q, r in writes if r]

        change = Change(id=0, delta=delta, undo_of=undo_of)
        params: dict[str, Any] = {"time": change.time.isoformat(), "undo_of": undo_of,
                                  "delta": delta.model_dump_json(), "summary": summary_json(delta)}
        if sum(len(r) for _, r in writes) <= CHUNK:  # a small change: one round trip
            parts = []
            for i, (q, r) in enumerate(writes):
                parts.append(f"{q.replace('$rows', f'$rows{i}')} WITH count(*) AS done{i}")
                params[f"rows{i}"] = r
            query = " ".join([*parts, ADD_CHANGE])
        else:
            for q, r in writes:
                self._run(q, r)
            query = ADD_CHANGE
        change.id = self.tx.run(query, params).single(strict=True)["id"]
        return change

    def _run(self, query: str, rows: list[dict[str, Any]]) -> None:
        for chunk in _chunks(rows):
            self.tx.run(query, {"rows": chunk}).consume()

    def set_meta(self, values: dict[str, str]) -> None:
        self.tx.run(self._lead() + SET_META, {"rows": [{"k": k, "v": v} for k, v in values.items()]}).consume()

    def clear(self) -> None:
        """Everything goes in this transaction (the writers' lock and the change counter stay: the counter at 0)."""
        self._lock()
        self.typed, self.about = {}, {}
        for label in LABELS:
            keep = " WHERE NOT n.key IN ['lock', 'change_seq']" if label == "Meta" else ""
            self.tx.run(f"MATCH (n:{label}){keep} DETACH DELETE n").consume()
        self.tx.run("MATCH (s:Meta {key: 'change_seq'}) SET s.seq = 0").consume()

    def change(self, change_id: int) -> Change | None:
        query = self._lead() + "MATCH (c:Change {id: $id})" + CHANGE_FIELDS
        row = self.tx.run(query, {"id": change_id}).single()
        return _change(row) if row else None


class Neo4jStore(Store):
    """A store in a Neo4j (or Bolt-compatible) database; one transaction per change."""

    def __init__(self, uri: str, user: str, password: str, database: str) -> None:
        self.url, self.database = uri, database
        try:
            self.driver = GraphDatabase.driver(uri, auth=(user, password),
                                               connection_timeout=TIMEOUT)
        except (ConfigurationError, ValueError) as e:
            raise InputError(f"bad Neo4j URI {uri!r}: {e}") from e
        self.bookmarks = GraphDatabase.bookmark_manager()  # read your own writes on clusters
        try:
            with self._session(WRITE_ACCESS) as s:
                for q in SCHEMA:
                    s.run(q).consume()
            self._singletons()
            self._index_history()
        except BaseException as e:
            self.driver.close()  # a pooled connection may stay bound to a missing database
            if isinstance(e, ValueError):  # the address does not resolve
                raise InputError(f"bad Neo4j URI {uri!r}: {e}") from e
            raise

    @contextmanager
    def _session(self, mode: str = READ_ACCESS) -> Iterator[Session]:
        """A session on the store's database; connection problems become StoreErrors."""
        where = f"Neo4j at {self.url}"
        try:
            with self.driver.session(database=self.database, default_access_mode=mode,
                                     bookmark_manager=self.bookmarks) as s:
                yield s
        except (ServiceUnavailable, SessionExpired) as e:
            raise StoreError(f"cannot reach {where}: {e}") from e
        except AuthError as e:
            raise StoreError(f"{where} refused the user name or password: {e.message}") from e
        except ClientError as e:
            if e.code != "Neo.ClientError.Database.DatabaseNotFound":
                raise
            raise StoreError(f"{where} has no database '{self.database}': {e.message}") from e

    def _retried(self, run: Callable[[], T]) -> T:
        """`run()`, run again after a random pause that grows, for up to `RETRY_SECONDS`, while it fails in a
        way the driver does not retry but that passes: a clash with other writers on a unique key (see
        `in_transaction`), a server that restarts under a pooled connection (ArcadeDB answers "BEGIN not
        expected in state AUTHENTICATION" or "credentials ... no longer valid" then, a database error while it
        opens the database, and "Type with name 'Fact' was not found" before it has loaded the schema that
        opening the store made)."""
        pause, deadline = RETRY_PAUSE, time.monotonic() + RETRY_SECONDS
        while True:
            try:
                return run()
            except (ConstraintError, StoreError, Neo4jError) as e:
                cause = e.__cause__ if isinstance(e, StoreError) else e
                passing = isinstance(cause, ConstraintError | DatabaseError) or (isinstance(cause, Neo4jError) and any(
                    words in str(cause.message) for words in RESTARTED))
                if not passing:
                    raise
                if time.monotonic() + pause > deadline:
                    what = "clashing with other writers" if isinstance(cause, ConstraintError) else "failing"
                    raise StoreError(f"{self.url}: the operation kept {what} for {RETRY_SECONDS:g} s "
                                     f"({cause.message}); try again") from e
            time.sleep(random.uniform(0, pause))
            pause = min(2 * pause, 1.0)

    def _read(self, work: Callable[[ManagedTransaction], T]) -> T:
        """Run `work` in a managed read transaction (the driver retries what is transient, `_retried` the rest)."""
        def run() -> T:
            with self._session() as s:
                return s.execute_read(work)

        return self._retried(run)

    def in_transaction(self, work: Callable[[Tx], T]) -> T:
        """Run `work` in a managed write transaction, which takes the writers' lock first.

        The driver retries what is transient, as a write that lost a race with another writer
        is; the work is then run again, so verification reads the state that won the race.
        Servers with optimistic concurrency (ArcadeDB) report some lost races as a clash on a
        unique key (a ConstraintError, which is not transient): the winner has committed by
        then, so the work is run again, verified against the state that includes it, until it is
        applied or refused (see `_retried`)."""
        def run() -> T:
            with self._session(WRITE_ACCESS) as s:
                return s.execute_write(lambda tx: work(_Neo4jTx(tx, self)))

        return self._retried(run)

    def _singletons(self) -> None:
        """Create the writers' lock and the change counter, so that writers only update them:
        two writers creating one at once would clash on its unique key (a ConstraintError)."""
        try:
            with self._session(WRITE_ACCESS) as s:
                s.execute_write(lambda tx: tx.run(SINGLETONS).consume())
        except ConstraintError:
            pass  # another client created them at the same moment: they exist

    def check_domain(self, domain: Domain) -> None:
        _arities(domain)

    def arities(self) -> dict[str, int]:
        """The bound domain's arities as this mapping stores them (see `_arities`); none if unbound."""
        return _arities(d) if (d := self.domain()) else {}

    def constants(self) -> dict[str, str]:
        """The bound domain's constants and their types."""
        return d.constants if (d := self.domain()) else {}

    def functions(self) -> list[str]:
        """The bound domain's numeric functions."""
        return list(d.functions) if (d := self.domain()) else []

    def get_meta(self, key: str) -> str | None:
        row = self._read(lambda tx: tx.run("MATCH (m:Meta {key: $key}) RETURN m.value AS v",
                                           {"key": key}).single())
        return row["v"] if row else None

    def entities(self, names: Collection[str] | None = None) -> list[Entity]:
        consts = self.constants()
        return self._read(lambda tx: _entities(tx, names, consts))

    def facts(self, predicate: str | None = None, entity: str | None = None) -> list[Fact]:
        arity = self.arities()
        def read(tx: ManagedTransaction) -> list[Fact]:
            if entity is not None:
                atoms = [a for a in _facts_about(tx, [entity], arity) if predicate in (None, a[0])]
            else:
                atoms = _facts_of(tx, arity if predicate is None else [predicate], arity)
            return self._with_values(tx, sorted(atoms))

        return self._read(read)

    def facts_about(self, names: Collection[str]) -> list[Fact]:
        arity = self.arities()
        return self._read(lambda tx: self._with_values(tx, _facts_about(tx, names, arity)))

    def unknowns(self, names: Collection[str] | None = None) -> list[Unknown]:
        return [Unknown(entity=e, predicate=p) for e, p in self._read(lambda tx: _unknowns(tx, names))]

    def _with_values(self, q: ManagedTransaction, atoms: list[GroundAtom]) -> list[Fact]:
        """Facts for atoms, the values of numeric functions' facts read from their nodes."""
        functions = self.functions()
        values = {}
        if functions and any(p in functions for p, _ in atoms):
            rows = q.run("MATCH (f:Fact) WHERE f.predicate IN $fs RETURN f.predicate AS p, f.args AS j, "
                         "f.value AS v", {"fs": functions})
            values = {(r["p"], tuple(json.loads(r["j"]))): r["v"] for r in rows}
        return [Fact(predicate=p, args=args, value=values.get((p, args))) for p, args in atoms]

    def history(self, limit: int | None = None) -> list[Change]:
        q = "MATCH (c:Change)" + CHANGE_FIELDS + " ORDER BY id DESC"
        q += " LIMIT $limit" if limit else ""
        rows = self._read(lambda tx: [_change(r) for r in tx.run(q, {"limit": limit})])
        return rows[::-1]

    def summaries(self, limit: int | None, before: int | None) -> list[ChangeRow]:
        q = ("MATCH (c:Change) WHERE $before IS NULL OR c.id < $before RETURN c.id AS id, c.time AS time, "
             "c.undo_of AS undo_of, c.summary AS summary ORDER BY c.id DESC"
             + (" LIMIT $limit" if limit is not None else ""))
        return self._read(lambda tx: [ChangeRow(*r.values()) for r in tx.run(q, {"before": before, "limit": limit})])

    def whole(self, change_id: int) -> ChangeRow | None:
        row = self._read(lambda tx: tx.run("MATCH (c:Change {id: $id})" + CHANGE_FIELDS, {"id": change_id}).single())
        return None if row is None else ChangeRow(*row.values())

    def count(self) -> tuple[int, int]:
        arity = self.arities()
        params = {"consts": list(self.constants()),
                  "unary": [p for p, n in arity.items() if n == 1],
                  "nullary": [p for p, n in arity.items() if n == 0]}
        row = self._read(lambda tx: tx.run(COUNT, params).single(strict=True))
        return row["e"], row["f"]

    # Reads of spans look one indexed property up and filter the rest here: given a second condition (a range of
    # changes, a predicate), ArcadeDB may pick that one's index and scan it.
    def entities_at(self, at: int, names: Collection[str] | None = None) -> list[Entity]:
        match = "MATCH (s:EntitySpan)" if names is None else "UNWIND $names AS nm MATCH (s:EntitySpan {name: nm})"
        q = f"{match} RETURN s.name AS name, s.type AS type, s.attrs AS attrs, s.opened AS o, s.closed AS c"
        rows = self._read(lambda tx: list(tx.run(q, {"names": list(names or ())})))
        return sorted((Entity(name=r["name"], type=r["type"], attrs=json.loads(r["attrs"])) for r in rows
                       if r["o"] <= at < r["c"]), key=lambda e: e.name)

    def facts_at(self, at: int, predicate: str | None = None, names: Collection[str] | None = None) -> list[Fact]:
        ret = " RETURN s.predicate AS p, s.args AS j, s.value AS v, s.opened AS o, s.closed AS c"
        if names is None:
            q = f"MATCH (s:FactSpan) WHERE {HOLDS}" + (" AND s.predicate = $p" if predicate is not None else "") + ret
        else:  # by each indexed position, and the facts of predicates with more arguments by predicate
            wide = [p for p, n in self.arities().items() if n > POSITIONS and predicate in (None, p)]
            q = " UNION ALL ".join([*(f"UNWIND $names AS nm MATCH (s:FactSpan {{a{i}: nm}}){ret}"
                                      for i in range(POSITIONS)),
                                    f"MATCH (s:FactSpan) WHERE s.predicate IN $wide{ret}"])
        rows = self._read(lambda tx: list(tx.run(q, {"at": at, "p": predicate, "names": list(names or ()),
                                                     "wide": wide if names is not None else []})))
        facts = {_span_fact(r) for r in rows if r["o"] <= at < r["c"] and predicate in (None, r["p"])}
        if names is not None:
            facts = {f for f in facts if not set(names).isdisjoint(f.args)}
        return sorted(facts, key=by_atom)

    def unknowns_at(self, at: int, names: Collection[str] | None = None) -> list[Unknown]:
        match = "MATCH (s:MarkSpan)" if names is None else "UNWIND $names AS nm MATCH (s:MarkSpan {entity: nm})"
        q = f"{match} RETURN s.entity AS e, s.predicate AS p, s.opened AS o, s.closed AS c"
        rows = self._read(lambda tx: [(r["e"], r["p"]) for r in tx.run(q, {"names": list(names or ())})
                                      if r["o"] <= at < r["c"]])
        return [Unknown(entity=e, predicate=p or None) for e, p in sorted(rows)]

    def spans(self, predicate: str | None, arg: tuple[int, str] | None) -> list[Span]:
        by = arg is not None and arg[0] < POSITIONS
        q = ((f"MATCH (s:FactSpan {{a{arg[0]}: $e}})" if by and arg else "MATCH (s:FactSpan)")
             + (" WHERE s.predicate = $p" if predicate is not None and not by else "")
             + " RETURN s.predicate AS p, s.args AS j, s.value AS v, s.opened AS o, s.closed AS c")
        rows = self._read(lambda tx: list(tx.run(q, {"p": predicate, "e": arg and arg[1]})))
        return sorted((Span(_span_fact(r), r["o"], r["c"]) for r in rows if predicate in (None, r["p"])),
                      key=lambda s: s.opened)

    def difference(self, start: int, end: int) -> tuple[list[Fact], list[Fact], list[Entity], list[Entity]]:
        # the spans opened in (start, end] that hold at end, and those closed there that held at start: each change
        # of a short stretch looked up, a long one scanned
        near = end - start <= WINDOW
        came = ("UNWIND range($start + 1, $end) AS i MATCH (s:{label} {{opened: i}}) WHERE s.closed > $end" if near
                else "MATCH (s:{label}) WHERE s.opened > $start AND s.opened <= $end AND s.closed > $end")
        went = ("UNWIND range($start + 1, $end) AS i MATCH (s:{label} {{closed: i}}) WHERE s.opened <= $start" if near
                else "MATCH (s:{label}) WHERE s.closed > $start AND s.closed <= $end AND s.opened <= $start")
        # of those, what held at the other moment (the same fact with the same value, or the same entity)
        held_fact = (f"UNWIND $rows AS r MATCH (s:FactSpan {{predicate: r.p, args: r.j}}) WHERE {HOLDS} "
                     "RETURN s.predicate AS p, s.args AS j, s.value AS v")
        held_entity = f"UNWIND $rows AS r MATCH (s:EntitySpan {{name: r.name}}) WHERE {HOLDS} RETURN s.name AS name"
        moments = {"start": start, "end": end}

        def read(tx: ManagedTransaction) -> tuple[list[Fact], list[Fact], list[Entity], list[Entity]]:
            out: list[Any] = []
            for cond, other in ((came, start), (went, end)):
                q = cond.format(label="FactSpan") + " RETURN s.predicate AS p, s.args AS j, s.value AS v"
                facts = [_span_fact(r) for r in tx.run(q, moments)]
                rows = [{"p": f.predicate, "j": _key(f.args)} for f in facts]
                held = {_span_fact(r) for r in tx.run(held_fact, {"rows": rows, "at": other})}
                out.append(sorted((f for f in facts if f not in held), key=by_atom))
            for cond, other in ((came, start), (went, end)):
                q = cond.format(label="EntitySpan") + " RETURN s.name AS name, s.type AS type, s.attrs AS attrs"
                ents = [Entity(name=r["name"], type=r["type"], attrs=json.loads(r["attrs"]))
                        for r in tx.run(q, moments)]
                held = {r["name"] for r in tx.run(held_entity, {"rows": [{"name": e.name} for e in ents], "at": other})}
                out.append(sorted((e for e in ents if e.name not in held), key=lambda e: e.name))
            return out[0], out[1], out[2], out[3]

        return self._read(read)

    def stamps(self, ids: Collection[int]) -> list[Stamp]:
        q = ("UNWIND $ids AS i MATCH (c:Change {id: i}) "
             "RETURN c.id AS id, c.time AS time, c.undo_of AS u, c.summary AS s")
        rows = self._read(lambda tx: list(tx.run(q, {"ids": list(ids)})))
        return [Stamp(id=r["id"], time=r["time"], undo_of=r["u"], source=(d := json.loads(r["s"])["delta"])["source"],
                      text=d.get("text", "")) for r in rows]

    def bounds(self) -> tuple[int, int] | None:
        # ids count from 1 (`clear` sets the counter back) and no change is deleted otherwise
        row = self._read(lambda tx: tx.run("MATCH (s:Meta {key: 'change_seq'}) RETURN s.seq AS n").single())
        return (1, row["n"]) if row and row["n"] else None

    def change_at(self, time: str) -> int | None:
        q = "MATCH (c:Change) WHERE c.time <= $t RETURN c.id AS id ORDER BY c.time DESC, c.id DESC LIMIT 1"
        row = self._read(lambda tx: tx.run(q, {"t": time}).single())
        return row["id"] if row else None

    def _index_history(self) -> None:
        """Fill the history's index from the history of a store made before it had one (spans of none, changes)."""
        def indexed(tx: ManagedTransaction) -> bool:
            return any(tx.run(f"MATCH (s:{label}) RETURN 1 AS x LIMIT 1").single()
                       for label in ("FactSpan", "EntitySpan", "MarkSpan"))

        if self.bounds() is None or self._read(indexed):
            return
        for change in self.history():
            rows = _span_rows(change.delta)

            def work(tx: ManagedTransaction, rows: dict[str, list[dict[str, Any]]] = rows, at: int = change.id) -> None:
                for kind, q in SPAN_WRITES:
                    if rows[kind]:
                        tx.run("WITH $at AS at " + q, {"rows": rows[kind], "at": at}).consume()

            with self._session(WRITE_ACCESS) as s:
                s.execute_write(work)

    def clear(self) -> None:
        with self._session(WRITE_ACCESS) as s:
            for label in LABELS:
                q = f"MATCH (n:{label}) WITH n LIMIT {CHUNK} DETACH DELETE n RETURN count(*) AS n"
                while s.execute_write(lambda tx, q=q: tx.run(q).single(strict=True)["n"]):
                    pass
        self._singletons()

    def close(self) -> None:
        self.driver.close()
