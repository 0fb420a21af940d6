"""TextWorld (`textworld` on PyPI): games generated offline per seed (Inform 7 ships in its wheel) and
played in-process, and the sensors that read the facts the player perceives, never the prose.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import ClassVar

from kgplan.games.base import DIRECTIONS, GameUnavailable, Observation
from kgplan.graph.model import Delta, Entity, Fact, Unknown

# TextWorld: name -> (tw-make challenge, its settings, step budget); every name starts with "textworld-", so none
# names a TextWorld-Express game too (games.twx.TWX_GAMES). Coin Collector level 204: a quest of
# 4 (3 moves and the coin) in 12 rooms, distractor rooms placed at random (the TWX coin game has 11); level
# 102: a quest of 2 with distractor rooms. Cooking: 6 rooms with closed doors, a recipe of 2 ingredients to
# take, cut and cook, containers to open; easy: the kitchen alone, 1 ingredient to take, cut and cook.
COOKING = {"recipe": 2, "take": 2, "go": 6, "open": True, "cook": True, "cut": True, "drop": False, "recipe_seed": 0,
           "split": None}
TW_GAMES: dict[str, tuple[str, dict, int]] = {
    "textworld-coin": ("tw-coin_collector", {"level": 204}, 50),
    "textworld-coin-easy": ("tw-coin_collector", {"level": 102}, 30),
    "textworld-cooking": ("tw-cooking", COOKING, 80),
    "textworld-cooking-easy": ("tw-cooking", {**COOKING, "recipe": 1, "take": 1, "go": 1, "open": False}, 40)}
TW_DIRECTIONS = {"north_of": "north", "south_of": "south", "east_of": "east", "west_of": "west"}  # X is D of Y
Lineage = tuple[str, ...]  # a TextWorld type and its ancestors: ("oven", "c", "t")


class TextWorldUnavailable(GameUnavailable):
    """textworld is missing."""


def import_textworld() -> ModuleType:
    """textworld, with its PDDL backend marked absent: that backend imports a module named `fast_downward`
    (Fast Downward 20.06, textworld's `pddl` extra), a name the translator kgplan plans with also uses, and
    fails on it; marked absent, textworld disables the backend as it does when fast_downward is missing."""
    sys.modules.setdefault("textworld.envs.pddl.logic", None)
    try:
        import textworld
        import textworld.challenges
    except ImportError as e:
        raise TextWorldUnavailable(f"textworld is not installed (pip install textworld): {e}") from e
    return textworld


def with_exits(state: Iterable[tuple[str, ...]]) -> frozenset[tuple[str, ...]]:
    """TextWorld's facts plus, for every room, its exits `("exit", room, D)` and the doors on them
    `("door_on", room, D, door)`: facts of the room itself, which the player sees without knowing where
    the exits lead."""
    state = set(state)
    for pred, there, here in [a for a in state if a[0] in TW_DIRECTIONS]:
        state.add(("exit", here, TW_DIRECTIONS[pred]))
        state |= {("door_on", here, TW_DIRECTIONS[pred], a[2]) for a in state if a[0] == "link" and a[1] == here
                  and a[3] == there}
    return frozenset(state)


def observable(state: Iterable[tuple[str, ...]], types: dict[str, Lineage], came_from: str | None = None,
               recipe: bool = False) -> set[tuple[str, ...]]:
    """The part of TextWorld's true state (`with_exits`) that the player perceives, the only part a sensor
    may read: the room it is in with its exits and their doors, the way back to the room it came from
    (`came_from`, after a move), the things in the room, on its supporters and in its open containers (and
    so on down), the inventory, with their properties; and the recipe once read (`recipe`). Rooms beyond
    the exits are not perceived: a fact naming one is left out."""
    state = set(state)
    here = next(a[2] for a in state if a[:2] == ("at", "P"))
    seen = {"P", "I", here, *DIRECTIONS} | {a[3] for a in state if a[0] == "door_on" and a[1] == here}
    while True:  # things in the room, then what lies in or on what is seen (containers only when open)
        more = {a[1] for a in state if a[0] in ("at", "in", "on") and len(a) == 3 and a[2] in seen
                and (a[0] != "in" or "c" not in types.get(a[2], ()) or ("open", a[2]) in state)} - seen
        if not more:
            break
        seen |= more
    way_back = {here, came_from}
    book = {n for n, t in types.items() if t[0] in ("RECIPE", "ingredient")} if recipe else set()
    return {a for a in state if set(a[1:]) <= seen or (came_from and set(a[1:]) == way_back) or set(a[1:]) & book}


def tw_symbol(name: str) -> str:
    """A TextWorld name as a PDDL symbol that reads back as the name ("frosted-glass door" ->
    frosted-glass_door; plan steps become commands with "_" read as a space)."""
    return name.strip().lower().replace(" ", "_")


# TextWorld's engine is not thread-safe (its logic parser is shared: two games made or played at once in one
# process break each other), so every TextWorld game of a process makes, starts and steps under this lock.
_ENGINE = threading.RLock()


class TextWorld:
    """A TextWorld game (see TW_GAMES), generated for each seed into a temporary folder (kept until `close`).

    `truth` is the whole true state (`with_exits`) after the last reset/step and `seen` every fact
    perceived since the reset (see `observable`): the benchmark scores the agent's graph against
    `truth & seen`. The recipe counts as perceived after "examine cookbook" where the cookbook was seen.
    """

    commands = "textworld_actions"

    def __init__(self, game: str) -> None:
        if game not in TW_GAMES:
            raise ValueError(f"unknown game {game!r}: choose one of {', '.join(TW_GAMES)}")
        self.tw = import_textworld()
        self.challenge, self.settings, self.budget = TW_GAMES[game]
        self.folder = Path(tempfile.mkdtemp(prefix="kgplan-textworld-"))
        self.infos = self.tw.EnvInfos(facts=True, admissible_commands=True, policy_commands=True, won=True,
                                      lost=True, score=True, game=True, description=True, inventory=True)
        self.env = None
        self.truth: frozenset[tuple[str, ...]] = frozenset()
        self.seen: set[tuple[str, ...]] = set()
        self.types: dict[str, Lineage] = {}
        self.perceived: frozenset[tuple[str, ...]] = frozenset()
        self.recipe = False

    def game_file(self, seed: int) -> Path:
        """The compiled game for a seed, made offline on first use (tw-make's challenge generator)."""
        path = self.folder / f"{self.challenge}-{seed}.z8"
        with _ENGINE:
            if not path.exists():
                options = self.tw.GameOptions()
                options.seeds, options.path = seed, str(path)
                _, make, _ = self.tw.challenges.CHALLENGES[self.challenge]
                self.tw.generator.compile_game(make(self.settings, options), options)
        return path

    def reset(self, seed: int) -> Observation:
        with _ENGINE:
            if self.env:
                self.env.close()
            self.env = self.tw.start(str(self.game_file(seed)), request_infos=self.infos)
            self.seen, self.truth, self.perceived, self.recipe = set(), frozenset(), frozenset(), False
            return self._observation(self.env.reset())

    def step(self, action: str) -> Observation:
        self.recipe |= action == "examine cookbook" and any(a[0] in ("at", "in", "on") and a[1] == "cookbook"
                                                             for a in self.perceived)
        with _ENGINE:
            state, _, _ = self.env.step(action)
            return self._observation(state)

    @property
    def lost(self) -> bool:
        """Whether the game is lost (a cooking game's ruined meal, an eaten ingredient)."""
        return bool(self.env.state["lost"])

    def look(self) -> tuple[str, str]:
        """What `look` and `inventory` would say now (TextWorld tracks both without a move)."""
        return self.env.state["description"] or "", self.env.state["inventory"] or ""

    @property
    def policy(self) -> list[str]:
        """The game's walkthrough from the state now (a winning sequence of commands)."""
        return list(self._policy)

    def save(self) -> TextWorldSnapshot:
        """The game's state now, for `restore`: the Z-machine's and the state tracker's (the game's own
        logic: its facts, admissible commands and quests), ~10 ms; textworld's `copy()` takes ~0.5 s (it
        deep-copies the game)."""
        track, data = self._trackers()
        with _ENGINE:
            return TextWorldSnapshot(self.env.unwrapped._jericho.get_state(), track._game_progression.copy(),
                                     (track._last_action, track._moves, track._previous_winning_policy,
                                      track._current_winning_policy), data._prev_state, self.env.state,
                                     (self.truth, frozenset(self.seen), self.perceived, self.recipe, self._policy))

    def restore(self, snapshot: TextWorldSnapshot) -> None:
        """Back to a saved state (a snapshot can be restored any number of times)."""
        track, data = self._trackers()
        with _ENGINE:
            self.env.unwrapped._jericho.set_state(snapshot.machine)
            track._game_progression = snapshot.progression.copy()
            (track._last_action, track._moves, track._previous_winning_policy,
             track._current_winning_policy) = snapshot.tracking
            data._prev_state = snapshot.previous
            track.state = data.state = snapshot.state
        self.truth, seen, self.perceived, self.recipe, self._policy = snapshot.own
        self.seen = set(seen)

    def _trackers(self) -> tuple:
        """textworld's wrappers of a generated game that hold state: StateTracking and Inform7Data."""
        track = self.env._wrapped_env
        return track, track._wrapped_env

    def optimum(self, seed: int) -> int:
        """The length of the game's walkthrough (its winning policy from the start: the quest's shortest way)."""
        self.reset(seed)
        return len(self._policy)

    def _observation(self, state: dict) -> Observation:  # textworld's GameState
        before = {a[2] for a in self.truth if a[:2] == ("at", "P")}
        kinds = state["game"].kb.types
        self.types.update({v.name: (v.type, *kinds.get_ancestors(v.type)) for p in state["facts"]
                           for v in p.arguments})
        self.truth = with_exits((p.name, *(v.name for v in p.arguments)) for p in state["facts"])
        self._policy = state["policy_commands"] or []
        here = next(a[2] for a in self.truth if a[:2] == ("at", "P"))
        self.perceived = frozenset(observable(self.truth, self.types, next(iter(before - {here}), None), self.recipe))
        self.seen |= self.perceived
        names = {n for a in self.perceived for n in a[1:]}
        return Observation(state.feedback, sorted(state["admissible_commands"]), state["score"],
                           bool(state["won"] or state["lost"]), bool(state["won"]), facts=self.perceived,
                           tree={"types": {n: t for n, t in self.types.items() if n in names}})

    def close(self) -> None:
        if self.env:
            self.env.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(frozen=True)
class TextWorldSnapshot:
    """A TextWorld game's state (see `TextWorld.save`)."""

    machine: object  # the Z-machine's (jericho's get_state)
    progression: object  # textworld's GameProgression
    tracking: tuple
    previous: object
    state: object  # the last GameState
    own: tuple  # the TextWorld object's own fields


class TextWorldSensor:
    """A TextWorld game from the facts the player perceives (`Observation.facts`, see `observable`, with
    the types of what they name in `Observation.tree["types"]`), written in a domain's predicates
    (`predicates`) by `translate`.

    An exit not yet taken leads to a placeholder room `unseen_<room>_<D>` (unknown); when the player
    learns where it leads (it went that way, or came back the other way) the placeholder goes with its
    facts. A container first seen closed is unexplored until seen open. A known fact that is not perceived
    now is removed when everything it names is in view (named by a fact that is not `remote`: the far end
    of an exit, the recipe), or when it puts the player or a thing in a place in view (the room, an open
    container, the inventory: `places`) where it is not seen.
    """

    objects: ClassVar = dict.fromkeys(DIRECTIONS, "direction")
    facts: ClassVar[tuple[Fact, ...]] = ()
    predicates: ClassVar[frozenset[str]] = frozenset()  # those `translate` writes
    remote: ClassVar[frozenset[str]] = frozenset({"connected"})  # facts that do not put what they name in view
    places: ClassVar[dict[str, int | None]] = {}  # predicate -> its place argument (None: the player, the inventory)

    @staticmethod
    def translate(perceived: Iterable[tuple[str, ...]], types: dict[str, Lineage]) -> dict[Fact, dict[str, str]]:
        """Perceived TextWorld facts -> {domain fact: {entity it names: domain type}}."""
        raise NotImplementedError

    def delta(self, facts: set[Fact], entities: set[str], action: str | None, obs: Observation) -> Delta:
        typed = self.translate(obs.facts, obs.tree["types"])
        observed = set(typed)
        kinds = {n: t for names in typed.values() for n, t in names.items()}
        perceived = {n for f, names in typed.items() if f.predicate not in self.remote for n in names} | set(DIRECTIONS)
        placeholders = {f.args[0] for f in facts if f.predicate == "unknown"}
        here = next(f.args[0] for f in observed if f.predicate == "at")

        def in_view(f: Fact) -> bool:
            if set(f.args) <= perceived:
                return True
            place = self.places.get(f.predicate, -1)
            return place is None or (place >= 0 and f.args[place] in perceived
                                     and Fact(predicate="closed", args=(f.args[place],)) not in observed)

        add = observed - facts
        remove = {f for f in facts if f.predicate in self.predicates and f not in observed and in_view(f)}
        gone = {f.args[2] for f in facts if f.predicate == "connected" and f.args[2] in placeholders
                and any(g.predicate == "connected" and g.args[:2] == f.args[:2] for g in observed)}
        new = {n: t for n, t in kinds.items() if n not in entities}
        if Fact(predicate="visited", args=(here,)) not in facts:
            add.add(Fact(predicate="visited", args=(here,)))
        ways = {f.args[1] for f in (facts | observed) - remove if f.predicate == "connected" and f.args[0] == here
                and f.args[2] not in gone}
        marks: set[Unknown] = set()  # what becomes unknown (placeholders, closed containers' contents), and known
        known: set[Unknown] = set()
        for d in sorted({a[2] for a in obs.facts if a[0] == "exit"} - ways):
            p = f"unseen_{here}_{d}"
            new[p] = "room"
            marks.add(Unknown(entity=p))
            add |= {Fact(predicate="unknown", args=(p,)), Fact(predicate="connected", args=(here, d, p))}
        for c in (n for n, t in kinds.items() if t == "container"):
            shut, unexplored = Fact(predicate="closed", args=(c,)), Fact(predicate="unexplored", args=(c,))
            if shut in observed and c in new:
                add.add(unexplored)
                marks.add(Unknown(entity=c, predicate="in"))
            elif unexplored in facts and shut not in observed:
                remove.add(unexplored)
                known.add(Unknown(entity=c, predicate="in"))
        return Delta(add=sorted(add, key=str),
                     remove=sorted({f for f in remove & facts if not set(f.args) & gone}, key=str),
                     new_entities=[Entity(name=n, type=t) for n, t in new.items()], removed_entities=sorted(gone),
                     unknown=sorted(marks, key=str), known=sorted(known, key=str), source="sensor",
                     text=action or "start")


def _connected(pred: str, there: str, here: str) -> tuple[Fact, dict[str, str]]:
    """A TextWorld direction fact ("X is D of Y") as (connected Y D X)."""
    return Fact(predicate="connected", args=(here, TW_DIRECTIONS[pred], there)), {here: "room", there: "room"}


class TextWorldCoinSensor(TextWorldSensor):
    """TextWorld's Coin Collector in domains/coin_collector's predicates."""

    predicates = frozenset({"at", "connected", "coin_in", "carrying"})
    places: ClassVar = {"at": None, "coin_in": 1, "carrying": None}

    @staticmethod
    def translate(perceived: Iterable[tuple[str, ...]], types: dict[str, Lineage]) -> dict[Fact, dict[str, str]]:
        out: dict[Fact, dict[str, str]] = {}
        for pred, *args in perceived:
            a = [tw_symbol(x) for x in args]
            if pred == "at" and args[0] == "P":
                out[Fact(predicate="at", args=(a[1],))] = {a[1]: "room"}
            elif pred == "at":  # a thing lying in a room: the coin
                out[Fact(predicate="coin_in", args=(a[0], a[1]))] = {a[0]: "item", a[1]: "room"}
            elif pred == "in" and args[1] == "I":
                out[Fact(predicate="carrying", args=(a[0],))] = {a[0]: "item"}
            elif pred in TW_DIRECTIONS:
                fact, typed = _connected(pred, a[0], a[1])
                out[fact] = typed
        return out


TW_STATES = ("uncut", "sliced", "diced", "chopped", "fried", "roasted", "grilled")
TW_HEAT = {"stove": "fries", "oven": "roasts", "toaster": "grills"}  # TextWorld type -> how it cooks


class TextWorldCookingSensor(TextWorldSensor):
    """TextWorld's cooking games in domains/textworld_cooking's predicates. The cookbook is known by its
    name (TextWorld has no fact for it); the recipe's ingredients are TextWorld's `ingredient_N` entities,
    each the `base` of a food, with the states it must be in."""

    predicates = frozenset({"at", "connected", "door_on", "door_closed", "placed", "closed", "in", "on", "lying",
                            "holding", "sharp", "cookbook", *TW_STATES, *TW_HEAT.values(), "recipe_read",
                            "kitchen", "needs", *(f"want_{s}" for s in TW_STATES[1:]), "meal_ready"})
    remote = frozenset({"connected", "recipe_read", "kitchen", "needs", *(f"want_{s}" for s in TW_STATES[1:])})
    places: ClassVar = {"at": None, "placed": 1, "in": 1, "on": 1, "lying": 1, "holding": None}

    @staticmethod
    def translate(perceived: Iterable[tuple[str, ...]], types: dict[str, Lineage]) -> dict[Fact, dict[str, str]]:
        perceived = set(perceived)
        base = {a[2]: a[1] for a in perceived if a[0] == "base"}  # recipe ingredient -> the food it is

        def kind(n: str) -> str:
            t = types.get(n, ("o",))
            return "door" if "d" in t else "container" if "c" in t else "supporter" if "s" in t else "item"

        out: dict[Fact, dict[str, str]] = {}

        def put(pred: str, *names: str, typed: dict[str, str] | None = None) -> None:
            out[Fact(predicate=pred, args=tuple(tw_symbol(n) for n in names))] = {
                tw_symbol(n): t for n, t in (typed or {n: kind(n) for n in names}).items()}

        for pred, *args in perceived:
            if pred == "at" and args[0] == "P":
                put("at", args[1], typed={args[1]: "room"})
            elif pred == "at" and kind(args[0]) in ("container", "supporter"):
                put("placed", *args, typed={args[0]: kind(args[0]), args[1]: "room"})
                if types[args[0]][0] in TW_HEAT:
                    put(TW_HEAT[types[args[0]][0]], args[0])
            elif pred == "at":
                put("lying", *args, typed={args[0]: "item", args[1]: "room"})
            elif pred == "in" and args == ["meal", "I"]:
                put("meal_ready")
            elif pred == "in" and args[1] == "I":
                put("holding", args[0])
            elif pred in ("in", "on") and args[1] in types and kind(args[1]) != "item" and args[0] not in base:
                put(pred, *args)
            elif pred in TW_DIRECTIONS:
                fact, typed = _connected(pred, tw_symbol(args[0]), tw_symbol(args[1]))
                out[fact] = typed
            elif pred == "door_on":
                put("door_on", *args, typed={args[0]: "room", args[2]: "door"})
            elif pred == "closed":
                put("door_closed" if kind(args[0]) == "door" else "closed", args[0])
            elif pred == "sharp":
                put("sharp", args[0])
            elif pred in TW_STATES and args[0] in base:
                if pred != "uncut":
                    put(f"want_{pred}", base[args[0]])
            elif pred in TW_STATES and kind(args[0]) == "item":
                put(pred, args[0])
            elif pred == "base":
                put("needs", args[0])
            elif pred == "cooking_location":
                put("kitchen", args[0], typed={args[0]: "room"})
            elif pred == "in" and args[1] == "RECIPE":
                put("recipe_read")
        for a in perceived:
            if "cookbook" in a[1:2] and a[0] in ("at", "in", "on"):
                put("cookbook", "cookbook", typed={"cookbook": "item"})
        return out
