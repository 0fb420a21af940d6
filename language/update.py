"""The language layer (L3M+P Algorithms 1, 3 and 4): English in, verified deltas and PDDL goals out.

Every reply schema is generated from the domain and the retrieved sub-graph, so predicate and
entity names are enums: the model cannot name what does not exist. Verification issues (or
goal-parsing errors) are fed back to the model for a bounded number of rounds; the graph is
changed only by a delta that passed verification (or, in the unverified variants, by the
first reply as it is).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kgplan.domains.formula import Formula
from kgplan.domains.model import Domain
from kgplan.domains.verify import ChangeRefused, Issue
from kgplan.errors import InputError
from kgplan.graph.model import Change, Delta, Fact
from kgplan.graph.world import WorldGraph
from kgplan.language.llm import LLM, CallRecord, LLMError, choice, enum_model
from kgplan.planners.pipeline import parse_goal

SYSTEM = ("You keep the world model of a household robot as PDDL facts (a closed world: what is not "
          "listed is false). Answer with JSON only, following the given schema.")


@dataclass
class Retrieval:
    """The entities and facts shown to the model."""

    entities: dict[str, str]  # name -> type
    facts: list[Fact]


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

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)


def describe_domain(domain: Domain, predicates: Iterable[str] | None = None) -> str:
    """The predicates (all, or those named) with their argument types, and their glosses where domain.toml has some.

    Without a gloss (which names the variables) a predicate is shown by its types alone, e.g.
    ``(light_on light)``: its name is its gloss. An either-type of three or more types used more than once
    is named once (``T1 = book/cloth/pen``): a short prompt is a cheaper one.
    """
    preds = [domain.predicates[n] for n in predicates] if predicates is not None else list(domain.predicates.values())
    unions = Counter(t for p in preds for a in p.params if len(t := domain.reduce_types(a.types)) > 2)
    alias = {u: f"T{i}" for i, u in enumerate((u for u, k in unions.items() if k > 1), 1)}
    lines = []
    for p in preds:
        types = [alias.get(t := domain.reduce_types(a.types)) or "/".join(t) for a in p.params]
        if not (gloss := domain.meta.get("predicates", {}).get(p.name, {}).get("gloss")):
            lines.append(f"({' '.join([p.name, *types])})")
            continue
        sig = "".join(f" {a.name} - {t}" for a, t in zip(p.params, types, strict=True))
        lines.append(f"({p.name}{sig}): {gloss.format(*(a.name for a in p.params))}")
    lines += [f"where {name} = {'/'.join(u)}" for u, name in alias.items()]
    return "Predicates:\n" + "\n".join(lines)


def usable_predicates(domain: Domain, types: Iterable[str]) -> list[str]:
    """The predicates that can hold of objects of these types: each argument accepts one of them."""
    types = set(types)
    return [p.name for p in domain.predicates.values()
            if all(any(domain.accepts(a.types, t) for t in types) for a in p.params)]


def describe_state(r: Retrieval) -> str:
    ents = "\n".join(f"{n} - {t}" for n, t in sorted(r.entities.items()))
    facts = "\n".join(str(f) for f in r.facts)
    return f"Entities:\n{ents}\n\nTrue facts about them:\n{facts}"


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
    listing = "\n".join(f"{n} - {t}" for n, t in sorted(entities.items()))
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Entities:\n{listing}\n\nSentence: {text}\n\nList every entity this "
                 "sentence is about or that its meaning depends on (people, rooms, objects, places)."}]
    reply, record = llm.complete(messages, schema)
    if out is not None:
        out.calls.append(record)
    ents, facts = graph.neighborhood(list(dict.fromkeys(reply.entities)), depth)
    return Retrieval({e.name: e.type for e in ents}, facts)


def update(llm: LLM, graph: WorldGraph, text: str, retrieval: Retrieval, *, verify: bool = True,
           max_rounds: int = 3, dry_run: bool = False, out: Outcome | None = None) -> Outcome:
    """Algorithm 3: turn a sentence into a delta, verify it, re-prompt with the issues, apply it."""
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
    messages = [{"role": "system", "content": f"{SYSTEM}\n\n{describe_domain(domain, usable)}"},
                {"role": "user", "content": f"{describe_state(retrieval)}\n\nState change: {text}\n\nWhich facts "
                 "become true (add) and which stop being true (remove), including the old place or state of what "
                 "moved or changed? Keep every other fact as it is. Only if something stops existing (it broke, "
                 "was eaten or thrown away), list it in removed_entities: its facts go with it."}]
    for _ in range(max_rounds):
        try:
            reply, record = llm.complete(messages, schema)
        except LLMError as e:  # a reply outside the schema: say why and ask again
            out.error = str(e)
            out.rounds.append([e.reason])
            if e.raw is None:
                return out  # the endpoint failed, not the reply
            messages += [{"role": "assistant", "content": e.raw},
                         {"role": "user", "content": f"That reply is invalid: {e.reason}\nAnswer again."}]
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
                    out.change = graph.apply(delta, verified=verify)
                except ChangeRefused as e:  # the graph changed since the check
                    out.rounds.append([str(i) for i in e.issues])
                    continue
            return out
        out.rounds.append([str(i) for i in issues])
        messages += [{"role": "assistant", "content": reply.model_dump_json()},
                     {"role": "user", "content": _feedback(issues)}]
    out.error = f"no valid change after {max_rounds} replies; the graph is unchanged" + (
        f" (last: {out.error})" if out.error else "")
    return out


def _feedback(issues: list[Issue] | list[str]) -> str:
    return ("That change was refused, nothing was applied:\n" + "\n".join(f"- {i}" for i in issues)
            + "\nAnswer again with the corrected complete change.")


def write_goal(llm: LLM, graph: WorldGraph, text: str, retrieval: Retrieval, *, max_rounds: int = 3,
               out: Outcome | None = None) -> tuple[Formula | None, Outcome]:
    """Algorithm 4's first half: the model writes only the PDDL :goal, checked against the domain and objects."""
    out = out or Outcome(text)
    domain = graph.domain
    objects = {e.name: e.type for e in graph.entities()}
    schema = enum_model("Goal", goal=(str, ...))
    messages = [{"role": "system", "content": f"{SYSTEM}\n\n{describe_domain(domain)}"},
                {"role": "user", "content": f"{describe_state(retrieval)}\n\nTask: {text}\n\nWrite the PDDL goal "
                 "formula that is true exactly when the task is done, e.g. (and (not (p a)) (q b c)); where the "
                 "task says 'all' or 'any', quantify over a type: (forall (?x - type) (p ?x)), "
                 "(exists (?y - type) (q ?y))."}]
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
            messages += [{"role": "assistant", "content": reply.model_dump_json()},
                         {"role": "user", "content": f"That goal is not valid: {e}\nWrite it again."}]
    out.error = f"no valid goal after {max_rounds} replies"
    return None, out


def classify(llm: LLM, text: str) -> str:
    """Whether a sentence reports a change ("state_change") or asks for something to be done ("task")."""
    schema = enum_model("Intent", kind=["state_change", "task"])
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Sentence: {text}\n\nIs this a report of something that changed in the "
                 "house (state_change), or a request for the robot to do something (task)?"}]
    return llm.complete(messages, schema)[0].kind
