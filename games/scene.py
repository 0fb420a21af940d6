"""Scene graphs from perception as verified changes: a scan (nodes with classes and states, relations between
them) is mapped onto the domain through domain.toml's `[scene]` table and its difference from the graph becomes
one change. Like the games' sensors it reads only structured input.

Two forms are read: VirtualHome's environment graph (`{"nodes": [{"id", "class_name", "states", ...}], "edges":
[{"from_id", "relation_type", "to_id"}]}`) and the generic form (`{"nodes": [{"id" or "ref", "class",
"states"}], "relations": [[subject, relation, object]]}`); either may name `observed` nodes (areas seen whole).
What a scan means, and what it leaves unknown, is in docs/architecture.md ("Scene graphs").
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kgplan.domains.formula import GroundAtom
from kgplan.domains.model import Domain
from kgplan.errors import DomainError, InputError
from kgplan.files import read_json
from kgplan.graph.model import Delta, Entity, Fact, Unknown, by_atom
from kgplan.graph.store import Tx

Key = int | str
SHOWN = 10  # refusals listed in one message


# ---- the forms a scan comes in ---------------------------------------------------------------------------
class SceneNode(BaseModel):
    """A node of the generic form: `id` when perception tracks it across scans (its identity), else `ref`, a
    label that only this scan's relations use (identity then by class and place)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    id: Key | None = Field(None, description="Its identity across scans")
    ref: Key | None = Field(None, description="A label for this scan's relations only (no identity)")
    cls: str = Field(alias="class", min_length=1, description="Its class, e.g. apple")
    states: list[str] = Field(default_factory=list, description="Every state it is in, e.g. OPEN")

    @model_validator(mode="after")
    def _one_key(self) -> SceneNode:
        if (self.id is None) == (self.ref is None):
            raise ValueError("give a node either an id or a ref")
        return self

    @property
    def key(self) -> str:
        return str(self.id if self.id is not None else self.ref)


class Scene(BaseModel):
    """A scan in the generic form."""

    model_config = ConfigDict(extra="forbid")
    nodes: list[SceneNode]
    relations: list[tuple[Key, str, Key]] = Field(
        default_factory=list, description="(subject, relation, object), naming nodes by id or ref; a node's "
                                          "relations as subject are all that it has")
    observed: list[Key] = Field(default_factory=list, description="Nodes seen whole: what the graph has there "
                                                                  "and the scan does not show is gone from there")


class VirtualHomeNode(BaseModel):
    id: Key
    class_name: str = Field(min_length=1)
    states: list[str] = Field(default_factory=list)


class VirtualHomeEdge(BaseModel):
    from_id: Key
    relation_type: str
    to_id: Key


class VirtualHomeGraph(BaseModel):
    """A VirtualHome environment graph (its other fields, such as category and properties, are not read)."""

    nodes: list[VirtualHomeNode]
    edges: list[VirtualHomeEdge]
    observed: list[Key] = Field(default_factory=list, description="Nodes seen whole (see Scene.observed)")

    def generic(self) -> Scene:
        return Scene(nodes=[SceneNode(id=n.id, cls=n.class_name, states=n.states) for n in self.nodes],
                     relations=[(e.from_id, e.relation_type, e.to_id) for e in self.edges], observed=self.observed)


def read_scene(data: Any, where: str = "the scene") -> Scene:
    """A scan in either form (VirtualHome's has `edges`, the generic one `relations`), as the generic form;
    InputError saying what is malformed."""
    if not isinstance(data, dict):
        raise InputError(f"{where} must be a JSON object with nodes and edges (VirtualHome) or relations")
    if "init_graph" in data or "final_graph" in data:
        raise InputError(f"{where} holds several graphs ({', '.join(data)}): give one of them")
    try:
        return VirtualHomeGraph.model_validate(data).generic() if "edges" in data else Scene.model_validate(data)
    except ValidationError as e:
        wrong = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'it'}: {x['msg']}" for x in e.errors()[:SHOWN])
        raise InputError(f"{where} is malformed: {wrong}") from None


def load_scene(path: Path) -> Scene:
    """A scan from a JSON file (see `read_scene`)."""
    return read_scene(read_json(path, "scene file"), str(path))


# ---- the declared mapping --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mapping:
    """domain.toml's `[scene]`: `classes` (type -> its classes), `ignore` (classes left out), `relations`
    (relation -> a predicate or the predicates to choose from by type; "" leaves it out) and `states` (state ->
    a one-place predicate; "" leaves it out). Names are matched without regard to case."""

    types: dict[str, str]  # class -> type
    ignore: frozenset[str]
    relations: dict[str, tuple[str, ...]]  # () = left out
    states: dict[str, str]  # "" = left out

    @classmethod
    def of(cls, domain: Domain) -> Mapping:
        """The domain's mapping; DomainError if it has none or it names what the domain lacks."""
        table = domain.meta.get("scene")
        if not isinstance(table, dict):
            raise DomainError(f"domain {domain.name} declares no scene mapping: add a [scene] table to its "
                              "domain.toml (docs/architecture.md, \"Scene graphs\")")
        wrong: list[str] = []

        def names(value: Any, where: str) -> list[str]:
            if isinstance(value, str):
                return [value]
            if isinstance(value, list) and all(isinstance(x, str) for x in value):
                return value
            wrong.append(f"{where} must be a name or a list of names")
            return []

        types: dict[str, str] = {}
        for t, classes in table.get("classes", {}).items():
            if t not in domain.types:
                wrong.append(f"[scene.classes] names the unknown type {t!r}")
            for c in names(classes, f"[scene.classes] {t}"):
                if types.setdefault(c.lower(), t) != t:
                    wrong.append(f"class {c!r} is given two types ({types[c.lower()]} and {t})")
        relations = {r.lower(): tuple(p for p in names(ps, f"[scene.relations] {r}") if p)
                     for r, ps in table.get("relations", {}).items()}
        states = {s.lower(): p for s, p in table.get("states", {}).items() if isinstance(p, str)}
        wrong += [f"[scene.states] {s} must be a name" for s, p in table.get("states", {}).items()
                  if not isinstance(p, str)]
        for what, preds, arity in (("relations", {p for ps in relations.values() for p in ps}, 2),
                                   ("states", set(states.values()) - {""}, 1)):
            for p in sorted(preds):
                if domain.predicates.get(p) is None or domain.predicates[p].arity != arity:
                    wrong.append(f"[scene.{what}] names {p!r}, which is no {arity}-place predicate of the domain")
        if wrong:
            raise DomainError(f"domain {domain.name}'s scene mapping is wrong: " + "; ".join(wrong))
        return cls(types, frozenset(c.lower() for c in names(table.get("ignore", []), "[scene] ignore")), relations,
                   states)

    @property
    def predicates(self) -> set[str]:
        """The predicates a scan speaks for."""
        return {p for ps in self.relations.values() for p in ps} | set(self.states.values()) - {""}


def entity_name(cls: str, key: str) -> str:
    """A tracked node's entity: its class and id as a PDDL name (`coffee_cup_12`)."""
    name = re.sub(r"[^a-z0-9_\-]", "_", f"{cls}_{key}".lower())
    return name if name[0].isalpha() else f"x{name}"


# ---- a scan as a change ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SceneCounts:
    """What a scan changed: things that appeared (new entities), moved (seen with another place), went out of
    view (their place marked unknown, kept), are gone from an observed area (place removed, marked unknown), and
    states that changed."""

    appeared: int = 0
    moved: int = 0
    out_of_view: int = 0
    gone: int = 0
    states: int = 0

    def __str__(self) -> str:
        said = [f"{n} {w.replace('_', ' ')}" for w, n in vars(self).items() if n and w != "states"]
        states = [f"{self.states} state{'s' * (self.states != 1)} changed"] if self.states else []
        return ", ".join([*said, *states]) or "no change"


class _Reader:
    """One scan read against the mapping and the graph as a write transaction sees it."""

    def __init__(self, domain: Domain, scene: Scene, tx: Tx) -> None:
        self.domain, self.scene, self.tx = domain, scene, tx
        self.map = Mapping.of(domain)
        self.wrong: list[str] = []

    def refuse(self) -> None:
        if wrong := list(dict.fromkeys(self.wrong)):  # once each (a relation with no predicate may recur)
            more = f"; and {len(wrong) - SHOWN} more" if len(wrong) > SHOWN else ""
            raise InputError(f"the scene does not map onto domain {self.domain.name}: "
                             + "; ".join(wrong[:SHOWN]) + more)

    def kept_nodes(self) -> dict[str, tuple[SceneNode, str]]:
        """The nodes the mapping keeps, by key, with their types (unknown classes refused)."""
        kept: dict[str, tuple[SceneNode, str]] = {}
        keys: set[str] = set()
        for n in self.scene.nodes:
            if n.key in keys:
                self.wrong.append(f"two nodes have the id or ref {n.key!r}")
            keys.add(n.key)
            if (c := n.cls.lower()) in self.map.ignore:
                continue
            if c not in self.map.types:
                self.wrong.append(f"node {n.key!r} is of the unknown class {n.cls!r} (add it to [scene.classes] "
                                  "or [scene] ignore)")
            else:
                kept[n.key] = (n, self.map.types[c])
        for k in map(str, self.scene.observed):
            if k not in keys:
                self.wrong.append(f"observed names no node {k!r}")
        return kept

    def pick(self, relation: str, s: tuple[str, str], o: tuple[str, str]) -> str | None:
        """The predicate a relation between two nodes (key, type) maps to; None if it is left out."""
        preds = self.map.relations.get(relation.lower())
        if preds is None:
            self.wrong.append(f"relation {relation!r} has no predicate (add it to [scene.relations], \"\" to "
                              "leave it out)")
            return None
        for p in preds:
            params = self.domain.predicates[p].params
            if self.domain.accepts(params[0].types, s[1]) and self.domain.accepts(params[1].types, o[1]):
                return p
        if preds:
            self.wrong.append(f"{relation} from {s[0]!r} (a {s[1]}) to {o[0]!r} (a {o[1]}) fits none of "
                              f"{', '.join(preds)} (type mismatch)")
        return None

    def typed(self, kept: dict[str, tuple[SceneNode, str]]) -> tuple[list[tuple[str, str, str]],
                                                                      list[tuple[str, str]]]:
        """The scan's relations as (subject key, predicate, object key) and states as (key, predicate)."""
        every = {n.key for n in self.scene.nodes}
        rels = []
        for s, r, o in self.scene.relations:
            s, o = str(s), str(o)
            if missing := [k for k in (s, o) if k not in every]:
                self.wrong.append(f"relation {r} names no node {missing[0]!r}")
            elif s in kept and o in kept and (p := self.pick(r, (s, kept[s][1]), (o, kept[o][1]))):
                rels.append((s, p, o))
        states = []
        for key, (n, t) in kept.items():
            for st in n.states:
                p = self.map.states.get(st.lower())
                if p is None:
                    self.wrong.append(f"state {st!r} of {key!r} has no predicate (add it to [scene.states], \"\" "
                                      "to leave it out)")
                elif p and not self.domain.accepts(self.domain.predicates[p].params[0].types, t):
                    self.wrong.append(f"state {st} of {key!r} (a {t}) does not fit {p} (type mismatch)")
                elif p:
                    states.append((key, p))
        return rels, states

    def facts(self, names: set[str]) -> set[GroundAtom]:
        """The graph's facts of the mapped predicates about some entities."""
        preds = self.map.predicates
        return {GroundAtom(*a) for a in self.tx.facts_about(names) if a[0] in preds} if names else set()

    def names(self, kept: dict[str, tuple[SceneNode, str]], rels: list[tuple[str, str, str]]) -> dict[str, str]:
        """Each kept node's entity: a tracked node's by its class and id; one with a ref, the graph's entity of
        its class whose places include the node's (each given place resolved first; the first by name if
        several), else a new one."""
        names = {k: entity_name(n.cls, k) for k, (n, _) in kept.items() if n.id is not None}
        refs = [k for k, (n, _) in kept.items() if n.id is None]
        if not refs:
            return names
        by_class: dict[str, list[str]] = defaultdict(list)
        for e in sorted(self.tx.entities(), key=lambda e: e.name):
            by_class[e.attrs.get("class", "")].append(e.name)
        places: dict[str, set[tuple[str, str]]] = defaultdict(set)  # the graph's: entity -> (predicate, object)
        for p, args in self.facts({e for k in refs for e in by_class[kept[k][0].cls.lower()]}):
            if len(args) == 2:
                places[args[0]].add((p, args[1]))
        taken = set(names.values()) | {e for es in by_class.values() for e in es}
        while refs:
            ready = [k for k in refs if all(o in names for s, _, o in rels if s == k)]
            if not ready:
                self.wrong.append(f"the relations of nodes {', '.join(map(repr, refs))} (refs) form a cycle: give "
                                  "one of them an id")
                return names
            for k in ready:
                cls = kept[k][0].cls.lower()
                place = {(p, names[o]) for s, p, o in rels if s == k}
                claimed = set(names.values())
                found = [e for e in by_class[cls] if e not in claimed and place <= places[e]]
                if found:
                    names[k] = found[0]
                else:
                    names[k] = next(n for i in range(1, len(taken) + 2)
                                    if (n := entity_name(cls, str(i))) not in taken)
                    taken.add(names[k])
                refs.remove(k)
        return names

    def delta(self) -> tuple[Delta, SceneCounts]:
        kept = self.kept_nodes()
        rels, states = self.typed(kept)
        self.refuse()
        names = self.names(kept, rels)
        if len(set(names.values())) < len(names):
            self.wrong.append("two nodes make the same entity name (ids that differ only in case or in "
                              "characters a name cannot hold)")
        types = self.tx.entity_types(set(names.values()))
        for k, name in names.items():
            if types.get(name, kept[k][1]) != kept[k][1]:
                self.wrong.append(f"node {k!r} maps to a {kept[k][1]}, but the graph's {name} is a {types[name]} "
                                  "(type mismatch)")
        self.refuse()
        seen, observed = set(names.values()), {names[k] for k in map(str, self.scene.observed) if k in names}
        graph = self.facts(seen)  # what the scan speaks for, and the things the graph has beside what it shows
        graph |= self.facts({a.args[0] for a in graph} - seen)
        scan = {GroundAtom(p, (names[s], names[o])) for s, p, o in rels}
        scan |= {GroundAtom(p, (names[k],)) for k, p in states}
        add, remove, marks = sorted(scan - graph), [], set()
        told = {(a.args[0], a.predicate) for a in scan}
        excluded = {i for a in scan for i in self.instances(a)}
        places: dict[str, list[GroundAtom]] = defaultdict(list)  # the graph's relations of things not seen
        for a in sorted(graph - scan):
            s = a.args[0]
            if s not in seen:
                if len(a.args) == 2:
                    places[s].append(a)
            elif len(a.args) == 1 or (s, a.predicate) in told or a.args[1] in seen or excluded & self.instances(a):
                remove.append(a)
            else:  # the scan shows the thing but not what the graph relates it to
                marks.add((s, a.predicate))
        gone = out_of_view = 0
        for s, atoms in places.items():
            if any(a.args[1] in observed for a in atoms):  # not in an area seen whole: not where it was
                remove += atoms
                marks |= {(s, a.predicate) for a in atoms}
                gone += 1
            elif near := [a for a in atoms if a.args[1] in seen]:  # out of view beside what was seen
                marks |= {(s, a.predicate) for a in near}
                out_of_view += 1
        before = {m for m in self.tx.unknown(seen | {s for s, _ in marks}) if m[1] in self.map.predicates}
        new = sorted(seen - types.keys())
        by_name = {names[k]: kept[k] for k in names}
        moved = {a.args[0] for a in [*add, *remove] if len(a.args) == 2 and a.args[0] in seen} - set(new)
        counts = SceneCounts(len(new), len(moved), out_of_view, gone, sum(len(a.args) == 1 for a in [*add, *remove]))
        delta = Delta(
            add=[Fact.of(a) for a in add], remove=sorted(map(Fact.of, remove), key=by_atom),
            new_entities=[Entity(name=e, type=by_name[e][1], attrs={"class": by_name[e][0].cls.lower(),
                                                                    **({"scene_id": by_name[e][0].key}
                                                                       if by_name[e][0].id is not None else {})})
                          for e in new],
            unknown=[Unknown(entity=e, predicate=p) for e, p in sorted(marks - before)],
            known=[Unknown(entity=e, predicate=p) for e, p in sorted(before - marks) if e in seen],
            source="sensor", text=f"scene: {counts}")
        return delta, counts

    def instances(self, atom: GroundAtom) -> set[tuple[int, tuple[str, ...]]]:
        """The invariant instances an atom belongs to: two atoms of one instance exclude each other."""
        return {(gi, part.key(atom.args)) for gi, g in enumerate(self.domain.invariants) for part in g.parts
                if part.predicate == atom.predicate}


def scene_delta(domain: Domain, scene: Scene, tx: Tx) -> tuple[Delta, SceneCounts]:
    """The one change that makes the graph (as `tx` reads it) hold what a scan shows, and what it changed.

    InputError, naming each, for what the mapping cannot map (an unknown class, a relation or state with no
    predicate, a type mismatch) or a malformed scan; DomainError if the domain has no `[scene]` mapping.
    """
    return _Reader(domain, scene, tx).delta()
