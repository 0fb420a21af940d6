"""LLM mode of the exploration loop (PDDL-edit, as in PDDLEGO): the LLM reads the prose observation and the
current problem and proposes edits to its objects, facts and unknowns. The edits are applied deterministically,
in order, as one verified change; refused edits go back to the LLM with the issues, for a bounded number of
rounds. The graph is changed only by edits that pass verification.

The current problem is the whole graph (the R- retrieval of the language layer): an exploration graph is small.
The prompt is `prompts.edit_messages`; this module holds the reply schema and applies the edits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, Field

from kgplan.domains.model import NAME_RE
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import InputError
from kgplan.graph.model import Change, Delta, Entity, Fact, Unknown
from kgplan.graph.store import Tx
from kgplan.graph.world import WorldGraph, rename
from kgplan.language.llm import LLM, CallRecord, LLMError
from kgplan.language.prompts import CurrentProblem, edit_messages, edits_refused, invalid_reply, retry

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


def parse_object(text: str) -> Entity:
    name, dash, type_ = (w.strip().lower() for w in text.partition(" - "))
    if not dash or not name or not type_:
        raise InputError(f'{text!r} is no object: write "name - type"')
    return Entity(name=name, type=type_)


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
    marks = {k: read(Unknown.parse, getattr(edits.unknown, k)) for k in ("add", "delete")}
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


def observe(llm: LLM, graph: WorldGraph, action: str | None, observation: str, max_rounds: int = 3,
            lock: AbstractContextManager = nullcontext()) -> EditOutcome:
    """Ask the LLM for the edits an observation makes, apply them verified; re-prompt with the issues of a
    refused or malformed reply, at most `max_rounds` replies (then nothing is applied). Only the apply holds
    `lock` (a writers' lock): the edits are made against the graph as it is then."""
    out = EditOutcome()
    messages = edit_messages(graph.domain, CurrentProblem.of(graph), action, observation)
    text = f"{action or 'start'}: {observation.strip()}"
    for _ in range(max_rounds):
        try:
            edits, record = llm.complete(messages, Edits)
        except LLMError as e:
            out.rounds.append([e.reason])
            if e.raw is None:  # the endpoint failed, not the reply
                out.error = str(e)
                return out
            messages += retry(e.raw, invalid_reply(e.reason))
            continue
        out.calls.append(record)
        try:
            if edits != Edits():
                with lock:
                    out.change = graph.apply_from(lambda tx, e=edits: to_delta(tx, e, text))
            return out
        except ChangeRefused as e:
            issues = [str(i) for i in e.issues]
        except InputError as e:
            issues = str(e).splitlines()
        out.rounds.append(issues)
        messages += retry(edits.model_dump_json(), edits_refused(issues))
    out.error = f"no valid edits after {max_rounds} replies; the graph is unchanged"
    return out
