"""Benchmarks: each prints a table and writes JSON results (`kgplan bench NAME --help`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from kgplan.errors import InputError

if TYPE_CHECKING:
    from kgplan.language.llm import LLM


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


def bench_llm(kind: str, record: Path | None = None, replay: Path | None = None) -> LLM | None:
    """The LLM of a benchmark's `--llm`: none; openai, the endpoint of KGPLAN_LLM_* (in a `Recording` whose
    `replies` the benchmark writes to `record`, where given); replay, the replies a `--record` wrote to `replay`.
    InputError where the endpoint or the file is missing."""
    if kind == "none":
        return None
    from kgplan.language.llm import NOT_CONFIGURED, LLMConfig, OpenAIClient, Recording, Replay

    if kind == "replay":
        if replay is None:
            raise InputError("--llm replay needs --llm-replay PATH")
        return Replay(json.loads(replay.read_text()))
    config = LLMConfig.from_env()
    if not config.configured:
        raise InputError(f"--llm openai: {NOT_CONFIGURED}")
    return Recording(OpenAIClient(config)) if record else OpenAIClient(config)
