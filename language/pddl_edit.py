"""LLM mode of the exploration loop (PDDL-edit, as in PDDLEGO): the LLM reads the prose observation and the
current problem and proposes edits to its objects, facts and unknowns. The edits are applied deterministically,
in order, as one verified change; refused edits go back to the LLM with the issues, for a bounded number of
rounds. The graph is changed only by edits that pass verification.

The current problem is the whole graph (the R- retrieval of the language layer): an exploration graph is small.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field

from kgplan.domains.model import NAME_RE, Domain
from kgplan.domains.sexpr import PDDLError
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import InputError
from kgplan.graph.model import Change, Delta, Entity, Fact, Unknown
from kgplan.graph.store import Tx
from kgplan.graph.world import WorldGraph, rename
from kgplan.language.llm import LLM, CallRecord, LLMError
from kgplan.language.update import describe_domain

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
        raise InputError(f'{text!r} is no object: write "name - type"')
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
    result of the ones before it. Raises InputError for an edit that cannot be read or applied."""
    problems: list[str] = []

    def read(parse: Callable, items: Iterable) -> list:
        out = []
        for item in items:
            try:
                out.append(parse(item))
            except InputError as e:
                problems.append(str(e))
        return out

    adds = read(parse_object, edits.objects.add)
    facts = {k: read(Fact.parse, getattr(edits.init, k)) for k in ("add", "delete")}
    swaps = read(lambda r: (Fact.parse(r.old), Fact.parse(r.new)), edits.init.replace)
    marks = {k: read(parse_mark, getattr(edits.unknown, k)) for k in ("add", "delete")}
    if problems:
        raise InputError("\n".join(problems))
    add: dict[Fact, None] = {}
    remove: dict[Fact, None] = {}
    new, gone, unknown, known = list(adds), [o.lower() for o in edits.objects.delete], [], []
    for r in edits.objects.replace:
        d = rename(tx, r.old.lower(), r.new.lower())
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
        except InputError as e:
            issues = str(e).splitlines()
        out.rounds.append(issues)
        messages += [{"role": "assistant", "content": edits.model_dump_json()},
                     {"role": "user", "content": "Those edits were refused, nothing was applied:\n"
                      + "\n".join(f"- {i}" for i in issues) + "\nAnswer again with the corrected complete edits."}]
    out.error = f"no valid edits after {max_rounds} replies; the graph is unchanged"
    return out
