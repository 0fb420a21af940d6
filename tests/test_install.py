"""kgplan installs and works on each supported Python: a wheel of the checkout installed (without the
`embeddings` extra) in a fresh virtual environment of each Python 3.12 and 3.13 found on the machine, then
`kgplan init` and `kgplan plan` with each family of planners, and both game engines; what needs the
embeddings says how to install them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgplan.errors import InputError
from kgplan.language import retrieval
from tests.conftest import HOUSEHOLD
from tests.test_packaging import build_wheel

OTHER_PYTHONS = ["3.12", "3.13"]  # 3.11 runs the whole suite
GOAL = "(holding robot dune_book)"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed kgplan, not a checkout's


def interpreter(version: str) -> str | None:
    """A `python<version>` that runs: pyenv's, or one on PATH (where pyenv's shim may refuse it)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")).glob(f"versions/{version}.*/bin/python")
    for python in [*map(str, sorted(pyenv)), shutil.which(f"python{version}")]:
        if python and subprocess.run([python, "-c", ""], capture_output=True).returncode == 0:
            return python
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def venv(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A fresh virtual environment of the Python `request.param` (skipped where it is absent), removed after."""
    python = interpreter(request.param)
    if python is None:
        pytest.skip(f"no Python {request.param} on this machine (python{request.param} or pyenv)")
    path = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(path)], check=True)
    try:
        yield path / "bin"
    finally:
        shutil.rmtree(path, ignore_errors=True)  # a gigabyte


@pytest.mark.integration
@pytest.mark.parametrize("venv", OTHER_PYTHONS, indirect=True)
def test_installs_and_plans(venv: Path, wheel: Path, tmp_path: Path) -> None:
    # --no-compile: the modules a command imports are compiled as it runs, the rest need not be (half pip's time)
    subprocess.run([venv / "python", "-m", "pip", "install", "-q", "--no-compile", str(wheel)], check=True, env=ENV)

    def kgplan(*args: str) -> str:
        done = subprocess.run([venv / "kgplan", *args], cwd=tmp_path, env=ENV, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    kgplan("init", "--domain", "household", "--problem", str(HOUSEHOLD / "world.pddl"))
    for planner in ("fd", "symk-opt", "lapkt"):  # each family; lapkt's wheel is built per Python
        result = json.loads(kgplan("plan", "--goal", GOAL, "--planner", planner, "--json"))
        assert result["status"] == "solved" and len(result["plan"]) == 2, result
    games = ["textworld-coin"] + (["coin"] if shutil.which("java") else [])  # TextWorld; TextWorld-Express
    for game in games:
        assert "success after" in kgplan("explore", "--game", game)
    missing = subprocess.run([venv / "python", "-c", "from kgplan.language.retrieval import embed; embed(['x'])"],
                             cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert missing.returncode == 1 and "pip install 'kgplan[embeddings]'" in missing.stderr, missing.stderr


def test_without_the_embeddings_extra_what_needs_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if absent
    retrieval.embedder.cache_clear()
    try:
        with pytest.raises(InputError, match=r"sentence_transformers is missing.*pip install 'kgplan\[embeddings\]'"):
            retrieval.embed(["a cup"])
    finally:
        retrieval.embedder.cache_clear()
