"""The HTTP API (FastAPI, OpenAPI at /openapi.json, docs at /docs) and the web page at `/`, over one Agent.

Reads are open; writes (POST) need ``Authorization: Bearer $KGPLAN_API_TOKEN`` when that token is set.
The errors are mapped in one place (`problem_of`): a refused change answers 422 with the verifier's issues;
bad input 400; an unknown entity or change 404; an LLM that fails 424; a store that cannot be reached 503.
Long operations (tell, plan, run, explore) also run as jobs: POST /api/jobs/{op} answers 202 with a job whose
`progress` lines and final `result` GET /api/jobs/{id} reports (polling).
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, ValidationError

from kgplan.agent.agent import Agent, Progress, quiet
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import KgplanError, LLMError, NotFound, StoreError
from kgplan.graph.model import Entity, Unknown
from kgplan.interfaces import views
from kgplan.interfaces.views import (
    ChangeOut,
    DecideIn,
    DecisionOut,
    EntitiesOut,
    ExploreIn,
    FactsOut,
    NeighbourhoodOut,
    PlanIn,
    PlanOut,
    RunOut,
    TellFailed,
    TellIn,
    TellOut,
    change_out,
    do_decide,
    do_explore,
    do_history,
    do_plan,
    do_run,
    do_show,
    do_tell,
    entities_out,
    facts_out,
)

WEB = Path(__file__).parent / "web"


# ---- what goes in and out (the rest is in kgplan.interfaces.views) ----------------------------------------
class ChangeIn(BaseModel):
    add: list[str] = Field(default_factory=list, description='Facts to add, e.g. "(switched_on kitchen_light)"')
    remove: list[str] = Field(default_factory=list, description="Facts to remove")
    new_entities: list[Entity] = Field(default_factory=list)
    removed_entities: list[str] = Field(default_factory=list, description="Entities to remove with all their facts")
    unknown: list[Unknown] = Field(default_factory=list, description="Marks to set: an entity's facts of a predicate "
                                   "become unknown, or (no predicate) the entity is a placeholder")
    known: list[Unknown] = Field(default_factory=list, description="Marks to clear (see /api/unknowns)")
    note: str = Field("", description="Why (kept in the history)")
    dry_run: bool = Field(False, description="Verify only")


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


def as_json(model: BaseModel) -> Response:
    """A built answer as JSON, as is: FastAPI would dump, validate and dump it again (a large list's rows
    then cost twice as much); the route's `response_model` still documents it."""
    return Response(model.model_dump_json(), media_type="application/json")


class Problem(Exception):
    """An error answered as JSON with a status and structured detail."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.detail = ErrorDetail(message=message, **extra)


EXPECTED = (Problem, *views.EXPECTED)


def problem_of(e: Exception) -> Problem | None:
    """The HTTP answer to an expected error, or None for a bug."""
    if isinstance(e, Problem):
        return e
    if isinstance(e, ChangeRefused):
        return Problem(422, "change refused; the graph is unchanged",
                       issues=[Issue(kind=str(i.kind), message=i.message, fact=i.fact) for i in e.issues])
    if isinstance(e, TellFailed):
        return Problem(422, str(e), rounds=e.rounds)
    if isinstance(e, NotFound):
        return Problem(404, str(e))
    if isinstance(e, LLMError):
        return Problem(424, f"the LLM failed: {e}")
    if isinstance(e, StoreError):
        return Problem(503, str(e))
    if isinstance(e, KgplanError | ValidationError):
        return Problem(400, str(e))
    return None


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

        snapshot = job.model_copy(deep=True)  # the thread goes on changing `job`
        threading.Thread(target=work, daemon=True, name=f"kgplan-{op}").start()
        return snapshot


def create_app(agent: Agent, token: str | None = None) -> FastAPI:
    """The API and the page over `agent`; `token`, when given, is required for every write."""
    app = FastAPI(title="kgplan", version="0.1.0", description=__doc__)
    jobs = Jobs()
    bearer = HTTPBearer(auto_error=False, description="KGPLAN_API_TOKEN, when the server has one")
    errors: dict[int | str, dict[str, Any]] = {s: {"model": ErrorOut} for s in (400, 401, 404, 422, 424, 503)}

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

    @app.get("/api/entities", responses=errors, response_model=EntitiesOut)
    def entities(type: str | None = Query(None, description="Only this type (and its subtypes)"),
                 search: str | None = Query(None, description="Text in the name, type or attributes"),
                 limit: int = Query(500, ge=1, le=100_000)) -> Response:
        return as_json(entities_out(agent, agent.entities(type, search), limit))

    @app.get("/api/entities/{name}", responses=errors, response_model=NeighbourhoodOut)
    def entity(name: str, depth: int = Query(1, ge=0, le=5, description="Fact hops around the entity")
               ) -> Response:
        return as_json(do_show(agent, name, depth))

    @app.get("/api/facts", responses=errors, response_model=FactsOut)
    def facts(predicate: str | None = None, entity: str | None = Query(None, description="Facts mentioning it"),
              search: str | None = Query(None, description="Text in the fact"),
              limit: int = Query(1000, ge=1, le=1_000_000)) -> Response:
        return as_json(facts_out(agent, agent.facts(predicate, entity, search), limit))

    @app.get("/api/unknowns", responses=errors)
    def unknowns(entity: str | None = Query(None, description="Only what is unknown about this entity")
                 ) -> list[Unknown]:
        """What the graph marks unknown: placeholders (`predicate` null: an entity not yet identified) and
        facts of a predicate not known for an entity (e.g. where an item is)."""
        return agent.unknowns(None if entity is None else [entity])

    @app.get("/api/history", responses=errors)
    def history(limit: int = Query(50, ge=1, le=10_000),
                before: int | None = Query(None, description="Only changes with smaller ids (the next page)")
                ) -> list[ChangeOut]:
        """The newest changes first, with provenance (source, sentence, model, tokens) and the first few items of
        what each changed (`sizes` gives the totals; GET /api/history/{change_id} pages through the rest)."""
        return do_history(agent, limit, before)

    @app.get("/api/history/{change_id}", responses=errors)
    def change(change_id: int, offset: int = Query(0, ge=0),
               limit: int = Query(1000, ge=1, le=100_000, description="Items of each list")) -> ChangeOut:
        """One change with items [offset, offset + limit) of each list of what it changed."""
        return change_out(agent.diff(change_id, offset, limit))

    @app.post("/api/changes", **write)
    def changes(body: ChangeIn) -> ChangeOut:
        """Add and remove facts (and entities, and unknown marks) as one verified change; 422 with the issues if
        refused."""
        return change_out(agent.change(body.add, body.remove, body.note, body.new_entities, body.dry_run,
                                       body.removed_entities, body.unknown, body.known))

    @app.post("/api/undo/{change_id}", **write)
    def undo(change_id: int) -> ChangeOut:
        """Apply the inverse of a change as a new change."""
        return change_out(agent.undo(change_id))

    @app.post("/api/tell", **write)
    def tell(body: TellIn) -> TellOut:
        """A state change in English, turned into a verified change by the LLM."""
        return do_tell(agent, body, quiet)

    @app.post("/api/plan", **write)
    def plan(body: PlanIn) -> PlanOut:
        """Plan for a PDDL goal or an English task; the plan is kept for /api/run."""
        return do_plan(agent, body, quiet)

    @app.post("/api/decide", **write)
    def decide(body: DecideIn) -> DecisionOut:
        """One step decided by a tree search over the belief about unknown places (kept for /api/run as a one-step
        plan): observe, then decide again."""
        return do_decide(agent, body, quiet)

    @app.post("/api/run", **write)
    def run() -> RunOut:
        """Execute the last plan, one verified change per step."""
        return do_run(agent, quiet)

    @app.post("/api/jobs/tell", status_code=202, **write)
    def tell_job(body: TellIn) -> JobOut:
        return jobs.start("tell", lambda p: do_tell(agent, body, p))

    @app.post("/api/jobs/plan", status_code=202, **write)
    def plan_job(body: PlanIn) -> JobOut:
        return jobs.start("plan", lambda p: do_plan(agent, body, p))

    @app.post("/api/jobs/run", status_code=202, **write)
    def run_job() -> JobOut:
        return jobs.start("run", lambda p: do_run(agent, p))

    @app.post("/api/jobs/explore", status_code=202, **write)
    def explore_job(body: ExploreIn) -> JobOut:
        """Play a game with the exploration loop, on a fresh graph of its own (the store is not used); the
        progress lines are its steps, the result an ExploreOut."""
        return jobs.start("explore", lambda p: do_explore(body, p))

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


@contextmanager
def serving(agent: Agent) -> Iterator[str]:
    """uvicorn serving the agent on a free port of 127.0.0.1, in a thread."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(agent), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
