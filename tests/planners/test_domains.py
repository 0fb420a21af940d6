"""The project's own broad set of test domains (tests/domains/NAME/{domain,pNN}.pddl).

Each problem is loaded into the graph on both backends, exported and re-parsed (the same
objects and facts), planned with Fast Downward on the full state and the plan checked on the
state of the problem file (its cost too, under action costs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kgplan.domains.formula import to_pddl
from kgplan.domains.model import Domain, Problem
from kgplan.graph.world import WorldGraph
from kgplan.planners import pipeline
from kgplan.planners.pipeline import plan
from kgplan.planners.state import State, simulate
from tests.conftest import DATA

DOMAINS = DATA / "domains"

def problems() -> list[Path]:
    """Every problem file of the set, as tests/domains/NAME/pNN.pddl."""
    return sorted(DOMAINS.glob("*/p*.pddl"))


def load(path: Path) -> tuple[Domain, Problem]:
    """The domain of a problem file and the problem."""
    return Domain.load(path.parent), Problem.parse(path.read_text(), str(path))


def _cases() -> list:
    return [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in problems()]


def test_the_set_is_broad() -> None:
    """Untyped, typed hierarchies, constants, negative preconditions, ADL, either and costs."""
    texts = {p.name: (p / "domain.pddl").read_text() for p in DOMAINS.iterdir() if p.is_dir()}
    assert len(texts) >= 10 and all(len(list((DOMAINS / n).glob("p*.pddl"))) >= 2 for n in texts)
    every = "\n".join(texts.values())
    assert any("(:types" not in t for t in texts.values())
    for word in (":constants", "(not (", "(forall", "(exists", "(when", "(imply", "(either", "(increase"):
        assert word in every, word


@pytest.mark.parametrize("path", _cases())
def test_load_round_trip_plan_validate(path: Path, empty_graph: WorldGraph) -> None:
    domain, problem = load(path)
    empty_graph.init(domain)
    empty_graph.load_problem(problem)
    again = Problem.parse(empty_graph.to_problem(problem.goal), "exported")
    assert again.objects == problem.objects
    assert sorted(map(str, again.init)) == sorted(map(str, set(problem.init)))
    assert again.numbers == problem.numbers
    assert again.goal == problem.goal

    r = plan(empty_graph, to_pddl(problem.goal), prune=False)
    assert r.solved and r.used_full_state, r.message
    numbers = {(a.predicate, a.args): v for a, v in problem.numbers.items()}
    state = State(domain, problem.objects, set(problem.init), numbers)
    steps = r.plan
    assert r.cost == state.plan_cost(steps) and (r.cost is None) == (not problem.numbers)
    assert simulate(state, steps, problem.goal) is None


@pytest.mark.parametrize("path", _cases())
def test_pruned_task_is_solved_without_fallback(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pruning keeps what plans need: the pruned task is solved (pruning is backend-independent). The full state
    does not join in (on a busy machine it can win the race first): pruning is under test."""
    from kgplan.graph.backends import open_graph

    monkeypatch.setattr(pipeline, "HEDGE_S", 3600.0)
    domain, problem = load(path)
    with open_graph(f"sqlite:{tmp_path / 'p.db'}") as g:
        g.init(domain)
        g.load_problem(problem)
        r = plan(g, to_pddl(problem.goal))
    assert r.solved and not r.used_full_state, r.message
