"""The packages' dependency order, checked on the source: no module imports a package above its own, and the
modules' imports at run time (lazy ones inside functions included, those for type checkers only left out) have
no cycle."""

from __future__ import annotations

import ast
import tomllib

import networkx as nx

from tests.conftest import ROOT

# each package may import those before it, never one after it
ORDER = ["kgplan", "domains", "graph", "planners", "language", "games", "agent", "interfaces", "benchmarks"]


def modules() -> dict[str, ast.Module]:
    """Every module of the kgplan distribution by dotted name, read from the folders pyproject.toml maps."""
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    out = {}
    for package, folder in folders.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join([package, *parts]).removesuffix(".__init__")
            out[name] = ast.parse(path.read_text())
    return out


def imported(tree: ast.Module, typing: bool = True) -> set[str]:
    """The kgplan modules (or packages) `tree` imports, anywhere in it (under `if TYPE_CHECKING:` too, unless not
    `typing`)."""
    skip = set() if typing else {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                                 and ast.unparse(block.test) == "TYPE_CHECKING" for n in ast.walk(block)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kgplan"):
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("kgplan")}
    return out


def layer(module: str) -> int:
    parts = module.split(".")
    return ORDER.index(parts[1]) if len(parts) > 1 and parts[1] in ORDER else 0


def test_no_module_imports_a_package_above_its_own() -> None:
    found = modules()
    upward = [(m, i) for m, tree in found.items() for i in imported(tree) if i in found and layer(i) > layer(m)]
    assert not upward, upward


def test_no_import_cycles() -> None:
    found = modules()
    graph = nx.DiGraph((m, i) for m, tree in found.items() for i in imported(tree, typing=False)
                       if i in found and i != m and not m.startswith(f"{i}."))  # a package's own __init__ aside
    assert nx.is_directed_acyclic_graph(graph), list(nx.simple_cycles(graph))[:5]
