"""The L3M+P dev runs: exact round trips and a verified replay of the ground truth."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgplan.domains.model import Domain, Problem
from kgplan.graph.model import Delta, Fact
from kgplan.graph.world import WorldGraph
from tests.conftest import l3mp_runs, run_steps

pytestmark = pytest.mark.dataset


def fact_set(g: WorldGraph) -> set[tuple[str, tuple[str, ...]]]:
    return {(f.predicate, f.args) for f in g.facts()}


def true_deltas(run: Path) -> list[tuple[str, Delta, Problem]]:
    """(step, delta to the next ground-truth state, that state) for every step of a run."""
    prev = Problem.parse((run / "problem.pddl").read_text())
    out = []
    for step in run_steps(run):
        cur = Problem.parse((step / "problem.pddl").read_text(), str(step))
        delta = Delta(add=[Fact.of(a) for a in set(cur.init) - set(prev.init)],
                      remove=[Fact.of(a) for a in set(prev.init) - set(cur.init)],
                      source="sensor", text=step.name)
        out.append((step.name, delta, cur))
        prev = cur
    return out


def test_every_problem_round_trips(empty_graph: WorldGraph) -> None:
    for run in l3mp_runs():
        domain = Domain.load(run / "domain.pddl")
        for path in [run / "problem.pddl", *(s / "problem.pddl" for s in run_steps(run))]:
            problem = Problem.parse(path.read_text(), str(path))
            empty_graph.init(domain, force=True)
            empty_graph.load_problem(problem)
            exported = Problem.parse(empty_graph.to_problem(), "export")
            assert set(exported.init) == set(problem.init), path
            assert exported.objects == problem.objects, path


def test_replaying_ground_truth_reproduces_every_state(empty_graph: WorldGraph) -> None:
    for run in l3mp_runs():
        empty_graph.init(Domain.load(run / "domain.pddl"), force=True)
        empty_graph.load_problem((run / "problem.pddl").read_text())
        for step, delta, truth in true_deltas(run):
            if not delta.is_empty():
                empty_graph.apply(delta)  # raises ChangeRefused if verification refuses a true delta
            assert fact_set(empty_graph) == set(truth.init), step
