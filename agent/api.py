"""The HTTP API (FastAPI, OpenAPI at /openapi.json, docs at /docs) and the web page at `/`, over one Agent.

Reads are open; writes (POST) need ``Authorization: Bearer $KGPLAN_API_TOKEN`` when that token is set.
A refused change answers 422 with the verifier's issues; bad input 400; an unknown entity or change 404;
an LLM that fails 424. Long operations (tell, plan, run) also run as jobs: POST /api/jobs/{op} answers
202 with a job whose `progress` lines and final `result` GET /api/jobs/{id} reports (polling).
"""

from __future__ import annotations

import secrets
import threading
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, ValidationError

from agent.core import Agent, NotFound, Planner, Progress
from agent.llm import LLMError
from domains.sexpr import PDDLError
from graph.base import ChangeRefused, GraphError
from graph.model import Change, Entity, Fact

WEB = Path(__file__).parent / "web"


# ---- what goes in --------------------------------------------------------------------------------
class ChangeIn(BaseModel):
    add: list[str] = Field(default_factory=list, description='Facts to add, e.g. "(switched_on kitchen_light)"')
    remove: list[str] = Field(default_factory=list, description="Facts to remove")
    new_entities: list[Entity] = Field(default_factory=list)
    note: str = Field("", description="Why (kept in the history)")
    dry_run: bool = Field(False, description="Verify only")


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


# ---- what comes out ------------------------------------------------------------------------------
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
    undo_of: int | None


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


class Issue(BaseModel):
    kind: str
    message: str
    fact: str | None


class ErrorDetail(BaseModel):
    message: str
    issues: list[Issue] = Field(default_factory=list)
    rounds: list[list[str]] = Field(default_factory=list)


class ErrorOut(BaseModel):
    detail: ErrorDetail


class JobOut(BaseModel):
    id: str
    op: str
    status: Literal["running", "done", "failed"]
    progress: list[str]
    result: dict[str, Any] | None = None
    error: ErrorOut | None = None
    http_status: int | None = Field(None, description="The status the synchronous route would have answered")


class Problem(Exception):
    """An error answered as JSON with a status and structured detail."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.detail = ErrorDetail(message=message, **extra)


EXPECTED = (Problem, GraphError, PDDLError, LLMError, ValidationError)


def problem_of(e: Exception) -> Problem | None:
    """The HTTP answer to an expected error, or None for a bug."""
    if isinstance(e, Problem):
        return e
    if isinstance(e, ChangeRefused):
        return Problem(422, "change refused; the graph is unchanged",
                       issues=[Issue(kind=str(i.kind), message=i.message, fact=i.fact) for i in e.issues])
    if isinstance(e, NotFound):
        return Problem(404, str(e))
    if isinstance(e, LLMError):
        return Problem(424, f"the LLM failed: {e}")
    if isinstance(e, GraphError | PDDLError | ValidationError):
        return Problem(400, str(e))
    return None


def fact_out(f: Fact) -> FactOut:
    return FactOut(predicate=f.predicate, args=list(f.args), text=str(f))


def change_out(c: Change) -> ChangeOut:
    d = c.delta
    return ChangeOut(id=c.id, time=c.time, source=d.source, text=d.text, model=d.model, tokens=d.tokens,
                     add=[fact_out(f) for f in d.add], remove=[fact_out(f) for f in d.remove],
                     new_entities=d.new_entities, undo_of=c.undo_of)


# ---- the operations, shared by the synchronous routes and the jobs ----------------------------------
def do_tell(agent: Agent, body: TellIn, progress: Progress) -> TellOut:
    o = agent.tell(body.text, dry_run=body.dry_run, whole=body.full_graph, depth=body.depth, rounds=body.rounds,
                   progress=progress)
    if o.error:
        raise Problem(422, o.error, rounds=o.rounds)
    return TellOut(change=change_out(o.change) if o.change else None,
                   proposed=change_out(Change(id=0, delta=o.delta)) if o.delta and not o.change else None,
                   rounds=o.rounds, llm_calls=len(o.calls), prompt_tokens=o.prompt_tokens)


def do_plan(agent: Agent, body: PlanIn, progress: Progress) -> PlanOut:
    if (body.goal is None) == (body.task is None):
        raise Problem(400, 'give either "goal" (PDDL) or "task" (English)')
    r = agent.plan(body.task, body.goal if body.task is None else None, planner=body.planner.value,
                   timeout=body.timeout, prune=body.prune, progress=progress)
    steps = [StepOut(action=s, add=[fact_out(f) for f in a], remove=[fact_out(f) for f in d])
             for s, (a, d) in zip(r.plan, agent.effects(r.plan), strict=True)]
    return PlanOut(goal=r.goal, status=r.status, planner=r.planner, plan=r.plan, steps=steps, seconds=r.seconds,
                   used_full_state=r.used_full_state, message=r.message, report=r.to_json())


def do_run(agent: Agent, progress: Progress) -> RunOut:
    goal, n, e = agent.run(progress)
    return RunOut(goal=goal, steps=n, changes=e.changes, done=e.done, failure=str(e.failure) if e.failure else None)


class Jobs:
    """Long operations in background threads, with their progress lines, polled by id."""

    def __init__(self, keep: int = 100) -> None:
        self.jobs: dict[str, JobOut] = {}
        self.keep = keep

    def start(self, op: str, fn: Callable[[Progress], BaseModel]) -> JobOut:
        job = JobOut(id=uuid.uuid4().hex, op=op, status="running", progress=[])
        self.jobs[job.id] = job
        for old in list(self.jobs)[: -self.keep]:
            self.jobs.pop(old)

        def work() -> None:
            try:
                job.result = fn(job.progress.append).model_dump(mode="json")
                job.status = "done"
            except Exception as e:
                p = problem_of(e) or Problem(500, f"internal error: {type(e).__name__}: {e}")
                job.error, job.http_status, job.status = ErrorOut(detail=p.detail), p.status, "failed"

        threading.Thread(target=work, daemon=True, name=f"kgplan-{op}").start()
        return job


def create_app(agent: Agent, token: str | None = None) -> FastAPI:
    """The API and the page over `agent`; `token`, when given, is required for every write."""
    app = FastAPI(title="kgplan", version="0.1.0", description=__doc__)
    jobs = Jobs()
    bearer = HTTPBearer(auto_error=False, description="KGPLAN_API_TOKEN, when the server has one")
    errors: dict[int | str, dict[str, Any]] = {s: {"model": ErrorOut} for s in (400, 401, 404, 422, 424)}

    def write_access(cred: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        if token and not (cred and secrets.compare_digest(cred.credentials.encode(), token.encode())):
            raise Problem(401, "this server protects writes: send Authorization: Bearer <KGPLAN_API_TOKEN>")

    async def expected(request: Request, e: Exception) -> JSONResponse:
        p = problem_of(e)
        assert p is not None  # registered for the expected errors only
        return JSONResponse(ErrorOut(detail=p.detail).model_dump(mode="json"), status_code=p.status)

    for kind in EXPECTED:
        app.add_exception_handler(kind, expected)

    write = {"dependencies": [Depends(write_access)], "responses": errors}

    @app.get("/api/settings")
    def settings() -> dict[str, Any]:
        """The store, domain and LLM in use, and whether writes need a token."""
        return {**agent.settings(), "writes_need_token": bool(token)}

    @app.get("/api/entities", responses=errors)
    def entities(type: str | None = Query(None, description="Only this type (and its subtypes)"),
                 search: str | None = Query(None, description="Text in the name, type or attributes"),
                 limit: int = Query(500, ge=1, le=100_000)) -> EntitiesOut:
        found = agent.entities(type, search)
        return EntitiesOut(total=len(found), entities=found[:limit])

    @app.get("/api/entities/{name}", responses=errors)
    def entity(name: str, depth: int = Query(1, ge=0, le=5, description="Fact hops around the entity")
               ) -> NeighbourhoodOut:
        n = agent.show(name, depth)
        return NeighbourhoodOut(entity=n.entity, depth=depth, entities=n.entities,
                                facts=[fact_out(f) for f in n.facts])

    @app.get("/api/facts", responses=errors)
    def facts(predicate: str | None = None, entity: str | None = Query(None, description="Facts mentioning it"),
              search: str | None = Query(None, description="Text in the fact"),
              limit: int = Query(1000, ge=1, le=1_000_000)) -> FactsOut:
        found = agent.facts(predicate, entity, search)
        return FactsOut(total=len(found), facts=[fact_out(f) for f in found[:limit]])

    @app.get("/api/history", responses=errors)
    def history(limit: int = Query(50, ge=1, le=10_000)) -> list[ChangeOut]:
        """The newest changes first, with provenance (source, sentence, model, tokens) and what each changed."""
        return [change_out(c) for c in reversed(agent.history(limit))]

    @app.post("/api/changes", **write)
    def changes(body: ChangeIn) -> ChangeOut:
        """Add and remove facts (and entities) as one verified change; 422 with the issues if refused."""
        return change_out(agent.change(body.add, body.remove, body.note, body.new_entities, body.dry_run))

    @app.post("/api/undo/{change_id}", **write)
    def undo(change_id: int) -> ChangeOut:
        """Apply the inverse of a change as a new change."""
        return change_out(agent.undo(change_id))

    @app.post("/api/tell", **write)
    def tell(body: TellIn) -> TellOut:
        """A state change in English, turned into a verified change by the LLM."""
        return do_tell(agent, body, lambda _: None)

    @app.post("/api/plan", **write)
    def plan(body: PlanIn) -> PlanOut:
        """Plan for a PDDL goal or an English task; the plan is kept for /api/run."""
        return do_plan(agent, body, lambda _: None)

    @app.post("/api/run", **write)
    def run() -> RunOut:
        """Execute the last plan, one verified change per step."""
        return do_run(agent, lambda _: None)

    @app.post("/api/jobs/tell", status_code=202, **write)
    def tell_job(body: TellIn) -> JobOut:
        return jobs.start("tell", lambda p: do_tell(agent, body, p))

    @app.post("/api/jobs/plan", status_code=202, **write)
    def plan_job(body: PlanIn) -> JobOut:
        return jobs.start("plan", lambda p: do_plan(agent, body, p))

    @app.post("/api/jobs/run", status_code=202, **write)
    def run_job() -> JobOut:
        return jobs.start("run", lambda p: do_run(agent, p))

    @app.get("/api/jobs/{job_id}", responses=errors)
    def job(job_id: str) -> JobOut:
        """A job's progress lines, and its result or error once it has finished."""
        if job_id not in jobs.jobs:
            raise Problem(404, f"no job {job_id!r}")
        return jobs.jobs[job_id]

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(WEB / "index.html")

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    return app


def serve(agent: Agent, host: str = "127.0.0.1", port: int = 8000, token: str | None = None) -> None:
    """Serve the API and the page with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_app(agent, token), host=host, port=port, log_level="info")
