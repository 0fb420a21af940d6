"""Benchmarks: each prints a table and writes JSON results (`kgplan bench NAME --help`)."""

import json
from pathlib import Path

from rich.console import Console


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
