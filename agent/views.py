"""The JSON shapes of the agent's operations and the operations that produce them, shared by the HTTP API
and the MCP server."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agent.core import Agent, Planner, Progress
from agent.llm import LLMError
from domains.sexpr import PDDLError
from graph.base import GraphError
from graph.model import Change, ChangeSlice, Entity, Fact

EXPECTED = (GraphError, PDDLError, LLMError, ValidationError)  # a user's mistake or a failing LLM, not a bug


class TellFailed(GraphError):
    """No valid change came out of a sentence; the graph is unchanged."""

    def __init__(self, message: str, rounds: list[list[str]]) -> None:
        super().__init__(message)
        self.rounds = rounds


# ---- what goes in --------------------------------------------------------------------------------
class TellIn(BaseModel):
    text: str = Field(min_length=1, description="A state change in English")
    dry_run: bool = False
    full_graph: bool = Field(False, description="Show the LLM the whole graph (no retrieval)")
    depth: int = Field(1, ge=0, le=5)
    rounds: int = Field(3, ge=1, le=10)


class PlanIn(BaseModel):
    goal: str | None = Field(None, description="A PDDL goal, e.g. (not (switched_on kitchen_light))")
    task: str | None = Field(None, description="A task in English (the LLM writes the goal)")
    planner: Planner = Planner.fd
    timeout: float = Field(60.0, gt=0, le=600)
    prune: bool = True


class FactOut(BaseModel):
    predicate: str
    args: list[str]
    text: str


class ChangeOut(BaseModel):
    id: int
    time: datetime
    source: str
    text: str
    model: str | None
    tokens: dict[str, int]
    add: list[FactOut]
    remove: list[FactOut]
    new_entities: list[Entity]
    removed_entities: list[str]
    undo_of: int | None
    sizes: dict[str, int] = Field(description="The full length of each list (add, remove, new_entities, "
                                              "removed_entities); the lists above may be a part of them")
    offset: int = Field(0, description="Where in each full list the lists above start")


class EntitiesOut(BaseModel):
    total: int
    entities: list[Entity]


class FactsOut(BaseModel):
    total: int
    facts: list[FactOut]


class NeighbourhoodOut(BaseModel):
    entity: Entity
    depth: int
    entities: list[Entity]
    facts: list[FactOut]


class StepOut(BaseModel):
    action: str
    add: list[FactOut]
    remove: list[FactOut]


class PlanOut(BaseModel):
    goal: str
    status: str
    planner: str
    plan: list[str]
    steps: list[StepOut]
    seconds: float
    used_full_state: bool
    message: str
    report: dict[str, Any] = Field(description="Every measurement of the planning run")


class TellOut(BaseModel):
    change: ChangeOut | None = Field(description="The applied change (None in a dry run)")
    proposed: ChangeOut | None = Field(description="The verified change of a dry run")
    rounds: list[list[str]] = Field(description="The issues of each refused reply")
    llm_calls: int
    prompt_tokens: int


class RunOut(BaseModel):
    goal: str
    steps: int
    changes: list[int]
    done: bool
    failure: str | None


def fact_out(f: Fact) -> FactOut:
    return FactOut(predicate=f.predicate, args=list(f.args), text=str(f))


def change_out(c: Change | ChangeSlice) -> ChangeOut:
    """A change, or the part of one that a slice holds."""
    if isinstance(c, Change):
        c = ChangeSlice.cut(c.id, c.time, c.undo_of, c.delta, limit=None)
    d = c.delta
    return ChangeOut(id=c.id, time=c.time, source=d.source, text=d.text, model=d.model, tokens=d.tokens,
                     add=[fact_out(f) for f in d.add], remove=[fact_out(f) for f in d.remove],
                     new_entities=d.new_entities, removed_entities=d.removed_names(), undo_of=c.undo_of,
                     sizes=c.sizes, offset=c.offset)


def entities_out(ents: list[Entity], limit: int) -> EntitiesOut:
    return EntitiesOut(total=len(ents), entities=ents[:limit])


def facts_out(facts: list[Fact], limit: int) -> FactsOut:
    return FactsOut(total=len(facts), facts=[fact_out(f) for f in facts[:limit]])


def do_show(agent: Agent, name: str, depth: int) -> NeighbourhoodOut:
    n = agent.show(name, depth)
    return NeighbourhoodOut(entity=n.entity, depth=depth, entities=n.entities, facts=[fact_out(f) for f in n.facts])


def do_history(agent: Agent, limit: int, before: int | None = None) -> list[ChangeOut]:
    """The newest changes first (ids below `before`), each with the first few items of what it changed."""
    return [change_out(c) for c in agent.history(limit, before)]


def do_tell(agent: Agent, body: TellIn, progress: Progress) -> TellOut:
    o = agent.tell(body.text, dry_run=body.dry_run, whole=body.full_graph, depth=body.depth, rounds=body.rounds,
                   progress=progress)
    if o.error:
        raise TellFailed(o.error, o.rounds)
    return TellOut(change=change_out(o.change) if o.change else None,
                   proposed=change_out(Change(id=0, delta=o.delta)) if o.delta and not o.change else None,
                   rounds=o.rounds, llm_calls=len(o.calls), prompt_tokens=o.prompt_tokens)


def do_plan(agent: Agent, body: PlanIn, progress: Progress) -> PlanOut:
    if (body.goal is None) == (body.task is None):
        raise GraphError('give either "goal" (PDDL) or "task" (English)')
    r = agent.plan(body.task, body.goal if body.task is None else None, planner=body.planner.value,
                   timeout=body.timeout, prune=body.prune, progress=progress)
    steps = [StepOut(action=s, add=[fact_out(f) for f in a], remove=[fact_out(f) for f in d])
             for s, (a, d) in zip(r.plan, agent.effects(r.plan), strict=True)]
    return PlanOut(goal=r.goal, status=r.status, planner=r.planner, plan=r.plan, steps=steps, seconds=r.seconds,
                   used_full_state=r.used_full_state, message=r.message, report=r.to_json())


def do_run(agent: Agent, progress: Progress) -> RunOut:
    goal, n, e = agent.run(progress)
    return RunOut(goal=goal, steps=n, changes=e.changes, done=e.done, failure=str(e.failure) if e.failure else None)


