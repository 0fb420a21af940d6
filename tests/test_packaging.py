"""The distribution: a wheel of the project holds the `kgplan` package alone (and its metadata), every
top-level folder of the repository inside it, with the web page's files and the bundled domains."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


def build_wheel(out: Path) -> Path:
    """A wheel of the checkout, built in `out`."""
    had_build = (ROOT / "build").exists()
    try:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                        str(out), str(ROOT)], check=True, cwd=out)
    finally:  # setuptools builds in the checkout's build/
        if not had_build:
            shutil.rmtree(ROOT / "build", ignore_errors=True)
    (wheel,) = out.glob("kgplan-*.whl")
    return wheel


@pytest.mark.integration
def test_the_wheel_installs_kgplan_and_nothing_else(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"kgplan", wheel.name.split("-py3")[0] + ".dist-info"}
    packages = {n.split("/")[1] for n in names if n.startswith("kgplan/") and n.count("/") > 1}
    assert packages == {"domains", "graph", "planners", "language", "games", "agent", "interfaces", "benchmarks"}
    assert {"kgplan/__init__.py", "kgplan/errors.py", "kgplan/interfaces/web/index.html",
            "kgplan/interfaces/web/vendor/cytoscape.min.js", "kgplan/interfaces/web/vendor/LICENSE",
            "kgplan/domains/household/domain.pddl", "kgplan/graph/backends/sqlite.py"} <= set(names)
