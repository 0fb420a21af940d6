"""Partially observed environments behind one small interface, and sensors that turn their
structured outputs (admissible actions, object trees) into graph changes, never their prose.

TextWorld-Express (`textworld-express` on PyPI) runs a jar and needs Java 17 on the PATH.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Protocol

from graph.model import Delta, Entity, Fact

# name -> (TWX game, its generation parameters, step budget), the settings of issue 12 / PDDLEGO
TWX_GAMES: dict[str, tuple[str, str, int]] = {
    "coin": ("coin", "numLocations=11,includeDoors=1,numDistractorItems=0", 50),
    "cooking-easy": ("cookingworld", "numLocations=2,numIngredients=2,numDistractorItems=0,includeDoors=0", 20),
    "cooking-hard": ("cookingworld", "numLocations=5,numIngredients=5,numDistractorItems=0,includeDoors=1", 50),
}
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


class Environment(Protocol):
    """reset(seed) -> first observation; step(action) -> next observation."""

    budget: int

    def reset(self, seed: int) -> Observation: ...

    def step(self, action: str) -> Observation: ...

    def optimum(self, seed: int) -> int:
        """The length of an omniscient shortest solution for a seed (resets the environment)."""
        ...


class TWXUnavailable(RuntimeError):
    """textworld-express or Java is missing."""


class TextWorldExpress:
    """A TextWorld-Express game (see TWX_GAMES) on the train fold, seeds as given."""

    def __init__(self, game: str) -> None:
        if game not in TWX_GAMES:
            raise ValueError(f"unknown game {game!r}: choose one of {', '.join(TWX_GAMES)}")
        try:
            from textworld_express import TextWorldExpressEnv
        except ImportError as e:
            raise TWXUnavailable("textworld-express is not installed (pip install textworld-express)") from e
        self.game, self.params, self.budget = TWX_GAMES[game]
        try:
            self.env = TextWorldExpressEnv(envStepLimit=self.budget * 4)
        except Exception as e:  # the jar did not start: no Java 17
            raise TWXUnavailable(f"TextWorld-Express did not start (Java 17 needed): {e}") from e

    def reset(self, seed: int) -> Observation:
        _, infos = self.env.reset(seed=seed, gameFold="train", gameName=self.game, gameParams=self.params,
                                  generateGoldPath=True)
        return self._observation(infos)

    def step(self, action: str) -> Observation:
        _, _, _, infos = self.env.step(action)
        return self._observation(infos)

    def optimum(self, seed: int) -> int:
        """Coin Collector: the shortest path on the whole map, found by walking all of it (TWX's gold
        path for coin explores, so it is not the shortest); other games: the gold path's length."""
        first = self.reset(seed)
        if self.game != "coin":
            return len([a for a in self.env.getGoldActionSequence() if a != "look around"])
        exits: dict[tuple[int, int], dict[tuple[int, int], int]] = {}  # room -> neighbour -> steps to enter
        coin: list[tuple[int, int]] = []

        def walk(pos: tuple[int, int], obs: Observation) -> None:
            exits[pos] = {}
            coin.extend([pos] if "take coin" in obs.admissible else [])
            for d, (dx, dy) in DIRECTIONS.items():
                if f"move {d}" not in obs.admissible:
                    continue
                door = f"open door to {d}" in obs.admissible
                nb = (pos[0] + dx, pos[1] + dy)
                exits[pos][nb] = 1 + door  # doors start closed: open, then move
                if nb not in exits:
                    if door:
                        self.step(f"open door to {d}")
                    walk(nb, self.step(f"move {d}"))
                    self.step(f"move {OPPOSITE[d]}")

        walk((0, 0), first)
        dist, todo = {(0, 0): 0}, [(0, (0, 0))]
        while todo:
            cost, pos = heapq.heappop(todo)
            for nb, c in exits[pos].items():
                if cost + c < dist.get(nb, 1 << 30):
                    dist[nb] = cost + c
                    heapq.heappush(todo, (cost + c, nb))
        return dist[coin[0]] + 1  # + take coin

    def _observation(self, infos: dict) -> Observation:
        tree = self.env.getObjectTree() if self.game == "cookingworld" else {}
        return Observation(infos["observation"], sorted(infos["validActions"]), infos["score"],
                           bool(infos["tasksuccess"] or infos["taskfailure"]), bool(infos["tasksuccess"]), tree)

    def close(self) -> None:
        self.env.close()


def room_name(x: int, y: int) -> str:
    return f"room_{x}_{y}".replace("-", "m")


class CoinSensor:
    """Coin Collector from the admissible actions only (TWX offers no object tree for it).

    Rooms lie on a grid, so a room is named by its offset from the start, dead-reckoned from the
    moves made: "move D" admissible -> an exit D to a room, a placeholder (unknown) until entered;
    "open door to D" admissible -> a door there, closed until opened; "take coin" -> a coin here.
    """

    initial = ("(define (problem coin) (:domain coin_collector) (:objects room_0_0 - room "
               "north south east west - direction) (:init (at room_0_0) (visited room_0_0)))")

    def __init__(self) -> None:
        self.pos = (0, 0)

    def delta(self, facts: set[Fact], entities: set[str], action: str | None, obs: Observation) -> Delta:
        """The change an observation makes to what the graph knows (`facts`, `entities`)."""
        add: list[Fact] = []
        remove: list[Fact] = []
        new: list[Entity] = []
        here = room_name(*self.pos)
        words = (action or "").split()
        if words[:1] == ["move"] and words[-1] in DIRECTIONS:
            dx, dy = DIRECTIONS[words[-1]]
            self.pos = (self.pos[0] + dx, self.pos[1] + dy)
            there = room_name(*self.pos)
            remove.append(Fact(predicate="at", args=(here,)))
            add.append(Fact(predicate="at", args=(there,)))
            if Fact(predicate="unknown", args=(there,)) in facts:
                remove.append(Fact(predicate="unknown", args=(there,)))
                add.append(Fact(predicate="visited", args=(there,)))
            here = there
        elif words[:3] == ["open", "door", "to"] and words[-1] in DIRECTIONS:
            dx, dy = DIRECTIONS[words[-1]]
            there = room_name(self.pos[0] + dx, self.pos[1] + dy)
            remove += [f for f in (Fact(predicate="door_closed", args=(here, there)),
                                   Fact(predicate="door_closed", args=(there, here))) if f in facts]
        elif words[:1] == ["take"] and obs.score > 0:
            coin = " ".join(words[1:])
            remove.append(Fact(predicate="coin_in", args=(coin, here)))
            add.append(Fact(predicate="carrying", args=(coin,)))
        for d, (dx, dy) in DIRECTIONS.items():
            if f"move {d}" not in obs.admissible:
                continue
            there = room_name(self.pos[0] + dx, self.pos[1] + dy)
            if Fact(predicate="connected", args=(here, d, there)) in facts:
                continue
            if there not in entities:
                new.append(Entity(name=there, type="room"))
                add.append(Fact(predicate="unknown", args=(there,)))
            add += [Fact(predicate="connected", args=(here, d, there)),
                    Fact(predicate="connected", args=(there, OPPOSITE[d], here))]
            if f"open door to {d}" in obs.admissible:
                add += [Fact(predicate="door_closed", args=(here, there)),
                        Fact(predicate="door_closed", args=(there, here))]
        for a in obs.admissible:
            item = a.split(maxsplit=1)[1] if a.startswith("take ") else ""
            if item == "coin" and item not in entities:
                new.append(Entity(name=item, type="item"))
                add.append(Fact(predicate="coin_in", args=(item, here)))
        return Delta(add=add, remove=remove, new_entities=new, source="sensor", text=action or "start")
