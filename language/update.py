"""The language layer (L3M+P Algorithms 1, 3 and 4): English in, verified deltas and PDDL goals out.

Every reply schema is generated from the domain and the retrieved sub-graph, so predicate and
entity names are enums: the model cannot name what does not exist. Verification issues (or
goal-parsing errors) are fed back to the model for a bounded number of rounds; the graph is
changed only by a delta that passed verification (or, in the unverified variants, by the
first reply as it is). The prompts are in `prompts`.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

from kgplan.domains.formula import Formula
from kgplan.domains.model import Domain
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import InputError
from kgplan.graph.model import Change, Delta, Fact
from kgplan.graph.world import WorldGraph
from kgplan.language.llm import LLM, CallRecord, LLMError, choice, enum_model
from kgplan.language.prompts import (
    change_refused,
    classify_messages,
    goal_invalid,
    goal_messages,
    invalid_reply,
    retry,
    select_messages,
    update_messages,
)
from kgplan.planners.pipeline import parse_goal


@dataclass
class Retrieval:
    """The entities and facts shown to the model."""

    entities: dict[str, str]  # name -> type
    facts: list[Fact]


@dataclass(frozen=True)
class Clarification:
    """A question instead of a guess: which of `options` (entity names, or facts as PDDL) `word` means; `labels`
    shows each option in English (the same order).

    Answered by calling again with `answers={word: option}`."""

    word: str
    question: str
    options: list[str]
    labels: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """What the language layer did with one sentence, with every LLM call it made."""

    text: str
    calls: list[CallRecord] = field(default_factory=list)
    rounds: list[list[str]] = field(default_factory=list)  # the issues found in each refused reply
    delta: Delta | None = None
    change: Change | None = None
    goal: str | None = None
    error: str | None = None
    clarification: Clarification | None = None  # a question for the user instead of a guess
    failed: LLMError | None = None  # the call that failed (endpoint or reply), where no reply is asked again
    stages: dict[str, dict[str, float]] = field(default_factory=dict)  # per stage: seconds, tokens

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)


def usable_predicates(domain: Domain, types: Iterable[str]) -> list[str]:
    """The predicates that can hold of objects of these types: each argument accepts one of them."""
    types = set(types)
    return [p.name for p in domain.predicates.values()
            if all(any(domain.accepts(a.types, t) for t in types) for a in p.params)]


def full_graph(graph: WorldGraph) -> Retrieval:
    """No retrieval: the whole graph (the R- variants)."""
    return Retrieval({e.name: e.type for e in graph.entities()}, graph.facts())


def select_entities(llm: LLM, graph: WorldGraph, text: str, depth: int = 1,
                    out: Outcome | None = None) -> Retrieval:
    """L3M+P retrieval (a): the model picks the entities the sentence is about, then facts within `depth`."""
    entities = {e.name: e.type for e in graph.entities()}
    if not entities:  # nothing to pick from (an empty graph, e.g. after undoing its load)
        return full_graph(graph)
    schema = enum_model("EntitySelection", entities=(list[choice(entities)], ...))
    reply, record = llm.complete(select_messages(entities, text), schema)
    if out is not None:
        out.calls.append(record)
    ents, facts = graph.neighborhood(list(dict.fromkeys(reply.entities)), depth)
    return Retrieval({e.name: e.type for e in ents}, facts)


def update(llm: LLM, graph: WorldGraph, text: str, retrieval: Retrieval, *, verify: bool = True,
           max_rounds: int = 3, dry_run: bool = False, out: Outcome | None = None,
           lock: AbstractContextManager = nullcontext()) -> Outcome:
    """Algorithm 3: turn a sentence into a delta, verify it, re-prompt with the issues, apply it.

    Only the apply holds `lock` (a writers' lock): the LLM is asked outside it, and the delta is verified again
    against the graph as it is then, in the apply's own transaction."""
    out = out or Outcome(text)
    domain = graph.domain
    names = [*retrieval.entities, *domain.constants]
    usable = usable_predicates(domain, {*retrieval.entities.values(), *domain.constants.values()})
    if not names or not usable:
        out.error = "the sentence could not be grounded: " + (
            "no predicate of the domain takes the entities retrieved for it" if names
            else "no entity of the graph was retrieved for it")
        return out
    fact = enum_model("Fact", predicate=usable, args=(list[choice(names)], ...))
    # removed entities are names, checked by verification: an enum would repeat the entity list in the schema
    schema = enum_model("StateChange", add=(list[fact], ...), remove=(list[fact], ...),
                        removed_entities=(list[str], []))
    messages = update_messages(domain, usable, retrieval.entities, retrieval.facts, text)
    for _ in range(max_rounds):
        try:
            reply, record = llm.complete(messages, schema)
        except LLMError as e:  # a reply outside the schema: say why and ask again
            out.error = str(e)
            out.rounds.append([e.reason])
            if e.raw is None:
                return out  # the endpoint failed, not the reply
            messages += retry(e.raw, invalid_reply(e.reason))
            continue
        out.error = None
        out.calls.append(record)
        delta = Delta(add=[Fact(predicate=f.predicate, args=tuple(f.args)) for f in reply.add],
                      remove=[Fact(predicate=f.predicate, args=tuple(f.args)) for f in reply.remove],
                      removed_entities=list(reply.removed_entities),
                      source="nl", text=text, model=record.model,
                      tokens={"prompt": out.prompt_tokens, "completion": sum(c.completion_tokens for c in out.calls)})
        out.delta = delta
        issues = graph.check(delta) if verify else []
        if not issues:
            if delta.is_empty():
                out.error = "the sentence changes nothing in the graph"
            elif not dry_run:
                try:
                    with lock:
                        out.change = graph.apply(delta, verified=verify)
                except ChangeRefused as e:  # the graph changed since the check
                    out.rounds.append([str(i) for i in e.issues])
                    continue
                except InputError as e:  # unverified: a fact no store can hold as given (see WorldGraph.apply)
                    out.error = str(e)
            return out
        out.rounds.append([str(i) for i in issues])
        messages += retry(reply.model_dump_json(), change_refused(issues))
    out.error = f"no valid change after {max_rounds} replies; the graph is unchanged" + (
        f" (last: {out.error})" if out.error else "")
    return out


def write_goal(llm: LLM, graph: WorldGraph, text: str, retrieval: Retrieval, *, max_rounds: int = 3,
               out: Outcome | None = None) -> tuple[Formula | None, Outcome]:
    """Algorithm 4's first half: the model writes only the PDDL :goal, checked against the domain and objects."""
    out = out or Outcome(text)
    objects = {e.name: e.type for e in graph.entities()}
    schema = enum_model("Goal", goal=(str, ...))
    messages = goal_messages(graph.domain, retrieval.entities, retrieval.facts, text)
    for _ in range(max_rounds):
        try:
            reply, record = llm.complete(messages, schema)
        except LLMError as e:
            out.error = str(e)
            return None, out
        out.calls.append(record)
        out.goal = reply.goal
        try:
            return parse_goal(reply.goal, graph, objects), out
        except InputError as e:
            out.rounds.append([str(e)])
            messages += retry(reply.model_dump_json(), goal_invalid(e))
    out.error = f"no valid goal after {max_rounds} replies"
    return None, out


def classify(llm: LLM, text: str) -> str:
    """Whether a sentence reports a change ("state_change") or asks for something to be done ("task")."""
    schema = enum_model("Intent", kind=["state_change", "task"])
    return llm.complete(classify_messages(text), schema)[0].kind
