"""The agent as an MCP server on stdio, so that an LLM assistant can use the world graph as its memory and
planner: `kgplan mcp`, or `python -m kgplan.interfaces.mcp` (store from $KGPLAN_STORE, LLM from the environment).

Tools: tell, plan, decide, run, show, search, history, change, undo. Their results are the JSON shapes of
`kgplan.interfaces.views`; an error (a refused change, an unknown entity, a goal that does not parse) is the
tool's error message.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from kgplan.agent.agent import Agent, quiet
from kgplan.agent.search import SEARCH_METHODS
from kgplan.interfaces import views
from kgplan.planners.engines import PLANNERS

F = TypeVar("F", bound=Callable[..., Any])


def said(fn: F) -> F:
    """The tool with the message of an expected error passed on to the client (MCP hides other errors)."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except views.EXPECTED as e:
            raise ToolError(str(e)) from e

    return wrapped  # type: ignore[return-value]


def create_server(agent: Agent) -> MCPServer:
    """An MCP server whose tools call `agent`."""
    server = MCPServer("kgplan", instructions=(
        "A world-state graph of PDDL facts with verified changes and a symbolic planner. Use `search` and `show` "
        "to look things up, `tell` to report a change in English, `plan` for a task or a PDDL goal, then `run`."))

    @server.tool()
    @said
    def tell(text: str, dry_run: bool = False) -> views.TellOut:
        """Report a state change in English (e.g. "Sandra turned off the laundry room light"); it is turned
        into facts, verified and applied (only verified with dry_run). Fails with the reasons if no valid
        change came out; the graph is then unchanged."""
        return views.do_tell(agent, views.TellIn(text=text, dry_run=dry_run), quiet)

    @server.tool()
    @said
    def plan(task: str | None = None, goal: str | None = None, planner: PLANNERS.field = "fd",
             timeout: float = 60.0) -> views.PlanOut:
        """Plan for a task in English or a PDDL goal such as "(not (switched_on kitchen_light))"; give one.
        The plan, with each step's effects, is kept for `run`."""
        return views.do_plan(agent, views.PlanIn(task=task, goal=goal, planner=planner, timeout=timeout), quiet)

    @server.tool()
    @said
    def decide(goal: str, method: SEARCH_METHODS.field = "puct_dr", simulations: int = 100) -> views.DecisionOut:
        """Decide one step towards a PDDL goal whose items' places are unknown, by a tree search over where they
        probably are; the step is kept for `run`. Observe what it shows, then decide again."""
        return views.do_decide(agent, views.DecideIn(goal=goal, method=method, simulations=simulations), quiet)

    @server.tool()
    @said
    def run() -> views.RunOut:
        """Execute the last plan on the graph, one verified change per step."""
        return views.do_run(agent, quiet)

    @server.tool()
    @said
    def show(entity: str, depth: int = 1) -> views.NeighbourhoodOut:
        """An entity with the entities and facts within `depth` fact hops of it."""
        return views.do_show(agent, entity, depth)

    @server.tool()
    @said
    def search(text: str = "", type: str | None = None, predicate: str | None = None, limit: int = 200
               ) -> dict[str, Any]:
        """Entities whose name, type or attributes contain `text` (optionally of a `type`), and facts that
        contain it (optionally of a `predicate`); at most `limit` of each."""
        return {"entities": views.entities_out(agent, agent.entities(type, text or None), limit).model_dump(),
                "facts": views.facts_out(agent, agent.facts(predicate, None, text or None), limit).model_dump()}

    @server.tool()
    @said
    def history(limit: int = 20, before: int | None = None) -> list[views.ChangeOut]:
        """The newest changes first (ids below `before`), with provenance and the first few items of what each
        changed (`sizes` gives the totals; `change` shows the rest)."""
        return views.do_history(agent, limit, before)

    @server.tool()
    @said
    def change(change_id: int, offset: int = 0, limit: int = 200) -> views.ChangeOut:
        """One change from `history` with items [offset, offset + limit) of each list of what it changed."""
        return views.change_out(agent.diff(change_id, offset, limit))

    @server.tool()
    @said
    def undo(change_id: int) -> views.ChangeOut:
        """Undo a change (by its id in `history`) by applying its inverse as a new change."""
        return views.change_out(agent.undo(change_id))

    return server


def serve(agent: Agent) -> None:
    """Serve on stdio until the client closes it."""
    create_server(agent).run("stdio")


if __name__ == "__main__":
    with Agent() as a:
        serve(a)
