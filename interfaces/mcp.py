"""The agent as an MCP server on stdio, so that an LLM assistant can use the world graph as its memory and
planner: `kgplan mcp`, or `python -m kgplan.interfaces.mcp` (store from $KGPLAN_STORE, LLM from the environment).

Tools: domain, show, search, history, history_entry (reads); change (a verified correction, as POST /api/changes),
tell, plan, decide, run, undo. Their results are the JSON shapes of `kgplan.interfaces.views`; an error (a refused
change, an unknown entity, a goal that does not parse) is the tool's error, with the message and issues the HTTP
API answers (`kgplan.interfaces.api.problem_of`).
Resources: the change history read forward, `kgplan://changes{?after,limit,entity,predicate,source}`, and the newest
change, `kgplan://changes/latest`; a client subscribed to them (`subscriptions/listen`, or `resources/subscribe` on
protocol versions before 2026-07-28) is sent `notifications/resources/updated` when any process changes the graph.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.types import EmptyResult, SubscribeRequestParams, ToolAnnotations, UnsubscribeRequestParams
from pydantic import BaseModel, Field

from kgplan.agent.agent import Agent, GoalMode, Retriever, TellMode, quiet
from kgplan.agent.search import BELIEFS, SEARCH_METHODS
from kgplan.domains.formula import Param
from kgplan.domains.model import Domain
from kgplan.games.scene import Key, Scene, SceneNode
from kgplan.graph.feed import Interest, heads, read_on
from kgplan.graph.model import Entity, Source, Unknown
from kgplan.graph.world import MAX_ID
from kgplan.interfaces import views
from kgplan.interfaces.api import EXPECTED, problem_of
from kgplan.planners.engines import PLANNERS

F = TypeVar("F", bound=Callable[..., Any])
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
PLANS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)  # keep a plan for run
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)  # change the graph
Limit = Annotated[int, Field(ge=1, le=100_000)]
Offset = Annotated[int, Field(ge=0)]
Id = Annotated[int, Field(ge=1)]
At = Annotated[str | None, Field(description=views.AT_HELP)]
Answers = Annotated[dict[str, str] | None, Field(description=views.ANSWERS)]


def said(fn: F) -> F:
    """The tool with an expected error passed on to the client as the HTTP API words it (MCP hides other errors)."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EXPECTED as e:
            d = problem_of(e).detail  # type: ignore[union-attr]  (EXPECTED errors all have one)
            raise ToolError("\n".join([d.message, *(f"- [{i.kind}] {i.message}" for i in d.issues),
                                       *(f"reply {n} refused: {'; '.join(r)}" for n, r in enumerate(d.rounds, 1))])
                            ) from e

    return wrapped  # type: ignore[return-value]


class ParamOut(BaseModel):
    name: str
    types: list[str] = Field(description="Its type, or the types of an (either ...)")


class PredicateOut(BaseModel):
    name: str
    params: list[ParamOut]
    gloss: str = Field(description="What a fact of it means, in English, with the parameters' names")


class ActionOut(BaseModel):
    name: str
    params: list[ParamOut]


class DomainOut(BaseModel):
    name: str
    types: dict[str, str | None] = Field(description="Each type with its parent type")
    predicates: list[PredicateOut]
    functions: list[PredicateOut] = Field(description="Numeric functions, e.g. action costs: (= (f args) value)")
    actions: list[ActionOut]


def domain_out(d: Domain) -> DomainOut:
    def params(ps: tuple[Param, ...]) -> list[ParamOut]:
        return [ParamOut(name=p.name, types=list(d.reduce_types(p.types))) for p in ps]

    def predicates(ps: dict[str, Any]) -> list[PredicateOut]:
        return [PredicateOut(name=p.name, params=params(p.params), gloss=d.gloss(p.name, [a.name for a in p.params]))
                for p in ps.values()]

    return DomainOut(name=d.name, types=d.types, predicates=predicates(d.predicates),
                     functions=predicates(d.functions),
                     actions=[ActionOut(name=a.name, params=params(a.params)) for a in d.actions.values()])


CHANGES, LATEST = "kgplan://changes", "kgplan://changes/latest"


class Changes:
    """The change feed's notifications: while the server runs, a watcher of the newest change's id (any process's
    changes) publishes `ResourceUpdated` for the change resources to `subscriptions/listen` streams (`bus`) and
    sends `notifications/resources/updated` to the sessions that asked by `resources/subscribe`."""

    poll = 0.2  # seconds between reads of the newest change's id

    def __init__(self, agent: Agent) -> None:
        self.graph = agent.graph
        self.bus = InMemorySubscriptionBus()
        self.sessions: dict[ServerSession, set[str]] = {}

    @asynccontextmanager
    async def lifespan(self, server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.watch)
            yield {}
            tasks.cancel_scope.cancel()

    async def watch(self) -> None:
        moves = heads(self.graph, self.poll)
        await anext(moves)  # where the history stands as the server starts
        async for _ in moves:
            for uri in (CHANGES, LATEST):
                await self.bus.publish(ResourceUpdated(uri=uri))
                for session in [s for s, uris in self.sessions.items() if uri in uris]:
                    try:
                        await session.send_resource_updated(uri)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        self.sessions.pop(session, None)

    async def subscribe(self, ctx: ServerRequestContext, params: SubscribeRequestParams) -> EmptyResult:
        self.sessions.setdefault(ctx.session, set()).add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext, params: UnsubscribeRequestParams) -> EmptyResult:
        self.sessions.get(ctx.session, set()).discard(str(params.uri))
        return EmptyResult()


def create_server(agent: Agent) -> MCPServer:
    """An MCP server whose tools call `agent`."""
    feed = Changes(agent)
    server = MCPServer("kgplan", instructions=(
        "A world-state graph of PDDL facts with verified changes and a symbolic planner. Use `domain` for the "
        "types, predicates and actions, `search` and `show` to look things up, `change` to correct facts (or "
        "`tell` to report a change in English), `plan` for a task or a PDDL goal, then `run`. Subscribe to "
        "kgplan://changes to be told of every change."), lifespan=feed.lifespan, subscriptions=feed.bus)

    @server.tool(annotations=READ)
    @said
    def domain() -> DomainOut:
        """The domain: its types (with their parents), its predicates with what each means in English, its
        numeric functions and its actions with their parameters."""
        return domain_out(agent.domain)

    @server.tool(annotations=WRITES)
    @said
    def change(add: list[str] | None = None, remove: list[str] | None = None,
               new_entities: list[Entity] | None = None, removed_entities: list[str] | None = None,
               unknown: list[Unknown] | None = None, known: list[Unknown] | None = None, note: str = "",
               dry_run: bool = False) -> views.ChangeOut:
        """Correct the graph with one verified change (all or nothing): facts to `add` and `remove` such as
        "(on apple kitchen_table)", `new_entities` ({name, type}), `removed_entities` (with all their facts),
        `unknown` marks to set and `known` marks to clear ({entity, predicate}: which facts of the predicate hold
        for the entity is not known; no predicate: the entity is a placeholder), a `note` saying why. Moving
        something is one change: remove its old place and add the new one. With dry_run it is verified only.
        A refused change fails with the verifier's issues; the graph is then unchanged."""
        return views.change_out(agent.change(add or (), remove or (), note, new_entities or (), dry_run,
                                             removed_entities or (), unknown or (), known or ()))

    @server.tool(annotations=WRITES)
    @said
    def observe_scene(nodes: list[SceneNode], relations: list[tuple[Key, str, Key]] | None = None,
                      observed: list[Key] | None = None) -> views.SceneOut:
        """Apply what a perception system sees as one verified change: `nodes` ({id (tracked across scans) or ref
        (this scan only), class, states}), `relations` [subject, relation, object] naming nodes by id or ref (a
        node's relations as subject are all it has), `observed` the nodes seen whole. The domain's [scene]
        mapping turns classes into types and relations and states into facts; things moved, appeared or gone and
        changed states are written, what the scan could not see is marked unknown. Fails with the reasons if the
        mapping cannot map it or the scan contradicts the domain (nothing applied)."""
        return views.do_scene(agent, Scene(nodes=nodes, relations=relations or [], observed=observed or []))

    @server.tool(annotations=WRITES)
    @said
    def tell(text: str, dry_run: bool = False, answers: Answers = None, mode: TellMode = TellMode.propose,
             retriever: Retriever = Retriever.select) -> views.TellOut | views.ClarificationOut:
        """Report a state change in English (e.g. "Sandra turned off the laundry room light"); kgplan's own LLM
        turns it into facts, verified and applied (only verified with dry_run). Fails with the reasons if no
        valid change came out; the graph is then unchanged. Where the sentence does not tell which of some things
        or facts it means, the result is `status: needs_clarification` with a question and its options: ask the
        user, then call again with the same text and `answers` (the result's, plus {word: the option's value}).
        `mode` rewrite has the LLM write the change from what the `retriever` shows it (L3M+P)."""
        return views.do_tell(agent, views.TellIn(text=text, dry_run=dry_run, answers=answers or {}, mode=mode,
                                                 retriever=retriever), quiet)

    @server.tool(annotations=PLANS)
    @said
    def plan(task: str | None = None, goal: str | None = None, planner: PLANNERS.field = "fd",
             timeout: float = 60.0, answers: Answers = None, goal_mode: GoalMode = GoalMode.write,
             retriever: Retriever = Retriever.select) -> views.PlanOut | views.ClarificationOut:
        """Plan for a task in English or a PDDL goal such as "(not (switched_on kitchen_light))"; give one.
        The plan, with each step's effects, is kept for `run`. A task that does not tell which of some options it
        means is a `needs_clarification` result, answered as for `tell`. `goal_mode` write: the LLM writes its
        goal from what the `retriever` finds (select, search: RS, whole); propose: it chooses among the goal
        literals the domain admits."""
        return views.do_plan(agent, views.PlanIn(task=task, goal=goal, planner=planner, timeout=timeout,
                                                 answers=answers or {}, goal_mode=goal_mode, retriever=retriever),
                             quiet)

    @server.tool(annotations=PLANS)
    @said
    def decide(goal: str, method: SEARCH_METHODS.field = "puct_dr", simulations: int = 100,
               belief: BELIEFS.field | None = None) -> views.DecisionOut:
        """Decide one step towards a PDDL goal whose items' places are unknown, by a tree search over where they
        probably are (`belief`: that belief in place of the method's own); the step is kept for `run`. Observe
        what it shows, then decide again."""
        return views.do_decide(agent, views.DecideIn(goal=goal, method=method, simulations=simulations,
                                                     belief=belief), quiet)

    @server.tool(annotations=WRITES)
    @said
    def run() -> views.RunOut:
        """Execute the last plan on the graph, one verified change per step."""
        return views.do_run(agent, quiet)

    @server.tool(annotations=READ)
    @said
    def show(entity: str, depth: Annotated[int, Field(ge=0, le=5)] = 1, at: At = None) -> views.NeighbourhoodOut:
        """An entity with the entities and facts within `depth` fact hops of it (as of `at`, if given)."""
        return views.do_show(agent.at(at), entity, depth)

    @server.tool(annotations=READ)
    @said
    def search(text: str = "", type: str | None = None, predicate: str | None = None, limit: Limit = 200,
               at: At = None) -> dict[str, Any]:
        """Entities whose name, type or attributes contain `text` (optionally of a `type`), and facts that
        contain it (optionally of a `predicate`); at most `limit` of each (`total` says how many there are); as of
        `at`, if given."""
        past = agent.at(at)
        return {"entities": views.entities_out(past, past.entities(type, text or None), limit).model_dump(),
                "facts": views.facts_out(past, past.facts(predicate, None, text or None), limit).model_dump()}

    @server.tool(annotations=READ)
    @said
    def history(limit: Limit = 20, before: Id | None = None) -> list[views.ChangeOut]:
        """The newest changes first (ids below `before`), with provenance and the first few items of what each
        changed (`sizes` gives the totals; `history_entry` shows the rest)."""
        return views.do_history(agent, limit, before)

    @server.tool(annotations=READ)
    @said
    def history_entry(change_id: Id, offset: Offset = 0, limit: Limit = 200) -> views.ChangeOut:
        """One change from `history` with items [offset, offset + limit) of each list of what it changed."""
        return views.change_out(agent.diff(change_id, offset, limit))

    # ---- the history: a fact's timeline, the difference between two moments ----------------------------
    @server.tool(annotations=READ)
    @said
    def timeline(pattern: str, at: At = None) -> list[views.IntervalOut]:
        """Every interval in which a fact matching `pattern` (a fact, any of its names "*": "(on apple *)") held,
        oldest first, with the change that added it and the one that removed it (null: it holds still) and their
        provenance: when was the apple where?"""
        return views.do_timeline(agent, pattern, at)

    @server.tool(annotations=READ)
    @said
    def difference(start: str, end: str) -> views.DifferenceOut:
        """What changed between two moments (change ids or ISO times): facts and entities that hold at `end` and
        not at `start` (`add`, `new_entities`), and the reverse."""
        return views.do_difference(agent, start, end)

    @server.tool(annotations=WRITES)
    @said
    def undo(change_id: Id) -> views.ChangeOut:
        """Undo a change (by its id in `history`) by applying its inverse as a new change."""
        return views.change_out(agent.undo(change_id))

    @server.resource(CHANGES + "{?after,limit,entity,predicate,source}", name="changes", mime_type="application/json")
    def changes(after: int = 0, limit: int = 100, entity: str | None = None, predicate: str | None = None,
                source: Source | None = None) -> dict[str, Any]:
        """The change history read forward: of the next `limit` changes after id `after` (0: from the first),
        oldest first, those of interest (touching an `entity`, of a `predicate`, from a `source`), each summarised
        as `history` does; `next`: the id to read after next time (0 when the history began again). Subscribe to
        be told when it grows."""
        if not 0 <= after <= MAX_ID or not 1 <= limit <= 1000:
            raise ResourceError("after is a change id from 0, limit from 1 to 1000")
        shown, last = read_on(agent.graph, after, Interest(entity, predicate, source), limit)
        return {"changes": [views.change_out(c).model_dump(mode="json") for c in shown], "next": last}

    @server.resource(LATEST, name="latest change", mime_type="application/json")
    def latest() -> dict[str, Any] | None:
        """The newest change, summarised as `history` does (null if there is none); subscribe to be told when
        another comes."""
        return next((views.change_out(c).model_dump(mode="json") for c in agent.history(1)), None)

    # resources/subscribe (protocol versions before 2026-07-28), which MCPServer does not serve itself
    server._lowlevel_server.add_request_handler("resources/subscribe", SubscribeRequestParams, feed.subscribe)
    server._lowlevel_server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, feed.unsubscribe)
    return server


def serve(agent: Agent) -> None:
    """Serve on stdio until the client closes it."""
    create_server(agent).run("stdio")


if __name__ == "__main__":
    with Agent() as a:
        serve(a)
