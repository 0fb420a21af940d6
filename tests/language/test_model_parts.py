"""Joining a local model's PyPI parts into one GGUF file (language/local_model.model_path)."""

from __future__ import annotations

import hashlib
import sys
import threading
import types
from pathlib import Path

from kgplan.language import local_model


def test_two_servers_started_at_once_join_the_parts_each_on_its_own_file(tmp_path, monkeypatch):
    """Two servers started together both joined the parts into one shared '.partial' file: the first renamed it
    and the second failed (FileNotFoundError). Each join now writes its own file, and both give the whole model."""
    chunks = [b"a" * 1000, b"b" * 1000]
    meet = threading.Barrier(2, timeout=10)

    class Digest:  # both joins are mid-write before either goes past the first part
        def __init__(self) -> None:
            self.real = hashlib.sha256()

        def update(self, chunk: bytes) -> None:
            if chunk == chunks[1]:
                meet.wait()
            self.real.update(chunk)

        def hexdigest(self) -> str:
            return self.real.hexdigest()

    for i, data in enumerate(chunks, 1):
        (tmp_path / f"part{i}").write_bytes(data)
        module = types.ModuleType(f"fake_model_part{i}")
        module.get_part_path = lambda i=i: str(tmp_path / f"part{i}")
        monkeypatch.setitem(sys.modules, f"fake_model_part{i}", module)
    whole = b"".join(chunks)
    monkeypatch.setitem(local_model.MODELS, "fake", local_model.Model(
        "fake", "fake.gguf", "fake_model_part", 2, len(whole), hashlib.sha256(whole).hexdigest()))
    monkeypatch.setattr(local_model, "hashlib", types.SimpleNamespace(sha256=Digest))
    out: dict[int, Path | BaseException] = {}

    def join(k: int) -> None:
        try:
            out[k] = local_model.model_path(tmp_path / "models", "fake")
        except BaseException as e:
            out[k] = e

    threads = [threading.Thread(target=join, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {0: tmp_path / "models" / "fake.gguf", 1: tmp_path / "models" / "fake.gguf"}
    assert (tmp_path / "models" / "fake.gguf").read_bytes() == whole
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["fake.gguf"]
