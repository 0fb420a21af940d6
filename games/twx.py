"""TextWorld-Express (`textworld-express` on PyPI; it runs a jar and needs Java 17 on the PATH) and its
sensors, which turn the game's structured outputs (admissible actions, object trees) into graph changes,
never its prose; and a replica of a walked Coin Collector map with the coin placed anywhere.
"""

from __future__ import annotations

from typing import ClassVar

from kgplan.games.base import DIRECTIONS, OPPOSITE, GameUnavailable, Observation, Room, shortest
from kgplan.graph.model import Delta, Entity, Fact, Unknown

# name -> (TWX game, its generation parameters, step budget), the settings of issue 12 / PDDLEGO
TWX_GAMES: dict[str, tuple[str, str, int]] = {
    "coin": ("coin", "numLocations=11,includeDoors=1,numDistractorItems=0", 50),
    "cooking-easy": ("cookingworld", "numLocations=2,numIngredients=2,numDistractorItems=0,includeDoors=0,"
                     "limitInventorySize=0", 20),
    "cooking-hard": ("cookingworld", "numLocations=5,numIngredients=5,numDistractorItems=0,includeDoors=1,"
                     "limitInventorySize=0", 50),
}


class TWXUnavailable(GameUnavailable):
    """textworld-express or Java is missing."""


class TextWorldExpress:
    """A TextWorld-Express game (see TWX_GAMES) on the train fold, seeds as given."""

    commands = "actions"

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
        """Coin Collector: the shortest path on the whole map (see `coin_map`; TWX's gold path for coin
        explores, so it is not the shortest) and the take; other games: the gold path's length."""
        if self.game != "coin":
            self.reset(seed)
            return len([a for a in self.env.getGoldActionSequence() if a != "look around"])
        exits, coin = self.coin_map(seed)
        return shortest(exits, (0, 0))[coin] + 1

    def coin_map(self, seed: int) -> tuple[dict[Room, dict[Room, int]], Room]:
        """Coin Collector's whole map, found by walking all of it (resets the game): room (offset from the
        start) -> neighbour -> steps to enter it (2 through a door: doors start closed), and the coin's room."""
        exits: dict[Room, dict[Room, int]] = {}
        coin: list[Room] = []

        def walk(pos: Room, obs: Observation) -> None:
            exits[pos] = {}
            coin.extend([pos] if "take coin" in obs.admissible else [])
            for d, (dx, dy) in DIRECTIONS.items():
                if f"move {d}" not in obs.admissible:
                    continue
                door = f"open door to {d}" in obs.admissible
                nb = (pos[0] + dx, pos[1] + dy)
                exits[pos][nb] = 1 + door
                if nb not in exits:
                    if door:
                        self.step(f"open door to {d}")
                    walk(nb, self.step(f"move {d}"))
                    self.step(f"move {OPPOSITE[d]}")

        walk((0, 0), self.reset(seed))
        return exits, coin[0]

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
    moves made: "move D" admissible -> an exit D to a room, a placeholder (marked unknown, and the fact
    (unknown ROOM) for the planner's sub-goal) until entered;
    "open door to D" admissible -> a door there, closed until opened; "take coin" -> a coin here.
    """

    objects: ClassVar = {"room_0_0": "room", **dict.fromkeys(DIRECTIONS, "direction")}  # known beforehand
    facts: ClassVar = (Fact(predicate="at", args=("room_0_0",)), Fact(predicate="visited", args=("room_0_0",)))

    def __init__(self) -> None:
        self.pos = (0, 0)

    def delta(self, facts: set[Fact], entities: set[str], action: str | None, obs: Observation) -> Delta:
        """The change an observation makes to what the graph knows (`facts`, `entities`)."""
        add: list[Fact] = []
        remove: list[Fact] = []
        new: list[Entity] = []
        marks: list[Unknown] = []
        known: list[Unknown] = []
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
                known.append(Unknown(entity=there))
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
                marks.append(Unknown(entity=there))
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
        return Delta(add=add, remove=remove, new_entities=new, unknown=marks, known=known, source="sensor",
                     text=action or "start")


def symbol(name: str) -> str:
    """A TWX object name as a PDDL symbol ("block of cheese" -> block_of_cheese)."""
    return name.strip().lower().replace(" ", "_").replace("-", "_")


COOKING_METHODS = {"stove": "fries", "oven": "roasts", "toaster": "grills", "barbeque": "grills"}
CUTS = ("uncut", "sliced", "diced", "chopped")
COOKS = ("raw", "fried", "roasted", "grilled")
TREE_FLAGS = {"sliced": "isSliced", "diced": "isDiced", "chopped": "isChopped", "fried": "isFried",
              "roasted": "isRoasted", "grilled": "isGrilled"}


class CookingSensor:
    """Cooking World from TWX's object tree, cut down to what the player perceives: the room they are
    in, what lies in it and in its open containers, the inventory, and the recipe once read.

    Exits come from the admissible actions: "move D" -> a placeholder room `unseen_<room>_<D>`,
    merged into the real room (removed, its facts re-pointed) when entered; exits are two-way.
    What is not known is marked (graph.model.Unknown): placeholder rooms, what a container seen
    closed holds (until opened), where an item the recipe names is (until seen).
    """

    objects: ClassVar = dict.fromkeys(DIRECTIONS, "direction")
    facts: ClassVar[tuple[Fact, ...]] = ()

    def delta(self, facts: set[Fact], entities: set[str], action: str | None, obs: Observation) -> Delta:
        tree = obs.tree
        here = symbol(tree["player_location"])
        seen: dict[str, str] = {here: "location"}  # entity -> type, of what the player perceives now
        observed: set[Fact] = set()
        marks: set[Unknown] = set()  # what becomes unknown, and known
        known: set[Unknown] = set()

        def f(pred: str, *args: str) -> Fact:
            return Fact(predicate=pred, args=args)

        def item(obj: dict) -> str:
            i = symbol(obj["name"])
            seen[i] = "item"
            cut = next((c for c in CUTS[1:] if obj[TREE_FLAGS[c]]), "uncut")
            cook = next((c for c in COOKS[1:] if obj[TREE_FLAGS[c]]), "raw")
            observed.update({f(cut, i), f(cook, i)})
            if i == "knife":
                observed.add(f("is_knife", i))
            if obj["isReadable"]:
                observed.add(f("is_cookbook", i))
            return i

        for obj in tree["locations"][tree["player_location"]]["contents"].values():
            name = symbol(obj["name"])
            if obj["isCookingDevice"]:
                seen[name] = "device"
                observed.add(f("device_in", name, here))
                observed.update({f(COOKING_METHODS[obj["name"]], name)} if obj["name"] in COOKING_METHODS else set())
            elif obj["isContainer"]:
                seen[name] = "container"
                observed.add(f("placed", name, here))
                if not obj["isOpen"]:
                    observed.add(f("closed", name))
                else:
                    observed.update(f("in", item(o), name) for o in obj["contents"].values())
            elif obj["isMovable"]:
                observed.add(f("item_at", item(obj), here))
        observed.update(f("holding", item(o)) for o in tree["inventory"].values())
        about = {p for p in (*CUTS, *COOKS, "is_knife", "is_cookbook", "device_in", "fries", "roasts", "grills",
                             "placed", "closed", "in", "item_at", "holding")}
        remove = {x for x in facts if x.predicate in about and set(x.args) & set(seen) and x not in observed}
        add = observed - facts
        new = {n: t for n, t in seen.items() if n not in entities}
        removed: list[str] = []
        if here == "kitchen" and f("is_kitchen", here) not in facts:
            add.add(f("is_kitchen", here))
        old = next((x.args[0] for x in facts if x.predicate == "at"), None)
        if old != here:
            add |= {f("at", here), f("visited", here)}
            remove |= {x for x in facts if x.predicate == "at"}
            words = (action or "").split()
            if old and words[:1] == ["move"]:  # merge the placeholder the move went into
                d = words[-1]
                to = next((x.args[2] for x in facts if x.predicate == "connected" and x.args[:2] == (old, d)), None)
                back = next((x.args[2] for x in facts
                             if x.predicate == "connected" and x.args[:2] == (here, OPPOSITE[d])), None)
                removed += [p for p in (to, back) if p and p not in (here, old)]
                add |= {f("connected", old, d, here), f("connected", here, OPPOSITE[d], old)}
        for d in DIRECTIONS:
            mapped = any(x.predicate == "connected" and x.args[:2] == (here, d) for x in facts | add)
            if f"move {d}" in obs.admissible and not mapped:
                p = f"unseen_{here}_{d}"
                new[p] = "location"
                marks.add(Unknown(entity=p))
                add |= {f("unknown", p), f("connected", here, d, p)}
                add |= {f("door_closed", here, p)} if f"open door to {d}" in obs.admissible else set()
        if action and action.startswith("open door to ") and (d := action.split()[-1]) in DIRECTIONS:
            to = next((x.args[2] for x in facts if x.predicate == "connected" and x.args[:2] == (here, d)), None)
            remove |= {f("door_closed", here, to), f("door_closed", to, here)} & facts if to else set()
        for c, t in seen.items():
            if t == "container" and f("closed", c) in observed and c not in entities:
                add.add(f("unexplored", c))
                marks.add(Unknown(entity=c, predicate="in"))
            if f("unexplored", c) in facts and f("closed", c) not in observed:
                remove.add(f("unexplored", c))
                known.add(Unknown(entity=c, predicate="in"))
        placed = {x.args[0] for x in facts if x.predicate in ("item_at", "in", "holding")}
        known |= {Unknown(entity=x.args[0], predicate="item_at") for x in observed
                  if x.predicate in ("item_at", "in", "holding") and x.args[0] in entities - placed}
        if action == "read cookbook":
            add.add(f("recipe_read"))
            for entry in tree["recipe"]:
                i = symbol(entry["name"])
                if i not in entities and i not in new:
                    new[i] = "item"
                    marks.add(Unknown(entity=i, predicate="item_at"))
                cook, cut = (w.strip() for w in entry["preparation"].split(","))
                add |= {f("needs", i), f(f"want_{cook}", i), f(f"want_{cut}", i)}
        if action == "prepare meal" and "eat meal" in obs.admissible:
            add.add(f("meal_ready"))
        add -= remove | facts
        return Delta(add=sorted(add, key=str), remove=sorted(remove, key=str),
                     new_entities=[Entity(name=n, type=t) for n, t in new.items()], removed_entities=removed,
                     unknown=sorted(marks, key=str), known=sorted(known, key=str), source="sensor",
                     text=action or "start")


class CoinReplica:
    """A walked Coin Collector map (`TextWorldExpress.coin_map`) played again with the coin in a room of
    one's choosing, answering the moves, door openings and take as TWX does (admissible commands only)."""

    budget, commands = TWX_GAMES["coin"][2], "actions"

    def __init__(self, exits: dict[Room, dict[Room, int]], coin: Room) -> None:
        self.exits, self.coin = exits, coin

    def optimum(self, seed: int) -> int:
        return shortest(self.exits, (0, 0))[self.coin] + 1

    def reset(self, seed: int) -> Observation:
        self.pos, self.opened, self.won = (0, 0), set(), False
        return self._observation()

    def step(self, action: str) -> Observation:
        verb, d = action.split()[0], action.split()[-1]
        there = (self.pos[0] + DIRECTIONS[d][0], self.pos[1] + DIRECTIONS[d][1]) if d in DIRECTIONS else None
        if verb == "open" and there in self.exits[self.pos]:
            self.opened.add(frozenset((self.pos, there)))
        elif verb == "move" and there in self.exits[self.pos] and not self._shut(there):
            self.pos = there
        elif action == "take coin" and self.pos == self.coin:
            self.won = True
        return self._observation()

    def close(self) -> None:
        """Nothing to let go of."""

    def _shut(self, there: Room) -> bool:
        return self.exits[self.pos][there] == 2 and frozenset((self.pos, there)) not in self.opened

    def _observation(self) -> Observation:
        moves = {d: (self.pos[0] + dx, self.pos[1] + dy) for d, (dx, dy) in DIRECTIONS.items()}
        admissible = [f"move {d}" for d, nb in moves.items() if nb in self.exits[self.pos]]
        admissible += [f"open door to {d}" for d, nb in moves.items() if nb in self.exits[self.pos] and self._shut(nb)]
        admissible += ["take coin"] if self.pos == self.coin and not self.won else []
        return Observation("", sorted(admissible), float(self.won), self.won, self.won)
