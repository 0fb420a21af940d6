"""The store contract: what a backend of the world graph implements.

A `Store` keeps entities, facts, unknown marks, metadata and the append-only change history, and knows
no domain rules: `graph.world.WorldGraph` binds it to a domain and verifies every change above it.
Backends register in `graph.backends`. Entities never include the domain's constants.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from kgplan.domains.formula import GroundAtom
from kgplan.domains.verify import Mark
from kgplan.graph.model import Change, Delta, Entity, Fact, Stamp, Unknown

if TYPE_CHECKING:
    from kgplan.domains.model import Domain

T = TypeVar("T")
OPEN = 2**63 - 1  # the change that closes a span still open (no change has this id)


def plain(entities: list[Entity], facts: list[Fact]) -> tuple[dict[str, str], list[GroundAtom],
                                                               dict[GroundAtom, float]]:
    """A state as plain data for planning (see `Store.snapshot`)."""
    return ({e.name: e.type for e in entities}, [f.atom for f in facts if f.value is None],
            {f.atom: f.value for f in facts if f.value is not None})


class ChangeRow(NamedTuple):
    """A stored change as JSON: `data` is its summary (`graph.model.summary_json`) or its whole delta."""

    id: int
    time: str
    undo_of: int | None
    data: str


class Span(NamedTuple):
    """A stretch of the history in which a fact held: from change `opened` to change `closed` (`OPEN`: it holds)."""

    fact: Fact
    opened: int
    closed: int


class Tx(ABC):
    """One write transaction: the state reads verification needs, and the write."""

    @abstractmethod
    def entity_types(self, names: Collection[str]) -> dict[str, str]:
        """The types of those named that are entities."""

    @abstractmethod
    def entities(self, names: Collection[str] | None = None) -> list[Entity]:
        """All entities, or those named, by name."""

    @abstractmethod
    def present(self, atoms: Collection[GroundAtom]) -> set[GroundAtom]:
        """Those of `atoms` that hold."""

    @abstractmethod
    def facts_about(self, names: Collection[str]) -> list[GroundAtom]:
        """Every atom with one of `names` among its arguments."""

    @abstractmethod
    def facts_of(self, predicates: Collection[str]) -> list[GroundAtom]:
        """Every atom of the predicates."""

    @abstractmethod
    def unknown(self, names: Collection[str]) -> set[Mark]:
        """The unknown marks (entity, predicate or None) of the named entities."""

    @abstractmethod
    def write(self, delta: Delta, undo_of: int | None) -> Change:
        """Apply a recorded delta (`graph.world.record`), checked already, and append it to the history."""

    @abstractmethod
    def change(self, change_id: int) -> Change | None:
        """One change of the history, whole."""

    @abstractmethod
    def set_meta(self, values: dict[str, str]) -> None:
        """Set metadata, in this transaction."""

    @abstractmethod
    def clear(self) -> None:
        """Delete everything (entities, facts, marks, history and metadata), in this transaction."""

    def prefetch(self, delta: Delta) -> None:  # noqa: B027
        """Hook, called before `delta` is verified: read ahead what verification will ask (Neo4j reads a
        small change's state in one round trip). Default: nothing."""


class Store(ABC):
    """Entities, facts, unknown marks, metadata and the change history, in one backend."""

    url: str
    _bound: Callable[[], Domain | None] | None = None

    def bind(self, bound: Callable[[], Domain | None]) -> None:
        """Hook: how the store finds the domain it is bound to (None before `init`), for a backend whose
        schema follows the domain (Neo4j: predicate arities, constants, functions). Set by `WorldGraph`."""
        self._bound = bound

    def domain(self) -> Domain | None:
        """The bound domain, or None (not initialised, or not bound to a world graph)."""
        return self._bound() if self._bound else None

    def check_domain(self, domain: Domain) -> None:  # noqa: B027
        """Hook, called before `domain` is bound: raise DomainError if this backend cannot store its facts.
        Default: any domain."""

    @abstractmethod
    def in_transaction(self, work: Callable[[Tx], T]) -> T:
        """Run `work` in one serialisable write transaction: committed when it returns, rolled back when it
        raises. A store may run it again after a transient conflict."""

    @abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, values: dict[str, str]) -> None:
        self.in_transaction(lambda tx: tx.set_meta(values))

    @abstractmethod
    def entities(self, names: Collection[str] | None = None) -> list[Entity]:
        """All entities, or those named, by name."""

    @abstractmethod
    def facts(self, predicate: str | None = None, entity: str | None = None) -> list[Fact]:
        """Facts, optionally only of one predicate and/or mentioning one entity, sorted."""

    @abstractmethod
    def facts_about(self, names: Collection[str]) -> list[Fact]:
        """Every fact with one of `names` among its arguments."""

    @abstractmethod
    def unknowns(self, names: Collection[str] | None = None) -> list[Unknown]:
        """The unknown marks of every entity or those named, by entity then predicate (placeholder first)."""

    def snapshot(self) -> tuple[dict[str, str], list[GroundAtom], dict[GroundAtom, float]]:
        """The whole state as plain data for planning: entity types by name, the true atoms (in no
        particular order), and the values of numeric functions' facts. Backends may read it faster."""
        return plain(self.entities(), self.facts())

    @abstractmethod
    def history(self, limit: int | None = None) -> list[Change]:
        """Applied changes, oldest first (the newest `limit` if given)."""

    @abstractmethod
    def summaries(self, limit: int | None, before: int | None) -> list[ChangeRow]:
        """The summaries of the newest `limit` changes (all if None) with ids below `before`, newest first."""

    @abstractmethod
    def whole(self, change_id: int) -> ChangeRow | None:
        """One change with its whole delta."""

    @abstractmethod
    def count(self) -> tuple[int, int]:
        """(entities, facts)."""

    # ---- the history indexed: what held when. A backend keeps, in each change's transaction, the span of
    # every fact, entity and unknown mark: from the change that added it to the one that removed it (`OPEN`
    # while it holds; adding what holds already opens none). Reads as of change `at` see the spans with
    # opened <= at < closed.
    @abstractmethod
    def entities_at(self, at: int, names: Collection[str] | None = None) -> list[Entity]:
        """The entities as of change `at`, all or those named, by name."""

    @abstractmethod
    def facts_at(self, at: int, predicate: str | None = None, names: Collection[str] | None = None) -> list[Fact]:
        """The facts as of change `at`, optionally only of one predicate and/or with one of `names` among their
        arguments."""

    @abstractmethod
    def unknowns_at(self, at: int, names: Collection[str] | None = None) -> list[Unknown]:
        """The unknown marks as of change `at`, of every entity or those named, sorted as `unknowns`."""

    @abstractmethod
    def spans(self, predicate: str | None, arg: tuple[int, str] | None) -> list[Span]:
        """The spans of the facts of `predicate` (any if None) with entity `arg[1]` at position `arg[0]` (if
        given), oldest first; facts of other arities may be among them."""

    @abstractmethod
    def difference(self, start: int, end: int) -> tuple[list[Fact], list[Fact], list[Entity], list[Entity]]:
        """For start < end: the facts that hold at `end` and not at `start` (with their values: a changed value
        is a fact that holds at one and not the other), those that hold at `start` and not at `end`, and the
        same of the entities (by name)."""

    @abstractmethod
    def stamps(self, ids: Collection[int]) -> list[Stamp]:
        """The provenance of the changes with those ids (those that exist)."""

    @abstractmethod
    def bounds(self) -> tuple[int, int] | None:
        """The first and the last change's ids; None while the history is empty."""

    @abstractmethod
    def change_at(self, time: str) -> int | None:
        """The id of the last change made at or before `time` (ISO 8601 in UTC, as changes' times are
        stored); None if none was."""

    @abstractmethod
    def clear(self) -> None:
        """Delete everything: entities, facts, marks, history and metadata."""

    @abstractmethod
    def close(self) -> None: ...

    def discard(self) -> None:
        """Close, and remove what opening the store created (a new sqlite file): a failed `init` leaves no
        store behind. Default: close."""
        self.close()
