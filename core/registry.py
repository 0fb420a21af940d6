"""Registries: where things get added. A registry maps names to entries (planners, games, search methods,
store backends); adding one is one `add` in one place, and every interface reads its choices from here.

The interfaces read a registry when they are built: the CLI's option types are `Registry.choice` (a
`StrEnum` of the names now, evaluated by Typer each time it builds the command), the API's and MCP's
fields are `Registry.field` (validated against the names at request time, their JSON schema listing the
names when the schema is made).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from enum import StrEnum
from typing import Annotated, Any, Generic, Protocol, TypeVar

from pydantic import AfterValidator, Field

from kgplan.errors import InputError


class Named(Protocol):
    name: str
    help: str


T = TypeVar("T", bound=Named)


@functools.cache
def _enum(kind: str, names: tuple[str, ...]) -> type[StrEnum]:
    return StrEnum(kind.title().replace(" ", ""), {n: n for n in names})


class Registry(Generic[T]):
    """Entries by name, in the order they were added."""

    def __init__(self, kind: str) -> None:
        self.kind = kind  # what an entry is, in words ("planner")
        self._entries: dict[str, T] = {}

    def add(self, entry: T) -> T:
        """Register `entry` under its name (a name is taken once)."""
        if entry.name in self._entries:
            raise ValueError(f"a {self.kind} named {entry.name!r} is registered already")
        self._entries[entry.name] = entry
        return entry

    def remove(self, name: str) -> None:
        """Unregister an entry (a plugin's, or a test's)."""
        del self._entries[name]

    def __getitem__(self, name: str) -> T:
        if name not in self._entries:
            raise InputError(f"unknown {self.kind} {name!r}: choose one of {', '.join(self._entries)}")
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._entries.values()))

    def names(self) -> list[str]:
        return list(self._entries)

    def check(self, name: str) -> str:
        """`name` if it is registered (an InputError listing the choices if not)."""
        return self[name].name

    def describe(self) -> str:
        """The entries with their help, one per line (for `--help` texts)."""
        return "\n".join(f"{e.name}: {e.help}" for e in self)

    @property
    def choice(self) -> type[StrEnum]:
        """A `StrEnum` of the names registered now (the CLI's option type)."""
        return _enum(self.kind, tuple(self._entries))

    @property
    def field(self) -> Any:
        """A name of this registry as a pydantic field type: validated against the names at the time, its JSON
        schema an `enum` of the names when the schema is made (the API's and MCP's fields)."""
        return Annotated[str, AfterValidator(self.check),
                         Field(json_schema_extra=lambda schema: schema.update(enum=self.names()))]
