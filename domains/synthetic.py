"""Deterministic synthetic worlds for the bundled household domain, at any scale.

The layout is an apartment building: floors joined by a stairwell, a corridor of segments on
each floor, and two apartments off each corridor segment. An apartment has an entry hall with
the kitchen, living room, bathroom, bedrooms and sometimes an office off it; a dining room off
the living room (sometimes also off the kitchen), a laundry room off the kitchen and an ensuite
bathroom off the first bedroom. Every door is a pair of ``connected`` facts, so every room is
reachable from every other. Rooms hold the fixtures their kind suggests (``in_room``); items lie
on furniture or inside containers that fit them (food in fridges, clothes in drawers, washers
and laundry baskets, ...), and a few are held by the people living there. The one agent,
``robot``, stands in the entry hall of the first apartment, holding nothing.

Every state satisfies the domain's invariants: each item is in exactly one place, each fixture
and person in exactly one room, each cup either empty or holding one liquid (a full cup is not
clean). A world has about 1.55 facts per object. ``household_world(n)`` is a prefix of
``household_world(m)`` for ``n < m`` and the same seed: a larger world only adds rooms.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from kgplan.domains.formula import GroundAtom
from kgplan.domains.model import Problem

SEGMENTS_PER_FLOOR = 6  # corridor segments per floor, each with two apartment doors
LIQUIDS = ("water", "juice", "milk", "coffee", "tea")
FIRST_NAMES = ("sandra", "omar", "lena", "yuki", "ines", "tom", "amara", "jonas", "priya", "mateo",
               "chen", "fatima", "oskar", "nia", "pavel", "lucia")
CLOSABLE = {"fridge", "cabinet", "drawer", "washer", "dryer"}
CLOSED_P = {"fridge": 0.97, "cabinet": 0.85, "drawer": 0.9, "washer": 0.8, "dryer": 0.8}
ON_P = {"light": 0.35, "tv": 0.25, "faucet": 0.05, "stove": 0.08}
FURNITURE = {"table", "shelf", "counter", "sofa", "bed"}

# Fixtures per room kind: (name suffix, type, probability, (min, max) count).
Fixture = tuple[str, str, float, tuple[int, int]]
FIXTURES: dict[str, list[Fixture]] = {
    "hall": [("light", "light", 1, (1, 1)), ("shelf", "shelf", 0.6, (1, 1)),
             ("table", "table", 0.3, (1, 1))],
    "kitchen": [("table", "table", 1, (1, 1)), ("counter", "counter", 1, (1, 1)),
                ("fridge", "fridge", 1, (1, 1)), ("cabinet", "cabinet", 1, (1, 3)),
                ("drawer", "drawer", 0.7, (1, 2)), ("sink", "sink", 1, (1, 1)),
                ("faucet", "faucet", 1, (1, 1)), ("stove", "stove", 1, (1, 1)),
                ("light", "light", 1, (1, 1)), ("window", "window", 0.8, (1, 2))],
    "living_room": [("sofa", "sofa", 1, (1, 2)), ("table", "table", 1, (1, 1)),
                    ("bookshelf", "shelf", 0.8, (1, 2)), ("tv", "tv", 0.9, (1, 1)),
                    ("light", "light", 1, (1, 2)), ("window", "window", 1, (1, 2))],
    "bedroom": [("bed", "bed", 1, (1, 1)), ("nightstand", "drawer", 1, (1, 2)),
                ("shelf", "shelf", 0.5, (1, 1)), ("basket", "laundrybasket", 0.4, (1, 1)),
                ("light", "light", 1, (1, 1)), ("window", "window", 1, (1, 2))],
    "bathroom": [("sink", "sink", 1, (1, 2)), ("faucet", "faucet", 1, (1, 2)),
                 ("cabinet", "cabinet", 1, (1, 1)), ("basket", "laundrybasket", 0.5, (1, 1)),
                 ("light", "light", 1, (1, 1)), ("window", "window", 0.4, (1, 1))],
    "laundry_room": [("washer", "washer", 1, (1, 1)), ("dryer", "dryer", 1, (1, 1)),
                     ("basket", "laundrybasket", 1, (1, 2)), ("shelf", "shelf", 0.6, (1, 1)),
                     ("light", "light", 1, (1, 1))],
    "office": [("desk", "table", 1, (1, 1)), ("shelf", "shelf", 1, (1, 2)),
               ("drawer", "drawer", 0.8, (1, 2)), ("light", "light", 1, (1, 1)),
               ("window", "window", 0.9, (1, 1))],
    "dining_room": [("table", "table", 1, (1, 1)), ("cabinet", "cabinet", 0.8, (1, 1)),
                    ("light", "light", 1, (1, 2)), ("window", "window", 0.8, (1, 2))],
    "corridor": [("light", "light", 1, (1, 2)), ("window", "window", 0.4, (1, 1))],
    "stairs": [("light", "light", 1, (1, 1))],
}

# Items per room kind: (type, names, (min, max) count, fixture suffixes it may be on or in).
ItemSpec = tuple[str, tuple[str, ...], tuple[int, int], tuple[str, ...]]
ITEMS: dict[str, list[ItemSpec]] = {
    "hall": [("cloth", ("coat", "scarf", "hat"), (0, 2), ("shelf", "table")),
             ("phone", ("phone",), (0, 1), ("table", "shelf"))],
    "kitchen": [("food", ("apple", "bread", "cheese", "milk_carton", "eggs", "pasta", "rice", "banana",
                          "yoghurt", "butter"), (3, 8), ("fridge", "cabinet", "counter", "table")),
                ("dish", ("plate", "bowl", "pan", "pot"), (2, 7), ("cabinet", "sink", "table", "counter",
                                                                     "drawer")),
                ("cup", ("mug", "glass"), (2, 5), ("cabinet", "table", "counter", "sink"))],
    "living_room": [("book", ("book", "novel", "magazine"), (2, 6), ("bookshelf", "table", "sofa")),
                    ("remote", ("remote",), (1, 1), ("sofa", "table")),
                    ("cup", ("mug", "glass"), (0, 2), ("table",)),
                    ("phone", ("phone",), (0, 1), ("sofa", "table")),
                    ("dish", ("plate", "bowl"), (0, 1), ("table",))],
    "bedroom": [("cloth", ("shirt", "jeans", "socks", "sweater", "dress"), (2, 6),
                 ("bed", "nightstand", "basket", "shelf")),
                ("book", ("book", "novel"), (0, 2), ("shelf", "bed", "nightstand")),
                ("phone", ("phone",), (0, 1), ("bed", "nightstand")),
                ("cup", ("glass",), (0, 1), ("nightstand", "shelf"))],
    "bathroom": [("cloth", ("towel", "bathrobe"), (1, 4), ("basket", "cabinet"))],
    "laundry_room": [("cloth", ("shirt", "jeans", "socks", "towel", "sheet"), (2, 5),
                      ("washer", "dryer", "basket", "shelf"))],
    "office": [("book", ("book", "notebook", "manual"), (1, 4), ("shelf", "desk", "drawer")),
               ("phone", ("phone",), (0, 1), ("desk",)),
               ("cup", ("mug",), (0, 1), ("desk",))],
    "dining_room": [("dish", ("plate", "bowl"), (1, 4), ("table", "cabinet")),
                    ("cup", ("glass", "mug"), (1, 3), ("table", "cabinet")),
                    ("food", ("bread", "fruit_bowl", "salad"), (0, 2), ("table",))],
    "corridor": [], "stairs": [],
}
PERSON_P = {"kitchen": 0.3, "living_room": 0.4, "bedroom": 0.3, "office": 0.3, "dining_room": 0.15,
            "bathroom": 0.05, "laundry_room": 0.1, "hall": 0.05}


@dataclass
class _World:
    """The world being built, and when to stop adding rooms."""

    rng: random.Random
    full: Callable[[_World], bool]
    objects: dict[str, str] = field(default_factory=dict)
    init: list[GroundAtom] = field(default_factory=list)
    people: int = 0

    def obj(self, name: str, type_: str) -> str:
        assert name not in self.objects, name
        self.objects[name] = type_
        return name

    def fact(self, predicate: str, *args: str) -> None:
        self.init.append(GroundAtom(predicate, args))

    def door(self, a: str, b: str) -> None:
        self.fact("connected", a, b)
        self.fact("connected", b, a)

    def room(self, name: str, kind: str) -> str:
        """A room of a kind with its fixtures, items and maybe a person in it."""
        rng = self.rng
        self.obj(name, "room")
        places: dict[str, list[tuple[str, str]]] = {}  # fixture suffix -> [(name, type)]
        for suffix, type_, p, (lo, hi) in FIXTURES[kind]:
            if rng.random() >= p:
                continue
            n = rng.randint(lo, hi)
            for i in range(1, n + 1):
                fx = self.obj(f"{name}_{suffix}{i if n > 1 else ''}", type_)
                self.fact("in_room", fx, name)
                places.setdefault(suffix, []).append((fx, type_))
                if type_ in CLOSABLE and rng.random() < CLOSED_P[type_]:
                    self.fact("closed", fx)
                elif type_ in ON_P and rng.random() < ON_P[type_]:
                    self.fact("switched_on", fx)
                elif type_ == "window" and rng.random() < 0.25:
                    self.fact("window_open", fx)
        person = None
        if rng.random() < PERSON_P.get(kind, 0):
            person = self.obj(f"{rng.choice(FIRST_NAMES)}_{self.people}", "person")
            self.people += 1
            self.fact("person_at", person, name)
        counter: dict[str, int] = {}
        for type_, names, (lo, hi), where in ITEMS[kind]:
            for _ in range(rng.randint(lo, hi)):
                spots = [fx for s in where for fx in places.get(s, [])]
                if not spots:
                    continue
                base = rng.choice(names)
                counter[base] = counter.get(base, 0) + 1
                item = self.obj(f"{name}_{base}{counter[base]}", type_)
                spot, spot_type = rng.choice(spots)
                if person and type_ in ("phone", "book", "cup") and rng.random() < 0.3:
                    self.fact("held_by", item, person)
                else:
                    self.fact("on" if spot_type in FURNITURE else "inside", item, spot)
                self._item_state(item, type_, spot_type)
        return name

    def _item_state(self, item: str, type_: str, spot_type: str) -> None:
        rng = self.rng
        if type_ == "cup":
            if rng.random() < 0.3:
                self.fact("cup_contains", item, rng.choice(LIQUIDS))
            else:
                self.fact("cup_empty", item)
                if rng.random() < 0.7:
                    self.fact("clean", item)
        elif type_ == "dish":
            if rng.random() < (0.2 if spot_type == "sink" else 0.7):
                self.fact("clean", item)
        elif type_ == "cloth":
            washed = spot_type in ("washer", "dryer")
            if rng.random() < (0.9 if washed else 0.6):
                self.fact("clean", item)
            if rng.random() < (0.3 if spot_type == "washer" else 0.85):
                self.fact("dry", item)
        elif type_ == "phone" and rng.random() < 0.1:
            self.fact("phone_ringing", item)

    def apartment(self, index: int, corridor: str | None) -> None:
        """An apartment's rooms, one at a time until the world is full (the hall always)."""
        rng = self.rng
        prefix = f"apt{index}"
        hall = self.room(f"{prefix}_hall", "hall")
        if corridor:
            self.door(corridor, hall)
        else:
            self.obj("robot", "agent")
            self.fact("agent_at", "robot", hall)
        bedrooms = rng.choices((1, 2, 3), weights=(3, 4, 2))[0]
        plan: list[tuple[str, str, str]] = [  # (room name, kind, the room its door leads to)
            (f"{prefix}_kitchen", "kitchen", hall),
            (f"{prefix}_living_room", "living_room", hall),
            (f"{prefix}_bathroom", "bathroom", hall),
        ]
        plan += [(f"{prefix}_bedroom{i}", "bedroom", hall) for i in range(1, bedrooms + 1)]
        if rng.random() < 0.35:
            plan.append((f"{prefix}_office", "office", hall))
        if rng.random() < 0.4:
            plan.append((f"{prefix}_dining_room", "dining_room", f"{prefix}_living_room"))
            if rng.random() < 0.5:
                plan.append((f"{prefix}_dining_room", "dining_room", f"{prefix}_kitchen"))  # 2nd door
        if rng.random() < 0.5:
            plan.append((f"{prefix}_laundry_room", "laundry_room", f"{prefix}_kitchen"))
        if rng.random() < 0.3:
            plan.append((f"{prefix}_ensuite", "bathroom", f"{prefix}_bedroom1"))
        for name, kind, to in plan:
            if name not in self.objects:
                if self.full(self):
                    return
                self.room(name, kind)
            self.door(name, to)

    def building(self) -> None:
        """Apartments off corridors, floor by floor, until the world is full."""
        for liquid in LIQUIDS:
            self.obj(liquid, "liquid")
        self.apartment(0, None)
        index = 1
        while not self.full(self):
            slot = index - 1
            floor, seg = divmod(slot // 2, SEGMENTS_PER_FLOOR)
            corridor = f"floor{floor}_corridor{seg}"
            if corridor not in self.objects:
                if seg == 0:
                    stairs = self.room(f"floor{floor}_stairs", "stairs")
                    self.door(stairs, f"floor{floor - 1}_stairs" if floor else "apt0_hall")
                    self.room(corridor, "corridor")
                    self.door(corridor, stairs)
                else:
                    self.room(corridor, "corridor")
                    self.door(corridor, f"floor{floor}_corridor{seg - 1}")
            self.apartment(index, corridor)
            index += 1


def _build(seed: int, full: Callable[[_World], bool], name: str) -> Problem:
    world = _World(random.Random(seed), full)
    world.building()
    return Problem(name=name, domain="household", objects=world.objects, init=world.init)


def household_world(n_objects: int, seed: int = 0) -> Problem:
    """A household world of about `n_objects` objects (at least that, plus part of a room at most).

    Deterministic in (`n_objects`, `seed`); the problem has no goal. Objects: rooms (entry halls,
    kitchens, bedrooms, ..., corridors and stairwells), their fixtures, items, people, five
    liquids and the agent ``robot``. See the module docstring for the layout and invariants.
    """
    return _build(seed, lambda w: len(w.objects) >= n_objects, f"household_{n_objects}_objects_s{seed}")


def household_world_with_facts(n_facts: int, seed: int = 0) -> Problem:
    """A household world like `household_world`, grown room by room until it has `n_facts` facts."""
    return _build(seed, lambda w: len(w.init) >= n_facts, f"household_{n_facts}_facts_s{seed}")
