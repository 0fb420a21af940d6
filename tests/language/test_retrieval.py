"""Search-based retrieval (L3M+P retrieval b): a scripted query graph grounded with the real embedding model."""

from __future__ import annotations

import json

import pytest

from kgplan.domains.model import Domain
from kgplan.graph.model import Delta, Entity, Fact
from kgplan.graph.world import WorldGraph
from kgplan.language.llm import LLMError, ScriptedLLM
from kgplan.language.prompts import describe_domain
from kgplan.language.retrieval import entity_index, ground, query_schema, search_retrieve
from kgplan.language.update import Outcome, Retrieval, update

F = Fact.parse


def query(*entities: str | tuple[str, str], relations: tuple[tuple[str, int, int], ...] = ()) -> str:
    """A QueryGraph reply: entities as "description" or ("description", "type"), relations as (predicate, i, j)."""
    nodes = [{"description": e, "type": None} if isinstance(e, str) else {"description": e[0], "type": e[1]}
             for e in entities]
    return json.dumps({"entities": nodes, "relations": [{"predicate": p, "args": list(a)} for p, *a in relations]})


def grounded(world: WorldGraph, reply: str) -> list[str]:
    return ground(world, query_schema(world.domain).model_validate_json(reply))


def test_a_description_finds_its_entity_and_its_neighbourhood(world: WorldGraph) -> None:
    llm, out = ScriptedLLM([query("the laundry room light")]), Outcome("")
    r = search_retrieve(llm, world, "Sandra turned off the laundry room light.", depth=1, out=out)
    assert set(r.entities) == {"laundry_room_light", "laundry_room"}
    assert r.facts == [F("(in_room laundry_room_light laundry_room)")]
    assert len(out.calls) == 1 and out.calls[0].model == "scripted"


def test_the_prompt_shows_the_domain_but_no_entity(world: WorldGraph) -> None:
    llm = ScriptedLLM([query("the laundry room light")])
    search_retrieve(llm, world, "Sandra turned off the laundry room light.")
    text = "\n".join(m["content"] for m in llm.prompts[0])
    assert "Sandra turned off the laundry room light." in text
    assert "(in_room ?x - container/device/furniture/window ?r - room)" in text and "light" in text
    assert not [e.name for e in world.entities() if "_" in e.name and e.name in text]
    assert len(text) < 2000


def test_relations_tell_similar_entities_apart(world: WorldGraph) -> None:
    sinks = ("the sink", "sink")
    assert grounded(world, query(sinks, ("the kitchen", "room"), relations=(("in_room", 0, 1),))) == [
        "kitchen_sink", "kitchen"]
    assert grounded(world, query(sinks, ("the bathroom", "room"), relations=(("in_room", 0, 1),))) == [
        "bathroom_sink", "bathroom"]
    # the mug in the cabinet is the blue one, the one holding juice the red one (also the best match alone)
    assert grounded(world, query(("the mug", "cup"))) == ["red_mug"]
    assert grounded(world, query(("the mug", "cup"), ("the cabinet", "cabinet"), relations=(("inside", 0, 1),)))[0] \
        == "blue_mug"
    assert grounded(world, query(("the mug", "cup"), ("juice", "liquid"), relations=(("cup_contains", 0, 1),)))[0] \
        == "red_mug"


def test_the_mapping_is_injective_and_the_search_bounded(world: WorldGraph) -> None:
    lights = grounded(world, query(*[("a light", "light")] * 6))
    assert len(set(lights)) == 6 and all(n.endswith("_light") for n in lights)
    # more nodes than candidates: the extra ones share the best entity rather than staying unmatched
    mugs = grounded(world, query(*[("a mug", "cup")] * 3))
    assert set(mugs) == {"red_mug", "blue_mug"}


def test_relations_out_of_range_are_ignored_and_an_empty_query_retrieves_nothing(world: WorldGraph) -> None:
    assert grounded(world, query("the apple", relations=(("on", 0, 7),))) == ["apple"]
    assert search_retrieve(ScriptedLLM([query()]), world, "Nothing happened.").entities == {}


def test_the_schema_allows_only_the_domains_relations_and_types(world: WorldGraph) -> None:
    schema = query_schema(world.domain)
    bad = json.dumps({"entities": [{"description": "x", "type": None}],
                      "relations": [{"predicate": "switched_on", "args": [0]}]})  # unary: not a relation
    with pytest.raises(LLMError, match="switched_on"):
        search_retrieve(ScriptedLLM([bad]), world, "x")
    with pytest.raises(LLMError, match="spaceship"):
        search_retrieve(ScriptedLLM([query(("x", "spaceship"))]), world, "x")
    assert schema.__name__ == "QueryGraph"


def test_the_index_embeds_only_new_entities(world: WorldGraph) -> None:
    index = entity_index(world)
    n = index.embedded
    assert n == len(world.entities())
    assert entity_index(world).embedded == n  # nothing changed, nothing embedded
    world.apply(Delta(new_entities=[Entity(name="green_teapot", type="dish")],
                      add=[F("(on green_teapot kitchen_counter)")]))
    assert index.refresh(world.entities()) == ["green_teapot"] and index.embedded == n + 1
    assert grounded(world, query("the green teapot")) == ["green_teapot"]
    assert index.embedded == n + 1


def test_domain_descriptions_are_short(world: WorldGraph) -> None:
    """Prompts show only the predicates that can hold of the retrieved entities, and name long either-types once."""
    r = Retrieval({"laundry_room_light": "light", "laundry_room": "room"},
                  [F("(in_room laundry_room_light laundry_room)")])
    llm = ScriptedLLM([json.dumps({"add": [], "remove": []})])
    update(llm, world, "Nothing happened.", r)
    system = llm.prompts[0][0]["content"]
    assert "(switched_on ?d - device): ?d is switched on" in system and "(in_room ?x" in system
    assert "phone_ringing" not in system and "cup_contains" not in system
    domain = Domain.parse("""(define (domain d) (:requirements :typing) (:types a b c box)
      (:predicates (on ?x - (either a b c) ?y - box) (near ?x - (either c b a) ?y - (either a b c)) (red ?x - a)))""")
    assert describe_domain(domain) == "Predicates:\n(on T1 box)\n(near T1 T1)\n(red a)\nwhere T1 = a/b/c"
