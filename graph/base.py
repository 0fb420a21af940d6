"""The WorldGraph interface; backends implement a small transaction API beneath it."""

from __future__ import annotations

import tomllib
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable
from contextlib import AbstractContextManager
from functools import cached_property

from domains.formula import Atom, Formula, to_pddl
from domains.model import TOTAL_COST, Domain, Problem
from domains.verify import GroundAtom, Issue, check_values, verify
from graph.model import Change, Delta, Entity, Fact


class GraphError(Exception):
    """An expected error a user can act on (shown without a traceback)."""


class ChangeRefused(GraphError):
    """A change failed verification; nothing was applied."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        super().__init__("change refused:\n" + "\n".join(f"  - {i}" for i in issues))


class Tx(ABC):
    """One write transaction: the state reads verification needs, and the writes."""

    @abstractmethod
    def entity_types(self, names: Collection[str]) -> dict[str, str]: ...

    @abstractmethod
    def present(self, atoms: Collection[GroundAtom]) -> set[GroundAtom]: ...

    @abstractmethod
    def facts_about(self, names: Collection[str]) -> list[GroundAtom]: ...

    @abstractmethod
    def facts_of(self, predicates: Collection[str]) -> list[GroundAtom]: ...

    @abstractmethod
    def write(self, delta: Delta, undo_of: int | None) -> Change:
        """Apply the delta and append it to the history, in this transaction."""

    @abstractmethod
    def change(self, change_id: int) -> Change | None: ...


def atom_of(f: Fact) -> GroundAtom:
    return (f.predicate, tuple(f.args))


def fact_of(a: GroundAtom | Atom) -> Fact:
    if isinstance(a, Atom):
        return Fact(predicate=a.predicate, args=a.args)
    return Fact(predicate=a[0], args=a[1])


class WorldGraph(ABC):
    """A typed, closed-world fact graph bound to one PDDL domain, with an append-only history."""

    url: str

    # ---- what a backend implements -----------------------------------------------------------
    @abstractmethod
    def transaction(self) -> AbstractContextManager[Tx]:
        """A serialisable write transaction: committed on success, rolled back on error."""

    @abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abstractmethod
    def set_meta(self, values: dict[str, str]) -> None: ...

    @abstractmethod
    def entities(self, names: Collection[str] | None = None) -> list[Entity]:
        """All entities, or those named."""

    @abstractmethod
    def facts(self, predicate: str | None = None, entity: str | None = None) -> list[Fact]:
        """Facts, optionally only of one predicate and/or mentioning one entity."""

    @abstractmethod
    def facts_about(self, names: Collection[str]) -> list[Fact]:
        """Every fact with one of `names` among its arguments."""

    @abstractmethod
    def history(self, limit: int | None = None) -> list[Change]:
        """Applied changes, oldest first (the newest `limit` if given)."""

    @abstractmethod
    def count(self) -> tuple[int, int]:
        """(entities, facts)."""

    @abstractmethod
    def clear(self) -> None:
        """Delete everything: entities, facts, history and metadata."""

    @abstractmethod
    def close(self) -> None: ...

    # ---- domain binding -----------------------------------------------------------------------
    def init(self, domain: Domain, force: bool = False) -> None:
        """Bind an empty store to a domain (the domain text is kept in the store)."""
        if self.get_meta("domain_pddl") is not None:
            if not force:
                raise GraphError(f"{self.url} is already initialised; use --force to start over")
            self.clear()
        toml_path = domain.path.parent / "domain.toml" if domain.path else None
        toml = toml_path.read_text() if toml_path and toml_path.is_file() else ""
        self.set_meta({"domain_pddl": domain.text, "domain_toml": toml,
                       "domain_source": str(domain.path or domain.name)})
        self.__dict__.pop("domain", None)

    @cached_property
    def domain(self) -> Domain:
        pddl = self.get_meta("domain_pddl")
        if pddl is None:
            raise GraphError(f"{self.url} is not initialised: run `kgplan init --domain NAME` first")
        dom = Domain.parse(pddl, self.get_meta("domain_source") or "stored domain")
        dom.meta = tomllib.loads(self.get_meta("domain_toml") or "")
        return dom

    # ---- changes -----------------------------------------------------------------------------
    def check(self, delta: Delta) -> list[Issue]:
        """Verify a delta against the domain and the current state without applying it."""
        with self.transaction() as tx:
            return self._verify(tx, delta)

    def _verify(self, tx: Tx, delta: Delta) -> list[Issue]:
        if issues := check_values(self.domain, [(atom_of(f), f.value) for f in delta.add]):
            return issues
        remove = [atom_of(f) for f in delta.remove]
        # removing a function's value and adding another one replaces it (removals apply first)
        add = [atom_of(f) for f in delta.add if f.value is None or atom_of(f) not in remove]
        return verify(self.domain, add, remove, {e.name: e.type for e in delta.new_entities}, tx)

    def apply(self, delta: Delta, *, verified: bool = True, undo_of: int | None = None) -> Change:
        """Verify and apply a delta atomically; raises ChangeRefused (graph unchanged) on issues."""
        with self.transaction() as tx:
            if verified and (issues := self._verify(tx, delta)):
                raise ChangeRefused(issues)
            return tx.write(delta, undo_of)

    def undo(self, change_id: int) -> Change:
        """Apply the inverse of a change as a new change; history is never rewritten."""
        with self.transaction() as tx:
            old = tx.change(change_id)
            if old is None:
                raise GraphError(f"no change with id {change_id}")
            inv = old.delta.inverse()
            inv.text = f"undo of change {change_id}"
            if issues := self._verify(tx, inv):
                raise ChangeRefused(issues)
            return tx.write(inv, change_id)

    # ---- problems ------------------------------------------------------------------------------
    def load_problem(self, problem: Problem | str, *, verified: bool = True) -> Change:
        """Add a PDDL problem's objects and :init to the graph as one change."""
        if isinstance(problem, str):
            problem = Problem.parse(problem, "problem")
        have = {e.name for e in self.entities(list(problem.objects))}
        delta = Delta(
            new_entities=[Entity(name=o, type=t) for o, t in problem.objects.items() if o not in have],
            add=[fact_of(a) for a in dict.fromkeys(problem.init)]
            + [Fact(predicate=a.predicate, args=a.args, value=v) for a, v in problem.numbers.items()],
            source="load", text=f"problem {problem.name}",
        )
        return self.apply(delta, verified=verified)

    def to_problem(self, goal: Formula | str | None = None, facts: Iterable[Fact] | None = None,
                   name: str = "kgplan") -> str:
        """The graph as a PDDL problem text; given `facts`, only those and the objects they use."""
        consts = self.domain.constants
        if facts is None:
            facts, entities = self.facts(), self.entities()
        else:
            facts = list(facts)
            entities = self.entities({a for f in facts for a in f.args})
        objects = {e.name: e.type for e in entities if e.name not in consts}
        lines = [f"(define (problem {name})", f"  (:domain {self.domain.name})", "  (:objects"]
        lines += [f"    {o} - {t}" for o, t in sorted(objects.items())]
        lines += ["  )", "  (:init"]
        lines += [f"    {f}" for f in sorted(facts, key=lambda f: (f.predicate, f.args))]
        lines.append("  )")
        if goal is not None:
            lines.append(f"  (:goal {goal if isinstance(goal, str) else to_pddl(goal)})")
        if TOTAL_COST in self.domain.functions:
            lines.append(f"  (:metric minimize ({TOTAL_COST}))")
        lines.append(")")
        return "\n".join(lines) + "\n"

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
        return self.entities(seen), sorted(facts, key=lambda f: (f.predicate, f.args))

    def __enter__(self) -> WorldGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
