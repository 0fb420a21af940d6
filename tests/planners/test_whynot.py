"""Answers to "why not?" (issue 25 item 3): a suite of unsolvable goals, refused goals and changes, and stopped plans
made from the household world and the test domains, each with the cause it must name (its kind and literal, and the
first missing link), and the closest goal it offers, planned."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgplan.domains.formula import Formula
from kgplan.domains.model import Domain, Problem
from kgplan.domains.verify import ChangeRefused, IssueKind
from kgplan.graph.backends import open_graph
from kgplan.graph.model import Delta, Fact
from kgplan.graph.world import WorldGraph
from kgplan.planners.pipeline import last_plan, plan, planned_at
from kgplan.planners.state import State
from kgplan.planners.whynot import GoalRefused, contradictions, stopped
from kgplan.planners.whynot import explain as explain_state
from tests.conftest import DATA, HOUSEHOLD

F = Fact.parse
DOOR = [F("(connected kitchen laundry_room)"), F("(connected laundry_room kitchen)")]

# (world, what changed first, goal, kind, literal, first missing link, the closest goal that can be reached)
CASES = [
    pytest.param("household", Delta(), "(and (switched_on hallway_light) (person_at omar bedroom))",
                 "unreachable", "(person_at omar bedroom)", "(person_at omar bedroom)", "(switched_on hallway_light)",
                 id="household-unreachable-fact"),
    pytest.param("household", Delta(), "(and (on apple kitchen_table) (inside apple kitchen_fridge))",
                 "invariant", "(inside apple kitchen_fridge)", "(on apple kitchen_table)", "(on apple kitchen_table)",
                 id="household-contradicting-invariant"),
    pytest.param("household", Delta(remove=DOOR), "(and (clean sandra_jeans) (switched_on hallway_light))",
                 "blocked_precondition", "(clean sandra_jeans)", "(connected ?from laundry_room)",
                 "(switched_on hallway_light)", id="household-blocked-precondition"),
    pytest.param("household", Delta(removed_entities=["kitchen_faucet", "bathroom_faucet"]),
                 "(and (clean plate) (not (switched_on living_room_tv)))", "missing_object", "(clean plate)", "faucet",
                 "(not (switched_on living_room_tv))", id="household-missing-object-type"),
    pytest.param("gripper", Delta(), "(and (at b1 roomb) (carry b1 left))", "invariant", "(carry b1 left)",
                 "(at b1 roomb)", "(at b1 roomb)", id="gripper-contradicting-invariant"),
    pytest.param("logistics", Delta(), "(and (at box2 n-port) (in-city n-depot south))", "unreachable",
                 "(in-city n-depot south)", "(in-city n-depot south)", "(at box2 n-port)",
                 id="logistics-unreachable-fact"),
    pytest.param("logistics", Delta(remove=[F("(in-city s-depot south)")]), "(and (at box1 s-depot) (at box2 n-port))",
                 "blocked_precondition", "(at box1 s-depot)", "(in-city s-depot ?c)", "(at box2 n-port)",
                 id="logistics-blocked-precondition"),
    pytest.param("snacks", Delta(remove=[F("(no-gluten-content c2)")]), "(and (served amy) (served ben))",
                 "blocked_precondition", "(served amy)", "(no-gluten-content ?c)", "(served ben)",
                 id="snacks-blocked-precondition"),
    pytest.param("snacks", Delta(remove=[F("(notexist s1)")], add=[F("(ontray s1 tray1)")]),  # made: never again
                 "(and (at-kitchen-sandwich s1) (served ben))", "blocked_precondition", "(at-kitchen-sandwich s1)",
                 "(notexist s1)", "(served ben)", id="snacks-blocked-by-a-fact-no-action-adds"),
    pytest.param("snacks", Delta(removed_entities=["tray1"]), "(and (served amy) (at-kitchen-sandwich s1))",
                 "missing_object", "(served amy)", "tray", "(at-kitchen-sandwich s1)", id="snacks-missing-object-type"),
    pytest.param("travel", Delta(remove=[F("(road home office)"), F("(road c office)")]),
                 "(and (letter-at mail office) (courier-at me a))", "blocked_precondition", "(letter-at mail office)",
                 "(road ?a office)", "(courier-at me a)", id="travel-blocked-precondition"),
]


def open_world(tmp_path: Path, name: str) -> WorldGraph:
    """The household world, or problem p01 of a test domain, in a sqlite file."""
    folder = HOUSEHOLD if name == "household" else DATA / "domains" / name
    g = open_graph(f"sqlite:{tmp_path / name}.db")
    g.init(Domain.load(folder))
    g.load_problem(Problem.parse((folder / ("world.pddl" if name == "household" else "p01.pddl")).read_text(), name))
    return g


@pytest.mark.parametrize(("world", "change", "goal", "kind", "literal", "blocker", "alternative"), CASES)
def test_an_unsolvable_goal_names_its_cause_and_the_closest_goal_is_solved(
        tmp_path: Path, world: str, change: Delta, goal: str, kind: str, literal: str, blocker: str,
        alternative: str) -> None:
    with open_world(tmp_path, world) as g:
        if change != Delta():
            g.apply(change)  # a verified change: the graph is as the domain allows
        r = plan(g, goal)
        assert r.status == "unsolvable" and not r.plan, r.message
        assert [(c.kind, c.literal, c.blocker) for c in r.why] == [(kind, literal, blocker)], r.why
        assert literal in r.why[0].explanation and r.why[0].explanation.count(";") <= 2, r.why[0].explanation
        assert r.alternative == alternative
        assert r.to_json()["why"][0]["kind"] == kind
        assert plan(g, r.alternative).solved


def test_glosses_explain_the_missing_link(world: WorldGraph) -> None:
    """The chain back from the goal fact to its first missing link, in the domain's words."""
    world.apply(Delta(remove=DOOR))
    (cause,) = plan(world, "(clean sandra_jeans)").why
    assert cause.explanation == (
        '(clean sandra_jeans) ("sandra_jeans is clean") cannot be reached from this state: (run_washer robot '
        'laundry_washer laundry_room) would make it so, but needs (agent_at robot laundry_room) ("the robot robot is '
        'in room laundry_room"); (move robot ?from laundry_room) would make that so, but needs (connected ?from '
        'laundry_room) ("a door leads from room ?from to room laundry_room"), which no fact of the graph says and no '
        'action makes true')


def test_a_contradicting_goal_is_caught_before_any_planner_runs(world: WorldGraph) -> None:
    r = plan(world, "(and (agent_at robot kitchen) (agent_at robot bedroom))")
    assert r.status == "unsolvable" and r.seconds == 0 and not r.used_full_state and r.task is None
    assert "no planner was run" in r.message
    assert [(c.kind, c.literal) for c in r.why] == [("invariant", "(agent_at robot bedroom)")]
    assert "exactly one of agent_at(?x, *) holds for each ?x" in r.why[0].explanation
    r = plan(world, "(and (switched_on kitchen_light) (not (switched_on kitchen_light)))")  # itself
    assert [(c.kind, c.literal) for c in r.why] == [("invariant", "(not (switched_on kitchen_light))")]
    assert plan(world, r.alternative or "").solved
    r = plan(world, "(and (switched_on hallway_light) (forall (?r - room) (not (agent_at robot ?r))))")  # nowhere
    assert r.seconds == 0 and [(c.kind, c.literal, c.blocker) for c in r.why] == [
        ("invariant", "(forall (?r - room) (not (agent_at robot ?r)))", "(agent_at robot hallway)")]
    assert r.why[0].explanation == (
        "the goal asks that robot have no agent_at(robot, *), but exactly one of agent_at(?x, *) holds for each ?x, "
        "and (agent_at robot hallway) (\"the robot robot is in room hallway\") holds now")
    assert plan(world, r.alternative or "").solved
    state = State(world.domain, *world.snapshot())
    def goal(text: str) -> Formula:
        return Problem.parse(f"(define (problem p) (:domain household) (:goal {text}))").goal

    assert not contradictions(state, goal("(and (on apple kitchen_table) (on bowl kitchen_table))"))
    assert not contradictions(state, goal("(forall (?f - table) (not (on apple ?f)))"))  # on a shelf, held, ...
    assert [c.blocker for c in contradictions(state, goal("(forall (?r - room) (not (person_at omar ?r)))"))] == [
        "(person_at omar kitchen)"]  # a declared invariant: nothing moves people


@pytest.mark.parametrize("world", ["household", "travel"])
def test_a_goal_naming_what_the_graph_lacks_is_refused_with_why_and_the_closest_goal(tmp_path: Path,
                                                                                      world: str) -> None:
    goal, lacking, rest = (("(and (switched_on hallway_light) (on box3 kitchen_table))", "box3",
                            "(switched_on hallway_light)") if world == "household" else
                           ("(and (letter-at parcel office) (courier-at me a))", "parcel", "(courier-at me a)"))
    with open_world(tmp_path, world) as g:
        with pytest.raises(GoalRefused, match=f"'{lacking}' is not a known entity") as e:
            plan(g, goal)
        assert e.value.why is not None
        assert [(c.kind, c.blocker) for c in e.value.why.causes] == [("missing_object", lacking)]
        assert e.value.why.alternative == rest and f"the closest goal that can be reached: {rest}" in str(e.value)
        assert plan(g, rest).solved


def test_a_goal_unreachable_only_as_a_whole_says_so(world: WorldGraph) -> None:
    """Each fact is reachable on its own (the delete relaxation), only not together: no conjunct to blame."""
    state = State(world.domain, *world.snapshot())
    goal = Problem.parse("(define (problem p) (:domain household) (:goal (and (holding robot apple) "
                         "(not (holding robot apple)))))").goal
    why = explain_state(state, Problem.parse(
        "(define (problem p) (:domain household) (:goal (and (dry sandra_jeans) (clean sandra_jeans))))").goal)
    assert why.causes[0].kind == "together" and why.alternative is None  # (explain is only asked when unsolvable)
    assert explain_state(state, goal).causes[0].kind == "invariant"


# ---- refused changes: the rule, in words, and the fact that blocks it ----------------------------------------------
def test_a_refused_change_says_the_rule_in_words_and_the_fact_that_blocks_it(world: WorldGraph) -> None:
    with pytest.raises(ChangeRefused) as e:
        world.apply(Delta(add=[F("(on apple kitchen_table)")]))
    (issue,) = e.value.issues
    assert issue.kind == IssueKind.INVARIANT and issue.fact == "(on apple kitchen_counter) and (on apple kitchen_table)"
    assert ('(on apple kitchen_table) ("item apple is on kitchen_table") cannot hold while (on apple kitchen_counter) '
            '("item apple is on kitchen_counter") does') in issue.message
    assert "also remove (on apple kitchen_counter)" in issue.message
    with pytest.raises(ChangeRefused) as e:
        world.apply(Delta(remove=[F("(agent_at robot hallway)")]))
    (issue,) = e.value.issues
    assert issue.kind == IssueKind.INVARIANT and issue.fact == "(agent_at robot hallway)"
    assert '(agent_at robot hallway) ("the robot robot is in room hallway") is all it has' in issue.message
    with pytest.raises(ChangeRefused) as e:
        world.apply(Delta(remove=[F("(switched_on bedroom_light)")]))
    (issue,) = e.value.issues
    assert issue.kind == IssueKind.ABSENT_FACT and issue.fact == "(switched_on bedroom_light)"
    assert issue.message \
        == 'cannot remove (switched_on bedroom_light) ("bedroom_light is switched on"): it is not true now'


def test_a_refused_change_in_a_test_domain_names_both_facts(tmp_path: Path) -> None:
    with open_world(tmp_path, "gripper") as g, pytest.raises(ChangeRefused) as e:
        g.apply(Delta(add=[F("(carry b1 left)")]))
    (issue,) = e.value.issues
    assert issue.kind == IssueKind.INVARIANT and issue.fact == "(at b1 rooma) and (carry b1 left)"
    assert "(carry b1 left) cannot hold while (at b1 rooma) does" in issue.message


# ---- a plan that stopped: the step, its unmet precondition, the change since planning that made it so -------------
def test_a_stopped_plan_names_the_step_its_precondition_and_the_change(world: WorldGraph) -> None:
    assert plan(world, "(and (switched_on hallway_light) (not (switched_on kitchen_light)))").solved
    _, steps = last_plan(world)
    at = planned_at(world)
    assert at == world.changes(1)[0].id
    unrelated = world.apply(Delta(remove=[F("(switched_on living_room_tv)")]))
    change = world.apply(Delta(remove=[F("(switched_on kitchen_light)")], text="Omar switched it off"))
    index = next(i for i, s in enumerate(steps, 1) if s.action == "switch_off")
    cause = stopped(world, steps[index - 1], index, at, steps[:index - 1])
    assert cause is not None and (cause.kind, cause.literal) == ("changed", "(switched_on kitchen_light)")
    assert cause.explanation == (
        f"step {index} {steps[index - 1]} needs (switched_on kitchen_light) (\"kitchen_light is switched on\"); "
        f"changed since the plan was made by change #{change.id} (user: 'Omar switched it off'), which removed "
        "(switched_on kitchen_light)")
    assert f"#{unrelated.id}" not in cause.explanation
    assert stopped(world, steps[0], 1, at) is None  # the first step can still run


def test_a_stopped_plan_whose_item_was_moved(world: WorldGraph) -> None:
    assert plan(world, "(holding robot apple)").solved
    _, steps = last_plan(world)
    world.apply(Delta(remove=[F("(on apple kitchen_counter)")], add=[F("(on apple kitchen_table)")]))
    cause = stopped(world, steps[-1], len(steps), planned_at(world), steps[:-1])
    assert cause is not None and cause.literal == "(on apple kitchen_counter)"
    assert "which removed (on apple kitchen_counter)" in cause.explanation
