"""Goals by propose-then-choose (issue 23) with scripted replies over a fake OpenAI endpoint and the real embedding
model: the prompts and schemas the model gets, quantified goals for "all" tasks, clarification, the agent's plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgplan.graph.world import WorldGraph
from kgplan.language import goals
from kgplan.language.llm import ScriptedLLM
from kgplan.language.update import Clarification
from tests.support.fake_llm import FakeServer, ok
from tests.support.simulation import simulation, small_world

EXAMPLES = [  # invented tasks over the household domain's predicates
    {"text": "Please leave Ines's scarf on the hall table.", "scope": "named",
     "mentions": ["Ines's scarf", "the hall table"], "named": ["ines_scarf", "hall_table"],
     "objects": {"ines_scarf": "cloth", "hall_table": "table", "the_hall": "room"},
     "goal": ["(on ines_scarf hall_table)"]},
    {"text": "Nobody is home: switch every lamp and screen off.", "scope": "all", "mentions": [],
     "kinds": ["device"], "named": [], "objects": {"hall_lamp": "light", "den_tv": "tv"},
     "goal": ["(forall (?x - device) (not (switched_on ?x)))"]}]
TURN_OFF = "Make sure the living room light is off."


def schema_of(request: dict) -> dict:
    return request["response_format"]["json_schema"]["schema"]


def test_words_then_typed_goal_literals_then_the_choice(server: FakeServer, world: WorldGraph) -> None:
    world.domain.meta["goal_examples"] = EXAMPLES
    server.script = [ok({"scope": "named", "mentions": ["the living room light"], "kinds": []}),
                     ok({"switched_on": "not: living room light is switched on"})]
    out = goals.choose(server.client(), world, TURN_OFF)
    assert out.error is None and out.clarification is None
    assert out.goal == "(and (not (switched_on living_room_light)))"
    words, choose = server.requests
    # 1: the scope, the phrases and the kinds, as enums where they are choices
    props = schema_of(words)["properties"]
    assert props["scope"]["enum"] == ["named", "all"]
    assert set(props["kinds"]["items"]["enum"]) == set(world.domain.types) - {"object"}
    system, *shots, last = words["messages"]
    assert "Predicates:" in system["content"] and "(switched_on ?d - device)" in system["content"]
    assert "Actions (what each makes true or false):" in system["content"]
    assert "\nswitch_off: not (switched_on ?d)" in system["content"]
    # the worked examples (their candidates and answers computed from the domain) before the task
    assert shots[0]["content"] == f"Task: {EXAMPLES[0]['text']}"
    assert json.loads(shots[1]["content"]) == {"scope": "named", "mentions": EXAMPLES[0]["mentions"], "kinds": []}
    assert "- ines scarf is clean\n- not: ines scarf is clean" in shots[2]["content"]
    assert json.loads(shots[3]["content"])["on"] == "item ines scarf is on hall table"
    assert json.loads(shots[7]["content"]) == {"switched_on": "no device is switched on"}
    assert shots[7]["content"] == '{"switched_on": "no device is switched on"}'  # spaced: compact changed 4 of 32
    assert last["content"] == f"Task: {TURN_OFF}"
    # 3: the literals over the named light, with its negation; one choice per predicate among its own, or none
    assert choose["messages"][-1]["content"] == (
        f"Task: {TURN_OFF}\nCandidates:\n- living room light is switched on\n- not: living room light is switched on")
    assert {p: v["enum"] for p, v in schema_of(choose)["properties"].items()} == {
        "switched_on": ["living room light is switched on", "not: living room light is switched on", "none"]}
    # one prefix (instructions, predicates, actions, examples) for both questions: a server computes it once
    assert choose["messages"][:-1] == words["messages"][:-1]
    assert set(out.stages) == {"words", "ground", "candidates", "choose"}


def test_an_all_task_is_a_quantified_literal_over_the_kind_and_planned(world: WorldGraph) -> None:
    from kgplan.agent.agent import Agent

    task = "Silence every phone in the house."
    llm = ScriptedLLM([json.dumps({"scope": "all", "mentions": [], "kinds": ["phone"]}),
                       json.dumps({"phone_ringing": "phone no phone is ringing"})])
    report = Agent(world, llm=llm).plan(task, propose=True)
    assert report.goal == "(and (forall (?x - phone) (not (phone_ringing ?x))))" and report.solved
    lines = llm.prompts[1][-1]["content"].split("\n")
    # quantified over the kind named, the thing alone of its type filling the other place (the robot)
    assert "- phone no phone is ringing" in lines
    assert "- phone every phone is ringing" not in lines  # no action makes a phone ring
    assert "- the robot robot holds item every phone" in lines
    assert not any("cloth" in x or "dish" in x for x in lines)


def test_kinds_narrow_the_quantified_places_to_type_correct_literals(world: WorldGraph) -> None:
    domain = world.domain
    every = {e.name: e.type for e in world.entities()}
    present, alone = goals.kinds_present(domain, set(every.values())), goals.sole(every)
    cands = goals.literals(domain, {}, goals.ALL, ["cloth"], present, alone)
    said = {c.pddl for c in cands}
    assert "(forall (?x - cloth) (inside ?x laundry_basket))" in said  # the one laundry basket
    assert "(forall (?x - cloth) (dry ?x))" in said and "(forall (?x - cloth) (not (dry ?x)))" in said
    assert not any("(inside ?x kitchen_sink)" in p for p in said)  # two sinks: neither is implied
    for c in cands:
        params = domain.predicates[c.atom.predicate].params
        assert c.over == "cloth" and all(
            domain.accepts(p.types, c.over if a == goals.VAR else every[a]) for p, a in zip(params, c.atom.args,
                                                                                             strict=True))
    # no kind named: every kind that a place takes, the most general of each
    wide = {c.over for c in goals.literals(domain, {}, goals.ALL, [], present, alone)}
    assert {"device", "phone", "window", "item"} <= wide and "light" not in wide


def test_a_phrase_several_entities_fit_is_a_clarification_then_answered(world: WorldGraph) -> None:
    from kgplan.agent.agent import Agent, Unclear

    task = "Hand Sandra the mug."
    words = json.dumps({"scope": "named", "mentions": ["Sandra", "the mug"], "kinds": []})
    llm = ScriptedLLM([words, json.dumps({"answer": "unclear"})])
    agent = Agent(world, llm=llm)
    with pytest.raises(Unclear) as unclear:
        agent.plan(task, propose=True)
    asked = unclear.value.clarification
    assert isinstance(asked, Clarification) and asked.word == "the mug"
    assert set(asked.options) == {"red_mug", "blue_mug"}
    first, which = llm.prompts  # the question after the prefix of the words question, which a server computed
    assert which[:-1] == first[:-1] and which[-1]["content"].startswith(
        f"Task: {task}\nQuestion: What does 'the mug' name?\nOptions:\n- every cup\n")
    llm.replies.extend([words, lambda m: json.dumps({"held_by": "item red mug is held by person sandra"})])
    report = agent.plan(task, propose=True, answers={"the mug": "red_mug"})
    assert report.goal == "(and (held_by red_mug sandra))" and report.solved


def test_the_bundled_l3mp_goal_examples_answer_with_their_candidates(tmp_path: Path) -> None:
    """Each worked goal example of domains/l3mp/domain.toml: its goal literals are candidates, and its answer chooses
    exactly them."""
    domain = simulation(tmp_path)
    shown = goals.examples(domain)
    assert len(shown) == len(domain.meta["goal_examples"]) == 8
    for ex, meta in zip(shown, domain.meta["goal_examples"], strict=True):
        picked = {i for i in ex.answer.values() if i != goals.NONE}
        cands = goals.literals(domain, {n: meta["objects"][n] for n in meta["named"]}, meta["scope"],
                               meta.get("kinds", []), goals.kinds_present(domain, meta["objects"].values()),
                               goals.sole(meta["objects"]))
        assert {c.pddl for c in cands if c.id in picked} == set(meta["goal"]), ex.text
        assert all(f"- {i}" in ex.lines.split("\n") for i in picked)


def test_a_thing_with_no_named_place_gets_the_named_rooms_fixtures(world: WorldGraph) -> None:
    """The apple to be put somewhere in the living room: the room's furniture it can be put on is proposed (not its
    light or window: no change puts an item at them). Where the task says "the table", only the table (`said_with`)."""
    task = "Put the apple down somewhere in the living room."
    llm = ScriptedLLM([json.dumps({"scope": "named", "mentions": ["the apple", "the living room"], "kinds": []}),
                       json.dumps({"on": "item apple is on living room table"})])
    out = goals.choose(llm, world, task)
    assert out.goal == "(and (on apple living_room_table))", out.error
    lines = llm.prompts[1][-1]["content"].split("\n")[2:]
    assert lines == ["- item apple is on bookshelf", "- item apple is on living room sofa",
                     "- item apple is on living room table"]  # the living room's furniture


def test_a_room_alone_proposes_the_goals_over_its_fixtures(world: WorldGraph) -> None:
    """"The light in the bedroom" copied as "the bedroom": nothing is proposed for a room, so for its fixtures."""
    llm = ScriptedLLM([json.dumps({"scope": "named", "mentions": ["the bedroom"], "kinds": []}),
                       json.dumps({"switched_on": "not: bedroom light is switched on"})])
    out = goals.choose(llm, world, "Make sure the light in the bedroom is off.")
    assert out.goal == "(and (not (switched_on bedroom_light)))", out.error
    assert "- bedroom light is switched on" in llm.prompts[1][-1]["content"].split("\n")


def test_a_phrase_spelling_out_two_names_names_both(world: WorldGraph) -> None:
    """"Sandra the dune book" copied as one phrase: it spells out the whole names of a person and a book, so both are
    named (matched by meaning, the phrase named only one, and nothing could be proposed for handing it over)."""
    llm = ScriptedLLM([json.dumps({"scope": "named", "mentions": ["Sandra the dune book"], "kinds": []}),
                       json.dumps({"held_by": "item dune book is held by person sandra"})])
    out = goals.choose(llm, world, "Hand Sandra the dune book.")
    assert out.goal == "(and (held_by dune_book sandra))", out.error
    assert len(llm.prompts) == 2  # no question which one the phrase names
    assert "- item dune book is held by person sandra" in llm.prompts[1][-1]["content"].split("\n")


SHELVES = """(define (problem shelves) (:domain simulation)
  (:objects lisa - person lisa_scarf - cloth david_bedroom den - room david_bedroom_shelf den_shelf - shelf
            shelf_level_3 shelf_level_4 - shelf_level)
  (:init (person_in_room lisa den) (room_has david_bedroom david_bedroom_shelf) (room_has den den_shelf)
         (shelf_has_level david_bedroom_shelf shelf_level_3) (shelf_has_level david_bedroom_shelf shelf_level_4)
         (shelf_has_level den_shelf shelf_level_3) (shelf_has_level den_shelf shelf_level_4)
         (placed_at_shelf lisa_scarf den_shelf) (on_shelf_level lisa_scarf shelf_level_4)))"""


@pytest.mark.parametrize(("mentions", "task"), [
    (["Lisa's scarf", "level 3", "David's bedroom"], "Place Lisa's scarf on level 3 of the shelf in David's bedroom."),
    (["David's bedroom"], "Place the lisa scarf on the 3rd level of the shelf in David's bedroom.")])
def test_a_named_level_in_a_named_room_proposes_that_rooms_shelf(tmp_path: Path, mentions: list[str],
                                                                   task: str) -> None:
    """"level 3 of the shelf in David's bedroom" copied without the shelf: every shelf has a level 3, and the shelf of
    the named room that has it is the one proposed (not the den's). Where the model copied only the room, the thing
    whose whole name the task spells elsewhere (the scarf) and the room's shelf, whose other word the task says, with
    its levels, are proposed all the same."""
    g = small_world(tmp_path, SHELVES)
    llm = ScriptedLLM([json.dumps({"scope": "named", "mentions": mentions, "kinds": []}),
                       json.dumps({"on_shelf_level": "lisa scarf is on shelf level 3",
                                   "placed_at_shelf": "lisa scarf is on david bedroom shelf"})])
    out = goals.choose(llm, g, task)
    assert out.goal == ("(and (on_shelf_level lisa_scarf shelf_level_3) "
                        "(placed_at_shelf lisa_scarf david_bedroom_shelf))"), out.error
    lines = llm.prompts[1][-1]["content"].split("\n")
    assert "- lisa scarf is on david bedroom shelf" in lines and "- lisa scarf is on shelf level 3" in lines
    assert not any("den shelf" in x for x in lines)
    # not the shelf's other levels: the task spells level 3 (the 0.5B chose another level among them)
    assert "- lisa scarf is on shelf level 4" not in lines


def test_of_a_named_shelfs_levels_those_whose_number_the_task_says_are_proposed() -> None:
    """Seed123 (0.5B): "the 3rd level of the shelf in Rebecca's bedroom" copied whole, matched to the shelf; of its
    levels, shown all, the model chose the 13th. The levels whose own words (the number) the task says are proposed
    where some are; all where none is ("the top level"); none where a level is named."""
    from kgplan.domains.formula import GroundAtom
    from kgplan.language.propose import tokens

    facts = [GroundAtom("shelf_has_level", (shelf, f"shelf_level_{n}")) for shelf in ("rebecca_bedroom_shelf",
                                                                                      "den_shelf") for n in (3, 4, 13)]
    shelf = {"rebecca_bedroom_shelf"}
    assert goals.parts(facts, shelf, tokens("the 3rd level of the shelf in Rebecca's bedroom")) == {"shelf_level_3"}
    assert goals.parts(facts, shelf, tokens("the 13th level of the pantry")) == {"shelf_level_13"}  # "shelf" unsaid
    assert goals.parts(facts, shelf, tokens("the top level of Rebecca's shelf")) == {
        "shelf_level_3", "shelf_level_4", "shelf_level_13"}
    assert goals.parts(facts, shelf | {"shelf_level_4"}, tokens("the 4th level of Rebecca's shelf")) == set()


def test_a_word_the_model_says_names_every_thing_of_a_kind_is_quantified(world: WorldGraph) -> None:
    """"the phones" fits both phones about as well: the question what it names (not "which one", which leaves a task
    about all of them only "unclear" to answer) offers "every phone" first, and the model, answering with the option's
    text (not a letter), makes the goal quantified over the kind (not a clarification, not one phone)."""
    task = "Can you silence all the phones?"
    words = json.dumps({"scope": "named", "mentions": ["the phones"], "kinds": []})
    llm = ScriptedLLM([words, json.dumps({"answer": "every phone"}),
                       json.dumps({"phone_ringing": "phone no phone is ringing"})])
    out = goals.choose(llm, world, task)
    assert out.goal == "(and (forall (?x - phone) (not (phone_ringing ?x))))", out.error
    question, options = llm.prompts[1][-1]["content"].split("\nOptions:\n")
    assert question == f"Task: {task}\nQuestion: What does 'the phones' name?"
    assert options.split("\n")[:3] in (["- every phone", "- sandra phone", "- omar phone"],
                                        ["- every phone", "- omar phone", "- sandra phone"])
    lettered = goals.choose(ScriptedLLM([words, json.dumps({"answer": "a"})]), world, task)
    assert lettered.goal is None and "answer" in lettered.error  # an option as shown, or "unclear": not a letter


def test_two_conflicting_conditions_the_task_does_not_ask_for_are_both_dropped(world: WorldGraph) -> None:
    """Made to answer for every predicate, the model chose two places for the book the task does not speak of; asked
    which one must hold, it may say none of them, and both go."""
    task = "Switch on the bedroom light; Lena is reading the dune book on the bed."
    llm = ScriptedLLM([json.dumps({"scope": "named", "mentions": ["the bedroom light", "Lena", "the dune book",
                                                                  "the bed"], "kinds": []}),
                       json.dumps({"switched_on": "bedroom light is switched on",
                                   "held_by": "item dune book is held by person lena",
                                   "on": "item dune book is on bedroom bed"}),
                       json.dumps({"answer": "c"})])
    out = goals.choose(llm, world, task)
    assert out.goal == "(and (switched_on bedroom_light))", out.error
    question = llm.prompts[2][-1]["content"]
    assert "Question: Which of these must hold when the task is done?" in question
    assert "\nc) none of them\n" in question


def test_every_chosen_condition_of_one_invariant_makes_one_question(world: WorldGraph) -> None:
    """Three places chosen for every cloth (each excludes the others): one question with all three (asked pair by pair,
    the first pair may hold neither of the two, and the 0.5B model answered "unclear"); the one chosen stays."""
    basket = "item every cloth is inside laundry basket"
    places = ["the robot robot holds item every cloth", basket, "item every cloth is on bedroom bed"]
    llm = ScriptedLLM([json.dumps({"scope": "all", "mentions": [], "kinds": ["cloth"]}),
                       json.dumps({"clean": "every cloth is clean", "holding": places[0], "inside": places[1],
                                   "on": places[2]}),
                       json.dumps({"answer": "b"})])
    out = goals.choose(llm, world, "Wash all the clothes and put them in the laundry basket.")
    assert out.goal == ("(and (forall (?x - cloth) (clean ?x)) (forall (?x - cloth) (inside ?x laundry_basket)))"), \
        out.error
    assert len(llm.prompts) == 3
    options = llm.prompts[2][-1]["content"].split("\nOptions:\n")[1].split("\n")[:4]
    assert options == [f"{i}) {p}" for i, p in zip("abcd", [*places, "none of them"], strict=True)]


def test_only_literals_that_can_hold_are_proposed(world: WorldGraph) -> None:
    """No action makes a phone ring: "the phone is ringing" is proposed only where it rings now (a goal that holds
    already), "not ringing" always (answering the phone makes it so); over every phone, only "no phone is ringing"."""
    from kgplan.domains.formula import GroundAtom

    domain = world.domain
    present = goals.kinds_present(domain, {"phone"})
    ringing = GroundAtom("phone_ringing", ("sandra_phone",))

    def said(now: set[GroundAtom] | None, scope: str = goals.NAMED) -> set[str]:
        named = {"sandra_phone": "phone"} if scope == goals.NAMED else {}
        return {c.pddl for c in goals.literals(domain, named, scope, ["phone"], present, None, now)
                if c.atom.predicate == "phone_ringing"}

    assert said(set()) == {"(not (phone_ringing sandra_phone))"}
    assert said({ringing}) == {"(phone_ringing sandra_phone)", "(not (phone_ringing sandra_phone))"}
    assert said({ringing}, goals.ALL) == {"(forall (?x - phone) (not (phone_ringing ?x)))"}
    llm = ScriptedLLM([json.dumps({"scope": "named", "mentions": ["Omar's phone"], "kinds": []}),
                       json.dumps({"phone_ringing": "not: phone omar phone is ringing"})])
    out = goals.choose(llm, world, "Make sure Omar's phone is not ringing.")
    assert out.goal == "(and (not (phone_ringing omar_phone)))", out.error
    assert "- phone omar phone is ringing" not in llm.prompts[1][-1]["content"].split("\n")  # it does not ring now


def test_a_false_value_is_shown_as_domain_toml_words_it(tmp_path: Path) -> None:
    """domain.toml's `negated` words a literal's false value: "the den lamp is off", "every phone is silent" (a small
    model copies the gloss that says what the task says; "not: the den lamp is on" it read as the lamp on)."""
    domain = simulation(tmp_path)
    present = goals.kinds_present(domain, {"light", "phone"})
    named = goals.literals(domain, {"the_den_lamp": "light"}, goals.NAMED, [], present)
    assert {c.id: c.pddl for c in named} == {"the den lamp is on": "(light_on the_den_lamp)",
                                             "the den lamp is off": "(not (light_on the_den_lamp))"}
    every = goals.literals(domain, {}, goals.ALL, ["phone"], present)
    assert {c.id: c.pddl for c in every} == {"every phone is ringing": "(forall (?x - phone) (phone_ringing ?x))",
                                             "every phone is silent": "(forall (?x - phone) (not (phone_ringing ?x)))"}
