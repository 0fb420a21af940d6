"""Export keeps every :init fact of a loaded problem, numeric ones included (nullary functions, zero values,
(total-cost)), on each backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgplan.domains.model import BUNDLED, Domain, Problem
from kgplan.domains.sexpr import SList, read
from kgplan.graph.world import WorldGraph
from tests.conftest import DATA

PROBLEMS = sorted(DATA.glob("domains/*/p*.pddl")) + sorted(BUNDLED.glob("*/world.pddl"))

COSTS_DOMAIN = """(define (domain lift-costs)
  (:requirements :typing :action-costs)
  (:types floor)
  (:predicates (at ?f - floor) (next ?a ?b - floor))
  (:functions (total-cost) - number (travel ?a ?b - floor) - number (stops) - number)
  (:action move :parameters (?a ?b - floor)
    :precondition (and (at ?a) (next ?a ?b))
    :effect (and (not (at ?a)) (at ?b) (increase (total-cost) (travel ?a ?b)))))"""
COSTS_PROBLEM = """(define (problem p) (:domain lift-costs)
  (:objects f0 f1 f2 - floor)
  (:init (at f0) (next f0 f1) (next f1 f2) (= (travel f0 f1) 0) (= (travel f1 f2) 2.5) (= (stops) 0)
         (= (total-cost) 0))
  (:goal (at f2)) (:metric minimize (total-cost)))"""


def init_facts(text: str) -> set[tuple]:
    """A problem's :init as read, without the problem parser: atoms, and (function value) pairs."""
    (define,) = read(text)
    (init,) = [s for s in define if isinstance(s, SList) and s[:1] == [":init"]]
    return {(tuple(e[1]), float(e[2])) if e[:1] == ["="] else tuple(e) for e in init[1:]}


def round_trip(graph: WorldGraph, domain: Domain, text: str) -> str:
    graph.init(domain, problem=Problem.parse(text))
    return graph.to_problem()


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_export_keeps_every_init_fact(empty_graph: WorldGraph, path: Path) -> None:
    domain = Domain.parse((path.parent / "domain.pddl").read_text())
    text = path.read_text()
    got, want = init_facts(round_trip(empty_graph, domain, text)), init_facts(text)
    assert want <= got and got - want <= {(("total-cost",), 0.0)}  # an :action-costs problem starts its cost at 0


def test_export_keeps_total_cost_and_zero_values(empty_graph: WorldGraph) -> None:
    exported = round_trip(empty_graph, Domain.parse(COSTS_DOMAIN), COSTS_PROBLEM)
    assert init_facts(exported) == init_facts(COSTS_PROBLEM)
    assert (("total-cost",), 0.0) in init_facts(exported) and (("stops",), 0.0) in init_facts(exported)
