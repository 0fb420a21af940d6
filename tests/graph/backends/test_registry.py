"""The backend registry: `open_graph` finds a store's backend by its URL scheme; a backend is one entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgplan.errors import InputError
from kgplan.graph.backends import BACKENDS, Backend, creating, open_graph
from kgplan.graph.backends.sqlite import SqliteStore


def test_an_unknown_scheme_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match="unknown store URL 'foo://x'") as exc:
        open_graph("foo://x")
    assert all(s in str(exc.value) for b in BACKENDS for s in b.schemes)


def test_a_backend_is_one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    BACKENDS.add(Backend("copy", "a test backend", ("copy:",), lambda url: SqliteStore(tmp_path / url[5:])))
    try:
        with open_graph("copy:a.db") as g:
            assert isinstance(g.store, SqliteStore) and g.count() == (0, 0)
        monkeypatch.setenv("KGPLAN_STORE", "copy:b.db")
        with open_graph() as g:
            assert g.url == f"sqlite:{tmp_path / 'b.db'}"
    finally:
        BACKENDS.remove("copy")
    assert "copy" not in BACKENDS


def test_a_failed_creation_leaves_no_new_store(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    open_graph(f"sqlite:{old}").close()
    for path in (tmp_path / "new.db", old):
        with pytest.raises(RuntimeError), creating(f"sqlite:{path}") as g:
            g.set_meta({"k": "v"})
            raise RuntimeError("init failed")
    assert not list(tmp_path.glob("new.db*")) and old.exists()
