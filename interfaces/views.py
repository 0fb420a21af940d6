"""The JSON shapes of the agent's operations and the operations that produce them, shared by the HTTP API
and the MCP server."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from kgplan.agent.agent import DEPTH, Agent, GoalMode, Progress, Retriever, TellMode, Unclear
from kgplan.agent.search import BELIEFS, SEARCH_METHODS
from kgplan.errors import InputError, KgplanError
from kgplan.games import GAMES
from kgplan.games.scene import Scene
from kgplan.graph.model import Change, ChangeSlice, Entity, Fact, Stamp, Unknown
from kgplan.planners.engines import PLANNERS
from kgplan.planners.solve import Status
from kgplan.planners.whynot import Cause

if TYPE_CHECKING:
    from kgplan.language.update import Clarification

EXPECTED = (KgplanError, ValidationError)  # a user's mistake, a failing store or LLM: not a bug


class TellFailed(KgplanError):
    """No valid change came out of a sentence; the graph is unchanged."""

    def __init__(self, message: str, rounds: list[list[str]]) -> None:
        super().__init__(message)
        self.rounds = rounds


# ---- what goes in --------------------------------------------------------------------------------
RETRIEVER = ("what the LLM is shown: select (the entities it selects from the list), search (RS: a query graph it "
             "describes, grounded by embeddings and search) or whole (the whole graph)")
HOPS = "fact hops retrieved around the entities found"
ANSWERS = ("The answers to earlier clarifications of the same text ({word: option}): a `needs_clarification` "
           "answer's `answers` with its `word` set to the option chosen")


class TellIn(BaseModel):
    text: str = Field(min_length=1, description="A state change in English")
    dry_run: bool = False
    mode: TellMode = Field(TellMode.propose, description="propose: the LLM names what the sentence is about and "
                           "chooses among the changes the domain admits; rewrite: it writes the change (L3M+P)")
    answers: dict[str, str] = Field(default_factory=dict, description=ANSWERS)
    retriever: Retriever = Field(Retriever.select, description="rewrite: " + RETRIEVER)
    depth: int = Field(DEPTH, ge=0, le=5, description="rewrite: " + HOPS)
    rounds: int = Field(3, ge=1, le=10, description="rewrite: replies allowed before giving up")


class PlanIn(BaseModel):
    goal: str | None = Field(None, description="A PDDL goal, e.g. (not (switched_on kitchen_light))")
    task: str | None = Field(None, description="A task in English (the LLM writes the goal)")
    planner: PLANNERS.field = Field("fd", description="The planner (its registry: kgplan.planners.engines)")
    timeout: float = Field(60.0, gt=0, le=600)
    prune: bool = True
    answers: dict[str, str] = Field(default_factory=dict, description=ANSWERS)
    goal_mode: GoalMode = Field(GoalMode.write, description="task: write: the LLM writes the goal from what the "
                                "retriever shows it (L3M+P); propose: it names what the task is about and chooses "
                                "among the goal literals the domain admits")
    retriever: Retriever = Field(Retriever.select, description="task, write: " + RETRIEVER)
    depth: int = Field(DEPTH, ge=0, le=5, description="task, write: " + HOPS)


class DecideIn(BaseModel):
    goal: str = Field(description="A PDDL goal whose items' places are (partly) unknown, e.g. (in milk fridge)")
    method: SEARCH_METHODS.field = Field("puct_dr", description="The search method (its registry: "
                                                                 "kgplan.agent.search)")
    simulations: int = Field(100, ge=1, le=100_000)
    seconds: float | None = Field(None, gt=0, le=600, description="A wall-clock bound on the decision")
    belief: BELIEFS.field | None = Field(None, description="Where the items probably are, from this belief in place "
                                         "of the method's own (its registry: kgplan.agent.search.BELIEFS; llm needs "
                                         "an LLM)")


class ExploreIn(BaseModel):
    game: GAMES.field = Field("coin", description="The game (its registry: kgplan.games)")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    planner: PLANNERS.field | None = Field(None, description="The planner (default: the game's domain's)")


class FactOut(BaseModel):
    predicate: str
    args: list[str]
    text: str


class GraphFactOut(FactOut):
    """A fact of the graph, with whether it touches what the graph does not know."""

    unknown: bool = Field(description="It names a placeholder, or its predicate is marked unknown for one of its "
                                      "arguments (more facts of it may hold than the graph knows)")


class EntityOut(Entity):
    """An entity with its unknown marks (see /api/unknowns)."""

    placeholder: bool = Field(description="Seen but not yet identified (e.g. a room seen through an exit)")
    unknown: list[str] = Field(description="Predicates whose facts about it are not known, e.g. `on`: where it is")


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
    how: dict[str, str] = Field(description="How each fact (as PDDL) was chosen, where a model chose it: by which "
                                            "model among how many candidates, what the user answered, or which "
                                            "invariant removed it")
    unknown: list[Unknown] = Field(description="What it marked unknown")
    known: list[Unknown] = Field(description="What it marked no longer unknown")
    sizes: dict[str, int] = Field(description="The full length of each list (add, remove, new_entities, "
                                              "removed_entities); the lists above may be a part of them")
    offset: int = Field(0, description="Where in each full list the lists above start")


class EntitiesOut(BaseModel):
    total: int
    entities: list[EntityOut]


class FactsOut(BaseModel):
    total: int
    facts: list[GraphFactOut]


class NeighbourhoodOut(BaseModel):
    entity: EntityOut
    depth: int
    entities: list[EntityOut]
    facts: list[GraphFactOut]


class StepOut(BaseModel):
    action: str
    add: list[FactOut]
    remove: list[FactOut]


class CauseOut(BaseModel):
    """One reason a goal cannot be reached (or a plan's step cannot run)."""

    kind: str = Field(description="missing_object, unreachable, blocked_precondition, invariant, missing_fact, graph, "
                                  "together or changed")
    literal: str = Field(description="The goal literal (or the step's precondition) it is about, as PDDL")
    explanation: str = Field(description="The reason in English")
    blocker: str | None = Field(None, description="The first missing link: a fact, a type or a name")


def causes_out(causes: list[Cause]) -> list[CauseOut]:
    return [CauseOut(**c.to_json()) for c in causes]


class PlanOut(BaseModel):
    goal: str
    status: Status
    planner: str
    plan: list[str]
    steps: list[StepOut]
    seconds: float
    used_full_state: bool
    raced: bool = Field(description="Whether the full state was planned on beside a pruned state (pruning took long)")
    winner: str = Field(description='What answered: "pruned (LEVEL)", "full", or "relaxation" (the goal is not '
                        "reachable even relaxed)")
    message: str
    report: dict[str, Any] = Field(description="Every measurement of the planning run")
    why: list[CauseOut] = Field(default_factory=list, description="Why the goal cannot be reached, when it cannot")
    alternative: str | None = Field(None, description="The closest goal that can be reached, when the goal cannot")


class DecisionOut(BaseModel):
    """One decision of a tree search: a step (kept for /api/run as a one-step plan), not a plan."""

    step: str | None = Field(description="The action decided on; none when no action applies")
    simulations: int
    llm_calls: int
    seconds: float
    value: float = Field(description="The step's estimated value (the discounted chance to reach the goal)")
    visits: dict[str, int] = Field(description="Simulations through each action at the root")
    beta: float | None = Field(description="DR-MCTS's weight of the Monte Carlo return, where it was used")


class ExploreOut(BaseModel):
    """One game played by the exploration loop on a fresh graph of its own."""

    game: str
    seed: int
    success: bool
    steps: int
    optimal: int = Field(description="The length of an omniscient shortest solution")
    replans: int
    invalid: int = Field(description="Actions that were not admissible when taken")
    reason: str = Field(description="Why it stopped, if it failed")


class OptionOut(BaseModel):
    value: str = Field(description="The answer to send: an entity's name or a fact as PDDL")
    label: str = Field(description="The option in English")


class ClarificationOut(BaseModel):
    """A question instead of a guess: the text does not tell which of `options` it means. Nothing was changed or
    planned; send the same request again with `answers` (below) plus `{word: the chosen option's value}`."""

    status: Literal["needs_clarification"] = "needs_clarification"
    question: str
    word: str = Field(description="Where the answer goes in `answers`: the words asked about, or the facts in "
                                  "conflict")
    options: list[OptionOut] = Field(description="Taken from the graph: entities, or facts as PDDL")
    answers: dict[str, str] = Field(description="The answers given so far, to send back with this one added")


def clarification_out(c: Clarification, answers: dict[str, str]) -> ClarificationOut:
    return ClarificationOut(question=c.question, word=c.word, answers=answers, options=[
        OptionOut(value=o, label=label) for o, label in zip(c.options, c.labels or c.options, strict=True)])


class TellOut(BaseModel):
    status: Literal["applied", "dry_run"] = Field(description="Applied as `change`, or verified only (`proposed`)")
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
    why: CauseOut | None = None  # the stopped step's unmet precondition and the changes that made it so


def fact_out(f: Fact) -> FactOut:
    return FactOut(predicate=f.predicate, args=list(f.args), text=str(f))


def change_out(c: Change | ChangeSlice) -> ChangeOut:
    """A change, or the part of one that a slice holds."""
    if isinstance(c, Change):
        c = ChangeSlice.cut(c.id, c.time, c.undo_of, c.delta, limit=None)
    d = c.delta
    return ChangeOut(id=c.id, time=c.time, source=d.source, text=d.text, model=d.model, tokens=d.tokens,
                     add=[fact_out(f) for f in d.add], remove=[fact_out(f) for f in d.remove],
                     new_entities=d.new_entities, removed_entities=d.removed_names(), undo_of=c.undo_of, how=d.how,
                     unknown=d.unknown, known=d.known, sizes=c.sizes, offset=c.offset)


class Marks:
    """The unknown marks of some entities, read once (one `unknowns` read per answer, not one per row)."""

    def __init__(self, agent: Agent, names: set[str]) -> None:
        self.of: dict[str, set[str | None]] = {}
        for u in agent.unknowns(names) if names else ():
            self.of.setdefault(u.entity, set()).add(u.predicate)

    def entity(self, e: Entity) -> EntityOut:
        marks = self.of.get(e.name, ())
        return EntityOut(name=e.name, type=e.type, attrs=e.attrs, placeholder=None in marks,
                         unknown=sorted(p for p in marks if p))

    def fact(self, f: Fact) -> GraphFactOut:
        marked = any(None in self.of.get(a, ()) or f.predicate in self.of.get(a, ()) for a in f.args)
        return GraphFactOut(predicate=f.predicate, args=list(f.args), text=str(f), unknown=marked)


def entities_out(agent: Agent, ents: list[Entity], limit: int) -> EntitiesOut:
    shown = ents[:limit]
    marks = Marks(agent, {e.name for e in shown})
    return EntitiesOut(total=len(ents), entities=[marks.entity(e) for e in shown])


def facts_out(agent: Agent, facts: list[Fact], limit: int) -> FactsOut:
    shown = facts[:limit]
    marks = Marks(agent, {a for f in shown for a in f.args})
    return FactsOut(total=len(facts), facts=[marks.fact(f) for f in shown])


def do_show(agent: Agent, name: str, depth: int) -> NeighbourhoodOut:
    n = agent.show(name, depth)
    marks = Marks(agent, {e.name for e in n.entities} | {name})
    return NeighbourhoodOut(entity=marks.entity(n.entity), depth=depth, entities=[marks.entity(e) for e in n.entities],
                            facts=[marks.fact(f) for f in n.facts])


def do_history(agent: Agent, limit: int, before: int | None = None) -> list[ChangeOut]:
    """The newest changes first (ids below `before`), each with the first few items of what it changed."""
    return [change_out(c) for c in agent.history(limit, before)]


def do_tell(agent: Agent, body: TellIn, progress: Progress) -> TellOut | ClarificationOut:
    o = agent.tell(body.text, dry_run=body.dry_run, retriever=body.retriever, depth=body.depth, rounds=body.rounds,
                   propose=body.mode == TellMode.propose, answers=body.answers, progress=progress)
    if o.clarification:
        return clarification_out(o.clarification, body.answers)
    if o.error:
        raise TellFailed(o.error, o.rounds)
    return TellOut(status="applied" if o.change else "dry_run", change=change_out(o.change) if o.change else None,
                   proposed=change_out(Change(id=0, delta=o.delta)) if o.delta and not o.change else None,
                   rounds=o.rounds, llm_calls=len(o.calls), prompt_tokens=o.prompt_tokens)


def do_plan(agent: Agent, body: PlanIn, progress: Progress) -> PlanOut | ClarificationOut:
    if (body.goal is None) == (body.task is None):
        raise InputError('give either "goal" (PDDL) or "task" (English)')
    try:
        r = agent.plan(body.task, body.goal if body.task is None else None, planner=body.planner,
                       timeout=body.timeout, prune=body.prune, answers=body.answers,
                       propose=body.goal_mode == GoalMode.propose, retriever=body.retriever,
                       depth=body.depth, progress=progress)
    except Unclear as e:
        return clarification_out(e.clarification, body.answers)
    steps = [StepOut(action=str(s), add=[fact_out(f) for f in a], remove=[fact_out(f) for f in d])
             for s, (a, d) in zip(r.plan, agent.effects(r.plan), strict=True)]
    return PlanOut(goal=r.goal, status=r.status, planner=r.planner, plan=[str(s) for s in r.plan], steps=steps,
                   seconds=r.seconds, used_full_state=r.used_full_state, raced=r.raced, winner=r.winner,
                   message=r.message, report=r.to_json(), why=causes_out(r.why), alternative=r.alternative)


def do_decide(agent: Agent, body: DecideIn, progress: Progress) -> DecisionOut:
    progress(f"deciding a step for {body.goal} with {body.method}")
    d = agent.search(body.goal, body.method, simulations=body.simulations, seconds=body.seconds, belief=body.belief)
    return DecisionOut(step=str(d.step) if d.step else None, simulations=d.simulations, llm_calls=d.llm_calls,
                       seconds=d.seconds, value=d.value, visits=d.visits, beta=d.beta)


def do_explore(body: ExploreIn, progress: Progress) -> ExploreOut:
    """Play a game with the exploration loop (a fresh graph of its own), reporting each step as progress."""
    from kgplan.agent.explore import explore

    env = GAMES[body.game].environment()
    try:
        ep = explore(env, body.game, body.seed, planner=body.planner, show=progress)
    finally:
        env.close()
    return ExploreOut(game=body.game, seed=ep.seed, success=ep.success, steps=ep.steps, optimal=ep.optimal,
                      replans=ep.replans, invalid=ep.invalid, reason=ep.reason)


def do_run(agent: Agent, progress: Progress) -> RunOut:
    goal, n, e = agent.run(progress)
    return RunOut(goal=goal, steps=n, changes=e.changes, done=e.done, failure=str(e.failure) if e.failure else None,
                  why=causes_out([e.why])[0] if e.why else None)


# ---- scene graphs (kgplan.games.scene) -------------------------------------------------------------------
class SceneOut(BaseModel):
    """A scan applied as one verified change (none if it shows what the graph holds), and what it changed."""

    change: ChangeOut | None
    appeared: int = Field(description="Things seen for the first time (new entities)")
    moved: int = Field(description="Things seen in another place")
    out_of_view: int = Field(description="Things not seen beside what was: their place kept, marked unknown")
    gone: int = Field(description="Things not seen in an area the scan observed whole: their place removed, marked "
                                  "unknown")
    states: int = Field(description="States that changed (facts added or removed)")


def do_scene(agent: Agent, scene: Scene) -> SceneOut:
    change, counts = agent.observe_scene(scene)
    return SceneOut(change=change_out(change) if change else None, **vars(counts))


# ---- the history: a fact's timeline, the difference between two moments ------------------------------
AT_HELP = ("Read the graph as it was right after a change: its id, or a time (ISO 8601, UTC unless it says), the "
           "last change made then")


class IntervalOut(BaseModel):
    """A stretch of the history in which a fact held, with the changes that opened and closed it (null: it holds)."""

    fact: FactOut
    opened: Stamp
    closed: Stamp | None
    how: str | None = Field(None, description="How the change that opened it chose the fact (a sentence told: "
                                              "see ChangeOut.how)")


class DifferenceOut(BaseModel):
    """What held at change `end` and not at change `start` (`add`, `new_entities`), and the reverse."""

    start: int
    end: int
    add: list[FactOut]
    remove: list[FactOut]
    new_entities: list[Entity]
    removed_entities: list[Entity]


def do_timeline(agent: Agent, pattern: str, at: str | None = None) -> list[IntervalOut]:
    past = agent.at(at)
    intervals = past.timeline(pattern)
    return [IntervalOut(fact=fact_out(i.fact), opened=i.opened, closed=i.closed, how=how)
            for i, how in zip(intervals, past.how(intervals), strict=True)]


def do_difference(agent: Agent, start: str, end: str) -> DifferenceOut:
    d = agent.difference(start, end)
    return DifferenceOut(start=d.start, end=d.end, add=[fact_out(f) for f in d.add],
                         remove=[fact_out(f) for f in d.remove], new_entities=d.new_entities,
                         removed_entities=d.removed_entities)
