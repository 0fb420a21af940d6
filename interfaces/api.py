"""The HTTP API (FastAPI, OpenAPI at /openapi.json, docs at /docs) and the web page at `/`, over one Agent.

Reads are open; writes (POST) need ``Authorization: Bearer $KGPLAN_API_TOKEN`` when that token is set.
Every request must name this server in its Host header (loopback names, the address it listens on, or a host
allowed with ``--allowed-host``: no DNS rebinding), and every write must carry ``Content-Type: application/json``
and come from this server's own page or from no page at all (its Origin, else Referer): a page on another site
can send neither without a preflight, which this server never grants. Bodies are at most ``Limits.max_body``
bytes (413). Planning, the LLM and games run on a fixed pool of workers with a bounded queue (429 with
Retry-After when it is full), so reads stay answered whatever is planned (`Limits`: $KGPLAN_API_WORKERS,
$KGPLAN_API_QUEUE, $KGPLAN_API_MAX_BODY).
The errors are mapped in one place (`problem_of`), every one as an `ErrorOut`: a refused change or an invalid
request answers 422 with the issues; bad input 400; an unknown entity or change 404; an LLM that fails 424; a
store that cannot be reached or written 503.
Long operations (tell, plan, run, explore) also run as jobs: POST /api/jobs/{op} answers 202 with a job whose
`progress` lines and final `result` GET /api/jobs/{id} reports (polling).
Where a sentence (tell) or a task (plan) does not tell which of some things or facts it means, the answer is a
question instead of a guess, `ClarificationOut`: `{"status": "needs_clarification", "question", "word", "options":
[{"value", "label"}], "answers"}` (200, nothing changed or planned); the same request sent again with `answers` plus
`{word: value}` completes it.
GET /api/events is the change feed: each change any process applies, as a server-sent event, resumable with
Last-Event-ID (at most $KGPLAN_API_STREAMS open at once).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import secrets
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi import Path as InPath
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kgplan.agent.agent import Agent, Progress, quiet
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import InputError, KgplanError, LLMError, NotFound, StoreError
from kgplan.games.scene import Scene, VirtualHomeGraph
from kgplan.graph.backends import BACKENDS
from kgplan.graph.feed import Interest, heads, newest, read_on
from kgplan.graph.model import Entity, Source, Unknown
from kgplan.graph.world import WorldGraph
from kgplan.interfaces import views
from kgplan.interfaces.views import (
    ChangeOut,
    ClarificationOut,
    DecideIn,
    DecisionOut,
    EntitiesOut,
    ExploreIn,
    FactsOut,
    NeighbourhoodOut,
    PlanIn,
    PlanOut,
    RunOut,
    SceneOut,
    TellFailed,
    TellIn,
    TellOut,
    change_out,
    do_decide,
    do_explore,
    do_history,
    do_plan,
    do_run,
    do_scene,
    do_show,
    do_tell,
    entities_out,
    facts_out,
)
from kgplan.planners.whynot import GoalRefused

if TYPE_CHECKING:
    import uvicorn

WEB = Path(__file__).parent / "web"
ID = 2**63 - 1  # the largest change id a store holds
T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """How much the server takes on at once."""

    workers: int = max(1, min(4, (os.cpu_count() or 2) // 2))  # plans, LLM conversations and games at once
    queue: int = 32  # more of them waiting for a worker; beyond that a new one is refused (429)
    keep: int = 100  # finished jobs kept for polling
    max_body: int = 4 * 2**20  # bytes of a request body
    streams: int = 32  # event streams (GET /api/events) open at once; beyond that a new one is refused (429)

    @classmethod
    def from_env(cls) -> Limits:
        """The defaults, but for those set as $KGPLAN_API_WORKERS, $KGPLAN_API_QUEUE, $KGPLAN_API_MAX_BODY,
        $KGPLAN_API_STREAMS."""
        given = {k: os.environ.get(f"KGPLAN_API_{k.upper()}") for k in ("workers", "queue", "max_body", "streams")}
        try:
            limits = cls(**{k: int(v) for k, v in given.items() if v})
        except ValueError:
            limits = cls(workers=0)
        if limits.workers < 1 or limits.queue < 0 or limits.max_body < 0 or limits.streams < 0:
            raise InputError(f"bad server limits {given}: KGPLAN_API_WORKERS is a whole number from 1, "
                             "KGPLAN_API_QUEUE, KGPLAN_API_MAX_BODY (bytes) and KGPLAN_API_STREAMS from 0")
        return limits


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


class Empty(BaseModel):
    """The body of a write that needs no input: none, or `{}`; either way sent as `Content-Type: application/json`."""

    model_config = ConfigDict(extra="forbid")


class Issue(BaseModel):
    kind: str
    message: str
    fact: str | None


class ErrorDetail(BaseModel):
    message: str
    issues: list[Issue] = Field(default_factory=list)
    rounds: list[list[str]] = Field(default_factory=list)
    why: list[views.CauseOut] = Field(default_factory=list)  # a goal refused for names not in the graph
    alternative: str | None = None  # and the closest goal that can be reached


class ErrorOut(BaseModel):
    detail: ErrorDetail


class JobOut(BaseModel):
    id: str
    op: str
    status: Literal["running", "done", "failed"] = Field(description="running: not finished (it may still wait "
                                                                     "for a worker)")
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

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers
        self.detail = ErrorDetail(message=message, **extra)

    def response(self) -> Response:
        """The answer (ASCII JSON: a message may quote input that UTF-8 cannot encode, a lone surrogate)."""
        body = json.dumps(ErrorOut(detail=self.detail).model_dump(mode="json"))
        return Response(body, self.status, self.headers, media_type="application/json")


EXPECTED = (Problem, HTTPException, RequestValidationError, RecursionError, *views.EXPECTED)


def problem_of(e: Exception) -> Problem | None:
    """The HTTP answer to an expected error, or None for a bug."""
    if isinstance(e, Problem):
        return e
    if isinstance(e, ChangeRefused):
        return Problem(422, "change refused; the graph is unchanged",
                       issues=[Issue(kind=str(i.kind), message=i.message, fact=i.fact) for i in e.issues])
    if isinstance(e, RequestValidationError):
        issues = [Issue(kind=x["type"], message=f"{'.'.join(map(str, x['loc']))}: {x['msg']}"
                        + (f" ({x['ctx']['error']})" if "error" in x.get("ctx", {}) else ""), fact=None)
                  for x in e.errors()]
        return Problem(422, "invalid request: " + "; ".join(i.message for i in issues), issues=issues)
    if isinstance(e, HTTPException):  # the router's own: no such route (404), method (405)
        return Problem(e.status_code, str(e.detail), e.headers)
    if isinstance(e, RecursionError):
        return Problem(400, "the input is nested too deeply")
    if isinstance(e, GoalRefused) and e.why:
        return Problem(400, str(e), why=views.causes_out(e.why.causes), alternative=e.why.alternative)
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


def strict_json(body: bytes) -> Any:
    """A request body as JSON that can be stored: no NaN or Infinity, no lone surrogate, not nested too deeply
    (json.JSONDecodeError otherwise, which FastAPI answers as an invalid request)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        value = json.loads(body, parse_constant=refuse)
        json.dumps(value, ensure_ascii=False).encode()
    except (ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e).replace("surrogates", "a lone surrogate")
        raise json.JSONDecodeError(why, "", 0) from e
    return value


class StrictRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json(await self.body())
        return self._json


class StrictRoute(APIRoute):
    """A route that reads its JSON body with `strict_json`."""

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictRequest(request.scope, request.receive))

        return strict


def address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address a host is written as (127.1 and the other short IPv4 forms too), None for a name."""
    name = host.strip("[]")
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        try:
            return ipaddress.ip_address(socket.inet_aton(name))
        except OSError:
            return None


def is_loopback(host: str) -> bool:
    """Whether a host name or address is this machine's loopback: localhost, 127.0.0.0/8 (127.1 too), ::1."""
    name = host.strip("[]").lower()
    ip = address(name)
    return ip.is_loopback if ip else name == "localhost" or name.endswith(".localhost")


def check_exposure(host: str, token: str | None, insecure_no_token: bool = False) -> None:
    """Refuse to serve writes beyond this machine without a token, unless the user says so explicitly."""
    if not (token or is_loopback(host) or insecure_no_token):
        raise InputError(f"refusing to serve on {host} without a token: anyone who reaches it could change the graph. "
                         "Set KGPLAN_API_TOKEN (writes then need it), listen on 127.0.0.1, or pass --insecure-no-token")


class Guard:
    """The checks every request passes before routing (an ASGI middleware, its refusals `ErrorOut`s): the Host
    names this server; the body is at most `max_body` bytes, counted as it arrives (and then handed on whole)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str], max_body: int) -> None:
        self.app, self.hosts, self.max_body = app, {h.lower() for h in hosts}, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        try:
            self.check(Headers(scope=scope))
            body = await self.read(receive)
        except Problem as p:
            return await p.response()(scope, receive, send)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def check(self, headers: Headers) -> None:
        host = headers.get("host", "")
        try:
            name = urlsplit(f"//{host}").hostname or ""
        except ValueError:
            name = ""
        # DNS rebinding points a name at this machine; an address as Host is no name an attacker can point
        if not ("*" in self.hosts or name in self.hosts or is_loopback(name) or address(name)):
            raise Problem(400, f"this server is not {host!r} (a name it does not know is refused, against DNS "
                               "rebinding): reach it by its address, or start it with --allowed-host NAME")
        if (length := headers.get("content-length", "")).isdigit() and int(length) > self.max_body:
            raise self.too_large()

    async def read(self, receive: Receive) -> bytes:
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > self.max_body:
                raise self.too_large()
            if not message.get("more_body"):
                return bytes(body)

    def too_large(self) -> Problem:
        return Problem(413, f"the request body is larger than this server takes ({self.max_body} bytes)")


def same_site(request: Request) -> None:
    """A write (POST) carries JSON and comes from this server's own page or from no page (its Origin, else Referer):
    a page on another site can send neither without a preflight, which this server never grants."""
    if request.method != "POST":
        return
    headers = request.headers
    origin = headers.get("origin") or headers.get("referer")
    try:
        same = origin is None or urlsplit(origin).netloc.lower() == headers.get("host", "").lower()
    except ValueError:
        same = False
    if not same:
        raise Problem(403, f"a write from another site ({origin}) is refused: use this server's page or a client "
                           "that sends no Origin")
    if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise Problem(415, "a write must be sent as Content-Type: application/json (an empty body is fine where "
                           "there is nothing to send)")


class Jobs:
    """Long operations (planning, the LLM, games) on a fixed pool of worker threads, with at most `limits.queue`
    more waiting; beyond that a new one is refused (429 with Retry-After) instead of queued without end. Jobs
    are polled by id: an unfinished one is never forgotten, a finished one once `limits.keep` newer ones have
    finished."""

    def __init__(self, limits: Limits) -> None:
        self.name = f"kgplan-jobs-{uuid.uuid4().hex[:8]}"  # its threads' names begin with it
        self.pool = ThreadPoolExecutor(limits.workers, thread_name_prefix=self.name)
        self.slots = threading.BoundedSemaphore(limits.workers + limits.queue)
        self.jobs: dict[str, JobOut] = {}
        self.finished: deque[str] = deque()
        self.lock = threading.Lock()
        self.keep = limits.keep

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        if not self.slots.acquire(blocking=False):
            raise Problem(429, "the server is busy: every planner worker is taken and the queue is full; try again "
                               "shortly", {"Retry-After": "5"})
        try:
            future = self.pool.submit(fn)
        except BaseException:
            self.slots.release()
            raise
        future.add_done_callback(lambda _: self.slots.release())
        return future

    async def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the pool and wait for it (a synchronous route: no thread of the server's own waits)."""
        return await asyncio.wrap_future(self.submit(fn))

    def start(self, op: str, fn: Callable[[Progress], BaseModel]) -> JobOut:
        job = JobOut(id=uuid.uuid4().hex, op=op, status="running", progress=[])
        snapshot = job.model_copy(deep=True)  # the worker goes on changing `job`

        def work() -> None:
            try:
                job.result = fn(job.progress.append).model_dump(mode="json")
                job.status = "done"
            except Exception as e:
                p = problem_of(e) or Problem(500, f"internal error: {type(e).__name__}: {e}")
                job.error, job.http_status, job.status = ErrorOut(detail=p.detail), p.status, "failed"
            with self.lock:
                self.finished.append(job.id)
                while len(self.finished) > self.keep:
                    self.jobs.pop(self.finished.popleft(), None)

        with self.lock:
            self.jobs[job.id] = job
        try:
            self.submit(work)
        except Problem:
            with self.lock:
                self.jobs.pop(job.id)
            raise
        return snapshot


class EventStream(StreamingResponse):
    """Server-sent events; `done` runs once the stream ends, whether the client left or the server stopped."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncGenerator[str, None], done: Callable[[], None]) -> None:
        super().__init__(events, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.events, self.done = events, done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.done()
            await self.events.aclose()


class Feed:
    """The change feed's event streams (GET /api/events), at most `limit` open at once (429 beyond). Each reads the
    durable history on from the last change it sent (`graph.feed`), so it sees every process's changes, and
    waits for the next: one watcher of the newest change's id, running while a stream is open, wakes them all."""

    poll = 0.2  # seconds between reads of the newest change's id
    keepalive = 15.0  # seconds of quiet before a keep-alive comment

    def __init__(self, graph: WorldGraph, limit: int) -> None:
        self.graph, self.limit, self.open = graph, limit, 0
        self.watcher: asyncio.Task[None] | None = None
        self.moved = asyncio.Event()  # set (and replaced) when the newest change's id moves
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once a stream has opened
        self.stopped = False

    def stream(self, after: int | None, interest: Interest) -> EventStream:
        """The events of the changes after `after` (None: from now on) that are of interest."""
        if self.open >= self.limit:
            raise Problem(429, f"the server is busy: {self.limit} event streams are open (KGPLAN_API_STREAMS); try "
                               "again shortly", {"Retry-After": "5"})
        self.open += 1
        return EventStream(self.events(after, interest), self.closed)

    def stop(self) -> None:
        """End every stream (the server is stopping); safe from any thread and from a signal handler."""
        self.stopped = True
        if self.loop is not None:
            self.loop.call_soon_threadsafe(lambda: self.moved.set())

    def closed(self) -> None:
        self.open -= 1
        if not self.open and self.watcher:
            self.watcher.cancel()
            self.watcher = None

    async def watch(self) -> None:
        async for _ in heads(self.graph, self.poll):
            moved, self.moved = self.moved, asyncio.Event()
            moved.set()

    async def events(self, after: int | None, interest: Interest) -> AsyncGenerator[str, None]:
        if self.watcher is None or self.watcher.done():
            self.moved, self.loop = asyncio.Event(), asyncio.get_running_loop()
            self.watcher = asyncio.create_task(self.watch())
        yield "retry: 1000\n\n"  # reconnect after a second
        cursor = await asyncio.to_thread(newest, self.graph) if after is None else after
        while not self.stopped:
            moved = self.moved
            shown, last = await asyncio.to_thread(read_on, self.graph, cursor, interest)
            if last == cursor:  # nothing new: wait for the next change
                try:
                    await asyncio.wait_for(moved.wait(), self.keepalive)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                continue
            events = [f"id: {c.id}\nevent: change\ndata: {change_out(c).model_dump_json()}\n\n" for c in shown]
            if not shown or shown[-1].id != last:  # an event of the id alone, which no client dispatches unless it
                # is a reset, moves the client's Last-Event-ID past the changes not of interest
                events.append(f"id: {last}\n" + ("event: reset\ndata: {}\n" if last < cursor else "") + "\n")
            yield "".join(events)
            cursor = last


def create_app(agent: Agent, token: str | None = None, *, hosts: Iterable[str] = (),
               limits: Limits = Limits()) -> FastAPI:
    """The API and the page over `agent`; `token`, when given, is required for every write; `hosts`: the names
    besides loopback ones that clients may reach it by ("*": any)."""
    jobs = Jobs(limits)
    feed = Feed(agent.graph, limits.streams)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        jobs.pool.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="kgplan", version="0.1.0", description=__doc__, lifespan=lifespan,
                  dependencies=[Depends(same_site)])
    app.state.jobs = jobs
    app.state.feed = feed
    app.router.route_class = StrictRoute
    app.add_middleware(Guard, hosts=hosts, max_body=limits.max_body)
    bearer = HTTPBearer(auto_error=False, description="KGPLAN_API_TOKEN, when the server has one")
    errors: dict[int | str, dict[str, Any]] = {s: {"model": ErrorOut} for s in (400, 404, 422, 503)}
    write_errors = {**errors, **{s: {"model": ErrorOut} for s in (401, 403, 413, 415, 424)}}
    busy = {429: {"model": ErrorOut, "description": "The queue of planner workers is full (see Retry-After)"}}

    def write_access(cred: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        if not (cred and secrets.compare_digest(cred.credentials.encode(), (token or "").encode())):
            raise Problem(401, "this server protects writes: send Authorization: Bearer <KGPLAN_API_TOKEN>")

    async def expected(request: Request, e: Exception) -> Response:
        p = problem_of(e)
        assert p is not None  # registered for the expected errors only
        return p.response()

    async def bug(request: Request, e: Exception) -> Response:
        return Problem(500, f"internal error: {type(e).__name__}").response()

    for kind in EXPECTED:
        app.add_exception_handler(kind, expected)
    app.add_exception_handler(Exception, bug)

    write = {"dependencies": [Depends(write_access)] if token else [], "responses": write_errors}
    pooled = {**write, "responses": {**write_errors, **busy}}

    @app.get("/api/settings", responses=errors)
    def settings() -> dict[str, Any]:
        """The store's backend, the domain and the LLM's model, and whether writes need a token (no paths, no
        addresses)."""
        s = agent.settings()
        backend = next((b.name for b in BACKENDS if s["store"].startswith(b.schemes)), "unknown")
        return {"store": backend, "domain": s["domain"], "llm": {"model": s["llm"]["model"]},
                "writes_need_token": bool(token)}

    @app.get("/api/entities", responses=errors, response_model=EntitiesOut)
    def entities(type: str | None = Query(None, description="Only this type (and its subtypes)"),
                 search: str | None = Query(None, description="Text in the name, type or attributes"),
                 limit: int = Query(500, ge=1, le=100_000),
                 at: str | None = Query(None, description=views.AT_HELP)) -> Response:
        past = agent.at(at)
        return as_json(entities_out(past, past.entities(type, search), limit))

    @app.get("/api/entities/{name}", responses=errors, response_model=NeighbourhoodOut)
    def entity(name: str, depth: int = Query(1, ge=0, le=5, description="Fact hops around the entity"),
               at: str | None = Query(None, description=views.AT_HELP)) -> Response:
        return as_json(do_show(agent.at(at), name, depth))

    @app.get("/api/facts", responses=errors, response_model=FactsOut)
    def facts(predicate: str | None = None, entity: str | None = Query(None, description="Facts mentioning it"),
              search: str | None = Query(None, description="Text in the fact"),
              limit: int = Query(1000, ge=1, le=1_000_000),
              at: str | None = Query(None, description=views.AT_HELP)) -> Response:
        past = agent.at(at)
        return as_json(facts_out(past, past.facts(predicate, entity, search), limit))

    @app.get("/api/unknowns", responses=errors)
    def unknowns(entity: str | None = Query(None, description="Only what is unknown about this entity"),
                 at: str | None = Query(None, description=views.AT_HELP)) -> list[Unknown]:
        """What the graph marks unknown: placeholders (`predicate` null: an entity not yet identified) and
        facts of a predicate not known for an entity (e.g. where an item is)."""
        return agent.at(at).unknowns(None if entity is None else [entity])

    @app.get("/api/history", responses=errors)
    def history(limit: int = Query(50, ge=1, le=10_000),
                before: int | None = Query(None, ge=-ID, le=ID,
                                           description="Only changes with smaller ids (the next page)")
                ) -> list[ChangeOut]:
        """The newest changes first, with provenance (source, sentence, model, tokens) and the first few items of
        what each changed (`sizes` gives the totals; GET /api/history/{change_id} pages through the rest)."""
        return do_history(agent, limit, before)

    @app.get("/api/history/{change_id}", responses=errors)
    def change(change_id: int = InPath(ge=-ID, le=ID), offset: int = Query(0, ge=0, le=ID),
               limit: int = Query(1000, ge=1, le=100_000, description="Items of each list")) -> ChangeOut:
        """One change with items [offset, offset + limit) of each list of what it changed."""
        return change_out(agent.diff(change_id, offset, limit))

    # ---- the history: a fact's timeline, the difference between two moments ----------------------------
    @app.get("/api/timeline", responses=errors)
    def timeline(pattern: str = Query(description='A fact, any of its names "*": (on apple *)'),
                 at: str | None = Query(None, description=views.AT_HELP)) -> list[views.IntervalOut]:
        """Every interval in which a fact matching the pattern held, oldest first, with the change that added it
        and the one that removed it (null: it holds still) and their provenance."""
        return views.do_timeline(agent, pattern, at)

    @app.get("/api/diff", responses=errors)
    def diff(start: str = Query(alias="from", description="A change id or an ISO time"),
             end: str = Query(alias="to", description="Another one")) -> views.DifferenceOut:
        """What held at `to` and not at `from` (`add`, `new_entities`), and the reverse."""
        return views.do_difference(agent, start, end)

    @app.post("/api/changes", **write)
    def changes(body: ChangeIn) -> ChangeOut:
        """Add and remove facts (and entities, and unknown marks) as one verified change; 422 with the issues if
        refused."""
        return change_out(agent.change(body.add, body.remove, body.note, body.new_entities, body.dry_run,
                                       body.removed_entities, body.unknown, body.known))

    @app.post("/api/scenes", **write)
    def scenes(body: Scene | VirtualHomeGraph) -> SceneOut:
        """A perceived scene graph (the generic form, or VirtualHome's environment graph) mapped onto the domain by
        its domain.toml's [scene] table and applied as one verified change: what it shows, with what it could not
        see marked unknown (change null if nothing changed). 400 with the reasons if the mapping cannot map it,
        422 with the issues if it contradicts the domain (nothing applied)."""
        return do_scene(agent, body if isinstance(body, Scene) else body.generic())

    @app.post("/api/undo/{change_id}", **write)
    def undo(change_id: int = InPath(ge=-ID, le=ID), body: Empty | None = None) -> ChangeOut:
        """Apply the inverse of a change as a new change."""
        return change_out(agent.undo(change_id))

    @app.post("/api/tell", **pooled)
    async def tell(body: TellIn) -> TellOut | ClarificationOut:
        """A state change in English, turned into a verified change by the LLM. Where the sentence does not tell
        which of some things or facts it means, the answer is `status: needs_clarification` with the question and
        the options (nothing changed): send the same request again with its `answers` plus {word: option}."""
        return await jobs.call(lambda: do_tell(agent, body, quiet))

    @app.post("/api/plan", **pooled)
    async def plan(body: PlanIn) -> PlanOut | ClarificationOut:
        """Plan for a PDDL goal or an English task; the plan is kept for /api/run. A task that does not tell which
        of some options it means answers `status: needs_clarification`, as /api/tell does."""
        return await jobs.call(lambda: do_plan(agent, body, quiet))

    @app.post("/api/decide", **pooled)
    async def decide(body: DecideIn) -> DecisionOut:
        """One step decided by a tree search over the belief about unknown places (kept for /api/run as a one-step
        plan): observe, then decide again."""
        return await jobs.call(lambda: do_decide(agent, body, quiet))

    @app.post("/api/run", **pooled)
    async def run(body: Empty | None = None) -> RunOut:
        """Execute the last plan, one verified change per step."""
        return await jobs.call(lambda: do_run(agent, quiet))

    @app.post("/api/jobs/tell", status_code=202, **pooled)
    def tell_job(body: TellIn) -> JobOut:
        return jobs.start("tell", lambda p: do_tell(agent, body, p))

    @app.post("/api/jobs/plan", status_code=202, **pooled)
    def plan_job(body: PlanIn) -> JobOut:
        return jobs.start("plan", lambda p: do_plan(agent, body, p))

    @app.post("/api/jobs/run", status_code=202, **pooled)
    def run_job(body: Empty | None = None) -> JobOut:
        return jobs.start("run", lambda p: do_run(agent, p))

    @app.post("/api/jobs/explore", status_code=202, **pooled)
    def explore_job(body: ExploreIn) -> JobOut:
        """Play a game with the exploration loop, on a fresh graph of its own (the store is not used); the
        progress lines are its steps, the result an ExploreOut."""
        return jobs.start("explore", lambda p: do_explore(body, p))

    @app.get("/api/jobs/{job_id}", responses=errors)
    def job(job_id: str) -> JobOut:
        """A job's progress lines, and its result or error once it has finished."""
        if (found := jobs.jobs.get(job_id)) is None:
            raise Problem(404, f"no job {job_id!r}")
        return found

    @app.get("/api/events", response_class=EventStream, status_code=200, responses={
        200: {"content": {"text/event-stream": {}}, "description": "Server-sent events"}, **errors,
        429: {"model": ErrorOut, "description": "Too many event streams are open (see Retry-After)"}})
    async def events(after: int | None = Query(None, ge=0, le=ID, description="Start after this change id (0: from "
                                               "the first change); without it, from now on"),
                     entity: str | None = Query(None, description="Only changes that touch this entity"),
                     predicate: str | None = Query(None, description="Only changes of facts or marks of it"),
                     source: Source | None = Query(None, description="Only changes from this source"),
                     last_event_id: int | None = Header(None, ge=0, le=ID, description="The id of the last event "
                                                        "received: the stream resumes after it (`after` is ignored)")
                     ) -> EventStream:
        """The change feed: each change applied from now on (by any client or process on this store), as it is
        applied, as server-sent events `change` whose `id` is the change's id and whose data is its summary (as in
        /api/history); reconnecting with `Last-Event-ID` resumes with no gap and no repeat. A quiet stream gets a
        keep-alive comment every 15 s; an event `reset` (id 0) says the history began again (the store was cleared
        and begun anew): read the graph again."""
        return feed.stream(after if last_event_id is None else last_event_id, Interest(entity, predicate, source))

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(WEB / "index.html")

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    return app


def uvicorn_server(app: FastAPI, **config: Any) -> uvicorn.Server:
    """A uvicorn server of `app` that ends the event streams as it begins to stop (it waits for open requests, and
    a stream would never end)."""
    import uvicorn

    class Server(uvicorn.Server):
        @property
        def should_exit(self) -> bool:
            return self.__dict__.get("exit", False)

        @should_exit.setter
        def should_exit(self, value: bool) -> None:
            self.__dict__["exit"] = value
            if value:
                app.state.feed.stop()

    return Server(uvicorn.Config(app, **config))


def serve(agent: Agent, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
          hosts: Iterable[str] = (), limits: Limits | None = None) -> None:
    """Serve the API and the page with uvicorn until interrupted (clients may name it `host` too; the limits from
    the environment unless given)."""
    app = create_app(agent, token, hosts=[*hosts, host], limits=limits or Limits.from_env())
    uvicorn_server(app, host=host, port=port, log_level="info").run()


@contextmanager
def serving(agent: Agent, **options: Any) -> Iterator[str]:
    """uvicorn serving the agent on a free port of 127.0.0.1, in a thread (`options`: of `create_app`)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn_server(create_app(agent, **options), host="127.0.0.1", port=port, log_level="warning")
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
