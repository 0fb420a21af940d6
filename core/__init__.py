"""kgplan: a planning agent whose memory is a verified world-state graph.

The packages, each importing only those before it:

- `kgplan.domains`: PDDL as data (parser, model, invariants, verification of changes and goals)
- `kgplan.graph`: the world-state graph (data model, verified changes, history) over store backends
- `kgplan.planners`: ground states, relevance pruning, symbolic planners, plan execution, MCTS
- `kgplan.language`: LLM clients, prompts, and turning English into verified changes and goals
- `kgplan.games`: partially observed environments and the sensors that read them
- `kgplan.agent`: the Agent (every operation a user has) and the exploration loop
- `kgplan.interfaces`: the CLI, the HTTP API and its page, the MCP server
- `kgplan.benchmarks`: `kgplan bench NAME`

This package itself holds what they all share: the errors (`kgplan.errors`) and the registries'
machinery (`kgplan.registry`).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kgplan")
except PackageNotFoundError:  # run from a checkout that is not installed
    __version__ = "0.0.0"
