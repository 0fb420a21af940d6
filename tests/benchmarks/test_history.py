"""`kgplan bench history`: the history it writes, its reads per backend in JSON, neo4j skipped with the reason when
its server cannot start."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from kgplan.benchmarks import history
from kgplan.graph import bolt_server


def test_history_bench_reports_each_read_and_skips_a_server_that_cannot_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    @contextmanager
    def no_server(*args: object, **kwargs: object):
        raise RuntimeError("no Java here")
        yield

    monkeypatch.setattr(bolt_server, "running_arcadedb", no_server)
    out = tmp_path / "h.json"
    code = history.main(["--changes", "400", "--facts", "300", "--ops", "3", "--window", "50", "--json", str(out)])
    data = json.loads(out.read_text())
    assert code == (0 if data["passed"] else 1)
    assert data["skipped"] == {"neo4j": "RuntimeError: no Java here"} and set(data["results"]) == {"sqlite"}
    got = data["results"]["sqlite"]
    assert got["changes"] == 400 and {f"{k}_p95_ms" for k in history.READS} <= got.keys()
    assert {t["metric"] for t in data["targets"]} == {"timeline_p95_ms", "diff_window_p95_ms", "diff_any_p95_ms"}
