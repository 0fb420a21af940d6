"""Partially observed environments (TextWorld-Express, TextWorld) behind one interface, the sensors that turn
their structured outputs into graph changes, and the edit oracle of the LLM mode.

`GAMES` is the registry of what the agent can play: adding a game is one `GAMES.add(Game(...))`, and
`kgplan explore --game`, the API's explore jobs and the exploration benchmarks read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from kgplan.games.base import Environment, Sensor
from kgplan.games.textworld import TextWorld, TextWorldCoinSensor, TextWorldCookingSensor
from kgplan.games.twx import CoinSensor, CookingSensor, TextWorldExpress
from kgplan.registry import Registry


@dataclass(frozen=True)
class Game:
    """A game: the domain its sensor writes in (a bundled name or a path; its domain.toml's [explore] table
    holds the goal, the sub-goals and the commands), its environment (started on demand: GameUnavailable
    where its engine is missing) and its sensor; `family` is the engine, which the benchmarks go by."""

    name: str
    help: str
    domain: str
    environment: Callable[[], Environment]
    sensor: Callable[[], Sensor]
    family: str


GAMES: Registry[Game] = Registry("game")
# each game's name is its name in TWX_GAMES or TW_GAMES (which share none)
GAMES.add(Game("coin", "TextWorld-Express Coin Collector: find the coin in 11 rooms with doors", "coin_collector",
               partial(TextWorldExpress, "coin"), CoinSensor, "twx"))
GAMES.add(Game("cooking-easy", "TextWorld-Express Cooking World: 2 rooms, 2 ingredients", "cooking",
               partial(TextWorldExpress, "cooking-easy"), CookingSensor, "twx"))
GAMES.add(Game("cooking-hard", "TextWorld-Express Cooking World: 5 rooms with doors, 5 ingredients", "cooking",
               partial(TextWorldExpress, "cooking-hard"), CookingSensor, "twx"))
GAMES.add(Game("textworld-coin", "TextWorld Coin Collector (tw-make, made offline per seed): 12 rooms",
               "coin_collector", partial(TextWorld, "textworld-coin"), TextWorldCoinSensor, "textworld"))
GAMES.add(Game("textworld-cooking", "TextWorld cooking (tw-make, made offline per seed): 6 rooms, a recipe of 2",
               "textworld_cooking", partial(TextWorld, "textworld-cooking"), TextWorldCookingSensor, "textworld"))
