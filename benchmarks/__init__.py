"""Benchmarks: each prints a table and writes JSON results (`kgplan bench NAME --help`)."""

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def console() -> Console:
    """A console whose tables keep their columns when the output goes to a file or a pipe (rich assumes 80)."""
    probe = Console()
    return probe if probe.is_terminal else Console(width=200)


def write_json(path: Path, data: object) -> None:
    """`data` as JSON at `path` (folders made), replaced whole: a run stopped mid-write leaves the last
    complete file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def verdict(ok: bool) -> str:
    """A target's result cell."""
    return "[green]PASS[/]" if ok else "[red]FAIL[/]"


def below(measured: float, limit: float, **about: Any) -> dict[str, Any]:
    """The verdict on a target `measured < limit`, with what it is about (backend, metric), as the JSON keeps it."""
    return about | {"target_lt": limit, "measured": measured, "pass": measured < limit}


def outcome(met: Iterable[bool]) -> str:
    """The line under the targets: all met, or how many were missed."""
    met = list(met)
    return "[green]all targets met[/]" if all(met) else f"[red]{met.count(False)} of {len(met)} targets missed[/]"


def target_table(title: str, targets: Mapping[str, bool]) -> Table:
    """Targets by name, each with its result."""
    table = Table("target", "result", title=title)
    for name, ok in targets.items():
        table.add_row(name, verdict(ok))
    return table
