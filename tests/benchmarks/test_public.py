"""`kgplan bench public` on a few small generated problems: no first pruned task unsolvable where the
full task is solvable (needs pypddl-datasets, in kgplan[test])."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgplan.benchmarks.public import generators, run, summarise

pytestmark = pytest.mark.skipif(not generators(), reason="pypddl-datasets is not installed (kgplan[test] has it)")


def test_first_pruning_loses_no_small_barman_childsnack_or_sokoban_problem(tmp_path: Path) -> None:
    """Shakers filled level by level, sandwiches used up once each, cells a stone occupies: resources the
    delete relaxation lets one object provide for every step (each domain lost problems before)."""
    names = ["ipc/barman", "ipc/childsnack", "ipc/sokoban"]
    rows, skipped = run(names, [0], [1, 2], 30.0, tmp_path)
    assert not skipped
    summary = summarise(rows)
    assert {name: s["full_solved"] for name, s in summary.items()} == dict.fromkeys(names, 2)
    assert [r for r in rows if r["loss"]] == []
    assert (tmp_path / "ipc/barman/s0-seed1.pddl").is_file()
