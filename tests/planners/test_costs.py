"""Action costs end to end: static numeric facts in the graph, the metric, optimal plans, their cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgplan.domains.formula import parse_formula
from kgplan.domains.model import Domain, Problem
from kgplan.domains.sexpr import PDDLError, read
from kgplan.domains.verify import ChangeRefused
from kgplan.graph.model import Delta, Fact
from kgplan.graph.world import WorldGraph
from kgplan.interfaces.cli import app
from kgplan.planners.pipeline import plan
from kgplan.planners.problem import Task
from tests.conftest import DATA

TRAVEL = DATA / "domains" / "travel"
F = Fact.parse


@pytest.fixture
def travel(empty_graph: WorldGraph) -> WorldGraph:
    empty_graph.init(Domain.load(TRAVEL))
    empty_graph.load_problem(Problem.parse((TRAVEL / "p01.pddl").read_text()))
    return empty_graph


def test_numeric_facts_are_stored_and_returned(travel: WorldGraph) -> None:
    assert Fact(predicate="travel-cost", args=("home", "office"), value=10) in travel.facts()
    assert F("(= (travel-cost home office) 10)") in travel.facts("travel-cost")
    assert F("(= (travel-cost a b) 1)") in travel.facts(entity="a")
    assert F("(= (travel-cost c office) 1)") in travel.facts_about(["c"])
    assert str(F("(= (travel-cost home a) 1.5)")) == "(= (travel-cost home a) 1.5)"
    types, atoms, values = travel.snapshot()
    assert values[("travel-cost", ("home", "office"))] == 10 and ("travel-cost", ("home", "office")) not in atoms
    generic = WorldGraph.snapshot(travel)
    assert (types, sorted(atoms), values) == (generic[0], sorted(generic[1]), generic[2])
    # one change replaces a value (removing the old one, adding the new one); undo restores it
    change = travel.apply(Delta(remove=[F("(= (travel-cost home a) 1)")], add=[F("(= (travel-cost home a) 7)")]))
    values = {f for f in travel.facts("travel-cost") if f.args == ("home", "a")}
    assert values == {F("(= (travel-cost home a) 7)")}
    travel.undo(change.id)
    values = {f for f in travel.facts("travel-cost") if f.args == ("home", "a")}
    assert values == {F("(= (travel-cost home a) 1)")}
    with pytest.raises(ChangeRefused, match="already true"):  # a value is replaced, never doubled
        travel.apply(Delta(add=[F("(= (travel-cost home a) 3)")]))
    goal = parse_formula(read("(letter-at mail office)")[0], "goal")
    assert "(:metric minimize (total-cost))" in travel.to_problem(goal)


@pytest.mark.parametrize(("fact", "words"), [
    ("(travel-cost a b)", "is a number: give its value"),
    ("(= (road a b) 1)", "is true or false, it has no value"),
    ("(= (total-cost) 3)", "total-cost is the cost of a plan"),
    ("(= (travel-cost a mail) 3)", "'mail' is a letter, but travel-cost expects a place"),
    ("(= (travel-cost a) 3)", r"'travel-cost' takes 2 argument\(s\)"),
    ("(= (speed a) 3)", "unknown predicate 'speed'"),
])
def test_numeric_facts_are_verified(travel: WorldGraph, fact: str, words: str) -> None:
    with pytest.raises(ChangeRefused, match=words):
        travel.apply(Delta(add=[F(fact)]))


def test_cost_domains_are_checked() -> None:
    text = (TRAVEL / "domain.pddl").read_text()
    with pytest.raises(PDDLError, match="unknown static function 'travel-time'"):
        Domain.parse(text.replace("(increase (total-cost) (travel-cost ?a ?b))",
                                  "(increase (total-cost) (travel-time ?a ?b))"))
    with pytest.raises(PDDLError, match="only unconditional"):
        Domain.parse(text.replace("(increase (total-cost) 1))))",
                                  "(when (carrying ?c ?l) (increase (total-cost) 1)))))"))
    with pytest.raises(PDDLError, match=r"numeric effects \(decrease ...\) are not supported"):
        Domain.parse(text.replace("(increase (total-cost) 1))))", "(decrease (total-cost) 1))))"))
    with pytest.raises(PDDLError, match=r"numeric conditions \(> ...\) are not supported"):
        Domain.parse(text.replace("(road ?a ?b))", "(road ?a ?b) (> (travel-cost ?a ?b) 0))"))
    with pytest.raises(PDDLError, match="expects a place"):
        Domain.parse(text.replace("(travel-cost ?a ?b))", "(travel-cost ?c ?b))"))


def test_task_emits_costs(travel: WorldGraph) -> None:
    from kgplan.planners.problem import base_problem

    domain = travel.domain
    assert "(:functions (total-cost) - number (travel-cost ?a - place ?b - place) - number)" in domain.compiled_pddl()
    assert "(increase (total-cost) (travel-cost ?a ?b))" in domain.compiled_pddl()
    task = Task(domain, {"home": "place", "a": "place"}, set(), Problem.parse(
        "(define (problem p) (:domain courier) (:goal (road home a)))").goal,
        {("travel-cost", ("home", "a")): 1.0, ("travel-cost", ("a", "b")): 2.5})
    text = task.to_pddl()
    assert "(= (travel-cost home a) 1)" in text and "(travel-cost a b)" not in text  # b is not in the task
    assert "(= (total-cost) 0)" in text and "(:metric minimize (total-cost))" in text
    assert "MinimizeActionCosts" in type(task.to_up().quality_metrics[0]).__name__
    assert base_problem(domain.compiled_pddl(), domain.name).quality_metrics


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("planner", ["fd-opt", "symk-opt"])
def test_optimal_planners_minimise_the_cost(travel: WorldGraph, planner: str, prune: bool) -> None:
    """The direct road costs 10, the way round 4: the cheapest plan is the longer one. Pruning keeps
    the objects of a relaxed plan, which may leave out the cheaper way round: optimal planners
    always plan on the full state."""
    r = plan(travel, "(letter-at mail office)", planner=planner, prune=prune)
    assert r.solved and r.used_full_state and not r.fallback, r.message
    assert [str(s) for s in r.plan] == ["(pick me mail home)", "(go me home a)", "(go me a b)", "(go me b c)",
                      "(go me c office)", "(deliver me mail office)"]
    assert r.cost == 6


def test_cli_reports_the_cost(tmp_path: Path) -> None:
    runner = CliRunner()
    store = ["--store", f"sqlite:{tmp_path / 'c.db'}"]
    res = runner.invoke(app, [*store, "init", "--domain", str(TRAVEL), "--problem", str(TRAVEL / "p02.pddl")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*store, "plan", "--goal", "(and (letter-at l1 z) (letter-at l2 y))",
                              "--planner", "symk-opt", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["cost"] == 10  # 2 + 3 + 1 travel, 2 picks and 2 deliveries
    res = runner.invoke(app, [*store, "plan", "--goal", "(letter-at l1 depot)", "--planner", "fd-opt"])
    assert res.exit_code == 0 and "cost 6 (total-cost)" in res.output, res.output
