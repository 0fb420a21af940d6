"""Benchmarks: each prints a table and writes JSON results (`kgplan bench NAME --help`)."""

from rich.console import Console


def console() -> Console:
    """A console whose tables keep their columns when the output goes to a file or a pipe (rich assumes 80)."""
    probe = Console()
    return probe if probe.is_terminal else Console(width=200)
