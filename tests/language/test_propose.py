"""Propose, then choose (issue 23) with scripted replies over a fake OpenAI endpoint and the real embedding model:
the prompts and schemas the model gets, the change applied with its provenance, and clarification."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgplan.domains.model import Domain, Problem
from kgplan.graph.model import Fact
from kgplan.graph.world import WorldGraph
from kgplan.language import propose
from kgplan.language.llm import ScriptedLLM
from tests.support.fake_llm import FakeServer, ok
from tests.support.simulation import simulation, small_world

F = Fact.parse
EXAMPLE = {  # an invented mini-situation over the household domain's predicates
    "text": "Ines went to the study and switched off the lamp.", "mentions": ["Ines", "the study", "the lamp"],
    "named": ["ines", "the_study", "study_lamp"],
    "objects": {"ines": "person", "the_study": "room", "the_porch": "room", "study_lamp": "light",
                "study_sofa": "sofa"},
    "init": ["(person_at ines the_porch)", "(in_room study_lamp the_study)", "(in_room study_sofa the_study)",
             "(switched_on study_lamp)"],
    "true": ["(person_at ines the_study)"], "false": ["(switched_on study_lamp)"]}
MOVE = "Omar went to the living room and switched the light off."


@pytest.fixture
def world(world: WorldGraph) -> WorldGraph:
    world.domain.meta["examples"] = [EXAMPLE]
    return world


def schema_of(request: dict) -> dict:
    return request["response_format"]["json_schema"]["schema"]


def test_mentions_then_typed_candidates_then_the_choice_applied(server: FakeServer, world: WorldGraph) -> None:
    reply = {"person_at": "now: person omar is in room living room",
             "switched_on": "no longer: living room light is switched on"}
    server.script = [ok({"mentions": ["Omar", "the living room", "the light"]}), ok(reply), ok(reply)]
    out = propose.tell(server.client(), world, MOVE)
    assert out.error is None and out.clarification is None and out.change is not None
    mentions, choose, again = server.requests
    # 1: the words naming people, rooms and things: short strings, the worked example before the sentence
    items = schema_of(mentions)["properties"]["mentions"]
    assert items["items"] == {"type": "string", "minLength": 1, "maxLength": 48} and items["maxItems"] == 8
    system, shot, words, shot2, ids, last = mentions["messages"]
    assert "copy, word for word" in system["content"] and "Candidates" not in last["content"]
    assert shot["content"] == f"Sentence: {EXAMPLE['text']}" and json.loads(words["content"]) == {
        "mentions": EXAMPLE["mentions"]}
    assert last["content"] == f"Sentence: {MOVE}"
    # 3: the candidates the domain admits for what was named (the room's light, not another), glossed
    assert choose["messages"][-1]["content"] == (
        f"Sentence: {MOVE}\nCandidates:\n- now: person omar is in room living room\n"
        "- no longer: living room light is switched on")  # not the room's window or tv: not named
    # asked again (what the model chose both times is taken), in reverse order within what becomes true and what
    # stops: here one of each
    assert again["messages"][-1]["content"] == choose["messages"][-1]["content"]
    # one choice per predicate, among its own (type-correct) candidates as shown, or none: no letter an example's
    # answer for the same predicate has (the 0.5B copied those)
    assert {p: v["enum"] for p, v in schema_of(choose)["properties"].items()} == {
        "person_at": ["now: person omar is in room living room", "none"],
        "switched_on": ["no longer: living room light is switched on", "none"]}
    # the example's candidates and answer are computed from the domain, as a real sentence's are
    assert shot2["content"] == (
        f"Sentence: {EXAMPLE['text']}\nCandidates:\n- now: person ines is in room the study\n"
        "- no longer: study lamp is switched on")
    assert json.loads(ids["content"]) == {"person_at": "now: person ines is in room the study",
                                          "switched_on": "no longer: study lamp is switched on"}
    # the answers' JSON without spaces, which the replies copy: two tokens fewer per field
    assert ids["content"].startswith('{"person_at":"now: ') and '","switched_on":"' in ids["content"]
    assert words["content"].startswith('{"mentions":["')
    # one prefix (instructions, then the examples) for both questions and every sentence: a server computes it once
    assert choose["messages"][:-1] == mentions["messages"][:-1] == propose_prefix(world)
    # 4: the old room goes by the invariant, not by the model; each fact says how it was chosen
    delta = out.change.delta
    assert set(delta.add) == {F("(person_at omar living_room)")}
    assert set(delta.remove) == {F("(person_at omar kitchen)"), F("(switched_on living_room_light)")}
    assert delta.how["(person_at omar living_room)"] == "chosen by fake-model among 2 candidates"
    assert delta.how["(person_at omar kitchen)"].startswith("removed by the invariant: exactly one of person_at")
    assert set(out.stages) == {"mentions", "ground", "candidates", "choose", "apply"}
    assert out.stages["mentions"]["prompt_tokens"] == 10
    assert out.stages["choose"]["completion_tokens"] == 10  # both asks


def propose_prefix(world: WorldGraph) -> list[dict]:
    """The messages before the sentence, as another sentence gets them."""
    llm = ScriptedLLM([json.dumps({"mentions": []})])
    propose.tell(llm, world, "Nothing named here.")
    return llm.prompts[0][:-1]


def test_the_two_orders_go_one_to_each_server_of_the_model(server: FakeServer, replica: FakeServer,
                                                           world: WorldGraph) -> None:
    """With a second server of the model (`KGPLAN_LLM_BASE_URL=a,b`), the choice in two orders is asked of both at
    once; the words question and the targeted ones go to the first, and the second reads the words question
    meanwhile (a reply of one token), so that its prompt cache holds the sentence."""
    reply = {"person_at": "now: person omar is in room living room",
             "switched_on": "no longer: living room light is switched on"}
    server.script = [ok({"mentions": ["Omar", "the living room", "the light"]}), ok(reply)]
    replica.script = [ok(reply), ok(reply)]  # the mirror's reply is not read
    llm = server.client(replicas=(replica.url,))
    out = propose.tell(llm, world, MOVE)
    assert out.change is not None and len(out.calls) == 3
    llm._mirrors.shutdown(wait=True)
    (words, choose), ((mirror,), (again,)) = server.requests, [
        [r for r in replica.requests if (r.get("max_tokens") == 1) is m] for m in (True, False)]
    assert mirror["messages"] == words["messages"] and "response_format" not in mirror
    assert choose["messages"][:-1] == again["messages"][:-1] and "Candidates:" in again["messages"][-1]["content"]


def test_a_named_person_no_order_moved_is_asked_where_they_are(world: WorldGraph) -> None:
    """Both orders chose the light alone for "Omar went to the bedroom and switched the light on": where Omar is now
    is asked among his candidate places and where he is (the 0.5B chose the move when asked: seed218, 249; asked
    with the move alone, the 1.5B moved people who turned on a TV in another room); "unclear", or where he was, moves
    no one."""
    text = "Omar went to the bedroom and switched the light on."
    light = {"switched_on": "now: bedroom light is switched on"}
    for answer, moved in (("person omar is in room bedroom", True), ("unclear", False),
                          ("person omar is in room kitchen", False)):
        llm = ScriptedLLM([json.dumps({"mentions": ["Omar", "the bedroom", "the light"]}), json.dumps(light),
                           json.dumps(light), json.dumps({"answer": answer})])
        out = propose.tell(llm, world, text, dry_run=True)
        assert out.delta is not None, out.error
        question = llm.prompts[3][-1]["content"]
        assert "Question: Which one is true now?\nOptions:\n- person omar is in room bedroom\n" \
               "- person omar is in room kitchen\n" in question
        assert (F("(person_at omar bedroom)") in out.delta.add) is moved
        if moved:
            assert out.delta.how["(person_at omar bedroom)"] == (
                "chosen by scripted among 2 candidates; scripted chose it as where they are when asked")
        assert F("(switched_on bedroom_light)") in out.delta.add


def test_candidates_are_type_correct_one_predicate_at_a_time(world: WorldGraph) -> None:
    domain = world.domain
    entities = {"lena": "person", "dune_book": "book", "bedroom": "room", "bedroom_bed": "bed"}
    state = {f.atom for f in world.facts_about(entities)}
    cands = propose.candidates(domain, entities, state)
    assert cands, "the named entities admit changes"
    for c in cands:
        params = domain.predicates[c.atom.predicate].params
        assert all(domain.accepts(p.types, entities[a]) for p, a in zip(params, c.atom.args, strict=True)), c
        assert c.atom.predicate != "in_room"  # fixed: no action changes it, and domain.toml does not say `told`
    atoms = {(c.atom, c.value) for c in cands}
    assert (F("(held_by dune_book lena)").atom, True) in atoms and (F("(on dune_book bedroom_bed)").atom, True) in atoms
    # already true, and an invariant replaces it: proposed all the same (choosing it changes nothing)
    assert (F("(person_at lena bedroom)").atom, True) in atoms
    assert not any(c.atom == F("(on dune_book bookshelf)").atom for c in cands)  # its old place: the invariant's


def test_a_word_that_several_entities_fit_is_a_clarification_then_answered(world: WorldGraph) -> None:
    text = "Sandra washed the mug."
    llm = ScriptedLLM([json.dumps({"mentions": ["Sandra", "the mug"]}), json.dumps({"answer": "unclear"})])
    out = propose.tell(llm, world, text)
    assert out.change is None and out.clarification is not None
    assert out.clarification.word == "the mug" and set(out.clarification.options) == {"red_mug", "blue_mug"}
    which = llm.prompts[1][-1]["content"]
    assert which.startswith(f"Sentence: {text}\nQuestion: Which one does 'the mug' name?\nOptions:\n")
    assert "red mug" in which and "blue mug" in which and llm.prompts[1][:-1] == propose_prefix(world)
    before = world.facts()
    assert world.facts() == before
    llm = ScriptedLLM([json.dumps({"mentions": ["Sandra", "the mug"]}),
                       *[json.dumps({"clean": "now: red mug is clean"})] * 2])
    out = propose.tell(llm, world, text, answers={"the mug": "red_mug"})
    assert out.clarification is None and out.change is not None, out.error
    assert "- now: red mug is clean" in llm.prompts[1][-1]["content"].split("\n")
    (fact,) = out.change.delta.add
    assert "red_mug" in fact.args and "the user said 'the mug' means red_mug" in out.change.delta.how[str(fact)]


def test_a_name_the_sentence_spells_out_is_grounded_without_a_question(world: WorldGraph) -> None:
    """The model copied "the mug" and "the sink" without the words that say which (two of each fit); the sentence
    names the red mug and the bathroom sink in full, so no question is asked and no clarification returned."""
    text = "Sandra put the red mug in the bathroom sink."
    llm = ScriptedLLM([json.dumps({"mentions": ["Sandra", "the mug", "the sink"]}),
                       *[lambda m: json.dumps(chosen(m, inside="now: item red mug is inside bathroom sink"))] * 2])
    out = propose.tell(llm, world, text)
    assert out.clarification is None and out.change is not None, out.error
    assert len(llm.prompts) == 3  # the words, then the choice (twice): no "which one" question
    assert F("(inside red_mug bathroom_sink)") in out.change.delta.add
    assert F("(on red_mug living_room_table)") in out.change.delta.remove


def test_two_chosen_places_for_one_thing_are_a_question_between_them(world: WorldGraph) -> None:
    """First to the model (a targeted question), then, where the sentence does not tell, to the user."""
    text = "Lena took the dune book to the bed."
    replies = [json.dumps({"mentions": ["Lena", "the dune book", "the bed"]}),
               lambda m: json.dumps(both(m)), lambda m: json.dumps(both(m))]
    llm = ScriptedLLM([*replies, json.dumps({"answer": "unclear"})])
    out = propose.tell(llm, world, text)
    assert out.change is None and out.clarification is not None
    assert llm.prompts[-1][-1]["content"] == (
        f"Sentence: {text}\nQuestion: Which one is true now?\nOptions:\n"
        "a) item dune book is held by person lena\nb) item dune book is on bedroom bed\n"
        'Answer with one of the options, or "unclear" if it does not tell.')
    # the prefix the words and the choice share (instructions, worked examples): a server computes it once
    assert llm.prompts[-1][:-1] == llm.prompts[0][:-1] == propose_prefix(world)
    options = set(out.clarification.options)
    assert options == {"(held_by dune_book lena)", "(on dune_book bedroom_bed)"}
    out = propose.tell(ScriptedLLM(replies), world, text,
                       answers={out.clarification.word: "(on dune_book bedroom_bed)"})
    assert out.change is not None and F("(on dune_book bedroom_bed)") in out.change.delta.add
    assert F("(on dune_book bookshelf)") in out.change.delta.remove
    assert "the user chose it over the other" in out.change.delta.how["(on dune_book bedroom_bed)"]
    world.undo(out.change.id)
    out = propose.tell(ScriptedLLM([*replies, json.dumps({"answer": "b"})]), world, text)
    assert out.change is not None and F("(on dune_book bedroom_bed)") in out.change.delta.add
    assert "scripted chose it over the other" in out.change.delta.how["(on dune_book bedroom_bed)"]


def chosen(messages: list[dict], **glosses: str) -> dict[str, str]:
    """A choice per predicate: the candidate shown with the gloss given for it."""
    shown = messages[-1]["content"].split("\n")
    assert all(f"- {g}" in shown for g in glosses.values()), shown
    return dict(glosses)


def both(messages: list[dict]) -> dict[str, str]:
    """The candidates 'lena holds the book' and 'the book is on the bed'."""
    return chosen(messages, held_by="now: item dune book is held by person lena",
                  on="now: item dune book is on bedroom bed")


def test_the_agent_tells_by_proposing_and_a_clarification_is_answered(world: WorldGraph) -> None:
    from kgplan.agent.agent import Agent

    text = "Omar put the mug in the sink."
    mentions = json.dumps({"mentions": ["Omar", "the mug", "the sink"]})
    llm = ScriptedLLM([mentions, json.dumps({"answer": "unclear"}), mentions, json.dumps({"answer": "unclear"})])
    agent = Agent(world, llm=llm)
    out = agent.tell(text, propose=True)
    assert out.clarification and out.clarification.word == "the mug" and out.change is None
    out = agent.tell(text, propose=True, answers={"the mug": "blue_mug"})
    assert out.clarification and out.clarification.word == "the sink"  # two sinks, and no room named
    sink = "now: item blue mug is inside kitchen sink"
    llm.replies.extend([mentions, *[lambda m: json.dumps(chosen(m, inside=sink))] * 2])
    out = agent.tell(text, propose=True, answers={"the mug": "blue_mug", "the sink": "kitchen_sink"})
    assert out.change is not None and F("(inside blue_mug kitchen_sink)") in out.change.delta.add
    assert F("(inside blue_mug kitchen_cabinet)") in out.change.delta.remove  # by the invariant


def test_the_bundled_l3mp_examples_answer_with_their_candidates(tmp_path: Path) -> None:
    """Each worked example of domains/l3mp/domain.toml: what it says becomes true or false is a candidate (but an old
    value an invariant removes), and the answer chooses exactly that."""
    domain = simulation(tmp_path)
    shown = propose.examples(domain)
    assert len(shown) == len(domain.meta["examples"]) == 10
    replaced = propose.replaced(domain)
    for ex, meta in zip(shown, domain.meta["examples"], strict=True):
        picked = {i for i in ex.answer.values() if i != propose.NONE}
        assert all(f"- {i}" in ex.lines.split("\n") for i in picked)
        wanted = {how + propose.gloss(domain, a)
                  for key, how in (("true", propose.NOW), ("false", propose.NO_LONGER))
                  for a in (F(f).atom for f in meta[key]) if how == propose.NOW or a.predicate not in replaced}
        assert picked == wanted, ex.text
    # a dirty glass that holds tea, picked up: two lone states in a row answered "none" (the 0.5B, after "none" to
    # "now: glass is clean", chose the next lone state, "now: glass is empty", for "picked up the glass": seed202,
    # 246, 266; not with this example)
    # a TV turned on in another room: the move is a candidate, answered "none" (the 1.5B moved 18 of 20 people who
    # did so without this example: dev runs)
    tv = next(ex for ex in shown if "weather channel" in ex.text)
    assert tv.answer["person_in_room"] == propose.NONE and "- now: nell is in ivo bedroom" in tv.lines.split("\n")
    # a dirty, wet scarf picked up in the laundry room: it becomes neither clean nor dry (the 1.5B made clean 10 of 10
    # dirty clothes picked up there with a clean scarf in this example, 0 of 13 with this one: dev runs)
    scarf = next(ex for ex in shown if "Ivo's scarf" in ex.text)
    assert scarf.answer["cloth_is_clean"] == scarf.answer["cloth_is_dry"] == propose.NONE
    assert {"- now: ivo scarf is clean", "- now: ivo scarf is dry"} <= set(scarf.lines.split("\n"))
    glass = next(ex for ex in shown if "Kai's glass" in ex.text)
    assert list(glass.answer)[:2] == ["dish_is_clean", "glass_empty"]
    assert glass.answer["dish_is_clean"] == glass.answer["glass_empty"] == propose.NONE


def test_a_phrase_spelling_out_two_names_names_both(world: WorldGraph) -> None:
    """"Sandra the dune book" copied as one phrase names the person and the book (each by its whole name), so the
    handing is proposed; matched by meaning, the phrase named only one of them."""
    text = "Lena handed Sandra the dune book."
    llm = ScriptedLLM([json.dumps({"mentions": ["Lena", "Sandra the dune book"]}),
                       *[lambda m: json.dumps(chosen(m, held_by="now: item dune book is held by person sandra"))] * 2])
    out = propose.tell(llm, world, text)
    assert out.change is not None and len(llm.prompts) == 3, out.error
    assert F("(held_by dune_book sandra)") in out.change.delta.add
    assert F("(on dune_book bookshelf)") in out.change.delta.remove


def test_a_named_rooms_fixture_is_preferred_only_of_the_kind_the_word_fits(world: WorldGraph) -> None:
    """The living room's bookshelf fits "the book" nearly as well as the dune book does: a named room's fixtures come
    first among things of the kind the word best fits (which table, which sink), not over a thing of another kind."""
    text = "Lena went to the living room and picked up the book."
    llm = ScriptedLLM([json.dumps({"mentions": ["Lena", "the living room", "the book"]}),
                       *[lambda m: json.dumps(chosen(m, held_by="now: item dune book is held by person lena",
                                                     person_at="now: person lena is in room living room"))] * 2])
    out = propose.tell(llm, world, text)
    assert out.change is not None, out.error
    assert F("(held_by dune_book lena)") in out.change.delta.add


GLASS = """(define (problem glass) (:domain simulation)
  (:objects helen - person the_kitchen michael_bedroom - room glass - kitchenware the_glass_castle_book - book
            the_kitchen_table - table)
  (:init (person_in_room helen michael_bedroom) (room_has the_kitchen the_kitchen_table)
         (placed_at_table glass the_kitchen_table) (placed_at_table the_glass_castle_book the_kitchen_table)))"""


def test_a_phrase_that_is_an_entitys_whole_name_names_it(tmp_path: Path) -> None:
    """"the glass" is the entity glass, an article aside: by meaning alone, "the glass castle book" fits it better."""
    g = small_world(tmp_path, GLASS)
    text = "Helen went to the kitchen and picked up the glass."
    llm = ScriptedLLM([json.dumps({"mentions": ["Helen", "the kitchen", "the glass"]}),
                       *[lambda m: json.dumps(chosen(m, in_person_hand="now: helen holds glass",
                                                     person_in_room="now: helen is in the kitchen"))] * 2])
    out = propose.tell(llm, g, text)
    assert out.change is not None and F("(in_person_hand glass helen)") in out.change.delta.add, out.error
    assert not any("castle" in line for line in llm.prompts[1][-1]["content"].split("\n"))


def test_a_thing_whose_whole_name_the_sentence_spells_outside_the_copied_phrases_is_named(tmp_path: Path) -> None:
    """A small model copied "Helen" and "the kitchen" from a sentence naming the glass castle book too: the entity the
    sentence spells by its whole name is named all the same, and a word inside a copied phrase names nothing more."""
    g = small_world(tmp_path, GLASS)
    assert propose.unsaid("Helen took the glass castle book to Michael's bedroom.", ["Helen", "Michael's bedroom"],
                          ["helen", "michael", "michael_bedroom", "glass", "the_glass_castle_book"]) == [
        "the_glass_castle_book"]
    text = "Helen went to the kitchen and picked up the glass castle book."
    llm = ScriptedLLM([json.dumps({"mentions": ["Helen", "the kitchen"]}),
                       *[lambda m: json.dumps(chosen(m, in_person_hand="now: helen holds the glass castle book",
                                                     person_in_room="now: helen is in the kitchen"))] * 2])
    out = propose.tell(llm, g, text)
    assert out.change is not None and F("(in_person_hand the_glass_castle_book helen)") in out.change.delta.add, \
        out.error


LEVELS = """(define (problem levels) (:domain simulation)
  (:objects gregory mary - person robert_bedroom the_kitchen - room brian_cardigan - cloth
            robert_bedroom_shelf - shelf robert_bedroom_table - table
            shelf_level_1 shelf_level_2 shelf_level_3 shelf_level_4 shelf_level_5 shelf_level_6 - shelf_level)
  (:init (person_in_room gregory the_kitchen) (person_in_room mary the_kitchen) (in_person_hand brian_cardigan gregory)
         (room_has robert_bedroom robert_bedroom_shelf) (room_has robert_bedroom robert_bedroom_table)
         (shelf_has_level robert_bedroom_shelf shelf_level_1) (shelf_has_level robert_bedroom_shelf shelf_level_2)
         (shelf_has_level robert_bedroom_shelf shelf_level_3) (shelf_has_level robert_bedroom_shelf shelf_level_4)
         (shelf_has_level robert_bedroom_shelf shelf_level_5) (shelf_has_level robert_bedroom_shelf shelf_level_6)))"""


@pytest.fixture
def levels(tmp_path: Path) -> WorldGraph:
    return small_world(tmp_path, LEVELS)


TABLE = "now: brian cardigan is on robert bedroom table"


def test_a_named_rooms_fixture_the_sentence_names_is_proposed_though_not_copied(levels: WorldGraph) -> None:
    """The model copied the person, the room and the thing moved, not "the table": the room's table, whose other
    words the sentence says, is proposed as well (and not the room's shelf, which it does not say)."""
    text = "Gregory went to Robert's bedroom and placed Brian's cardigan on the table."
    llm = ScriptedLLM([json.dumps({"mentions": ["Gregory", "Robert's bedroom", "Brian's cardigan"]}),
                       *[lambda m: json.dumps(chosen(m, person_in_room="now: gregory is in robert bedroom",
                                                     placed_at_table=TABLE))] * 2])
    out = propose.tell(llm, levels, text)
    assert out.change is not None, out.error
    assert F("(placed_at_table brian_cardigan robert_bedroom_table)") in out.change.delta.add
    assert not any("shelf" in line for line in llm.prompts[1][-1]["content"].split("\n"))


SHELF = "now: brian cardigan is on robert bedroom shelf"

GREGORY = "now: gregory is in robert bedroom"


def test_a_level_named_by_its_ordinal_is_grounded_without_a_question(levels: WorldGraph) -> None:
    """"the 6th level of the shelf" fits the six levels about as well by meaning; the sentence says 6 (an ordinal's
    ending aside), so the level is shelf_level_6 with no question, and the shelf is the named room's."""
    text = "Gregory went to Robert's bedroom and placed Brian's cardigan on the 6th level of the shelf."
    llm = ScriptedLLM([json.dumps({"mentions": ["Gregory", "Robert's bedroom", "Brian's cardigan",
                                                "the 6th level of the shelf"]}),
                       *[lambda m: json.dumps(chosen(m, on_shelf_level="now: brian cardigan is on shelf level 6",
                                                     placed_at_shelf=SHELF, person_in_room=GREGORY))] * 2])
    out = propose.tell(llm, levels, text)
    assert out.clarification is None and out.change is not None, out.error
    assert len(llm.prompts) == 3  # the words, the choice twice: no question
    assert {F("(on_shelf_level brian_cardigan shelf_level_6)"),
            F("(placed_at_shelf brian_cardigan robert_bedroom_shelf)")} <= set(out.change.delta.add)


def test_a_phrase_matched_by_meaning_also_names_the_whole_names_it_spells_beside(levels: WorldGraph) -> None:
    """The model copied "Brian's cardigan on the 6th level of the shelf" as one phrase: by meaning it names the level,
    and the cardigan, whose whole name the rest of it spells out, is named too (its place then proposed); a phrase
    spelling a name within the matched entity's own names nothing more."""
    text = "Gregory went to Robert's bedroom and placed Brian's cardigan on the 6th level of the shelf."
    llm = ScriptedLLM([json.dumps({"mentions": ["Gregory", "Robert's bedroom",
                                                "Brian's cardigan on the 6th level of the shelf"]}),
                       *[lambda m: json.dumps(chosen(m, on_shelf_level="now: brian cardigan is on shelf level 6",
                                                     placed_at_shelf=SHELF, person_in_room=GREGORY))] * 2])
    out = propose.tell(llm, levels, text)
    assert out.change is not None, out.error
    assert {F("(on_shelf_level brian_cardigan shelf_level_6)"),
            F("(placed_at_shelf brian_cardigan robert_bedroom_shelf)")} <= set(out.change.delta.add)
    names = ["robert", "robert_bedroom", "robert_bedroom_tv", "robert_bedroom_tv_remote", "spoon", "the_kitchen_sink"]
    assert propose.besides("the remote for Robert's bedroom TV", "robert_bedroom_tv_remote", names) == ([], None)
    assert propose.besides("spilled on the spoon", "spoon", names) == ([], None)  # no other name's word
    assert propose.besides("the spoon in the sink", "spoon", names) == ([], "in sink")
    assert propose.besides("the spoon in the sink", "the_kitchen_sink", names) == (["spoon"], None)


def test_where_two_orders_differ_a_third_decides_a_value_a_thing_must_have(world: WorldGraph) -> None:
    """Asked again with the candidates in reverse order within what becomes true and what stops (wholly reversed,
    the 0.5B dropped the holder of what was picked up); where the two replies differ, a third order (rotated by
    half) decides where a thing is (an exactly-one group): what two of the three replies choose is applied (the
    0.5B answered "none" for the holder of a phone picked up from a shelf in the second order alone), and so is a
    place one order gives where the others say none. A free predicate (no exactly-one group: a light) changes only
    where the first two agree, whatever the third says (the 0.5B's "no longer dry" for "picked up Margaret's
    socks" in the second and third order: seed212)."""
    text = "Omar went to the living room, took the dune book and switched the light off."
    move = {"person_at": "now: person omar is in room living room"}
    held, off = "now: item dune book is held by person omar", "no longer: living room light is switched on"
    for third in ["none", held]:
        llm = ScriptedLLM([json.dumps({"mentions": ["Omar", "the living room", "the dune book", "the light"]}),
                           json.dumps(move | {"held_by": held, "switched_on": off}),
                           json.dumps(move | {"held_by": "none", "switched_on": "none"}),
                           json.dumps(move | {"held_by": third, "switched_on": off})])
        out = propose.tell(llm, world, text, dry_run=True)
        assert out.delta is not None, out.error
        first, again, last = (llm.prompts[i][-1]["content"].split("\n")[2:] for i in (1, 2, 3))
        now = [x for x in first if x.startswith("- now:")]
        assert len(now) > 1 and again == now[::-1] + [x for x in first if x not in now][::-1]
        assert last == first[len(first) // 2:] + first[:len(first) // 2]
        assert F("(held_by dune_book omar)") in out.delta.add
        assert F("(person_at omar living_room)") in out.delta.add
        assert F("(switched_on living_room_light)") not in out.delta.remove


def test_a_place_one_order_gives_where_the_others_say_none_is_taken(world: WorldGraph) -> None:
    """Where a person or a thing is (one place: an exactly-one group) is taken from the order that gives it where the
    others answer none (the 0.5B answered "none" for "Brian is in the kitchen" beside "the kitchen overhead light is
    on" in one order, and for "papaya is in the kitchen fridge" in one of two: seed324); a thing's state one order
    gives alone is not."""
    text = "Omar went to the living room, took the dune book and switched the light off."
    move = {"person_at": "now: person omar is in room living room"}
    off = {"switched_on": "no longer: living room light is switched on"}
    nothing = {"person_at": "none", "switched_on": "none"}
    held = {"held_by": "now: item dune book is held by person omar"}
    llm = ScriptedLLM([json.dumps({"mentions": ["Omar", "the living room", "the dune book", "the light"]}),
                       json.dumps(move | off), json.dumps(nothing | held), json.dumps(nothing)])
    out = propose.tell(llm, world, text, dry_run=True)
    assert out.delta is not None, out.error
    assert set(out.delta.add) == {F("(person_at omar living_room)"), F("(held_by dune_book omar)")}
    assert F("(switched_on living_room_light)") not in out.delta.remove


REMOTE = """(define (problem remote) (:domain simulation)
  (:objects matthew - person gary_bedroom michael_bedroom - room gary_bedroom_table - table
            michael_bedroom_tv - tv michael_bedroom_tv_remote gary_bedroom_tv_remote - remote)
  (:init (person_in_room matthew michael_bedroom) (room_has gary_bedroom gary_bedroom_table)
         (room_has michael_bedroom michael_bedroom_tv) (tv_on michael_bedroom_tv)
         (placed_at_table michael_bedroom_tv_remote gary_bedroom_table)))"""


def test_a_thing_whose_name_holds_a_named_ones_is_proposed_where_the_sentence_says_its_other_words(
        tmp_path: Path) -> None:
    """The model copied "Michael's bedroom TV" for "the remote for Michael's bedroom TV": the remote, whose name is
    the TV's and a word the sentence says, is proposed too; not Gary's bedroom's, whose name is the named room's and
    two words the sentence says."""
    g = small_world(tmp_path, REMOTE)
    text = "Matthew went to Gary's bedroom and picked up the remote for Michael's bedroom TV."
    held, moved = "now: matthew holds michael bedroom tv remote", "now: matthew is in gary bedroom"
    llm = ScriptedLLM([json.dumps({"mentions": ["Matthew", "Gary's bedroom", "Michael's bedroom TV"]}),
                       *[lambda m: json.dumps(chosen(m, in_person_hand=held, person_in_room=moved))] * 2])
    out = propose.tell(llm, g, text)
    assert out.change is not None, out.error
    assert F("(in_person_hand michael_bedroom_tv_remote matthew)") in out.change.delta.add
    assert not any("gary bedroom tv remote" in line for line in llm.prompts[1][-1]["content"].split("\n"))


ROOMS = """(define (problem rooms) (:domain simulation)
  (:objects deborah - person deborah_bedroom maria_bedroom - room deborah_bedroom_window maria_bedroom_window - window)
  (:init (person_in_room deborah deborah_bedroom) (room_has deborah_bedroom deborah_bedroom_window)
         (room_has maria_bedroom maria_bedroom_window) (window_open deborah_bedroom_window)
         (window_open maria_bedroom_window)))"""


def test_a_thing_of_a_type_the_sentence_names_one_of_is_not_named_by_the_rest_of_its_name(tmp_path: Path) -> None:
    """deborah_bedroom holds Deborah's name, and the sentence says "bedroom"; but the bedroom it names is Maria's:
    only Maria's bedroom and its window are proposed."""
    g = small_world(tmp_path, ROOMS)
    text = "Deborah went to Maria's bedroom and closed the blinds of the window."
    closed = "no longer: the blinds of maria bedroom window are open"
    llm = ScriptedLLM([json.dumps({"mentions": ["Deborah", "Maria's bedroom", "the window"]}),
                       *[lambda m: json.dumps(chosen(m, person_in_room="now: deborah is in maria bedroom",
                                                     window_open=closed))] * 2])
    out = propose.tell(llm, g, text)
    assert out.change is not None, out.error
    assert not any("deborah bedroom" in line for line in llm.prompts[1][-1]["content"].split("\n"))
    assert F("(person_in_room deborah maria_bedroom)") in out.change.delta.add



WINDOWS = """(define (problem windows) (:domain simulation)
  (:objects charles - person carol_bedroom charles_bedroom the_living_room - room
            carol_bedroom_window charles_bedroom_window the_living_room_window - window)
  (:init (person_in_room charles charles_bedroom) (room_has carol_bedroom carol_bedroom_window)
         (room_has charles_bedroom charles_bedroom_window) (room_has the_living_room the_living_room_window)
         (window_open carol_bedroom_window)))"""


def test_of_the_names_a_sentence_spells_out_one_a_named_room_owns_is_taken(tmp_path: Path) -> None:
    """"Charles went to Carol's bedroom and closed the blinds of the window" says every word of charles_bedroom_window
    too, and MiniLM puts "the window" nearer it (and nearest the living room's): the window Carol's bedroom owns is
    the one named (seed309)."""
    g = small_world(tmp_path, WINDOWS)
    text = "Charles went to Carol's bedroom and closed the blinds of the window."
    llm = ScriptedLLM([json.dumps({"mentions": ["Charles", "Carol's bedroom", "the window"]}), "{}", "{}"])
    propose.tell(llm, g, text, dry_run=True)
    lines = llm.prompts[1][-1]["content"].split("\n")
    assert "- no longer: the blinds of carol bedroom window are open" in lines, lines
    assert not any("charles bedroom window" in line for line in lines)


def test_of_the_names_a_sentence_spells_out_one_it_says_word_after_word_is_taken(tmp_path: Path) -> None:
    """"Anna went to Helen's bedroom and opened the blinds of the window", copied as "Anna", "the bedroom", "the
    window": the sentence says every word of anna_bedroom too, not one after the other (seed391: a question)."""
    g = small_world(tmp_path, """(define (problem windows) (:domain simulation)
  (:objects anna helen - person anna_bedroom helen_bedroom the_kitchen - room
            anna_bedroom_window helen_bedroom_window the_kitchen_window - window
            anna_bedroom_light helen_bedroom_light the_kitchen_light - light)
  (:init (person_in_room anna the_kitchen) (room_has anna_bedroom anna_bedroom_window)
         (room_has helen_bedroom helen_bedroom_window) (room_has the_kitchen the_kitchen_window)
         (room_has anna_bedroom anna_bedroom_light) (room_has helen_bedroom helen_bedroom_light)
         (room_has the_kitchen the_kitchen_light) (window_open helen_bedroom_window)))""")
    text = "Anna went to Helen's bedroom and opened the blinds of the window."
    llm = ScriptedLLM([json.dumps({"mentions": ["Anna", "the bedroom", "the window"]}), "{}", "{}"])
    out = propose.tell(llm, g, text, dry_run=True)
    assert out.clarification is None
    lines = llm.prompts[1][-1]["content"].split("\n")
    assert {"- now: anna is in helen bedroom", "- no longer: the blinds of helen bedroom window are open"} <= set(lines)
    assert not any("anna bedroom" in line for line in lines), lines


PHONES = """(define (problem phones) (:domain simulation)
  (:objects sharon james tyler christine - person james_phone sharon_phone tyler_phone christine_phone - phone)
  (:init))"""


def test_a_word_the_sentence_names_a_thing_of_by_meaning_names_the_one_it_spells_out(tmp_path: Path) -> None:
    """The 0.5B copied "ringing" from "Sharon's phone started ringing"; MiniLM puts it nearest another phone, and the
    two orders chose different phones, so nothing changed (seed305). Of its type, the sentence spells out
    sharon_phone's whole name: that one is named, and the only candidate."""
    g = small_world(tmp_path, PHONES)
    text = "Sharon's phone started ringing."
    llm = ScriptedLLM([json.dumps({"mentions": [" Sharon's phone", "ringing"]}), "{}", "{}"])
    propose.tell(llm, g, text, dry_run=True)
    assert llm.prompts[1][-1]["content"].split("\n")[2:] == ["- now: sharon phone is ringing"]


SINK = """(define (problem sink) (:domain simulation)
  (:objects laura - person the_kitchen the_hall - room the_kitchen_sink - kitchensink fork - kitchenware)
  (:init (person_in_room laura the_hall) (placed_at_kitchensink fork the_kitchen_sink)))"""


def test_a_free_change_far_from_the_sentences_meaning_is_not_proposed(tmp_path: Path) -> None:
    """"Washed the fork in the sink" names the sink, but its meaning (MiniLM) is far from "the faucet of the kitchen
    sink is turned on": not a candidate (the 0.5B chose it in every washing sentence); "turned on the faucet of the
    sink" is near it. A thing's place is proposed whatever its distance."""
    g = small_world(tmp_path, SINK)
    for text, shown in (("Laura went to the kitchen and washed the fork in the sink.", False),
                        ("Laura went to the kitchen and turned on the faucet of the sink.", True)):
        llm = ScriptedLLM([json.dumps({"mentions": ["Laura", "the kitchen", "the fork", "the sink"]}), "{}", "{}"])
        propose.tell(llm, g, text, dry_run=True)
        lines = llm.prompts[1][-1]["content"].split("\n")
        assert ("- now: the faucet of the kitchen sink is turned on" in lines) is shown, lines
        assert "- now: laura is in the kitchen" in lines

SHELVES = """(define (domain shelves) (:requirements :typing)
  (:types person room cloth shelf shelf_level)
  (:predicates (person_in_room ?a - person ?b - room) (room_has ?a - room ?b - shelf)
    (shelf_has_level ?a - shelf ?b - shelf_level) (in_person_hand ?a - cloth ?b - person)
    (placed_at_shelf ?a - cloth ?b - shelf) (on_shelf_level ?a - cloth ?b - shelf_level))
  (:action take :parameters (?a - cloth ?b - person ?s - shelf ?l - shelf_level)
    :precondition (and (placed_at_shelf ?a ?s) (on_shelf_level ?a ?l))
    :effect (and (in_person_hand ?a ?b) (not (placed_at_shelf ?a ?s)) (not (on_shelf_level ?a ?l))))
  (:action put :parameters (?a - cloth ?b - person ?s - shelf ?l - shelf_level)
    :precondition (and (in_person_hand ?a ?b) (shelf_has_level ?s ?l))
    :effect (and (placed_at_shelf ?a ?s) (on_shelf_level ?a ?l) (not (in_person_hand ?a ?b)))))"""
GLOSSES = """[predicates]
in_person_hand = { gloss = "{1} holds {0}" }
placed_at_shelf = { gloss = "{0} is on {1}" }
on_shelf_level = { gloss = "{0} is on {1}" }
person_in_room = { gloss = "{0} is in {1}", told = true }

[[invariants]]
exactly_one = true
parts = [{ predicate = "person_in_room", key = [0] }]
"""
SCARF = """(define (problem scarf) (:domain shelves)
  (:objects otto - person the_hall - room nell_scarf - cloth the_hall_shelf - shelf shelf_level_3 - shelf_level)
  (:init (person_in_room otto the_hall) (room_has the_hall the_hall_shelf)
         (shelf_has_level the_hall_shelf shelf_level_3) (in_person_hand nell_scarf otto)))"""


def shelves(tmp_path: Path, problem: str, domain: str = SHELVES, glosses: str = GLOSSES) -> WorldGraph:
    from kgplan.graph.backends import open_graph

    (tmp_path / "domain.pddl").write_text(domain)
    (tmp_path / "domain.toml").write_text(glosses)
    g = open_graph(f"sqlite:{tmp_path / 'g.db'}")
    g.init(Domain.load(tmp_path / "domain.pddl"))
    g.load_problem(Problem.parse(problem, "scarf"))
    return g


WARDROBE = SHELVES.replace("shelf_level))", """shelf_level)
    (cloth_is_clean ?a - cloth) (cloth_is_dry ?a - cloth))
  (:action stain :parameters (?a - cloth) :effect (not (cloth_is_clean ?a)))
  (:action soak :parameters (?a - cloth) :effect (not (cloth_is_dry ?a)))""")
JACKET = """(define (problem jacket) (:domain shelves)
  (:objects ronald matthew - person janet_bedroom charles_bedroom - room janet_bedroom_shelf - shelf
    shelf_level_3 - shelf_level christopher_jacket - cloth)
  (:init (person_in_room ronald charles_bedroom) (person_in_room matthew janet_bedroom)
    (room_has janet_bedroom janet_bedroom_shelf) (shelf_has_level janet_bedroom_shelf shelf_level_3)
    (placed_at_shelf christopher_jacket janet_bedroom_shelf) (on_shelf_level christopher_jacket shelf_level_3)
    (cloth_is_clean christopher_jacket) (cloth_is_dry christopher_jacket)))"""


def test_a_free_change_of_a_thing_the_sentence_moves_is_not_proposed(tmp_path: Path) -> None:
    """"Picked up Christopher's jacket" means "ronald holds christopher jacket" much more than "christopher jacket is
    dirty" or "is wet": those are not candidates (the 0.5B chose "no longer clean" and lost the holding in two orders
    of three, seed309); a spill that makes it dirty is about as near as "matthew holds christopher jacket": shown."""
    glosses = GLOSSES.replace("[[invariants]]", """cloth_is_clean = { gloss = "{0} is clean", negated = "{0} is dirty" }
cloth_is_dry = { gloss = "{0} is dry", negated = "{0} is wet" }

[[invariants]]""")
    g = shelves(tmp_path, JACKET, WARDROBE, glosses)
    for text, person, shown in (("Ronald went to Janet's bedroom and picked up Christopher's jacket.", "Ronald", False),
                                ("Matthew accidentally spilled something on Christopher's jacket so now it's dirty.",
                                 "Matthew", True)):
        llm = ScriptedLLM([json.dumps({"mentions": [person, "Christopher's jacket"]}), "{}", "{}"])
        propose.tell(llm, g, text, dry_run=True)
        lines = llm.prompts[1][-1]["content"].split("\n")
        assert f"- now: {person.lower()} holds christopher jacket" in lines, lines
        assert ("- no longer: christopher jacket is clean" in lines) is shown, lines
        assert "- no longer: christopher jacket is dry" not in lines  # both mean the holding more than "is wet"


def test_a_choice_that_leaves_a_thing_with_none_of_an_exactly_one_group_is_filled_by_its_one_candidate(
        tmp_path: Path) -> None:
    """Where a thing is, as two exactly-one groups (as in the L3M+P domain: the level's and the shelf's): the model
    chose only "the scarf is on level 3", which removes "otto holds the scarf" from both and gives only one of them a
    fact. The one candidate that fills the other is what the invariant requires: taken, not asked (the 0.5B answered
    "unclear" to such a question: seed222), and not refused."""
    g = shelves(tmp_path, SCARF)
    text = "Otto put Nell's scarf on the 3rd level of the shelf."
    level = "now: nell scarf is on shelf level 3"
    llm = ScriptedLLM([json.dumps({"mentions": ["Otto", "Nell's scarf", "shelf level 3", "the shelf"]}),
                       *[lambda m: json.dumps(chosen(m, on_shelf_level=level))] * 2])
    out = propose.tell(llm, g, text)
    assert out.change is not None and out.clarification is None, out.error
    assert len(llm.prompts) == 3
    assert set(out.change.delta.add) == {F("(on_shelf_level nell_scarf shelf_level_3)"),
                                         F("(placed_at_shelf nell_scarf the_hall_shelf)")}
    assert out.change.delta.remove == [F("(in_person_hand nell_scarf otto)")]
    assert "the one candidate that gives it the value an exactly-one invariant requires" in out.change.delta.how[
        "(placed_at_shelf nell_scarf the_hall_shelf)"]


def test_a_group_left_empty_with_no_candidate_is_asked_among_the_named_things_static_neighbours(tmp_path: Path) -> None:
    """The model named the scarf and the shelf, not the level (seed193): the level's group is left empty and no
    candidate fills it, so the candidates over the named things' static neighbours (the shelf's levels) fill it:
    the level the sentence tells apart ("the 3rd level") where there is one, taken as the one candidate; else the
    model is asked among them (levels that every shelf has are no shelf's own, so they are not proposed with it)."""
    levels = " ".join(f"(shelf_has_level {s} shelf_level_{n})" for s in ("the_hall_shelf", "den_shelf") for n in (1, 3))
    g = shelves(tmp_path, SCARF.replace("the_hall_shelf - shelf shelf_level_3 - shelf_level",
                                        "the_hall_shelf den_shelf - shelf shelf_level_1 shelf_level_3 - shelf_level")
                .replace("(shelf_has_level the_hall_shelf shelf_level_3)", levels))
    for text, asked in [("Otto put Nell's scarf on the 3rd level of the hall shelf.", False),
                        ("Otto put Nell's scarf on a level of the hall shelf.", True)]:
        llm = ScriptedLLM([json.dumps({"mentions": ["Otto", "Nell's scarf", "the hall shelf"]}),
                           lambda m: json.dumps(chosen(m, placed_at_shelf="now: nell scarf is on the hall shelf")),
                           json.dumps({"answer": "nell scarf is on shelf level 3"})])  # one candidate: asked once
        out = propose.tell(llm, g, text, dry_run=True)
        assert out.delta is not None and out.clarification is None, out.error
        assert "shelf level" not in llm.prompts[1][-1]["content"]  # the candidates
        assert (len(llm.prompts) == 3) == asked
        if asked:
            assert llm.prompts[-1][-1]["content"].endswith(
                "Question: Which one is true now?\nOptions:\n- nell scarf is on shelf level 1\n"
                "- nell scarf is on shelf level 3\n"
                'Answer with one of the options, or "unclear" if it does not tell.')
        assert set(out.delta.add) == {F("(on_shelf_level nell_scarf shelf_level_3)"),
                                      F("(placed_at_shelf nell_scarf the_hall_shelf)")}


def test_a_neighbour_is_told_apart_by_the_words_its_name_does_not_share_with_its_kind() -> None:
    """Seed222: "placed the peanut butter on the 11th level of the pantry" (the pantry a shelf; the level not
    copied): the words "shelf level" are every level's, so "11th level" tells shelf_level_11 apart though the
    sentence does not say "shelf" (all 12 levels were asked about, and the 0.5B's grammar let it stop at "level 1")."""
    near = {f"shelf_level_{n}": "shelf_level" for n in range(1, 13)} | {"the_kitchen_pantry": "shelf",
                                                                         "the_kitchen_overhead_light": "light"}
    alone = {"the_kitchen_pantry", "the_kitchen_overhead_light"}  # alone of their types: all of a type told none of
    for text, level in [("on the 11th level of the pantry", "shelf_level_11"), ("on the 1st level", "shelf_level_1")]:
        assert propose.told_apart_by(f"Sam placed the jam {text}.", near) == {level, *alone}
    assert propose.told_apart_by("Sam placed the jam on the top level.", near) == set(near)


def test_a_place_that_holds_already_and_does_not_move_is_a_candidate_that_excludes_another_choice(
        tmp_path: Path) -> None:
    """"washed the fork in the sink" with the fork in the sink already (seed194): the thing's place, a named fixture
    (not a person, who moves), is proposed though it holds; chosen beside "otto holds nell scarf", the two are a
    question, and the place kept changes nothing: only the move is applied."""
    on_shelf = "(placed_at_shelf nell_scarf the_hall_shelf) (on_shelf_level nell_scarf shelf_level_3)"
    g = shelves(tmp_path, SCARF.replace("the_hall - room", "the_hall the_den - room")
                .replace("(person_in_room otto the_hall)", "(person_in_room otto the_den)")
                .replace("(in_person_hand nell_scarf otto)", on_shelf))
    text = "Otto went to the hall and folded Nell's scarf on the hall shelf."
    shelf = "now: nell scarf is on the hall shelf"
    llm = ScriptedLLM([json.dumps({"mentions": ["Otto", "the hall", "Nell's scarf", "the hall shelf"]}),
                       *[lambda m: json.dumps(chosen(m, in_person_hand="now: otto holds nell scarf",
                                                     placed_at_shelf=shelf,
                                                     person_in_room="now: otto is in the hall"))] * 2,
                       lambda m: json.dumps({"answer": next(line[0] for line in m[-1]["content"].split("\n")
                                                            if line.endswith(") nell scarf is on the hall shelf"))})])
    out = propose.tell(llm, g, text)
    assert out.change is not None and out.clarification is None, out.error
    asked = llm.prompts[-1][-1]["content"]
    assert "Which one is true now?" in asked and ") otto holds nell scarf" in asked, asked
    assert out.change.delta.add == [F("(person_in_room otto the_hall)")]
    assert out.change.delta.remove == [F("(person_in_room otto the_den)")]


def test_where_each_of_two_named_people_is_is_a_choice_of_its_own(server: FakeServer, world: WorldGraph) -> None:
    """"Lena went to the kitchen and took the phone from Omar": where Lena is and where Omar is are two choices (with
    one, the 0.5B chose Omar's place, held already, and Lena's move was lost: seed226, 229); a predicate that gives
    one thing a value stays one choice."""
    text = "Lena went to the kitchen and took the phone from Omar."
    reply = {"held_by": "now: item omar phone is held by person lena", "person_at_lena": "now: person lena is in room "
             "kitchen", "person_at_omar": "now: person omar is in room kitchen"}
    server.script = [ok({"mentions": ["Lena", "the kitchen", "the phone", "Omar"]}), ok(reply), ok(reply)]
    out = propose.tell(server.client(), world, text)
    assert out.change is not None, out.error
    fields = {p: v["enum"] for p, v in schema_of(server.requests[1])["properties"].items()}
    assert fields["person_at_lena"] == ["now: person lena is in room kitchen", "none"]
    assert fields["person_at_omar"] == ["now: person omar is in room kitchen", "none"]  # held already
    assert fields["held_by"] == ["now: item omar phone is held by person lena", "none"] and "person_at" not in fields
    assert set(out.change.delta.add) == {F("(person_at lena kitchen)"), F("(held_by omar_phone lena)")}


def test_where_a_person_is_already_is_a_candidate_and_choosing_it_changes_nothing(world: WorldGraph) -> None:
    """"Lena went to the bedroom and switched the light on" with Lena in the bedroom: the move is shown beside the
    light (alone, "no longer: the light is on" was answered "none" by the 0.5B); chosen, it is no change."""
    text = "Lena went to the bedroom and switched the light on."
    on = "now: bedroom light is switched on"
    llm = ScriptedLLM([json.dumps({"mentions": ["Lena", "the bedroom", "the light"]}),
                       *[lambda m: json.dumps(chosen(m, person_at="now: person lena is in room bedroom",
                                                     switched_on=on))] * 2])
    out = propose.tell(llm, world, text)
    assert out.change is not None, out.error
    assert out.change.delta.add == [F("(switched_on bedroom_light)")] and out.change.delta.remove == []


RADIOS = """(define (domain radios) (:requirements :typing :negative-preconditions)
  (:types person radio station)
  (:predicates (radio_on ?r - radio) (tuned_to ?r - radio ?s - station))
  (:action switch_on :parameters (?r - radio ?s - station) :precondition (not (radio_on ?r))
    :effect (and (radio_on ?r) (tuned_to ?r ?s)))
  (:action switch_off :parameters (?r - radio ?s - station) :precondition (and (radio_on ?r) (tuned_to ?r ?s))
    :effect (and (not (radio_on ?r)) (not (tuned_to ?r ?s))))
  (:action retune :parameters (?r - radio ?s ?t - station) :precondition (tuned_to ?r ?s)
    :effect (and (tuned_to ?r ?t) (not (tuned_to ?r ?s)))))"""
RADIO = """(define (problem radio) (:domain radios)
  (:objects ada - person kitchen_radio - radio jazz_fm news_am - station)
  (:init (radio_on kitchen_radio) (tuned_to kitchen_radio jazz_fm)))"""


def test_what_every_action_making_the_change_so_removes_is_removed_too(tmp_path: Path) -> None:
    """"Switched the channel of the TV to ESPN" tells the new channel, not the old one, and no invariant says a TV
    plays one channel (FD's synthesis cannot use turning it on's negative precondition): the old one stayed
    (seed341). The one action that retunes a playing radio removes the old station; switching it off removes the
    station it played. Each removal says why. Retuning, the sentence means the new station much more than the radio
    being off: that is not a candidate (the 0.5B chose both in 17 of 18 such sentences)."""
    g = shelves(tmp_path, RADIO, RADIOS, """[predicates]
radio_on = { gloss = "{0} is on", negated = "{0} is off" }
tuned_to = { gloss = "{0} plays {1}" }
""")
    old = "(tuned_to kitchen_radio jazz_fm)"
    for text, mentions, choice, told, off in (
            ("Ada tuned the kitchen radio to News AM.", ["the kitchen radio", "News AM"],
             {"tuned_to": "now: kitchen radio plays news am"}, "(tuned_to kitchen_radio news_am) true", False),
            ("Ada switched off the kitchen radio.", ["Ada", "the kitchen radio"],
             {"radio_on": "no longer: kitchen radio is on"}, "(radio_on kitchen_radio) false", True)):
        llm = ScriptedLLM([json.dumps({"mentions": mentions}), *[lambda m, c=choice: json.dumps(chosen(m, **c))] * 2])
        out = propose.tell(llm, g, text, dry_run=True)
        assert ("- no longer: kitchen radio is on" in llm.prompts[1][-1]["content"].split("\n")) is off
        assert out.error is None and out.delta is not None, out.error
        assert F(old) in out.delta.remove and len(out.delta.remove) + len(out.delta.add) == 2, out.delta
        assert out.delta.how[old] == f"removed as every action that makes {told} does"


def test_what_every_action_making_the_change_with_the_named_things_adds_is_added_too(tmp_path: Path) -> None:
    """"Turned on the TV and set it to Fox News": the 0.5B chose the TV on and "none" for the channel it named
    (seed374). The one way to switch the radio on with the station the sentence names tunes it there; with no station
    named, nothing is added."""
    off = RADIO.replace("(radio_on kitchen_radio) (tuned_to kitchen_radio jazz_fm)", "")
    g = shelves(tmp_path, off, RADIOS, """[predicates]
radio_on = { gloss = "{0} is on", negated = "{0} is off" }
tuned_to = { gloss = "{0} plays {1}" }
""")
    new = "(tuned_to kitchen_radio news_am)"
    for text, mentions, added in (
            ("Ada switched on the kitchen radio and set it to News AM.", ["Ada", "the kitchen radio", "News AM"],
             [F("(radio_on kitchen_radio)"), F(new)]),
            ("Ada switched on the kitchen radio.", ["Ada", "the kitchen radio"], [F("(radio_on kitchen_radio)")])):
        llm = ScriptedLLM([json.dumps({"mentions": mentions}),
                           *[lambda m: json.dumps(chosen(m, radio_on="now: kitchen radio is on"))] * 2])
        out = propose.tell(llm, g, text, dry_run=True)
        assert out.error is None and out.delta is not None, out.error
        assert out.delta.add == added and out.delta.remove == []
    assert out.delta.how.get(new) is None
    out = propose.tell(ScriptedLLM([json.dumps({"mentions": ["Ada", "the kitchen radio", "News AM"]}),
                                    *[lambda m: json.dumps(chosen(m, radio_on="now: kitchen radio is on"))] * 2]),
                       g, "Ada switched on the kitchen radio and set it to News AM.")
    assert out.change is not None and F(new) in out.change.delta.add
    assert out.change.delta.how[new] == ("added as every action that makes (radio_on kitchen_radio) true with the "
                                         "things the sentence names does")
