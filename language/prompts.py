"""The prompts of the language layer: every text the model reads, and the messages built from it.

The code that sends them and reads the replies is elsewhere: `update` (state changes, goals, intents, entity
selection), `retrieval` (the query graph) and `pddl_edit` (a game's observations as edits to the problem).
The edit prompt keeps the problem it shows (`EditPrompt.shown`), so a check device can answer from it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from kgplan.domains.formula import TRUE, Effect, to_pddl
from kgplan.domains.model import TOTAL_COST, Domain, Problem
from kgplan.graph.model import Fact, Unknown
from kgplan.graph.world import WorldGraph

Messages = list[dict]

SYSTEM = ("You keep the world model of a household robot as PDDL facts (a closed world: what is not "
          "listed is false). Answer with JSON only, following the given schema.")
EDIT_SYSTEM = ("You keep the PDDL problem of a text game up to date with what the player observes. Answer with "
               "JSON only, following the given schema.")
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


# ---- what the model is shown ---------------------------------------------------------------------
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


def describe_types(domain: Domain) -> str:
    """The object types an `objects` edit may use, each subtype with its parent (no others exist)."""
    kinds = [t if parent in (None, "object") else f"{t} (a kind of {parent})"
             for t, parent in domain.types.items() if t != "object"]
    return "Object types (no others): " + ", ".join(kinds)


def _listing(entities: dict[str, str]) -> str:
    return "\n".join(f"{n} - {t}" for n, t in sorted(entities.items()))


def describe_state(entities: dict[str, str], facts: Iterable[Fact]) -> str:
    """The retrieved entities (name -> type) and the facts about them."""
    return f"Entities:\n{_listing(entities)}\n\nTrue facts about them:\n" + "\n".join(map(str, facts))


@dataclass(frozen=True)
class CurrentProblem:
    """The problem the edit prompt shows: the graph's PDDL problem and what is marked unknown."""

    problem: Problem
    unknowns: list[Unknown]
    costs: bool  # the domain has action costs: the problem sets (total-cost) and minimises it

    @classmethod
    def of(cls, graph: WorldGraph) -> CurrentProblem:
        return cls(graph.problem(name="current"), graph.unknowns(), TOTAL_COST in graph.domain.functions)


def describe(shown: CurrentProblem) -> str:
    """The current problem as the prompt shows it: the PDDL problem, then what is marked unknown."""
    marks = "\n".join(map(str, shown.unknowns)) or "nothing"
    return f"{PROBLEM}{shown.problem.to_pddl(shown.costs)}{UNKNOWN}{marks}"


# ---- the first messages of each exchange ---------------------------------------------------------------
def select_messages(entities: dict[str, str], text: str) -> Messages:
    """L3M+P retrieval (a): pick the entities (name -> type) a sentence is about."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Entities:\n{_listing(entities)}\n\nSentence: {text}\n\nList every entity "
             "this sentence is about or that its meaning depends on (people, rooms, objects, places)."}]


def update_messages(domain: Domain, predicates: list[str], entities: dict[str, str], facts: Iterable[Fact],
                    text: str) -> Messages:
    """A state change as facts added and removed, given the predicates it may use and the retrieved state."""
    return [{"role": "system", "content": f"{SYSTEM}\n\n{describe_domain(domain, predicates)}"},
            {"role": "user", "content": f"{describe_state(entities, facts)}\n\nState change: {text}\n\nWhich facts "
             "become true (add) and which stop being true (remove), including the old place or state of what "
             "moved or changed? Keep every other fact as it is. Only if something stops existing (it broke, "
             "was eaten or thrown away), list it in removed_entities: its facts go with it."}]


def goal_messages(domain: Domain, entities: dict[str, str], facts: Iterable[Fact], text: str) -> Messages:
    """A task as a PDDL goal formula, given the retrieved state."""
    return [{"role": "system", "content": f"{SYSTEM}\n\n{describe_domain(domain)}"},
            {"role": "user", "content": f"{describe_state(entities, facts)}\n\nTask: {text}\n\nWrite the PDDL goal "
             "formula that is true exactly when the task is done, e.g. (and (not (p a)) (q b c)); where the "
             "task says 'all' or 'any', quantify over a type: (forall (?x - type) (p ?x)), "
             "(exists (?y - type) (q ?y))."}]


def classify_messages(text: str) -> Messages:
    """Whether a sentence reports a change or asks for a task."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Sentence: {text}\n\nIs this a report of something that changed in the "
             "house (state_change), or a request for the robot to do something (task)?"}]


def query_messages(domain: Domain, relations: list[str], text: str) -> Messages:
    """L3M+P retrieval (b): the domain's relations (the predicates a query may use) and types, and the sentence;
    no entity of the graph."""
    shown = {t for p in relations for a in domain.predicates[p].params for t in a.types}
    other = [t for t in domain.types if t not in shown and t != "object"]
    types = f"\nOther types: {', '.join(other)}" if other else ""
    return [{"role": "system", "content": "Answer with JSON only, following the given schema.\n\n"
             f"{describe_domain(domain, relations)}{types}"},
            {"role": "user", "content": f"Sentence: {text}\n\nDescribe each thing the sentence is about in a few "
             "words, with its type, and the relations among them (args: 0-based positions in your entity list)."}]


class EditPrompt(list[dict]):
    """The edit prompt's chat messages (sent as they are), with the problem they show in `shown`: a check
    device answers from it (games.oracle), never parsing the text back."""

    def __init__(self, messages: Messages, shown: CurrentProblem) -> None:
        super().__init__(messages)
        self.shown = shown


def edit_messages(domain: Domain, shown: CurrentProblem, action: str | None, observation: str) -> EditPrompt:
    """PDDL-edit: the edits to the current problem that an observation, made after `action`, tells."""
    done = f"{ACTION}{action}" if action else "\n\nThis is the first observation of the game."
    system = f"{EDIT_SYSTEM}\n\n{describe_types(domain)}\n{describe_domain(domain)}"
    return EditPrompt([{"role": "system", "content": system},
                       {"role": "user", "content": f"{describe(shown)}{done}{OBSERVATION}{observation.strip()}"
                        f"{QUESTION}"}], shown)



# ---- PDDL-edit by propose, then choose (language.pddl_edit.read) ------------------------------------------
READ_SYSTEM = (
    "You keep the PDDL problem of a text game up to date with what the player observes. Given an observation, "
    "first fill each blank with the words of the observation that name what fills it, copied word for word (a "
    "place seen only as a closed door is named by the door; \"\" where the observation does not tell). Then choose "
    "the facts the observation says are true now, and the facts of the problem it says are no longer true (the old "
    "place or state of what moved or changed goes by itself). Answer with JSON only, following the given schema.")
BLANK = "___"
CHOOSE_QUESTION = ("Objects: {}\nWhich facts does the observation say are true now (true), and which facts of the "
                   "problem are no longer true (false)?")


@dataclass(frozen=True)
class Shot:
    """A worked example of the edit reading: the problem, action and observation, the names, the objects the
    choice may use, the choice."""

    shown: CurrentProblem
    action: str | None
    observation: str
    blanks: str  # the names question
    names: str  # the reply naming the places and things (JSON)
    choose: str  # the choice question
    choice: str  # the reply choosing the facts (JSON)


def actions_pddl(domain: Domain) -> str:
    """The domain's action schemas as its PDDL file writes them."""
    text = domain.text or domain.compiled_pddl()
    start = text.find("(:action")
    return "Actions:\n" + text[start:].strip().removesuffix(")").rstrip() if start >= 0 else ""


def _observed(shown: CurrentProblem, action: str | None, observation: str, note: str | None) -> str:
    done = f"{ACTION}{action}" if action else "\n\nThis is the first observation of the game."
    return f"{describe(shown)}{done}{OBSERVATION}{observation.strip()}" + (f"\n\n{note}" if note else "")


def blanks_question(blanks: dict[str, str]) -> str:
    """The names question: each field with its fact glossed, the open place a blank."""
    return "\n\nFill the blanks:\n" + "\n".join(f"{k}: {g}" for k, g in blanks.items())


def choose_question(scope: dict[str, str], candidates: dict[str, str], commands: Iterable[str]) -> str:
    """The choice question: the commands the game admits now, the objects, and the facts that may become true
    (fact -> gloss) where shown."""
    shown = "".join(f"\n{a}: {g}" for a, g in candidates.items())
    objects = ", ".join(f"{n} - {t}" for n, t in sorted(scope.items()))
    return f"Commands the game admits now: {', '.join(commands)}\n" + CHOOSE_QUESTION.format(
        objects + (f"\nFacts that may become true:{shown}" if shown else ""))


def read_messages(domain: Domain, shots: Iterable[Shot], shown: CurrentProblem, action: str | None,
                  observation: str, blanks: str, note: str | None = None) -> EditPrompt:
    """The names question of the edit reading (the choice follows it): instructions, the domain's types,
    predicates and action schemas, then the worked examples as turns, which all observations share (a llama.cpp
    server computes them once); the current problem, action and observation last."""
    system = f"{READ_SYSTEM}\n\n{describe_types(domain)}\n{describe_domain(domain)}\n\n{actions_pddl(domain)}"
    turns = [m for s in shots for m in (
        {"role": "user", "content": _observed(s.shown, s.action, s.observation, None) + s.blanks},
        {"role": "assistant", "content": s.names},
        {"role": "user", "content": s.choose}, {"role": "assistant", "content": s.choice})]
    return EditPrompt([{"role": "system", "content": system}, *turns,
                       {"role": "user", "content": _observed(shown, action, observation, note) + blanks}],
                      shown)


# ---- propose, then choose (language.propose) ----------------------------------------------------------
PROPOSE_SYSTEM = (
    "You keep the world model of a home up to date from sentences. Given a sentence alone, copy, word for word, "
    "every phrase of it that names a person, a room or a thing (furniture, devices, windows, lights, objects), each "
    "with the words that say whose or where it is. "
    "Given a sentence and candidate changes, choose for each kind of change the candidate that the sentence says "
    "happened (a state that is now true, or one that is no longer true), or none; choose nothing the sentence "
    "does not say (old places and states are removed by themselves). Answer with JSON only, following the given "
    "schema.")
UNCLEAR = "unclear"


def propose_messages(examples: Iterable[tuple[str, list[str], str, dict[str, str]]], text: str,
                     candidates: str | None = None) -> Messages:
    """Propose, then choose: the words naming people, rooms and things in a sentence (without `candidates`), or
    which candidate changes (`candidate_lines`) it says happened. Both share one prefix, the instructions and the
    worked examples (sentence, its words, its candidates, the choice per predicate), so that a llama.cpp server
    computes it once; the sentence comes last."""
    shots = [(ex, {"mentions": words}, lines, ids) for ex, words, lines, ids in examples]
    return _two_questions(PROPOSE_SYSTEM, "Sentence", shots, text, candidates, separators=(",", ":"))


def _two_questions(system: str, label: str, examples: Iterable[tuple[str, dict, str, dict]], text: str,
                   candidates: str | None, separators: tuple[str, str] = (", ", ": ")) -> Messages:
    """The first question (what the text names) or the second (which candidates it says), after one shared prefix:
    the instructions, then each worked example (text, first answer, candidates, choice) as both questions, the
    answers' JSON written with `separators`, which the model's replies copy. Without spaces, a field of a choice
    takes two tokens fewer (Qwen's '":"' is one token, '": "' two): the 1.5B told 67 dev sentences 8% faster, every
    one the same; its choices for 4 of 32 dev goals changed (an exact one became a quantified one): goals keep the
    spaces."""
    def ask(said: str, lines: str | None) -> dict:
        return {"role": "user", "content": f"{label}: {said}" + (f"\nCandidates:\n{lines}" if lines else "")}

    shots = [m for ex, first, lines, ids in examples for m in (
        ask(ex, None), {"role": "assistant", "content": json.dumps(first, separators=separators)},
        ask(ex, lines), {"role": "assistant", "content": json.dumps(ids, separators=separators)})]
    return [{"role": "system", "content": system}, *shots, ask(text, candidates)]


GOAL_SYSTEM = (
    "You turn the tasks people give a household robot into goals. Given a task alone, say whether it is about "
    "named things or about all things of a kind (scope), copy, word for word, every phrase of it that names one "
    "person, room or thing, each with the words that say whose or where it is (not the phrases naming all things "
    "of a kind), and name the kinds of thing it is about. Given a task and candidate conditions, choose for each "
    "kind of condition the candidate that must hold when the task is done, or none; choose nothing the task does "
    "not ask for. Answer with JSON only, following the given schema.")


def describe_actions(domain: Domain) -> str:
    """The domain's actions, one line each, by what they make true and false (what a goal can ask for)."""
    return "Actions (what each makes true or false):\n" + "\n".join(
        f"{a.name}: {', '.join(_effect(e) for e in a.effects)}" for a in domain.actions.values())


def _effect(e: Effect) -> str:
    said = f"{'' if e.add else 'not '}{e.atom}"
    if e.params:
        where = "" if e.condition == TRUE else f" where {to_pddl(e.condition)}"
        params = " ".join(f"{p.name} - {'/'.join(p.types)}" for p in e.params)
        said = f"for every {params}{where}: {said}"
    return said


def choose_goal_messages(domain: Domain, examples: Iterable[tuple[str, dict, str, dict]], task: str,
                         candidates: str | None = None) -> Messages:
    """Goals by propose-then-choose: the scope, words and kinds of a task (without `candidates`), or which candidate
    goal conditions it asks for; one shared prefix (instructions, predicates, actions, worked examples)."""
    system = f"{GOAL_SYSTEM}\n\n{describe_domain(domain)}\n\n{describe_actions(domain)}"
    return _two_questions(system, "Task", examples, task, candidates)


OBSERVATION_SYSTEM = "You read what a text game shows the player and answer questions about it."


def observation_messages(observation: str) -> Messages:
    """An observation alone, before a short question about one of its lines (`which_messages`)."""
    return [{"role": "system", "content": OBSERVATION_SYSTEM}, {"role": "user", "content": observation.strip()}]


def _then(first: Messages, asked: str) -> Messages:
    """`first` with `asked` after its last message's text: one shared prefix for every question about a text."""
    *prefix, text = first
    return [*prefix, {"role": "user", "content": f"{text['content']}{asked}"}]


def list_messages(first: Messages, request: str) -> Messages:
    """A request to list what a text holds (`request`: "List every direction of a recipe."), after `first`."""
    return _then(first, f"\n\n{request} Answer with JSON only.")


def which_messages(first: Messages, question: str, options: str) -> Messages:
    """A targeted question about a sentence or task (which entity a phrase names, which of two facts holds), with its
    `options` one per line with their ids, asked after the prefix of `first` (the messages of the first question of
    `propose_messages` or `choose_goal_messages`): every question about a text shares one prefix, which a llama.cpp
    server computes once."""
    return _then(first, f"\nQuestion: {question}\nOptions:\n{options}\n"
                        f"Answer with one of the options, or \"{UNCLEAR}\" if it does not tell.")


def candidate_lines(shown: Iterable[str]) -> str:
    """Candidates as the model reads them, one a line."""
    return "\n".join(f"- {x}" for x in shown)


# ---- feedback on a refused reply ----------------------------------------------------------------------
def retry(reply: str, feedback: str) -> Messages:
    """The turn after a refused reply: the reply as the model's, then why it was refused."""
    return [{"role": "assistant", "content": reply}, {"role": "user", "content": feedback}]


def invalid_reply(reason: str) -> str:
    return f"That reply is invalid: {reason}\nAnswer again."


def _refused(what: str, issues: Iterable[object], whole: str) -> str:
    return (f"{what} refused, nothing was applied:\n" + "\n".join(f"- {i}" for i in issues)
            + f"\nAnswer again with the corrected complete {whole}.")


def change_refused(issues: Iterable[object]) -> str:
    return _refused("That change was", issues, "change")


def edits_refused(issues: Iterable[object]) -> str:
    return _refused("Those edits were", issues, "edits")


def goal_invalid(error: object) -> str:
    return f"That goal is not valid: {error}\nWrite it again."
