"""What every game gives the agent: observations (prose and structured outputs) behind one small
interface, the map helpers the sensors share, and the shortest paths on a room map."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Protocol

from kgplan.errors import KgplanError
from kgplan.graph.model import Delta, Fact

DIRECTIONS = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}


@dataclass
class Observation:
    """What the environment returns: prose (for people and LLMs), and its structured outputs."""

    text: str
    admissible: list[str]
    score: float = 0.0
    done: bool = False
    won: bool = False
    tree: dict = field(default_factory=dict)  # the environment's object tree, where it offers one
    facts: frozenset[tuple[str, ...]] = frozenset()  # (predicate, *names): the perceived true facts, where given


class Environment(Protocol):
    """reset(seed) -> first observation; step(action) -> next observation."""

    budget: int
    commands: str  # the table of domain.toml's [explore] that renders plan steps as this environment's commands

    def reset(self, seed: int) -> Observation: ...

    def step(self, action: str) -> Observation: ...

    def optimum(self, seed: int) -> int:
        """The length of an omniscient shortest solution for a seed (resets the environment)."""
        ...

    def close(self) -> None:
        """Let go of what the environment holds (a game process, generated files)."""



class Sensor(Protocol):
    """Turns an environment's structured outputs into graph changes: what it knows beforehand (`objects`,
    `facts`) and the change an observation makes to what the graph knows."""

    objects: dict[str, str]
    facts: tuple[Fact, ...]

    def delta(self, facts: set[Fact], entities: set[str], action: str | None, obs: Observation) -> Delta: ...


Room = tuple[int, int]


def shortest(exits: dict[Room, dict[Room, int]], start: Room) -> dict[Room, int]:
    """Steps from `start` to every room of a map (room -> neighbour -> steps to enter it)."""
    dist, todo = {start: 0}, [(0, start)]
    while todo:
        cost, pos = heapq.heappop(todo)
        for nb, c in exits[pos].items():
            if cost + c < dist.get(nb, 1 << 30):
                dist[nb] = cost + c
                heapq.heappush(todo, (cost + c, nb))
    return dist



class GameUnavailable(KgplanError):
    """What a game's engine needs is missing (a package, a Java runtime)."""
