"""LLM mode of the exploration loop (PDDL-edit, as in PDDLEGO): the LLM reads the prose observation and the
current problem and proposes edits to its objects, facts and unknowns. The edits are applied deterministically,
in order, as one verified change; refused edits go back to the LLM with the issues, for a bounded number of
rounds. The graph is changed only by edits that pass verification.

The current problem is the whole graph (the R- retrieval of the language layer): an exploration graph is small.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, TypeVar

from pydantic import BaseModel, Field

from agent.environments import Environment, Observation
from agent.language import describe_domain
from agent.llm import LLM, CallRecord, LLMError
from domains.model import NAME_RE, Domain, Problem
from domains.sexpr import PDDLError
from graph.base import ChangeRefused, GraphError, Tx, WorldGraph
from graph.model import Change, Delta, Entity, Fact, Unknown

M = TypeVar("M", bound=BaseModel)
SYSTEM = ("You keep the PDDL problem of a text game up to date with what the player observes. Answer with JSON "
          "only, following the given schema.")
PROBLEM = "Current problem (what is not listed is false, or not known where marked unknown):\n"
UNKNOWN = "\n\nUnknown now:\n"
ACTION = "\n\nAction just taken: "
OBSERVATION = "\n\nObservation:\n"
QUESTION = (
    "\n\nEdit the problem so that it holds what the observation tells, and nothing else. objects: add "
    "\"name - type\", delete names, replace {\"old\": a placeholder, \"new\": its real name} when you learn what a "
    "placeholder is (its facts follow it; an existing name merges the two). init: add or delete facts like "
    "\"(predicate arg ...)\", replace {\"old\": fact, \"new\": fact}. unknown: add or delete \"name\" (an object "
    "seen but not identified: a placeholder) or \"(predicate name ?)\" (which facts of the predicate hold for "
    "the object is not known, e.g. what a closed container holds). Edits apply in that order. Give no edits "
    "if nothing changed.")


class Sensor(Protocol):
    """What an oracle needs of a sensor (agent.environments): what it knows beforehand, and its reading."""

    objects: dict[str, str]
    facts: tuple[Fact, ...]

    def delta(self, facts: set[Fact], entities: set[str], action: str | None, obs: Observation) -> Delta: ...


NAME = NAME_RE.pattern.strip("^$")
ATOM = rf"\({NAME}( {NAME})*\)"


def shaped(pattern: str, description: str) -> Any:
    """A string of the given shape. The pattern goes to the JSON schema only, for a constrained decoder (a
    llama.cpp grammar, OpenAI strict mode) to write nothing else; `to_delta` reads it, naming what is wrong."""
    return Annotated[str, Field(description=description, json_schema_extra={"pattern": f"^{pattern}$"})]


Name = shaped(NAME, "name")
ObjectText = shaped(f"{NAME} - {NAME}", '"name - type"')
FactText = shaped(rf"({ATOM}|\(= {ATOM} -?[0-9.]+\))", '"(predicate arg ...)"')
MarkText = shaped(rf"({NAME}|\({NAME} {NAME} \?\))", '"name" or "(predicate name ?)"')


class Rename(BaseModel):
    old: Name
    new: Name


class Swap(BaseModel):
    old: FactText
    new: FactText


class ObjectEdits(BaseModel):
    add: list[ObjectText] = Field(default_factory=list)
    delete: list[Name] = Field(default_factory=list)
    replace: list[Rename] = Field(default_factory=list)


class InitEdits(BaseModel):
    add: list[FactText] = Field(default_factory=list)
    delete: list[FactText] = Field(default_factory=list)
    replace: list[Swap] = Field(default_factory=list)


class UnknownEdits(BaseModel):
    add: list[MarkText] = Field(default_factory=list)
    delete: list[MarkText] = Field(default_factory=list)


class Edits(BaseModel):
    """Edits to the current problem."""

    objects: ObjectEdits = Field(default_factory=ObjectEdits)
    init: InitEdits = Field(default_factory=InitEdits)
    unknown: UnknownEdits = Field(default_factory=UnknownEdits)


@dataclass
class EditOutcome:
    """What one observation did: the applied change (None if nothing was applied), the issues of each refused
    reply, and every LLM call."""

    change: Change | None = None
    rounds: list[list[str]] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    error: str | None = None


def mark_text(u: Unknown) -> str:
    """An unknown as the edits write it: "name" (a placeholder) or "(predicate name ?)"."""
    return u.entity if u.predicate is None else f"({u.predicate} {u.entity} ?)"


def parse_object(text: str) -> Entity:
    name, dash, type_ = (w.strip().lower() for w in text.partition(" - "))
    if not dash or not name or not type_:
        raise ValueError(f'{text!r} is no object: write "name - type"')
    return Entity(name=name, type=type_)


def parse_mark(text: str) -> Unknown:
    words = text.strip().strip("()").split()
    if len(words) == 1:
        return Unknown(entity=words[0].lower())
    if len(words) == 3 and words[2] == "?":
        return Unknown(entity=words[1].lower(), predicate=words[0].lower())
    raise PDDLError(f'{text!r} is no unknown: write "name" or "(predicate name ?)"')


def describe(graph: WorldGraph) -> str:
    """The current problem as the prompt shows it: the PDDL problem, then what is marked unknown."""
    marks = "\n".join(mark_text(u) for u in graph.unknowns()) or "nothing"
    return f"{PROBLEM}{graph.to_problem(name='current')}{UNKNOWN}{marks}"


def describe_types(domain: Domain) -> str:
    """The object types an `objects` edit may use, each subtype with its parent (no others exist)."""
    kinds = [t if parent in (None, "object") else f"{t} (a kind of {parent})"
             for t, parent in domain.types.items() if t != "object"]
    return "Object types (no others): " + ", ".join(kinds)


def prompt(graph: WorldGraph, action: str | None, observation: str) -> list[dict]:
    done = f"{ACTION}{action}" if action else "\n\nThis is the first observation of the game."
    system = f"{SYSTEM}\n\n{describe_types(graph.domain)}\n{describe_domain(graph.domain)}"
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"{describe(graph)}{done}{OBSERVATION}{observation.strip()}{QUESTION}"}]


def to_delta(tx: Tx, edits: Edits, text: str) -> Delta:
    """The edits as one delta, built from the state in the write transaction; each edit applies to the
    result of the ones before it. Raises GraphError for an edit that cannot be read or applied."""
    problems: list[str] = []

    def read(parse: Callable, items: Iterable) -> list:
        out = []
        for item in items:
            try:
                out.append(parse(item))
            except (PDDLError, ValueError) as e:
                problems.append(str(e))
        return out

    adds = read(parse_object, edits.objects.add)
    facts = {k: read(Fact.parse, getattr(edits.init, k)) for k in ("add", "delete")}
    swaps = read(lambda r: (Fact.parse(r.old), Fact.parse(r.new)), edits.init.replace)
    marks = {k: read(parse_mark, getattr(edits.unknown, k)) for k in ("add", "delete")}
    if problems:
        raise GraphError("\n".join(problems))
    add: dict[Fact, None] = {}
    remove: dict[Fact, None] = {}
    new, gone, unknown, known = list(adds), [o.lower() for o in edits.objects.delete], [], []
    for r in edits.objects.replace:
        d = tx.rename(r.old.lower(), r.new.lower())
        new += d.new_entities
        gone += d.removed_names()
        unknown += d.unknown
        add.update(dict.fromkeys(d.add))

    def drop(f: Fact) -> None:  # delete a fact: cancel its addition in this change, else remove it
        if f in add:
            del add[f]
        else:
            remove[f] = None

    def put(f: Fact) -> None:  # add a fact: cancel its deletion in this change, else add it
        if f in remove:
            del remove[f]
        else:
            add[f] = None

    for f in facts["delete"]:
        drop(f)
    for f in facts["add"]:
        put(f)
    for old, f in swaps:
        drop(old)
        put(f)
    for u in marks["delete"]:
        if u in unknown:
            unknown.remove(u)
        else:
            known.append(u)
    unknown += [u for u in marks["add"] if u not in unknown]
    return Delta(add=list(add), remove=list(remove), new_entities=new, removed_entities=gone, unknown=unknown,
                 known=known, source="nl", text=text)


def observe(llm: LLM, graph: WorldGraph, action: str | None, observation: str, max_rounds: int = 3) -> EditOutcome:
    """Ask the LLM for the edits an observation makes, apply them verified; re-prompt with the issues of a
    refused or malformed reply, at most `max_rounds` replies (then nothing is applied)."""
    out = EditOutcome()
    messages = prompt(graph, action, observation)
    text = f"{action or 'start'}: {observation.strip()}"
    for _ in range(max_rounds):
        try:
            edits, record = llm.complete(messages, Edits)
        except LLMError as e:
            out.rounds.append([e.reason])
            if e.raw is None:  # the endpoint failed, not the reply
                out.error = str(e)
                return out
            messages += [{"role": "assistant", "content": e.raw},
                         {"role": "user", "content": f"That reply is invalid: {e.reason}\nAnswer again."}]
            continue
        out.calls.append(record)
        try:
            if edits != Edits():
                out.change = graph.apply_from(lambda tx, e=edits: to_delta(tx, e, text))
            return out
        except ChangeRefused as e:
            issues = [str(i) for i in e.issues]
        except GraphError as e:
            issues = str(e).splitlines()
        out.rounds.append(issues)
        messages += [{"role": "assistant", "content": edits.model_dump_json()},
                     {"role": "user", "content": "Those edits were refused, nothing was applied:\n"
                      + "\n".join(f"- {i}" for i in issues) + "\nAnswer again with the corrected complete edits."}]
    out.error = f"no valid edits after {max_rounds} replies; the graph is unchanged"
    return out


def edits_between(problem_text: str, marks_text: str, entities: dict[str, str], facts: set[Fact],
                  marks: set[Unknown]) -> Edits:
    """The edits that turn the problem and unknowns shown in a prompt into the given state (facts about deleted
    objects go with them, unsaid)."""
    shown = Problem.parse(problem_text, "prompt")
    have = {str(a) for a in shown.init}
    want = {str(f) for f in facts}
    gone = shown.objects.keys() - entities.keys()
    shown_marks = {parse_mark(m) for m in marks_text.split("\n") if m.strip() and m.strip() != "nothing"}
    return Edits(
        objects=ObjectEdits(add=[f"{n} - {t}" for n, t in sorted(entities.items()) if n not in shown.objects],
                            delete=sorted(gone)),
        init=InitEdits(add=sorted(want - have),
                       delete=sorted(f for f in have - want if gone.isdisjoint(Fact.parse(f).args))),
        unknown=UnknownEdits(add=[mark_text(u) for u in sorted(marks - shown_marks, key=str)],
                             delete=[mark_text(u) for u in sorted(shown_marks - marks, key=str)
                                     if u.entity not in gone]))


class SensorOracleLLM(LLM):
    """A test and benchmark device, not a model: it answers the true edits. The game's sensor reads them from the
    environment's structured outputs (what sensor mode reads), and the answer is the difference between the
    sensor's state and the problem the prompt shows. It sees the environment through `watch(env)`."""

    def __init__(self, make_sensor: Callable[[], Sensor]) -> None:
        super().__init__()
        self.make_sensor = make_sensor
        self.pending: list[tuple[str | None, Observation]] = []

    def watch(self, env: Environment) -> Environment:
        """The environment, its observations also passed to the oracle."""
        return _Watched(env, self)

    def reset(self, obs: Observation) -> None:
        self.sensor = self.make_sensor()
        self.entities: dict[str, str] = dict(self.sensor.objects)
        self.facts: set[Fact] = set(self.sensor.facts)
        self.marks: set[Unknown] = set()
        self.pending = [(None, obs)]

    def complete(self, messages: list[dict], schema: type[M]) -> tuple[M, CallRecord]:
        for action, obs in self.pending:  # the sensor reads each observation once, in order
            d = self.sensor.delta(self.facts, set(self.entities), action, obs)
            gone = set(d.removed_names())
            self.entities = {n: t for n, t in self.entities.items() if n not in gone}
            self.entities.update({e.name: e.type for e in d.new_entities})
            self.facts = {f for f in self.facts if gone.isdisjoint(f.args)} - set(d.remove) | set(d.add)
            self.marks = {u for u in self.marks if u.entity not in gone} - set(d.known) | set(d.unknown)
        self.pending = []
        shown = messages[1]["content"]
        start = shown.index(UNKNOWN) + len(UNKNOWN)
        edits = edits_between(shown[len(PROBLEM):shown.index(UNKNOWN)], shown[start:shown.index("\n\n", start)],
                              self.entities, self.facts, self.marks)
        record = CallRecord("sensor-oracle", "json_schema", 0, 0, 0.0, 1)
        self.records.append(record)
        return schema.model_validate(edits.model_dump()), record


class _Watched:
    """An environment whose observations also go to a SensorOracleLLM."""

    def __init__(self, env: Environment, oracle: SensorOracleLLM) -> None:
        self.env, self.oracle = env, oracle

    @property
    def budget(self) -> int:
        return self.env.budget

    @property
    def commands(self) -> str:
        return self.env.commands

    def reset(self, seed: int) -> Observation:
        obs = self.env.reset(seed)
        self.oracle.reset(obs)
        return obs

    def step(self, action: str) -> Observation:
        obs = self.env.step(action)
        self.oracle.pending.append((action, obs))
        return obs

    def optimum(self, seed: int) -> int:
        return self.env.optimum(seed)

    def close(self) -> None:
        self.env.close()
