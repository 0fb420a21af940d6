"""The world-state data model: entities, ground facts, deltas and applied changes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kgplan.domains.formula import GroundAtom, number_pddl, parse_numeric_fact
from kgplan.domains.sexpr import PDDLError, SList, Sym, read
from kgplan.errors import InputError

Source = Literal["nl", "sensor", "user", "plan", "load", "undo"]
LISTS = ("add", "remove", "new_entities", "removed_entities")  # a delta's lists, which a slice cuts
PREVIEW = 20  # items of each list a history summary keeps


class Entity(BaseModel):
    """A typed object; `name` is its PDDL symbol, `attrs` free text used for retrieval."""

    model_config = ConfigDict(frozen=True)
    name: str
    type: str
    attrs: dict[str, str] = Field(default_factory=dict)


class Fact(BaseModel):
    """A ground atom such as ``(light_on kitchen_light)``; the graph is closed-world.

    A static numeric function's value is a fact with a `value`: ``(= (travel-cost f1 f2) 10)``
    is Fact(predicate="travel-cost", args=("f1", "f2"), value=10).
    """

    model_config = ConfigDict(frozen=True)
    predicate: str
    args: tuple[str, ...] = ()
    value: float | None = None

    def __str__(self) -> str:
        return str(self.atom) if self.value is None else f"(= {self.atom} {number_pddl(self.value)})"

    @property
    def atom(self) -> GroundAtom:
        return GroundAtom(self.predicate, self.args)

    @classmethod
    def of(cls, atom: GroundAtom, value: float | None = None) -> Fact:
        """The fact of a ground atom (a function's, with its value)."""
        return cls(predicate=atom[0], args=atom[1], value=value)

    @classmethod
    def parse(cls, text: str) -> Fact:
        """Parse one ground atom written as PDDL, e.g. ``(placed_at_table pen table1)``, or a
        function's value, e.g. ``(= (travel-cost f1 f2) 10)``."""
        exprs = read(text.strip(), "fact")
        if len(exprs) != 1 or not isinstance(exprs[0], SList) or not exprs[0]:
            raise PDDLError(f"expected one fact like (predicate arg ...), got {text!r}")
        e = exprs[0]
        if e[0] == "=":
            atom, value = parse_numeric_fact(e, "fact")
            return cls(predicate=atom.predicate, args=atom.args, value=value)
        if not all(isinstance(x, Sym) for x in e):
            raise PDDLError(f"a fact holds only names, got {text!r}", e.line, e.col, "fact")
        return cls(predicate=str(e[0]), args=tuple(str(x) for x in e[1:]))


def by_atom(f: Fact) -> GroundAtom:
    """The sort key of facts: by predicate, then arguments."""
    return f.atom


class Unknown(BaseModel):
    """Something the graph knows it does not know about an entity (the open world).

    With a `predicate`: which facts of it hold for the entity, e.g. where an item is
    (``Unknown(entity="apple", predicate="on")``) or what a closed container holds
    (``Unknown(entity="fridge", predicate="inside")``). Absent facts of it are then not known to be
    false, and an exactly-one invariant through that predicate is at-most-one for the entity.
    Without one: the entity itself is a placeholder (a room seen through an exit, never entered)
    that may get its real name or be merged into a known entity (`WorldGraph.identify`); every
    exactly-one invariant about it is at-most-one. Marks are added and removed by changes
    (`Delta.unknown`, `Delta.known`), verified and undone like facts.
    """

    model_config = ConfigDict(frozen=True)
    entity: str
    predicate: str | None = None

    def __str__(self) -> str:
        """The mark as it is written everywhere (the CLI, the LLM's edits, messages): ``(predicate entity ?)``,
        or the entity's name alone for a placeholder."""
        return self.entity if self.predicate is None else f"({self.predicate} {self.entity} ?)"

    @classmethod
    def parse(cls, text: str) -> Unknown:
        """A mark written as `str` writes it: ``(on apple ?)`` or ``kitchen``."""
        words = text.strip().removeprefix("(").removesuffix(")").split()
        if len(words) == 1 and not text.strip().startswith("("):
            return cls(entity=words[0].lower())
        if len(words) == 3 and words[2] == "?":
            return cls(entity=words[1].lower(), predicate=words[0].lower())
        raise InputError(f'{text!r} is no unknown mark: write "(predicate entity ?)", or "entity" for a placeholder')

    @property
    def pair(self) -> tuple[str, str | None]:
        return self.entity, self.predicate


class Delta(BaseModel):
    """A proposed change with its provenance; applied all or nothing.

    `removed_entities` are removed with every fact about them. A proposal names them; the
    delta recorded in the history holds them whole (type and attrs) and lists their facts in
    `remove`, so that its inverse restores them exactly (and their unknown marks in `known`).
    `unknown` marks what becomes unknown, `known` what stops being unknown (see `Unknown`).
    """

    add: list[Fact] = Field(default_factory=list)
    remove: list[Fact] = Field(default_factory=list)
    new_entities: list[Entity] = Field(default_factory=list)
    removed_entities: list[Entity | str] = Field(default_factory=list)
    unknown: list[Unknown] = Field(default_factory=list)
    known: list[Unknown] = Field(default_factory=list)
    source: Source = "user"
    text: str = ""
    model: str | None = None
    tokens: dict[str, int] = Field(default_factory=dict)
    how: dict[str, str] = Field(default_factory=dict)  # fact as PDDL -> how it was chosen (e.g. by the model)

    def removed_names(self) -> list[str]:
        return [e if isinstance(e, str) else e.name for e in self.removed_entities]

    def inverse(self) -> Delta:
        """The delta that undoes this recorded one: created entities go (with whatever facts
        they have then), removed ones come back with their type, attrs and facts."""
        created = {e.name for e in self.new_entities}
        return Delta(add=list(self.remove), remove=[f for f in self.add if created.isdisjoint(f.args)],
                     new_entities=[e for e in self.removed_entities if isinstance(e, Entity)],
                     removed_entities=sorted(created), unknown=list(self.known),
                     known=[u for u in self.unknown if u.entity not in created], source="undo")

    def is_empty(self) -> bool:
        return not (self.add or self.remove or self.new_entities or self.removed_entities or self.unknown
                    or self.known)


class Change(BaseModel):
    """An applied delta in the append-only history."""

    id: int
    time: datetime = Field(default_factory=lambda: datetime.now(UTC))
    delta: Delta
    undo_of: int | None = None


class ChangeSlice(BaseModel):
    """A change with each list of its delta cut to items [offset, offset + limit): a history summary
    (the first `PREVIEW` items) or one page of a large change's diff. `sizes` are the lists' full lengths."""

    id: int
    time: datetime
    undo_of: int | None = None
    delta: Delta
    sizes: dict[str, int]
    offset: int = 0

    @classmethod
    def cut(cls, id: int, time: datetime | str, undo_of: int | None, delta: dict[str, Any] | Delta,
            offset: int = 0, limit: int | None = PREVIEW) -> ChangeSlice:
        """The slice of a delta (as JSON data, validated only in the slice, or as a Delta)."""
        data = delta if isinstance(delta, dict) else dict(delta)  # a Delta's fields, not dumped
        end = None if limit is None else offset + limit
        part = {**data, **{k: data.get(k, [])[offset:end] for k in LISTS}}
        return cls(id=id, time=time, undo_of=undo_of, delta=Delta.model_validate(part),
                   sizes={k: len(data.get(k, [])) for k in LISTS}, offset=offset)


def summary_json(delta: Delta) -> str:
    """What a backend stores beside a change so that the history lists it without reading it whole."""
    cut = ChangeSlice.cut(0, datetime.now(UTC), None, delta)
    return json.dumps({"delta": cut.delta.model_dump(mode="json"), "sizes": cut.sizes})


class Stamp(BaseModel):
    """A change's provenance, as a timeline names it: its id, time, source, text and the change it undoes."""

    id: int
    time: datetime
    source: Source
    text: str = ""
    undo_of: int | None = None


class Interval(BaseModel):
    """A stretch of the history in which a fact held: from the change that added it to the one that removed
    it (None: it holds still)."""

    fact: Fact
    opened: Stamp
    closed: Stamp | None = None


class Difference(BaseModel):
    """What held at change `end` and not at change `start` (`add`, `new_entities`) and the reverse (`remove`,
    `removed_entities`); a numeric fact whose value changed is in both."""

    start: int
    end: int
    add: list[Fact] = Field(default_factory=list)
    remove: list[Fact] = Field(default_factory=list)
    new_entities: list[Entity] = Field(default_factory=list)
    removed_entities: list[Entity] = Field(default_factory=list)
