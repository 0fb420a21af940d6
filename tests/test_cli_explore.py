"""`kgplan explore` on the TextWorld games: one generated game played from the command line (needs `textworld`,
skipped without it), and the clear message where textworld is missing."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from typer.testing import CliRunner

from agent.cli import app


@pytest.mark.skipif(importlib.util.find_spec("textworld") is None,
                    reason="needs textworld (pip install textworld) to generate and play games")
def test_explore_plays_a_textworld_game() -> None:
    r = CliRunner().invoke(app, ["explore", "--game", "textworld-coin", "--seed", "3"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("observation:") and any(line.startswith("graph change") for line in lines)
    assert any(line.startswith("goal (") for line in lines) and any(line.startswith("action 1: go ") for line in lines)
    assert lines[-1].startswith("success after") and "omniscient optimum 4" in lines[-1]


def test_explore_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "textworld", None)  # as if not installed
    r = CliRunner().invoke(app, ["explore", "--game", "textworld-cooking"])
    assert r.exit_code == 2 and "textworld is not installed (pip install textworld)" in r.output
    r = CliRunner().invoke(app, ["explore", "--game", "chess"])
    assert r.exit_code == 2 and "textworld-coin" in r.output
