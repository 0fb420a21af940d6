"""The Agent: every operation a user has on the world graph, in one object.

The CLI, the demo, the HTTP API and the MCP server all call it; none of them holds agent logic.
One Agent serves several threads (the API's worker pool): operations that change the graph take one lock
(they are serialised, and each change is verified in its store transaction); reads take none, so they never
wait behind a plan or an LLM call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from kgplan.domains.invariants import Mined, MutexGroup, Synthesis
from kgplan.domains.model import Domain, Problem, resolve_domain
from kgplan.domains.verify import ChangeRefused, Issue
from kgplan.errors import InputError, KgplanError, LLMError, NotFound
from kgplan.files import read_json, read_text
from kgplan.graph.backends import open_graph
from kgplan.graph.model import Change, ChangeSlice, Delta, Difference, Entity, Fact, Interval, Unknown
from kgplan.graph.store import Tx
from kgplan.graph.world import WorldGraph

if TYPE_CHECKING:
    from kgplan.games.scene import Scene, SceneCounts
    from kgplan.language.llm import LLM, LLMConfig
    from kgplan.language.pddl_edit import EditOutcome
    from kgplan.language.update import Clarification, Outcome, Retrieval
    from kgplan.planners.execute import Execution
    from kgplan.planners.mcts.search import Decision
    from kgplan.planners.pipeline import PlanReport
    from kgplan.planners.state import Step
    from kgplan.planners.whynot import WhyNot

Progress = Callable[[str], None]


def quiet(_: str) -> None:
    """The default progress callback: say nothing."""


class GoalMode(StrEnum):
    """How a task in English becomes a goal."""

    write = "write"  # the model writes the goal from what retrieval shows it (L3M+P)
    propose = "propose"  # the model names what the task is about and chooses among the goal literals the domain admits


class TellMode(StrEnum):
    """How `tell` turns a sentence into a change."""

    propose = "propose"  # the model names and chooses among the changes the domain proposes (language.propose)
    rewrite = "rewrite"  # the model writes the change; verification issues go back to it (L3M+P's Algorithm 3)


class Retriever(StrEnum):
    """What the LLM is shown of the graph when it writes a change (`TellMode.rewrite`) or a goal (L3M+P's retrieval)."""

    select = "select"  # the entities the LLM selects from the entity list, and their facts within `depth` hops
    search = "search"  # RS: the LLM describes a query graph, grounded by embeddings and search; facts within `depth`
    whole = "whole"  # the whole graph (no retrieval)


DEPTH = 3  # fact hops retrieved around the entities found (L3M+P's reference code)


class Unclear(KgplanError):
    """The text does not tell which of some options it means (`clarification`): ask the user, then ask again with
    `answers={clarification.word: option}`."""

    def __init__(self, clarification: Clarification) -> None:
        super().__init__(clarification.question)
        self.clarification = clarification


@dataclass
class Neighbourhood:
    """An entity with the entities and facts within some fact hops of it."""

    entity: Entity
    entities: list[Entity]
    facts: list[Fact]


def load_observations(path: Path) -> list[Delta]:
    """Read sensor observations: one JSON object or a list, each {add, remove, new_entities,
    removed_entities, unknown, known, text}; InputError (naming the observation) if one is malformed or changes nothing
    (it is not recorded as an empty change)."""
    data = read_json(path, "observation file")
    deltas = []
    for i, item in enumerate(data if isinstance(data, list) else [data], 1):
        if not isinstance(item, dict):
            raise InputError(f"{path}: observation {i} must be a JSON object")
        item = {**item, "source": "sensor"}
        try:
            for k in ("add", "remove"):
                if item.get(k) is None:
                    item[k] = []  # null: none
                elif isinstance(item[k], list):
                    item[k] = [Fact.parse(x) if isinstance(x, str) else x for x in item[k]]
            deltas.append(Delta.model_validate(item))
        except ValidationError as e:
            wrong = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'it'}: {x['msg']}" for x in e.errors())
            raise InputError(f"{path}: observation {i} is malformed: {wrong}") from None
        except InputError as e:
            raise InputError(f"{path}: observation {i}: {e}") from None
        if deltas[-1].is_empty():
            raise InputError(f"{path}: observation {i} changes nothing (no facts, entities or marks): leave it out")
    return deltas


def problem_file(domain: Domain, problem: Path) -> Path:
    """A problem file: the path, else one of the domain's folder by that file name or name (`world.pddl` or
    `world` for a bundled domain's problem, from any directory)."""
    if problem.exists() or domain.path is None:
        return problem  # read_text says what is wrong with it
    folder = domain.path.parent
    for candidate in (folder / problem.name, folder / f"{problem.name}.pddl"):
        if candidate.is_file():
            return candidate
    shipped = sorted(f.name for f in folder.glob("*.pddl") if f.name != "domain.pddl")
    raise NotFound(f"no problem file at {problem}" + (f" (the domain's folder has {', '.join(shipped)})"
                                                      if shipped else ""))


class Agent:
    """A world graph with its domain, an optional LLM for language, and the user's operations on them.

    `store` is a store URL (see `graph.backends.open_graph`) or an open graph; given a `domain` (a bundled
    name or a path), an uninitialised store is initialised with it. `llm` is an LLM client or its settings; without
    one, the settings come from the environment when a language operation first needs them.
    """

    def __init__(self, store: str | WorldGraph | None = None, domain: str | Path | None = None,
                 llm: LLM | LLMConfig | None = None) -> None:
        self.graph: WorldGraph = store if isinstance(store, WorldGraph) else open_graph(store)
        self.writes = threading.RLock()  # held by every operation that may change the graph
        self._llm = llm
        # the entity list (seconds to read at 100k entities) and the newest change it was read after
        self._entities: tuple[tuple[int, str] | None, list[Entity]] | None = None
        if domain is not None and not self.initialised:
            with self.writes:
                self.graph.init(resolve_domain(domain))

    def close(self) -> None:
        self.graph.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def initialised(self) -> bool:
        """Whether the store is bound to a domain."""
        return self.graph.get_meta("domain_pddl") is not None

    @property
    def domain(self) -> Domain:
        return self.graph.domain

    @property
    def llm(self) -> LLM:
        """The language model, built from the environment on first use."""
        from kgplan.language.llm import LLM, LLMConfig, OpenAIClient

        if not isinstance(self._llm, LLM):
            self._llm = OpenAIClient(self._llm if isinstance(self._llm, LLMConfig) else LLMConfig.from_env())
        return self._llm

    def settings(self) -> dict[str, Any]:
        """The store, domain and LLM in use (no secrets)."""
        from kgplan.language.llm import LLMConfig

        llm = self._llm or LLMConfig.from_env()
        config = llm if isinstance(llm, LLMConfig) else getattr(llm, "config", None)
        model = config.model if config else getattr(llm, "model", type(llm).__name__)
        domain = self.domain.name if self.initialised else None
        return {"store": self.graph.url, "domain": domain,
                "llm": {"model": model, "base_url": config.base_url if config else None}}

    # ---- setting up ---------------------------------------------------------------------------
    def init(self, domain: str | Path, problem: Path | None = None, force: bool = False) -> Synthesis:
        """Bind the store to a domain, optionally loading a PDDL problem (all or nothing); which
        invariants were derived for its initial state and which dropped."""
        dom = resolve_domain(domain)
        if problem is not None:
            problem = problem_file(dom, Path(problem))
        prob = Problem.parse(read_text(problem, "problem file"), str(problem)) if problem else None
        with self.writes:
            return self.graph.init(dom, force=force, problem=prob)

    # ---- reading ------------------------------------------------------------------------------
    def entities(self, type: str | None = None, search: str | None = None) -> list[Entity]:
        """Entities, optionally of a type (subtypes included) and/or whose name, type or attributes
        contain `search` (case-insensitive)."""
        newest = self.graph.changes(1)  # any change, by any process, makes the cached list stale
        version = (newest[0].id, newest[0].time.isoformat()) if newest else None
        cached = self._entities
        if cached is None or cached[0] != version:
            cached = self._entities = (version, self.graph.entities())
        ents = cached[1]
        dom = self.domain if type else None
        if dom is not None:
            if type not in dom.types and type != "object":
                raise InputError(f"unknown type {type!r}")
            ents = [e for e in ents if dom.is_subtype(e.type, type)]
        if search:
            s = search.lower()
            ents = [e for e in ents if s in e.name.lower() or s in e.type.lower()
                    or any(s in v.lower() for v in e.attrs.values())]
        return ents

    def show(self, name: str, depth: int = 1) -> Neighbourhood:
        """An entity and its neighbourhood within `depth` fact hops."""
        if depth < 0:
            raise InputError("depth must be 0 or more")
        ents, facts = self.graph.neighborhood([name], depth)
        found = [e for e in ents if e.name == name]
        if not found:
            raise NotFound(f"no entity named {name!r}")
        return Neighbourhood(found[0], ents, facts)

    def facts(self, predicate: str | None = None, entity: str | None = None, search: str | None = None) -> list[Fact]:
        """Facts, optionally of one predicate, mentioning one entity, or whose text contains `search`."""
        if predicate and predicate not in self.domain.predicates:
            raise InputError(f"unknown predicate {predicate!r}")
        facts = self.graph.facts(predicate, entity)
        if search:
            s = search.lower()
            facts = [f for f in facts if s in str(f).lower()]
        return facts

    def unknowns(self, names: Iterable[str] | None = None) -> list[Unknown]:
        """What the graph marks unknown (placeholders, facts of a predicate not known for an entity),
        about every entity or those named."""
        return self.graph.unknowns(None if names is None else list(names))

    def history(self, limit: int | None = 50, before: int | None = None) -> list[ChangeSlice]:
        """The newest `limit` changes (all if None) with ids below `before`, newest first, each with its
        provenance and the first few items of each list of its delta (`sizes` gives the totals)."""
        if limit is not None and limit < 1:
            raise InputError("limit must be 1 or more")
        return self.graph.changes(limit, before)  # ids and limits beyond what a store holds: see WorldGraph

    def diff(self, change_id: int, offset: int = 0, limit: int | None = 1000) -> ChangeSlice:
        """One change with items [offset, offset + limit) of each list of its delta."""
        if (c := self.graph.change_slice(change_id, offset, limit)) is None:
            raise NotFound(f"no change with id {change_id}")
        return c

    def count(self) -> tuple[int, int]:
        return self.graph.count()

    # ---- the history: the graph as of a moment, a fact's timeline, the difference between moments -----
    def at(self, when: int | str | None) -> Agent:
        """This agent on its graph as of a change id or an ISO time (see `WorldGraph.moment`): every read as then,
        nothing writable. Itself if `when` is None."""
        return self if when is None else Agent(self.graph.at(when), llm=self._llm)

    def timeline(self, pattern: str) -> list[Interval]:
        """When each fact matching `pattern` (e.g. "(on apple *)") held, with the changes that opened and closed
        each interval (see `WorldGraph.timeline`)."""
        return self.graph.timeline(pattern)

    def how(self, intervals: list[Interval]) -> list[str | None]:
        """How the change that opened each interval chose its fact, where a sentence told it (`Delta.how`)."""
        told = {i.opened.id for i in intervals if i.opened.source == "nl"}  # few: each read whole, once
        how = {c: self.diff(c, 0, 0).delta.how for c in told}
        return [how.get(i.opened.id, {}).get(str(i.fact)) for i in intervals]

    def difference(self, start: int | str, end: int | str) -> Difference:
        """What held at one moment and not at the other: facts and entities (see `WorldGraph.difference`)."""
        return self.graph.difference(start, end)

    def export_pddl(self) -> str:
        return self.graph.to_problem()

    # ---- rules ---------------------------------------------------------------------------------
    def invariants(self) -> list[MutexGroup]:
        """The invariants verification enforces (derived, declared or mined)."""
        return list(self.domain.invariants)

    def suggest_invariants(self) -> Mined:
        """Invariants the graph satisfies for predicates no action changes, not yet enforced."""
        return self.graph.suggest_invariants()

    def accept_invariants(self, groups: Iterable[MutexGroup]) -> Change:
        """Enforce mined invariants from now on (ChangeRefused if the graph violates one); the change that
        records it."""
        with self.writes:
            return self.graph.accept_invariants(groups)

    def remove_invariants(self, groups: Iterable[MutexGroup]) -> Change:
        """Stop enforcing accepted invariants (NotFound for one that is not); the change that records it."""
        with self.writes:
            return self.graph.remove_invariants(groups)

    def check(self, incomplete: bool = False) -> list[Issue]:
        """Every typing and invariant violation in the whole graph (an independent check); with `incomplete`,
        also each entity without an atom an exactly-one invariant needs (see `graph.check.check_graph`)."""
        from kgplan.graph.check import check_graph

        return check_graph(self.graph, incomplete)

    # ---- changing -----------------------------------------------------------------------------
    def change(self, add: Iterable[str | Fact] = (), remove: Iterable[str | Fact] = (), note: str = "",
               new_entities: Iterable[Entity] = (), dry_run: bool = False,
               removed_entities: Iterable[str] = (), unknown: Iterable[Unknown] = (),
               known: Iterable[Unknown] = ()) -> Change:
        """Verify and apply a user's correction as one change (all or nothing); `dry_run` verifies only.

        `add`/`remove`: facts (PDDL text or Fact), e.g. a moved item's old place removed and its new one added;
        `new_entities` are created and `removed_entities` (names) removed with all their facts; `unknown` marks
        what becomes unknown, `known` clears marks (see graph.model.Unknown); `note` says why (in the history).
        Raises ChangeRefused with the issues (graph unchanged), PDDLError for a malformed fact, InputError for
        an empty change.
        """
        delta = Delta(add=[_fact(f) for f in add], remove=[_fact(f) for f in remove],
                      new_entities=list(new_entities), removed_entities=list(removed_entities),
                      unknown=list(unknown), known=list(known), source="user", text=note)
        if delta.is_empty():
            raise InputError("the change is empty: give facts to add or remove (or marks to set or clear)")
        with self.writes:
            if not dry_run:
                return self.graph.apply(delta)
            if issues := self.graph.check(delta):
                raise ChangeRefused(issues)
            return Change(id=0, delta=delta)

    def observe(self, deltas: Iterable[Delta]) -> list[Change]:
        """Apply sensor observations, each verified and applied as one change (stops at a refused one)."""
        with self.writes:
            return [self.graph.apply(d) for d in deltas]

    def observe_each(self, deltas: Iterable[Delta]) -> list[Change | InputError]:
        """Apply sensor observations each on its own, one verified change each: per observation, in order, its
        change or why it was refused (a refused one leaves the graph as it was and the next ones still apply)."""
        out: list[Change | InputError] = []
        for d in deltas:
            try:
                out.extend(self.observe([d]))
            except InputError as e:
                out.append(e)
        return out

    def observe_scene(self, scene: Scene) -> tuple[Change | None, SceneCounts]:
        """Apply a perceived scene graph (see `kgplan.games.scene`) as one verified change, built from the graph as
        the change's transaction reads it: what the scan shows, what it could not see marked unknown; no change
        (None) if it shows what the graph holds. ChangeRefused (nothing applied) if the scan contradicts the
        domain, InputError if the domain's `[scene]` mapping cannot map it."""
        from kgplan.games.scene import scene_delta

        made: list[SceneCounts] = []

        def make(tx: Tx) -> Delta:
            delta, counts = scene_delta(self.domain, scene, tx)
            made[:] = [counts]
            if delta.is_empty():
                raise _Unchanged
            return delta

        with self.writes:
            try:
                return self.graph.apply_from(make), made[0]
            except _Unchanged:
                return None, made[0]

    def undo(self, change_id: int) -> Change:
        """Apply the inverse of a change as a new change (NotFound if there is no such change)."""
        with self.writes:
            return self.graph.undo(change_id)

    # ---- language -----------------------------------------------------------------------------
    def _retrieve(self, text: str, retriever: Retriever, depth: int) -> Retrieval:
        from kgplan.language.update import full_graph, select_entities

        if not self.count()[0]:
            raise InputError("the graph has no entities yet: nothing to talk about")
        if retriever == Retriever.search:
            from kgplan.language.retrieval import search_retrieve  # loads torch: only when asked for

            return search_retrieve(self.llm, self.graph, text, depth=depth)
        return full_graph(self.graph) if retriever == Retriever.whole else select_entities(
            self.llm, self.graph, text, depth)

    def tell(self, text: str, *, dry_run: bool = False, retriever: Retriever = Retriever.select, depth: int = DEPTH,
             rounds: int = 3, propose: bool = True, answers: dict[str, str] | None = None,
             progress: Progress = quiet) -> Outcome:
        """Turn a sentence into a verified change through the LLM (verified only, with `dry_run`).

        The outcome says what happened: its `change` (or, in a dry run, its `delta`), the issues of each
        refused reply, and `error` when no valid change came out (the graph is then unchanged). The LLM is asked
        without the writers' lock: other changes go on meanwhile; the reply is verified against the graph as it
        is when applied. With `propose` (the default), the LLM names what the sentence is about and chooses among
        the changes the domain admits (language.propose); where that is ambiguous the outcome holds a
        `clarification` instead of a change, answered by telling the same sentence again with
        `answers={word: option}`. Without it (`TellMode.rewrite`), the LLM writes the change from what the
        `retriever` shows it (facts within `depth` hops of the entities found), re-prompted with the issues for at
        most `rounds` replies.
        """
        from kgplan.language.update import Outcome, update

        if not text.strip():
            raise InputError("say what changed")
        out = Outcome(text)
        if propose:
            from kgplan.language.propose import tell

            if not self.count()[0]:
                raise InputError("the graph has no entities yet: nothing to talk about")
            progress("asking the LLM what the sentence names, then which of the changes it admits happened")
            tell(self.llm, self.graph, text, answers=answers, dry_run=dry_run, out=out, lock=self.writes)
            if out.failed:  # as retrieval's call raises it
                raise out.failed
            return out
        progress("retrieving the entities the sentence is about")
        retrieval = self._retrieve(text, retriever, depth)
        progress(f"asking the LLM for the change ({len(retrieval.entities)} entities, "
                 f"{len(retrieval.facts)} facts shown)")
        return update(self.llm, self.graph, text, retrieval, max_rounds=rounds, dry_run=dry_run, out=out,
                      lock=self.writes)

    def read_observation(self, text: str, action: str | None = None, rounds: int = 3) -> EditOutcome:
        """LLM mode of exploration (PDDL-edit): the LLM edits the problem to hold what a prose observation
        (made after `action`) tells; applied as one verified change, refused edits re-prompted with the issues. The
        LLM is asked without the writers' lock."""
        from kgplan.language.pddl_edit import observe

        return observe(self.llm, self.graph, action, text, rounds, self.writes)

    def goal_for(self, task: str, answers: dict[str, str] | None = None, *, propose: bool = False,
                 retriever: Retriever = Retriever.select, depth: int = DEPTH, progress: Progress = quiet) -> str:
        """The PDDL goal the LLM writes for a task in English (checked against the domain and the graph), or with
        `propose` the one it chooses among the literals the domain admits (language.goals); Unclear where the task
        does not tell which of some options it means, answered by asking again with `answers`. The LLM writing a
        goal is shown what the `retriever` finds, facts within `depth` hops."""
        from kgplan.language.update import write_goal

        if propose:
            from kgplan.language.goals import choose

            progress("asking the LLM what the task names, then which of the goals it admits it asks for")
            o = choose(self.llm, self.graph, task, answers=answers)
            if o.clarification:
                raise Unclear(o.clarification)
            if o.goal is None:
                raise LLMError(o.error or "no goal")
            return o.goal
        progress("retrieving the entities the task is about")
        retrieval = self._retrieve(task, retriever, depth)
        progress("asking the LLM for the goal")
        formula, o = write_goal(self.llm, self.graph, task, retrieval)
        if o.clarification:
            raise Unclear(o.clarification)
        if formula is None or o.goal is None:
            raise LLMError(o.error or "no goal")
        return o.goal

    def classify(self, text: str) -> str:
        """"task" or "state_change": what a sentence asks for."""
        from kgplan.language.update import classify

        return classify(self.llm, text)

    # ---- planning -----------------------------------------------------------------------------
    def plan(self, task: str | None = None, goal: str | None = None, *, planner: str = "fd",
             timeout: float = 60.0, prune: bool = True, memory_mb: int = 4096, propose: bool = False,
             answers: dict[str, str] | None = None, retriever: Retriever = Retriever.select, depth: int = DEPTH,
             progress: Progress = quiet) -> PlanReport:
        """Plan for a task in English (the LLM writes or, with `propose`, chooses the goal; Unclear, `answers`,
        `retriever` and `depth` as for `goal_for`) or a PDDL goal; the plan is kept for `run`."""
        from kgplan.planners.pipeline import plan

        if (task is None) == (goal is None):
            raise InputError("give either a task in English or a PDDL goal")
        goal = goal if task is None else self.goal_for(task, answers, propose=propose, retriever=retriever,
                                                       depth=depth, progress=progress)
        progress(f"planning for {goal} with {planner}")
        return plan(self.graph, goal, planner=planner, timeout=timeout, prune=prune, memory_mb=memory_mb,
                    progress=progress)

    def why(self, goal: str, *, planner: str = "fd", timeout: float = 60.0,
            progress: Progress = quiet) -> tuple[PlanReport | None, WhyNot | None, PlanReport | None]:
        """Why a PDDL goal cannot be reached: the plan report (None for a goal refused for names not in the graph),
        the causes and the closest goal that can be reached (None if the goal was solved), and that goal's own plan
        (kept for `run`)."""
        from kgplan.planners.whynot import GoalRefused, WhyNot

        try:
            r: PlanReport | None = self.plan(goal=goal, planner=planner, timeout=timeout, progress=progress)
        except GoalRefused as e:
            if e.why is None:
                raise
            r, why = None, e.why
        else:
            why = None if r.solved else WhyNot(r.why, r.alternative)
        if why is None or why.alternative is None:
            return r, why, None
        progress(f"planning for the closest goal that can be reached: {why.alternative}")
        return r, why, self.plan(goal=why.alternative, planner=planner, timeout=timeout, progress=progress)

    def belief(self, item: str) -> dict[str, float]:
        """The stored belief over where an item is (empty if none)."""
        from kgplan.planners.mcts.graph_io import read_belief

        if not self.graph.entities([item]):
            raise NotFound(f"no entity {item!r}")
        return read_belief(self.graph, item) or {}

    def search(self, goal: str, method: str = "puct_dr", simulations: int = 100,
               seconds: float | None = None, belief: str | None = None) -> Decision:
        """One decision of a tree search method (kgplan.agent.search, `NAME[+SWITCH...]`; an LLM where the
        method asks one and one is configured) for a PDDL goal whose items' places are
        unknown: the belief (a kind of BELIEFS, `belief` in place of the method's own; updated from the graph,
        stored with it, made anew when the kind changes) is sampled per simulation; its step is
        kept as a one-step plan for `run`; observe, then search or plan again."""
        from kgplan.agent.search import BELIEFS, configured
        from kgplan.language.llm import LLM, LLMConfig
        from kgplan.planners.mcts.search import Budget
        from kgplan.planners.pipeline import parse_goal, remember

        how = configured(method)  # NAME[+SWITCH...]
        given = self._llm if isinstance(self._llm, LLM | LLMConfig) else LLMConfig.from_env()
        needs = how.needs_llm or (belief is not None and BELIEFS[belief].needs_llm)
        ask = needs or (how.uses_llm and (isinstance(given, LLM) or given.configured))
        f = parse_goal(goal, self.graph, {e.name: e.type for e in self.graph.entities()})
        d = how.searcher(self.graph, f, self.llm if ask else None, belief=belief).decide(
            self.graph, Budget(simulations, seconds), lock=self.writes)  # held while the belief is stored
        if d.step is not None:
            with self.writes:
                remember(self.graph, goal, [d.step])
        return d

    def effects(self, plan: Iterable[Step]) -> list[tuple[list[Fact], list[Fact]]]:
        """What each step of a plan adds and removes, simulated from the graph's current state."""
        from kgplan.planners.state import State

        state = State(self.domain, *self.graph.snapshot())
        out = []
        for step in plan:
            added, removed = state.apply(step)
            out.append(([Fact.of(a) for a in sorted(added)], [Fact.of(a) for a in sorted(removed)]))
        return out

    def run(self, progress: Progress = quiet) -> tuple[str, int, Execution]:
        """Execute the last plan, one verified change per step: its goal, its length and how far it got.

        The whole plan is first simulated on the graph as it is: InputError, nothing applied, if a step no
        longer applies (its unmet precondition named). A plan runs once: it is then marked as run, and running
        it again is an InputError.
        """
        from kgplan.planners.execute import execute, stale
        from kgplan.planners.pipeline import last_plan, mark_ran, planned_at
        from kgplan.planners.whynot import stopped

        with self.writes:
            goal, steps = last_plan(self.graph)
            if (failure := stale(self.graph, steps)) is not None:
                i = failure.step
                why = stopped(self.graph, steps[i - 1], i, planned_at(self.graph), steps[:i - 1]) if i else None
                raise InputError(f"the last plan (for {goal}) no longer applies to the graph, nothing was executed: "
                                 f"{failure}{'; ' + why.explanation if why else ''}; plan again (`kgplan plan`)")
            progress(f"executing {len(steps)} steps")
            done = execute(self.graph, steps, f"plan for {goal}")
            if done.failure:  # a change came between the check above and the step
                i = done.failure.step
                done.why = stopped(self.graph, steps[i - 1], i, planned_at(self.graph))
            mark_ran(self.graph, goal, steps, done.changes)
            return goal, len(steps), done


class _Unchanged(Exception):
    """A scan that changes nothing: its transaction ends without a change."""


def _fact(f: str | Fact) -> Fact:
    return f if isinstance(f, Fact) else Fact.parse(f)
