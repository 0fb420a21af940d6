"""The embedded default backend: one SQLite database file (WAL, indexed, atomic changes)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from kgplan.domains.formula import GroundAtom
from kgplan.domains.verify import Mark
from kgplan.errors import StoreError
from kgplan.graph.model import Change, Delta, Entity, Fact, Stamp, Unknown, by_atom, summary_json
from kgplan.graph.store import OPEN, ChangeRow, Span, Store, T, Tx

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entities(
    name TEXT PRIMARY KEY, type TEXT NOT NULL, attrs TEXT NOT NULL DEFAULT '{}') WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS facts(
    id INTEGER PRIMARY KEY, predicate TEXT NOT NULL, args TEXT NOT NULL, value REAL,
    UNIQUE(predicate, args));
CREATE TABLE IF NOT EXISTS fact_args(
    entity TEXT NOT NULL, fact_id INTEGER NOT NULL, pos INTEGER NOT NULL,
    PRIMARY KEY(entity, fact_id, pos)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS fact_args_fact ON fact_args(fact_id);
CREATE TABLE IF NOT EXISTS unknowns(
    entity TEXT NOT NULL, predicate TEXT NOT NULL, PRIMARY KEY(entity, predicate)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes(
    id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, undo_of INTEGER, delta TEXT NOT NULL,
    summary TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS changes_time ON changes(time);
"""
# The history indexed (see `Store.entities_at`): the spans of facts (their arguments indexed as facts' are),
# entities and unknown marks, each found by what it is of and by the change that opened or closed it (with the other
# end, so that a range of one is filtered by the other in the index, before any row is read). (The primary
# keys' columns come first: SQLite 3.40's integrity check misreads a WITHOUT ROWID table's other columns otherwise.)
SPANS = """
CREATE TABLE fact_spans(
    id INTEGER PRIMARY KEY, predicate TEXT NOT NULL, args TEXT NOT NULL, value REAL,
    opened INTEGER NOT NULL, closed INTEGER NOT NULL, UNIQUE(predicate, args, closed));
CREATE INDEX fact_spans_atom ON fact_spans(predicate, args, opened, closed, value);
CREATE INDEX fact_spans_opened ON fact_spans(opened, closed);
CREATE INDEX fact_spans_closed ON fact_spans(closed, opened);
CREATE TABLE span_args(
    entity TEXT NOT NULL, pos INTEGER NOT NULL, span INTEGER NOT NULL, PRIMARY KEY(entity, pos, span)) WITHOUT ROWID;
CREATE TABLE entity_spans(
    name TEXT NOT NULL, closed INTEGER NOT NULL, opened INTEGER NOT NULL, type TEXT NOT NULL, attrs TEXT NOT NULL,
    PRIMARY KEY(name, closed)) WITHOUT ROWID;
CREATE INDEX entity_spans_name ON entity_spans(name, opened);
CREATE INDEX entity_spans_opened ON entity_spans(opened, closed);
CREATE INDEX entity_spans_closed ON entity_spans(closed, opened);
CREATE TABLE mark_spans(
    entity TEXT NOT NULL, predicate TEXT NOT NULL, closed INTEGER NOT NULL, opened INTEGER NOT NULL,
    PRIMARY KEY(entity, predicate, closed)) WITHOUT ROWID;
"""
HOLDS = "s.opened <= :at AND s.closed > :at"  # span s as of change :at
CHUNK = 500  # rows per statement, well under SQLite's bound-parameter limit


def _key(args: tuple[str, ...]) -> str:
    return json.dumps(list(args), separators=(",", ":"))


def _chunks(items: list, n: int = CHUNK) -> Iterator[list]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


class _SqliteTx(Tx):
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def entity_types(self, names: Collection[str]) -> dict[str, str]:
        return _entity_types(self.db, names)

    def entities(self, names: Collection[str] | None = None) -> list[Entity]:
        return _entities(self.db, names)

    def present(self, atoms: Collection[GroundAtom]) -> set[GroundAtom]:
        out: set[GroundAtom] = set()
        for chunk in _chunks(list(atoms)):
            values = ",".join("(?,?)" for _ in chunk)
            params = [x for p, a in chunk for x in (p, _key(a))]
            # CROSS JOIN fixes the loop order: one index lookup per atom (a row-value IN scans facts)
            rows = self.db.execute(
                f"SELECT f.predicate, f.args FROM (VALUES {values}) AS v CROSS JOIN facts f "
                "WHERE f.predicate = v.column1 AND f.args = v.column2", params
            )
            out |= {(p, tuple(json.loads(a))) for p, a in rows}
        return out

    def facts_about(self, names: Collection[str]) -> list[GroundAtom]:
        return [f.atom for f in _facts_about(self.db, names)]

    def facts_of(self, predicates: Collection[str]) -> list[GroundAtom]:
        out = []
        for chunk in _chunks(list(predicates)):
            q = f"SELECT predicate, args FROM facts WHERE predicate IN ({','.join('?' * len(chunk))})"
            out += [(p, tuple(json.loads(a))) for p, a in self.db.execute(q, chunk)]
        return out

    def unknown(self, names: Collection[str]) -> set[Mark]:
        return set(_unknowns(self.db, names))

    def write(self, delta: Delta, undo_of: int | None) -> Change:
        db = self.db
        db.executemany("DELETE FROM unknowns WHERE entity=? AND predicate=?",
                       [(u.entity, u.predicate or "") for u in delta.known])
        db.executemany("DELETE FROM unknowns WHERE entity=?", [(n,) for n in delta.removed_names()])
        db.executemany("INSERT INTO unknowns(entity, predicate) VALUES (?,?)",
                       [(u.entity, u.predicate or "") for u in delta.unknown])
        db.executemany(
            "INSERT OR IGNORE INTO entities(name, type, attrs) VALUES (?,?,?)",
            [(e.name, e.type, json.dumps(e.attrs)) for e in delta.new_entities],
        )
        removed = [(f.predicate, _key(f.args)) for f in dict.fromkeys(delta.remove)]
        db.executemany("DELETE FROM fact_args WHERE fact_id IN (SELECT id FROM facts WHERE predicate=? AND args=?)",
                       removed)
        db.executemany("DELETE FROM facts WHERE predicate=? AND args=?", removed)
        db.executemany("DELETE FROM entities WHERE name=?", [(n,) for n in delta.removed_names()])
        # New rows get ids above the current maximum (rowids without AUTOINCREMENT): exactly the
        # facts inserted now (not those already present) get their argument index rows.
        (top,) = db.execute("SELECT coalesce(max(id), 0) FROM facts").fetchone()
        added = {(f.predicate, _key(f.args)): f.args for f in delta.add}
        db.executemany("INSERT OR IGNORE INTO facts(predicate, args, value) VALUES (?,?,?)",
                       [(f.predicate, _key(f.args), f.value) for f in delta.add])
        db.executemany("INSERT OR IGNORE INTO fact_args(entity, fact_id, pos) VALUES (?,?,?)", [
            (a, i, pos) for i, p, k in db.execute("SELECT id, predicate, args FROM facts WHERE id > ?", (top,))
            for pos, a in enumerate(added[p, k])])
        change = Change(id=0, delta=delta, undo_of=undo_of)
        cur = db.execute("INSERT INTO changes(time, undo_of, delta, summary) VALUES (?,?,?,?)",
                         (change.time.isoformat(), undo_of, delta.model_dump_json(), summary_json(delta)))
        change.id = int(cur.lastrowid or 0)
        _index(db, change.id, delta)
        return change

    def set_meta(self, values: dict[str, str]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?,?)", values.items())

    def clear(self) -> None:
        for t in ("meta", "entities", "facts", "fact_args", "unknowns", "changes", "fact_spans", "span_args",
                  "entity_spans", "mark_spans"):
            self.db.execute(f"DELETE FROM {t}")

    def change(self, change_id: int) -> Change | None:
        row = self.db.execute("SELECT id, time, undo_of, delta FROM changes WHERE id=?",
                              (change_id,)).fetchone()
        return _change(row) if row else None


def _index(db: sqlite3.Connection, at: int, delta: Delta) -> None:
    """Close the spans of what the recorded `delta` removes and open those of what it adds, at change `at`, in
    the order `write` applies it."""
    gone = [(at, n, OPEN) for n in delta.removed_names()]
    db.executemany("UPDATE mark_spans SET closed=? WHERE entity=? AND predicate=? AND closed=?",
                   [(at, u.entity, u.predicate or "", OPEN) for u in delta.known])
    db.executemany("UPDATE mark_spans SET closed=? WHERE entity=? AND closed=?", gone)
    db.executemany("INSERT INTO mark_spans(entity, predicate, opened, closed) VALUES (?,?,?,?)",
                   [(u.entity, u.predicate or "", at, OPEN) for u in delta.unknown])
    db.executemany("INSERT OR IGNORE INTO entity_spans(name, type, attrs, opened, closed) VALUES (?,?,?,?,?)",
                   [(e.name, e.type, json.dumps(e.attrs), at, OPEN) for e in delta.new_entities])
    db.executemany("UPDATE fact_spans SET closed=? WHERE predicate=? AND args=? AND closed=?",
                   [(at, f.predicate, _key(f.args), OPEN) for f in delta.remove])
    db.executemany("UPDATE entity_spans SET closed=? WHERE name=? AND closed=?", gone)
    (top,) = db.execute("SELECT coalesce(max(id), 0) FROM fact_spans").fetchone()
    db.executemany("INSERT OR IGNORE INTO fact_spans(predicate, args, value, opened, closed) VALUES (?,?,?,?,?)",
                   [(f.predicate, _key(f.args), f.value, at, OPEN) for f in delta.add])
    db.executemany("INSERT INTO span_args(entity, pos, span) VALUES (?,?,?)", [
        (a, pos, i) for i, k in db.execute("SELECT id, args FROM fact_spans WHERE id > ?", (top,))
        for pos, a in enumerate(json.loads(k))])


def _facts(rows: list[tuple[str, str, float | None]]) -> list[Fact]:
    """The facts of (predicate, args as JSON, value) rows, in their order: the arguments parsed at once, the facts
    built unvalidated (the store wrote them; a history read returns thousands)."""
    args = json.loads(f"[{','.join(a for _, a, _ in rows)}]")
    return [Fact.model_construct(predicate=p, args=tuple(a), value=v) for (p, _, v), a in zip(rows, args, strict=True)]


def _among(column: str, names: Collection[str] | None) -> str:
    """The condition that `column` is one of the names (JSON in parameter :names), or none if None."""
    return "" if names is None else f" AND {column} IN (SELECT value FROM json_each(:names))"


def _change(row: tuple) -> Change:
    return Change(id=row[0], time=row[1], undo_of=row[2], delta=Delta.model_validate_json(row[3]))


def _entity_types(db: sqlite3.Connection, names: Collection[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for chunk in _chunks(list(names)):
        q = f"SELECT name, type FROM entities WHERE name IN ({','.join('?' * len(chunk))})"
        out.update(db.execute(q, chunk).fetchall())
    return out


def _entities(db: sqlite3.Connection, names: Collection[str] | None) -> list[Entity]:
    if names is None:
        rows = db.execute("SELECT name, type, attrs FROM entities ORDER BY name").fetchall()
    else:
        rows = []
        for chunk in _chunks(sorted(names)):
            q = f"SELECT name, type, attrs FROM entities WHERE name IN ({','.join('?' * len(chunk))})"
            rows += db.execute(q, chunk).fetchall()
    return [Entity(name=n, type=t, attrs=json.loads(a)) for n, t, a in rows]


def _unknowns(db: sqlite3.Connection, names: Collection[str] | None) -> list[Mark]:
    """Unknown marks ('' stored for a placeholder's None), sorted."""
    q = "SELECT entity, predicate FROM unknowns"
    if names is None:
        rows = db.execute(q).fetchall()
    else:
        rows = []
        for chunk in _chunks(list(names)):
            rows += db.execute(f"{q} WHERE entity IN ({','.join('?' * len(chunk))})", chunk).fetchall()
    return [(e, p or None) for e, p in sorted(rows)]


def _facts_about(db: sqlite3.Connection, names: Collection[str]) -> list[Fact]:
    out: dict[int, Fact] = {}
    for chunk in _chunks(list(names)):
        q = ("SELECT DISTINCT f.id, f.predicate, f.args, f.value FROM fact_args a JOIN facts f "
             f"ON f.id = a.fact_id WHERE a.entity IN ({','.join('?' * len(chunk))})")
        for i, p, a, v in db.execute(q, chunk):
            out[i] = Fact(predicate=p, args=tuple(json.loads(a)), value=v)
    return list(out.values())


class SqliteStore(Store):
    """A store in one SQLite file; every change and its history record share a transaction.

    Thread-safe: writes go through one connection, one transaction at a time; each thread reads through a
    connection of its own, which sees the last committed state and never waits for a write (WAL)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.url = f"sqlite:{self.path}"
        if not self.path.parent.is_dir():
            raise StoreError(f"cannot create {self.path}: folder {self.path.parent} does not exist")
        self.new = not self.path.exists()  # what `discard` removes
        self._writing = threading.RLock()  # one write transaction at a time on `db`
        self._local = threading.local()  # each thread's reader
        self._readers: dict[int | None, sqlite3.Connection] = {}  # by thread id, to close them
        self._opening = threading.Lock()  # guards _readers
        try:
            self.db = self._connect()  # the writes' connection
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(SCHEMA)
            if not self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'fact_spans'").fetchone():
                self._index_history()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot open {self.path} as a kgplan store: {e}") from e

    def _index_history(self) -> None:
        """Create the history's index and fill it from the history a store made before it had one."""
        with self._tx() as db:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'fact_spans'").fetchone():
                return  # another process has just made it
            for statement in filter(str.strip, SPANS.split(";")):
                db.execute(statement)
            for row in db.cursor().execute("SELECT id, time, undo_of, delta FROM changes ORDER BY id"):
                _index(db, row[0], _change(row).delta)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, timeout=60, check_same_thread=False)
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        return db

    @property
    def reader(self) -> sqlite3.Connection:
        """This thread's connection for reads (those of threads that have ended are closed)."""
        if (db := getattr(self._local, "db", None)) is None:
            db = self._local.db = self._connect()
            with self._opening:
                me, alive = threading.get_ident(), {t.ident for t in threading.enumerate()}
                for ident in [i for i in self._readers if i == me or i not in alive]:
                    self._readers.pop(ident).close()
                self._readers[me] = db
        return db

    @contextmanager
    def _tx(self, mode: str = "IMMEDIATE") -> Iterator[sqlite3.Connection]:
        """A write transaction (IMMEDIATE), or a read transaction (DEFERRED) on this thread's reader."""
        with self._writing if mode == "IMMEDIATE" else contextlib.nullcontext():
            db = self.db if mode == "IMMEDIATE" else self.reader
            try:
                db.execute(f"BEGIN {mode}")
                try:
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:  # SQLite has rolled back itself after some errors (a full disk)
                        db.execute("ROLLBACK")
                    raise
            except (sqlite3.OperationalError, sqlite3.DataError) as e:  # not a bug: the file, the disk, a lock
                raise StoreError(f"cannot {'write' if mode == 'IMMEDIATE' else 'read'} {self.path}: {e} "
                                 "(nothing was changed)") from e

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        with self._tx() as db:
            yield _SqliteTx(db)

    def in_transaction(self, work: Callable[[Tx], T]) -> T:
        with self.transaction() as tx:
            return work(tx)

    def get_meta(self, key: str) -> str | None:
        row = self.reader.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def entities(self, names: Collection[str] | None = None) -> list[Entity]:
        return _entities(self.reader, names)

    def facts(self, predicate: str | None = None, entity: str | None = None) -> list[Fact]:
        if entity is not None:
            out = _facts_about(self.reader, [entity])
            return sorted((f for f in out if predicate in (None, f.predicate)), key=by_atom)
        q, params = "SELECT predicate, args, value FROM facts", ()
        if predicate is not None:
            q, params = q + " WHERE predicate=?", (predicate,)
        rows = self.reader.execute(q + " ORDER BY predicate, args", params)
        return [Fact(predicate=p, args=tuple(json.loads(a)), value=v) for p, a, v in rows]

    def facts_about(self, names: Collection[str]) -> list[Fact]:
        return _facts_about(self.reader, names)

    def unknowns(self, names: Collection[str] | None = None) -> list[Unknown]:
        return [Unknown(entity=e, predicate=p) for e, p in _unknowns(self.reader, names)]

    def snapshot(self) -> tuple[dict[str, str], list[GroundAtom], dict[GroundAtom, float]]:
        with self._tx("DEFERRED") as db:  # one read snapshot for both tables
            types = dict(db.execute("SELECT name, type FROM entities ORDER BY name"))
            rows = db.execute("SELECT predicate, args, value FROM facts").fetchall()  # in no order
        args = json.loads(f"[{','.join(a for _, a, _ in rows)}]")  # one parse for all the arguments
        atoms, values = [], {}
        for (p, _, v), a in zip(rows, args, strict=True):
            if v is None:
                atoms.append((p, tuple(a)))
            else:
                values[p, tuple(a)] = v
        return types, atoms, values

    def history(self, limit: int | None = None) -> list[Change]:
        q = "SELECT id, time, undo_of, delta FROM changes ORDER BY id DESC"
        rows = self.reader.execute(q + (" LIMIT ?" if limit else ""), (limit,) if limit else ()).fetchall()
        return [_change(r) for r in reversed(rows)]

    def summaries(self, limit: int | None, before: int | None) -> list[ChangeRow]:
        q = "SELECT id, time, undo_of, summary FROM changes WHERE id < ? ORDER BY id DESC LIMIT ?"
        rows = self.reader.execute(q, (before if before is not None else 2**63 - 1, -1 if limit is None else limit))
        return [ChangeRow(*r) for r in rows]

    def whole(self, change_id: int) -> ChangeRow | None:
        row = self.reader.execute("SELECT id, time, undo_of, delta FROM changes WHERE id=?", (change_id,)).fetchone()
        return ChangeRow(*row) if row else None

    def count(self) -> tuple[int, int]:
        (e,) = self.reader.execute("SELECT count(*) FROM entities").fetchone()
        (f,) = self.reader.execute("SELECT count(*) FROM facts").fetchone()
        return e, f

    def entities_at(self, at: int, names: Collection[str] | None = None) -> list[Entity]:
        rows = self.reader.execute(f"SELECT name, type, attrs FROM entity_spans s WHERE {HOLDS}{_among('name', names)} "
                                   "ORDER BY name", {"at": at, "names": json.dumps(list(names or ()))})
        return [Entity(name=n, type=t, attrs=json.loads(a)) for n, t, a in rows]

    def facts_at(self, at: int, predicate: str | None = None, names: Collection[str] | None = None) -> list[Fact]:
        q = f"SELECT DISTINCT s.id, s.predicate, s.args, s.value FROM fact_spans s WHERE {HOLDS}"
        if names is not None:
            q = q.replace("WHERE", "JOIN span_args x ON x.span = s.id WHERE") + _among("x.entity", names)
        q += " AND s.predicate = :p" if predicate is not None else ""
        rows = self.reader.execute(q, {"at": at, "p": predicate, "names": json.dumps(list(names or ()))})
        return sorted(_facts([r[1:] for r in rows]), key=by_atom)

    def unknowns_at(self, at: int, names: Collection[str] | None = None) -> list[Unknown]:
        rows = self.reader.execute(f"SELECT entity, predicate FROM mark_spans s WHERE {HOLDS}{_among('entity', names)}",
                                   {"at": at, "names": json.dumps(list(names or ()))})
        return [Unknown(entity=e, predicate=p or None) for e, p in sorted(rows)]

    def spans(self, predicate: str | None, arg: tuple[int, str] | None) -> list[Span]:
        q = "SELECT s.predicate, s.args, s.value, s.opened, s.closed FROM fact_spans s"
        if arg is not None:
            q += " JOIN span_args x ON x.span = s.id AND x.entity = :e AND x.pos = :i"
        q += " WHERE s.predicate = :p" if predicate is not None else ""
        rows = self.reader.execute(q + " ORDER BY s.opened, s.id", {"p": predicate, "i": arg and arg[0],
                                                                    "e": arg and arg[1]}).fetchall()
        return [Span(f, o, c) for f, (*_, o, c) in zip(_facts([r[:3] for r in rows]), rows, strict=True)]

    def difference(self, start: int, end: int) -> tuple[list[Fact], list[Fact], list[Entity], list[Entity]]:
        # spans opened in (start, end] that hold at end (or closed there that held at start), of whatever did not
        # hold at the other moment: two index ranges of the spans the changes in between touched, and for each one
        # probe of the span of the same fact (entity) opened last by the other moment (spans of one are disjoint)
        came = "s.opened > :start AND s.opened <= :end AND s.closed > :end"
        went = "s.closed > :start AND s.closed <= :end AND s.opened <= :start"
        fact = ("SELECT s.predicate, s.args, s.value FROM fact_spans s WHERE {} AND coalesce((SELECT t.closed > :{at} "
                "AND t.value IS s.value FROM fact_spans t WHERE t.predicate = s.predicate AND t.args = s.args "
                "AND t.opened <= :{at} ORDER BY t.opened DESC LIMIT 1), 0) = 0")
        entity = ("SELECT s.name, s.type, s.attrs FROM entity_spans s WHERE {} AND coalesce((SELECT t.closed > :{at} "
                  "FROM entity_spans t WHERE t.name = s.name AND t.opened <= :{at} ORDER BY t.opened DESC LIMIT 1), "
                  "0) = 0")
        moments = {"start": start, "end": end}
        with self._tx("DEFERRED") as db:  # both moments from one snapshot
            facts = [sorted(_facts(db.execute(fact.format(w, at=at), moments).fetchall()), key=by_atom)
                     for w, at in ((came, "start"), (went, "end"))]
            ents = [[Entity(name=n, type=t, attrs=json.loads(a))
                     for n, t, a in db.execute(entity.format(w, at=at) + " ORDER BY s.name", moments)]
                    for w, at in ((came, "start"), (went, "end"))]
        return facts[0], facts[1], ents[0], ents[1]

    def stamps(self, ids: Collection[int]) -> list[Stamp]:
        rows = self.reader.execute(
            "SELECT id, time, undo_of, json_extract(summary, '$.delta.source'), json_extract(summary, '$.delta.text') "
            "FROM changes WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),))
        return [Stamp(id=i, time=t, undo_of=u, source=s, text=x or "") for i, t, u, s, x in rows]

    def bounds(self) -> tuple[int, int] | None:
        # one min or max per query: SQLite reads both ends of the index only so (min and max together scan)
        first, last = self.reader.execute("SELECT (SELECT min(id) FROM changes), (SELECT max(id) FROM changes)"
                                          ).fetchone()
        return None if first is None else (first, last)

    def change_at(self, time: str) -> int | None:
        row = self.reader.execute("SELECT id FROM changes WHERE time <= ? ORDER BY time DESC, id DESC LIMIT 1",
                                  (time,)).fetchone()
        return row[0] if row else None

    def clear(self) -> None:
        self.in_transaction(lambda tx: tx.clear())

    def close(self) -> None:
        for db in [self.db, *self._readers.values()]:
            db.close()

    def discard(self) -> None:
        self.close()
        if self.new:
            for extra in ("", "-wal", "-shm", "-journal"):
                Path(f"{self.path}{extra}").unlink(missing_ok=True)

