"""The world graph: a domain bound to a store (`graph.store`), its changes verified, recorded and undone."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Collection, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from functools import cached_property
from typing import TypeVar

from pydantic_core import PydanticSerializationError

from kgplan.domains.formula import Formula, GroundAtom
from kgplan.domains.invariants import Mined, MutexGroup, Synthesis, dump_groups, load_groups, mine_invariants
from kgplan.domains.model import TOTAL_COST, Domain, Problem
from kgplan.domains.verify import (
    ChangeRefused,
    Issue,
    IssueKind,
    Mark,
    check_values,
    show,
    verify,
)
from kgplan.errors import DomainError, InputError, NotFound, StoreError
from kgplan.graph.model import (
    Change,
    ChangeSlice,
    Delta,
    Difference,
    Entity,
    Fact,
    Interval,
    Source,
    Unknown,
    by_atom,
)
from kgplan.graph.store import OPEN, Store, T, Tx, plain

C = TypeVar("C", bound=Collection[str] | None)
MAX_ID = 2**63 - 1  # the largest id (and count) a store can take; larger ones name no change


def record(tx: Tx, delta: Delta) -> Delta:
    """The delta as it will be applied and recorded: removed entities whole, their facts in `remove` and their
    unknown marks in `known`."""
    if not delta.removed_entities:
        return delta
    names = delta.removed_names()
    gone = [f for f in map(Fact.of, tx.facts_about(names)) if f not in delta.remove]
    marks = sorted(tx.unknown(names), key=lambda m: (m[0], m[1] or ""))
    known = [u for u in (Unknown(entity=e, predicate=p) for e, p in marks) if u not in delta.known]
    return delta.model_copy(update={"removed_entities": tx.entities(names),
                                    "remove": [*delta.remove, *sorted(gone, key=by_atom)],
                                    "known": [*delta.known, *known]})


def rename(tx: Tx, old: str, new: str, type: str | None = None) -> Delta:
    """The delta that renames entity `old` to `new` (as `type`, if given, else its type; its unknown
    facts stay unknown), or merges it into entity `new` if that exists: its facts re-pointed (those
    `new` already has dropped). `old` goes with its marks (a placeholder is identified)."""
    found = {e.name: e for e in tx.entities([old, new])}
    if old not in found:
        raise NotFound(f"cannot rename '{old}': it is not a known entity")
    moved = {(p, tuple(new if a == old else a for a in args)) for p, args in tx.facts_about([old])}
    if new in found:
        return Delta(removed_entities=[old], add=[Fact.of(a) for a in sorted(moved - tx.present(moved))])
    keep = [Unknown(entity=new, predicate=p) for _, p in sorted(tx.unknown([old]), key=str) if p]
    return Delta(new_entities=[Entity(name=new, type=type or found[old].type, attrs=found[old].attrs)],
                 removed_entities=[old], add=[Fact.of(a) for a in sorted(moved)], unknown=keep)


def check_structure(domain: Domain, tx: Tx, delta: Delta) -> None:
    """Refuse (InputError) what no store can hold as given, as every unverified write is checked: a fact that
    is not of a predicate or function of the domain with its arity (an added function's fact with a value, a
    predicate's without), a value that is not finite, or an added fact or unknown mark about an entity that
    does not exist or goes with the delta, unless the delta creates it or it is a constant. Verification checks
    all this and more."""
    signatures = [(f, (domain.functions if f.value is not None else domain.predicates).get(f.predicate))
                  for f in delta.add]
    signatures += [(f, domain.predicates.get(f.predicate) or domain.functions.get(f.predicate)) for f in delta.remove]
    for f, sig in signatures:
        if sig is None or sig.arity != len(f.args):
            raise InputError(f"{f.atom} does not match a predicate of domain {domain.name}")
    if issues := check_values(domain, [(f.atom, f.value) for f in delta.add]):
        raise ChangeRefused(issues)
    used = {a for f in delta.add for a in f.args} | {u.entity for u in delta.unknown}
    ask = used - {e.name for e in delta.new_entities} - domain.constants.keys()
    found = tx.entity_types(ask) if ask else {}
    if missing := sorted((ask - found.keys()) | (used & set(delta.removed_names()))):
        raise InputError(f"cannot add facts or unknown marks about entities that do not exist: {', '.join(missing)}")


class WorldGraph:
    """A typed, closed-world fact graph bound to one PDDL domain, with an append-only history, over a `Store`.

    Verification, invariants, undo and export live here, once; the store only keeps what it is given.
    A graph `as_of` a change (see `at`) reads the graph as it was then, and cannot be changed."""

    def __init__(self, store: Store, as_of: int | None = None) -> None:
        self.store = store
        self.as_of = as_of
        if as_of is None:
            store.bind(self.bound)

    # ---- the store's reads and writes -----------------------------------------------------------
    @property
    def url(self) -> str:
        return self.store.url

    def in_transaction(self, work: Callable[[Tx], T]) -> T:
        """Run `work` in one write transaction of the store (see `Store.in_transaction`)."""
        self._writable()
        return self.store.in_transaction(work)

    def _writable(self) -> None:
        if self.as_of is not None:
            raise InputError(f"the graph as of change {self.as_of} is history: it cannot be changed")

    def get_meta(self, key: str) -> str | None:
        return self.store.get_meta(key)

    def set_meta(self, values: dict[str, str]) -> None:
        self._writable()
        self.store.set_meta(values)

    def entities(self, names: Collection[str] | None = None) -> list[Entity]:
        """All entities (the domain's constants excluded), or those named, by name."""
        if self.as_of is not None:
            return self.store.entities_at(self.as_of, _text(names))
        return self.store.entities(_text(names))

    def facts(self, predicate: str | None = None, entity: str | None = None) -> list[Fact]:
        """Facts, optionally only of one predicate and/or mentioning one entity, sorted."""
        _text([predicate or "", entity or ""])
        if self.as_of is not None:
            return self.store.facts_at(self.as_of, predicate, None if entity is None else [entity])
        return self.store.facts(predicate, entity)

    def facts_about(self, names: Collection[str]) -> list[Fact]:
        """Every fact with one of `names` among its arguments."""
        if self.as_of is not None:
            return self.store.facts_at(self.as_of, None, _text(names))
        return self.store.facts_about(_text(names))

    def unknowns(self, names: Collection[str] | None = None) -> list[Unknown]:
        """What the graph marks unknown (see `graph.model.Unknown`), about every entity or those
        named, sorted by entity then predicate (the placeholder mark first)."""
        if self.as_of is not None:
            return self.store.unknowns_at(self.as_of, _text(names))
        return self.store.unknowns(_text(names))

    def snapshot(self) -> tuple[dict[str, str], list[GroundAtom], dict[GroundAtom, float]]:
        """The whole state as plain data for planning (see `Store.snapshot`)."""
        if self.as_of is not None:
            return plain(self.entities(), self.facts())
        return self.store.snapshot()

    def history(self, limit: int | None = None) -> list[Change]:
        """Applied changes, oldest first (the newest `limit` if given)."""
        if self.as_of is not None:
            past = [c for c in self.store.history() if c.id <= self.as_of]
            return past[-limit:] if limit else past
        return self.store.history(_count(limit, "limit"))

    def changes(self, limit: int | None = 50, before: int | None = None) -> list[ChangeSlice]:
        """The newest `limit` changes (all if None) with ids below `before`, newest first, summarised:
        provenance whole, each list of the delta cut to its first `PREVIEW` items. Reads no change whole."""
        if self.as_of is not None:
            before = self.as_of + 1 if before is None else min(before, self.as_of + 1)
        if before is not None and before > MAX_ID:
            before = None  # every id is below it
        elif before is not None and before < 1:
            return []  # no id is
        return [ChangeSlice(id=r.id, time=r.time, undo_of=r.undo_of, **json.loads(r.data))
                for r in self.store.summaries(_count(limit, "limit"), before)]

    def change_slice(self, change_id: int, offset: int = 0, limit: int | None = 1000) -> ChangeSlice | None:
        """One change with each list of its delta cut to items [offset, offset + limit): its diff, paged."""
        _count(offset, "offset")
        if abs(change_id) > min(MAX_ID, self.as_of or MAX_ID) or (row := self.store.whole(change_id)) is None:
            return None
        return ChangeSlice.cut(row.id, row.time, row.undo_of, json.loads(row.data), offset, _count(limit, "limit"))

    def count(self) -> tuple[int, int]:
        """(entities, facts)."""
        if self.as_of is not None:
            return len(self.entities()), len(self.facts())
        return self.store.count()

    def clear(self) -> None:
        """Delete everything: entities, facts, history and metadata."""
        self._writable()
        self.store.clear()
        self.__dict__.pop("domain", None)

    def close(self) -> None:
        if self.as_of is None:  # a graph as of a change reads the store of the graph it came from
            self.store.close()

    # ---- domain binding -----------------------------------------------------------------------
    def init(self, domain: Domain, force: bool = False, problem: Problem | None = None) -> Synthesis:
        """Bind the store to a domain, with a problem's objects and :init as its first change.

        All or nothing: the invariants are derived for the problem's initial state (the empty
        state without one) and the problem is verified against them before the store is
        touched, so on a KgplanError (a ChangeRefused too) the store is as it was; the old graph (with
        `force`) goes and the new one comes in one transaction, so a crash leaves one or the other. The
        domain text and the invariants kept are stored; the result also says which groups were dropped.
        """
        self.store.check_domain(domain)
        if self.get_meta("domain_pddl") is not None and not force:
            raise StoreError(f"{self.url} is already initialised; use --force to start over")
        synthesis, delta = _start(domain, problem)
        toml_path = domain.path.parent / "domain.toml" if domain.path else None
        toml = toml_path.read_text() if toml_path and toml_path.is_file() else ""
        meta = {"domain_pddl": domain.text, "domain_toml": toml, "domain_source": str(domain.path or domain.name),
                "invariants": dump_groups(synthesis.kept)}

        def work(tx: Tx) -> None:  # the old graph goes and the new one comes in one transaction
            if force:
                tx.clear()
            tx.set_meta(meta)
            if delta is not None:
                self._apply(tx, delta, False, None)  # verified by _start: the graph is empty now

        self.__dict__["domain"] = bound = replace(domain)  # bound while the store holds it uncommitted
        bound.invariants = synthesis.kept
        try:
            self.in_transaction(work)
        finally:
            self.__dict__.pop("domain", None)
        return synthesis

    @cached_property
    def domain(self) -> Domain:
        """The stored domain, with the invariants the store keeps."""
        pddl = self.get_meta("domain_pddl")
        if pddl is None:
            raise StoreError(f"{self.url} is not initialised: run `kgplan init --domain NAME` first")
        dom = Domain.parse(pddl, self.get_meta("domain_source") or "stored domain")
        dom.meta = tomllib.loads(self.get_meta("domain_toml") or "")
        if (stored := self.get_meta("invariants")) is not None:
            dom.invariants = load_groups(stored)
        return dom

    def bound(self) -> Domain | None:
        """The domain, or None while the store is not initialised (what `Store.bind` asks)."""
        if "domain" not in self.__dict__ and self.get_meta("domain_pddl") is None:
            return None
        return self.domain

    def suggest_invariants(self) -> Mined:
        """Invariants the current graph satisfies for predicates no action changes (see
        `domains.invariants.mine_invariants`), not yet among the store's."""
        entities = {e.name: e.type for e in self.entities()}
        return mine_invariants(self.domain, entities, (f.atom for f in self.facts()), self.domain.invariants)

    def accept_invariants(self, groups: Iterable[MutexGroup]) -> Change:
        """Store mined groups with the invariants; verification enforces them from now on. The history records
        it (the change that says so, in the same transaction).

        Only groups over predicates no action changes are accepted (DomainError otherwise), and only
        if the current graph satisfies them (ChangeRefused otherwise); nothing is stored then.
        """
        groups = [replace(g, origin="mined") for g in groups]
        static = self.domain.static_predicates()
        if changed := sorted({p.predicate for g in groups for p in g.parts} - static):
            raise DomainError(f"actions change {', '.join(changed)}: their invariants are derived, not mined")
        facts = [f.atom for f in self.facts()]
        issues = [Issue(IssueKind.INVARIANT, f"the graph has {' and '.join(map(show, w))}, but {g.describe()}")
                  for g in groups if (w := g.overcrowded(facts)) is not None]
        if issues:
            raise ChangeRefused(issues)
        return self._record_invariants([*self.domain.invariants, *groups], "accepted", groups)

    def remove_invariants(self, groups: Iterable[MutexGroup]) -> Change:
        """Stop enforcing accepted (mined) invariants, recorded in the history; NotFound for a group that is not
        a mined one of the store's (derived and declared ones follow from the domain)."""
        groups = list(groups)
        mined = [g for g in self.domain.invariants if g.origin == "mined"]
        if missing := [g for g in groups if g not in mined]:
            raise NotFound(f"no accepted invariant '{missing[0].describe()}': only those mined and accepted can be "
                           "removed (see `kgplan invariants`)")
        kept = [g for g in self.domain.invariants if g.origin != "mined" or g not in groups]
        return self._record_invariants(kept, "removed", groups)

    def _record_invariants(self, kept: list[MutexGroup], verb: str, groups: list[MutexGroup]) -> Change:
        """Store `kept` as the invariants and record, in the same transaction, a change that changes no fact and
        says which `groups` were `verb` (its undo changes nothing: remove or accept them instead)."""
        text = "; ".join(f"{verb} invariant: {g.describe()}" for g in groups)

        def work(tx: Tx) -> Change:
            tx.set_meta({"invariants": dump_groups(kept)})
            return tx.write(Delta(source="user", text=text), None)

        try:
            return self.in_transaction(work)
        finally:
            self.__dict__.pop("domain", None)

    def set_invariants(self, groups: list[MutexGroup]) -> None:
        """Store the groups verification enforces from now on (not checked against the graph: for a
        subset of the stored ones, or groups already checked, as `accept_invariants` does)."""
        self.set_meta({"invariants": dump_groups(groups)})
        self.__dict__.pop("domain", None)

    # ---- changes -----------------------------------------------------------------------------
    def check(self, delta: Delta) -> list[Issue]:
        """Verify a delta against the domain and the current state without applying it."""
        return self.in_transaction(lambda tx: self._verify(tx, delta))

    def _verify(self, tx: Tx, delta: Delta, undone: Delta | None = None) -> list[Issue]:
        """Verify `delta`; `undone` is the recorded delta it undoes, if it is an undo."""
        tx.prefetch(delta)
        if issues := check_values(self.domain, [(f.atom, f.value) for f in delta.add]):
            return issues
        remove = [f.atom for f in delta.remove]
        # removing a function's value and adding another one replaces it (removals apply first)
        add = [f.atom for f in delta.add if f.value is None or f.atom not in remove]
        return verify(self.domain, add, remove, [(e.name, e.type) for e in delta.new_entities], tx,
                      delta.removed_names(), [f.atom for f in undone.add] if undone else (),
                      [u.pair for u in delta.unknown], [u.pair for u in delta.known])

    def _apply(self, tx: Tx, delta: Delta, verified: bool, undo_of: int | None,
               undone: Delta | None = None) -> Change:
        try:
            delta.model_dump_json()  # what the history will hold: it must be text a store can keep
        except PydanticSerializationError as e:
            raise InputError(f"the change holds text that is not valid Unicode (a lone surrogate?): {e}") from e
        if not verified:
            check_structure(self.domain, tx, delta)
        elif issues := self._verify(tx, delta, undone):
            raise ChangeRefused(issues)
        return tx.write(record(tx, delta), undo_of)

    def apply(self, delta: Delta, *, verified: bool = True, undo_of: int | None = None) -> Change:
        """Verify and apply a delta atomically; raises ChangeRefused (graph unchanged) on issues. An unverified
        delta is only checked to fit the store (`check_structure`)."""
        return self.in_transaction(lambda tx: self._apply(tx, delta, verified, undo_of))

    def apply_from(self, make: Callable[[Tx], Delta]) -> Change:
        """Build a delta from the state as read in the write transaction, then verify and apply it
        there: no other change can come between the reads and the write. `make` may raise to
        abort (nothing is applied) and may be called again if the store retries the transaction."""
        return self.in_transaction(lambda tx: self._apply(tx, make(tx), True, None))

    def identify(self, placeholder: str, name: str, type: str | None = None, *, source: Source = "sensor",
                 text: str = "") -> Change:
        """A placeholder becomes known as `name`, in one verified change (see `rename`)."""

        def make(tx: Tx) -> Delta:
            if Unknown(entity=placeholder).pair not in tx.unknown([placeholder]):
                raise InputError(f"'{placeholder}' is not a placeholder")
            return rename(tx, placeholder, name, type).model_copy(
                update={"source": source, "text": text or f"{placeholder} is {name}"})

        return self.apply_from(make)

    def undo(self, change_id: int) -> Change:
        """Apply the inverse of a change as a new change; history is never rewritten."""

        def work(tx: Tx) -> Change:
            old = tx.change(change_id) if abs(change_id) <= MAX_ID else None
            if old is None:
                raise NotFound(f"no change with id {change_id}")
            inv = old.delta.inverse()
            inv.text = f"undo of change {change_id}"
            return self._apply(tx, inv, True, change_id, old.delta)

        return self.in_transaction(work)

    # ---- problems ------------------------------------------------------------------------------
    def load_problem(self, problem: Problem | str, *, verified: bool = True) -> Change:
        """Add a PDDL problem's objects and :init to the graph as one change.

        Into an empty graph, the derived invariants are first derived again for the problem's
        initial state (as `init` does with a problem); mined ones stay.
        """
        if isinstance(problem, str):
            problem = Problem.parse(problem, "problem")
        if self.count() != (0, 0):
            have = {e.name for e in self.entities(list(problem.objects))}
            return self.apply(_problem_delta(problem, have), verified=verified)
        mined = [g for g in self.domain.invariants if g.origin == "mined"]
        synthesis, delta = _start(self.domain, problem, verified=False)  # verified as it is applied
        before = self.get_meta("invariants")
        self.set_invariants(synthesis.kept + mined)
        try:
            return self.apply(delta, verified=verified)
        except BaseException:
            if before is not None:  # the graph stays empty, so a crash here needs no restore
                self.set_invariants(load_groups(before))
            raise

    def problem(self, goal: Formula | None = None, name: str = "kgplan") -> Problem:
        """The graph as a PDDL problem: its objects (the domain's constants aside), facts and numbers, each sorted."""
        facts = self.facts()
        objects = {e.name: e.type for e in self.entities() if e.name not in self.domain.constants}
        return Problem(name, self.domain.name, objects, sorted(f.atom for f in facts if f.value is None), goal,
                       dict(sorted((f.atom, f.value) for f in facts if f.value is not None)))

    def to_problem(self, goal: Formula | None = None, name: str = "kgplan") -> str:
        """The graph as a PDDL problem text (numeric facts after the others, each sorted)."""
        return self.problem(goal, name).to_pddl(TOTAL_COST in self.domain.functions)

    # ---- queries ---------------------------------------------------------------------------------
    def neighborhood(self, names: Iterable[str], depth: int = 1) -> tuple[list[Entity], list[Fact]]:
        """Entities within `depth` fact-hops of `names`, and the facts among them."""
        seen = set(names)
        frontier = set(seen)
        facts: set[Fact] = set()
        for _ in range(depth):
            if not frontier:
                break
            new = set(self.facts_about(frontier)) - facts
            facts |= new
            frontier = {a for f in new for a in f.args} - seen
            seen |= frontier
        return self.entities(seen), sorted(facts, key=by_atom)

    # ---- the history: the graph as of a moment, a fact's timeline, the difference between two moments ----
    def moment(self, when: int | str | datetime) -> int:
        """The id of the change `when` names: a change id (as a number or digits), or a time (a datetime or ISO
        8601; without a zone, UTC): the last change made at or before it. InputError outside the history."""
        if (bounds := self.store.bounds()) is None:
            raise InputError("the history is empty: there is no moment to read the graph at")
        first, last = bounds
        stamps = {s.id: s.time for s in self.store.stamps([first, last])}
        valid = (f"the history holds changes {first} to {last}, made from {stamps[first]:%Y-%m-%dT%H:%M:%S} to "
                 f"{stamps[last]:%Y-%m-%dT%H:%M:%S} UTC")
        if isinstance(when, str) and re.fullmatch(r"\s*-?[0-9]+\s*", when):
            when = int(when)
        if isinstance(when, int):
            if not first <= when <= last:
                raise InputError(f"no change {when}: {valid}")
            return when
        if isinstance(when, str):
            try:
                when = datetime.fromisoformat(when.strip())
            except ValueError:
                raise InputError(f"{when!r} is neither a change id nor an ISO time such as 2026-11-20T08:00") from None
        moment = when if when.tzinfo else when.replace(tzinfo=UTC)
        try:
            utc = moment.astimezone(UTC).isoformat()
        except OverflowError:  # a zone that takes it out of the years a datetime holds
            raise InputError(f"{moment.isoformat()} is out of range: {valid}") from None
        if (found := self.store.change_at(utc)) is None:
            raise InputError(f"{moment.isoformat()} is before the first change: {valid}")
        return found

    def at(self, when: int | str | datetime) -> WorldGraph:
        """The graph as it was right after the change `when` names (see `moment`): every read as then (entities,
        facts, marks, the history up to it), nothing writable. It shares this graph's store, which closes it."""
        past = WorldGraph(self.store, self.moment(when))
        if (dom := self.bound()) is not None:
            past.__dict__["domain"] = dom
        return past

    def timeline(self, pattern: str) -> list[Interval]:
        """Every stretch of the history in which a fact matching `pattern` held, oldest first, with the changes
        that opened and closed it: the pattern is a fact whose predicate or arguments may be `*`, e.g.
        "(on apple *)". What the recorded changes did is all that counts: a fact holds from the change that added
        it to the change that removed it (an undo too). As of a change, stretches open then end open."""
        predicate, args = _pattern(self.domain, pattern)
        fixed = next(((i, a) for i, a in enumerate(args) if a is not None), None)
        end = OPEN if self.as_of is None else self.as_of
        spans = [s for s in self.store.spans(predicate, fixed) if s.opened <= end and len(s.fact.args) == len(args)
                 and all(a in (None, b) for a, b in zip(args, s.fact.args, strict=True))]
        stamps = {s.id: s for s in self.store.stamps({i for s in spans for i in (s.opened, s.closed) if i <= end})}
        return [Interval(fact=s.fact, opened=stamps[s.opened], closed=stamps.get(s.closed) if s.closed <= end else None)
                for s in spans]

    def difference(self, start: int | str | datetime, end: int | str | datetime) -> Difference:
        """What changed from one moment to another (see `moment`): facts and entities that held at `end` and not
        at `start`, and the reverse."""
        a, b = self.moment(start), self.moment(end)
        if self.as_of is not None and max(a, b) > self.as_of:
            raise InputError(f"no change {max(a, b)} as of change {self.as_of}")
        if a == b:
            return Difference(start=a, end=b)
        add, remove, new, gone = self.store.difference(min(a, b), max(a, b))
        if a > b:
            add, remove, new, gone = remove, add, gone, new
        return Difference(start=a, end=b, add=add, remove=remove, new_entities=new, removed_entities=gone)

    def __enter__(self) -> WorldGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _text(names: C) -> C:
    """`names` (None passes), refused (InputError) if one is not text a store can take (a lone surrogate)."""
    for name in names or ():
        try:
            name.encode()
        except UnicodeEncodeError as e:
            raise InputError(f"{name!r} is not valid Unicode (a lone surrogate?): {e.reason}") from None
    return names


def _pattern(domain: Domain, text: str) -> tuple[str | None, tuple[str | None, ...]]:
    """A fact pattern such as "(on apple *)": its predicate and arguments, None for each `*`."""
    words = text.strip().removeprefix("(").removesuffix(")").split()
    if not words or not (text.strip().startswith("(") and text.strip().endswith(")")):
        raise InputError(f'{text!r} is no fact pattern: write "(predicate arg ...)", any of them "*"')
    predicate, *args = [None if w == "*" else w for w in _text(words)]
    sig = domain.predicates.get(predicate or "") or domain.functions.get(predicate or "")
    if predicate is not None and sig is None:
        raise InputError(f"unknown predicate {predicate!r} in {text!r}")
    if sig is not None and sig.arity != len(args):
        raise InputError(f"{predicate} takes {sig.arity} arguments, the pattern {text!r} gives {len(args)}")
    return predicate, tuple(args)


def _count(n: int | None, what: str) -> int | None:
    """A limit or offset as the stores take it: None (no bound) from 2^31 on (more than a store can count in
    a query: ArcadeDB takes 32 bits); InputError if negative."""
    if n is not None and n < 0:
        raise InputError(f"{what} must be 0 or more, not {n}")
    return None if n is not None and n >= 2**31 else n


class _EmptyState:
    """The state of an empty graph, to verify a problem before anything is written."""

    def entity_types(self, names: Collection[str]) -> dict[str, str]:
        return {}

    def present(self, atoms: Collection[GroundAtom]) -> set[GroundAtom]:
        return set()

    def facts_about(self, names: Collection[str]) -> list[GroundAtom]:
        return []

    def facts_of(self, predicates: Collection[str]) -> list[GroundAtom]:
        return []

    def unknown(self, names: Collection[str]) -> set[Mark]:
        return set()


def _problem_delta(problem: Problem, have: Collection[str]) -> Delta:
    return Delta(
        new_entities=[Entity(name=o, type=t) for o, t in problem.objects.items() if o not in have],
        add=[Fact.of(a) for a in dict.fromkeys(problem.init)]
        + [Fact.of(a, v) for a, v in problem.numbers.items()],
        source="load", text=f"problem {problem.name}",
    )


def _start(domain: Domain, problem: Problem | None, extra: Iterable[MutexGroup] = (),
           verified: bool = True) -> tuple[Synthesis, Delta | None]:
    """Invariants for a problem's initial state (the empty state without one), and the problem as
    a change into an empty graph, verified against them (and `extra`) if `verified`.

    Raises DomainError if the invariants cannot be derived, ChangeRefused if the problem is refused.
    A domain whose domain.toml says `open_world = true` keeps no keyless at-most-one group.
    """
    init = problem.init if problem else []
    try:
        synthesis = domain.derive_invariants(init)
    except DomainError as e:
        raise DomainError(f"cannot derive the invariants of domain {domain.name}: {e}") from e
    if domain.meta.get("open_world"):
        # In an open world entities are discovered, not created: one that turns up was there from the
        # start, unseen. A keyless at-most-one group bounds how many objects hold its atoms at all, which
        # the initial state cannot know then; keyed groups (one object's atoms) and exactly-one groups stay.
        synthesis.kept[:] = [g for g in synthesis.kept if g.exactly_one or g.arity]
    if problem is None:
        return synthesis, None
    delta = _problem_delta(problem, ())
    bound = replace(domain)
    bound.invariants = [*synthesis.kept, *extra]
    if verified and (issues := verify(bound, (f.atom for f in delta.add), (),
                                      [(e.name, e.type) for e in delta.new_entities], _EmptyState())):
        raise ChangeRefused(issues)
    return synthesis, delta
