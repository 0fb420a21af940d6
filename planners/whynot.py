"""Answers to "why not?", from the symbolic side alone (no LLM), in English with the domain's glosses.

A goal: a name not in the graph; goal facts that contradict the domain's invariants (two places at once) or
each other, caught before any planner runs; goal facts no action can reach from the state (relaxed
reachability over the actions relevant to the goal), each with its first missing link: no action makes it
true, an action could but a precondition of it is never reachable (followed back to its own first missing
link), or an action could but the graph has no object of a type it needs; and what the whole-graph check
finds missing. With it, the closest goal that can be reached: the goal without those conjuncts, relaxed-
reachable. A plan that stopped: the step, its unmet precondition and the changes since planning that made it so.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from enum import StrEnum
from itertools import islice
from typing import TYPE_CHECKING

from kgplan.domains.formula import And, Atom, Equals, Formula, GroundAtom, Not, Param, Quantified, scoped, to_pddl
from kgplan.domains.model import Action, Domain
from kgplan.domains.verify import Issue, IssueKind, glossed, show
from kgplan.errors import InputError
from kgplan.graph.check import check_graph
from kgplan.graph.world import WorldGraph
from kgplan.planners.relevance import Relevance
from kgplan.planners.state import Binding, PlanError, State, Step, conjuncts, ground, pattern, substitute

if TYPE_CHECKING:
    from kgplan.planners.relevance import _Explorer

Lit = tuple[GroundAtom, bool]  # a ground literal: (atom, positive)
DEPTH = 6  # missing links followed back from a goal literal
BINDINGS = 2000  # an achiever's bindings tried for the one closest to running
MOST = 5  # unreachable literals explained per goal conjunct, and graph issues shown


class CauseKind(StrEnum):
    MISSING_OBJECT = "missing_object"  # a name not in the graph, or no object of a type an action needs
    UNREACHABLE = "unreachable"  # no action makes the literal true (false), and it is not so now
    BLOCKED = "blocked_precondition"  # an action could, but one of its preconditions is never reachable
    INVARIANT = "invariant"  # the goal contradicts an invariant of the domain, or itself
    MISSING_FACT = "missing_fact"  # the graph lacks a fact an exactly-one invariant needs (kgplan check)
    GRAPH = "graph"  # the graph breaks another rule of the domain (kgplan check)
    TOGETHER = "together"  # each goal fact is reachable on its own: only their combination is not
    CHANGED = "changed"  # a plan's step whose precondition no longer holds


@dataclass(frozen=True)
class Cause:
    """One reason: its kind, the goal literal (or step precondition) it is about as PDDL, the reason in English,
    and the first missing link (a fact, a type or a name) where there is one."""

    kind: CauseKind
    literal: str
    explanation: str
    blocker: str | None = None

    def to_json(self) -> dict:
        return asdict(self) | {"kind": self.kind.value}


@dataclass(frozen=True)
class WhyNot:
    """Why a goal cannot be reached, and the closest goal that can (None if no part of it can)."""

    causes: list[Cause]
    alternative: str | None = None

    def __str__(self) -> str:
        lines = [f"why: {c.explanation}" for c in self.causes]
        return "\n".join(lines + ([f"the closest goal that can be reached: {self.alternative}"]
                                  if self.alternative else []))


class GoalRefused(InputError):
    """A goal the domain or the graph refuses before planning (`issues`); `why` when only names are missing."""

    def __init__(self, issues: list[Issue], goal: Formula, why: WhyNot | None = None) -> None:
        self.issues, self.goal, self.why = issues, goal, why
        super().__init__("goal refused:\n" + "\n".join(f"  - {i}" for i in issues)
                         + (f"\n  the closest goal that can be reached: {why.alternative}"
                            if why and why.alternative else ""))


def say(domain: Domain, atom: GroundAtom | Atom, positive: bool = True) -> str:
    """A literal in words (its predicate's gloss, where domain.toml has one) and as PDDL."""
    text = glossed(domain, GroundAtom(atom.predicate, atom.args) if isinstance(atom, Atom) else atom)
    return text if positive else f"not {text}"


def _literal(f: Formula) -> Lit | None:
    """A ground literal formula as (atom, positive); None for anything else."""
    pos = not isinstance(f, Not)
    a = f if pos else f.arg
    if isinstance(a, Atom) and not any(x.startswith("?") for x in a.args):
        return GroundAtom(a.predicate, a.args), pos
    return None


def explain(state: State, goal: Formula, graph_issues: Iterable[Issue] = (),
            relevance: Relevance | None = None) -> WhyNot:
    """Why `goal` cannot be reached from `state`: `graph_issues` (the whole-graph check's), names not in it,
    contradictions, unreachable goal facts (each with its first missing link); and the goal without the conjuncts they
    are about, when something is left (it is relaxed-reachable from `state`). `relevance`: the one that pruned
    `state` for `goal`, whose relaxed exploration is used again where it fits."""
    domain = state.domain
    parts = conjuncts(goal)
    causes: list[Cause] = []
    dropped: set[int] = set()
    for i, f in enumerate(parts):
        for name in _unknown(f, state.objects):
            close = difflib.get_close_matches(name, list(state.objects), n=1)
            causes.append(Cause(CauseKind.MISSING_OBJECT, to_pddl(f), f"'{name}' is not in the graph"
                                + (f" (did you mean '{close[0]}'?)" if close else "")
                                + f", so {to_pddl(f)} cannot be reached", name))
            dropped.add(i)
    for i, cause in _contradictions(state, parts, dropped):
        causes.append(cause)
        dropped.add(i)
    relevance = relevance or Relevance(domain)
    explorer, _ = relevance.explore(state, goal if not dropped else And(tuple(f for i, f in enumerate(parts)
                                                                              if i not in dropped)))
    links = _Links(state, relevance, explorer)
    for i, f in enumerate(parts):
        if i not in dropped and (unmet := list(islice(_unmet(explorer, state, f, {}), MOST))):
            causes += [links.cause(u) for u in unmet]
            dropped.add(i)
    causes[:0] = [Cause(CauseKind.MISSING_FACT if i.kind == IssueKind.INCOMPLETE else CauseKind.GRAPH, i.fact or "",
                        f"the graph may be why: {i.message}", i.fact) for i in islice(graph_issues, MOST)]
    if not causes:
        causes.append(Cause(CauseKind.TOGETHER, to_pddl(goal), "each goal fact can be reached on its own from this "
                            "state, but not all of them together: reaching one undoes another, or uses up what "
                            "another needs (a free hand, an empty place)"))
    kept = [f for i, f in enumerate(parts) if i not in dropped]
    alternative = to_pddl(kept[0] if len(kept) == 1 else And(tuple(kept))) if kept and dropped else None
    return WhyNot(causes, alternative)


def contradictions(state: State, goal: Formula) -> list[Cause]:
    """The goal's conjuncts that contradict one another or the domain's invariants (an item in two places, the robot
    in no room) from `state`: no planner is needed to see that such a goal is never reached."""
    return [c for _, c in _contradictions(state, conjuncts(goal), set())]


def _contradictions(state: State, parts: list[Formula], skip: set[int]) -> Iterator[tuple[int, Cause]]:
    """(index, cause) for each conjunct that contradicts an earlier one or an invariant on its own."""
    domain = state.domain
    seen: dict[Lit, int] = {}
    held: dict[tuple[int, tuple[str, ...]], GroundAtom] = {}  # (group, key) -> the goal's atom of it
    for i, f in enumerate(parts):
        if i not in skip and (cause := _nowhere(state, f)):
            yield i, cause
        if i in skip or (lit := _literal(f)) is None:
            continue
        atom, pos = lit
        if (atom, not pos) in seen:
            yield i, Cause(CauseKind.INVARIANT, to_pddl(f), f"the goal asks for {say(domain, atom)} and for its "
                           "opposite", show(atom))
            continue
        seen[lit] = i
        for gi, group in enumerate(domain.invariants if pos else ()):
            for part in group.parts:
                if part.predicate != atom.predicate or len(atom.args) != part.arity:
                    continue
                other = held.setdefault((gi, part.key(atom.args)), atom)
                if other != atom:
                    yield i, Cause(CauseKind.INVARIANT, to_pddl(f), f"{say(domain, other)} and {say(domain, atom)} "
                                   f"cannot both hold: {group.describe()}", show(other))
                    break
            else:
                continue
            break


def _nowhere(state: State, f: Formula) -> Cause | None:
    """A conjunct `(forall (?v - t) (not (p k ?v)))` that leaves an exactly-one instance which holds an atom now with
    none (the robot in no room): every state reachable from this one has one."""
    if not (isinstance(f, Quantified) and f.kind == "forall" and isinstance(f.body, Not)
            and isinstance(atom := f.body.arg, Atom)):
        return None
    domain, every = state.domain, {p.name: p.types for p in f.params}
    for group in domain.invariants:
        (part, *more) = group.parts
        if more or not group.exactly_one or part.predicate != atom.predicate or part.counted_position is None:
            continue
        key, var = part.key(atom.args), atom.args[part.counted_position]
        wanted = domain.predicates[atom.predicate].params[part.counted_position].types
        pattern = tuple(None if i == part.counted_position else a for i, a in enumerate(atom.args))
        if (var in every and all(domain.accepts(every[var], t) for t in wanted) and not any(k in every for k in key)
                and (now := next(state.match(atom.predicate, pattern), None)) is not None):
            return Cause(CauseKind.INVARIANT, to_pddl(f), f"the goal asks that {', '.join(key)} have no "
                         f"{part.pattern(key)}, but {group.describe()}, and {say(domain, (atom.predicate, now))} "
                         "holds now", show((atom.predicate, now)))
    return None


def _unknown(f: Formula, known: dict[str, str]) -> list[str]:
    """The names a formula uses that are neither objects nor its variables."""
    out = []
    for a, scope in scoped(f):
        out += [x for x in ((a.left, a.right) if isinstance(a, Equals) else a.args) if x not in known
                and x not in scope]
    return list(dict.fromkeys(out))


def _unmet(explorer: _Explorer, state: State, f: Formula, b: Binding, pos: bool = True) -> Iterator[Lit | Formula]:
    """The ground literals of `f` (under `b`) that the relaxed exploration never reaches; a part that needs only one
    of its cases (or, exists) is yielded whole."""
    if explorer.support(f, b, pos) is not None:
        return
    if isinstance(f, Atom):
        yield ground(f, b), pos
    elif isinstance(f, Not):
        yield from _unmet(explorer, state, f.arg, b, not pos)
    elif isinstance(f, And) and pos:
        for g in f.args:
            yield from _unmet(explorer, state, g, b, pos)
    elif isinstance(f, Quantified) and (f.kind == "forall") == pos:
        for nb in state.bindings(f.params):
            yield from _unmet(explorer, state, f.body, {**b, **nb}, pos)
    else:
        yield substitute(f, b) if pos else Not(substitute(f, b))


@dataclass
class _Link:
    """One step back from a literal: what it says, and where it leads (the next literal), else the root's kind."""

    text: str
    kind: CauseKind
    blocker: str
    rank: tuple[int, ...] = (0,)  # the achievers' order: a binding closest to running first
    next: Lit | None = None


class _Links:
    """The first missing link of unreachable literals, followed back through their achievers."""

    def __init__(self, state: State, relevance: Relevance, explorer: _Explorer) -> None:
        self.state, self.domain, self.relevance, self.explorer = state, state.domain, relevance, explorer
        self.static = self.domain.static_predicates()

    def cause(self, goal: Lit | Formula) -> Cause:
        if not isinstance(goal, tuple):
            return self._formula(goal)
        atom, pos = goal
        texts, seen, lit = [], [goal], goal
        while True:
            link = self._link(lit, seen, "it" if lit == goal else "that")
            texts.append(link.text)
            if link.next is None or len(seen) >= DEPTH:
                break
            seen.append(lit := link.next)
        kind = link.kind
        if kind == CauseKind.UNREACHABLE and lit != goal:
            kind = CauseKind.BLOCKED
        literal = show(atom) if pos else f"(not {show(atom)})"
        return Cause(kind, literal, f"{say(self.domain, atom, pos)} cannot be reached from this state: "
                     + "; ".join(texts), link.blocker if link.next is None else _pddl(link.next))

    def _formula(self, f: Formula) -> Cause:
        text = to_pddl(f)
        q = f.arg if isinstance(f, Not) else f
        empty = [p for p in (q.params if isinstance(q, Quantified) else ()) if not self.state.of_type(p.types)]
        if empty:
            t = " or ".join(empty[0].types)
            return Cause(CauseKind.MISSING_OBJECT, text, f"{text} cannot be reached: the graph has no {t}", t)
        return Cause(CauseKind.UNREACHABLE, text, f"{text} cannot be reached from this state: none of its cases "
                     "can", text)

    def _link(self, lit: Lit, seen: list[Lit], it: str) -> _Link:
        atom, pos = lit
        links = [link for act, eff in self.relevance.achievers.get((atom[0], pos), ())
                 if (link := self._achiever(act, eff.params, eff.atom.args, eff.condition, atom, seen, it))]
        if not links:
            return _Link(f"no action makes {it} {'true' if pos else 'false'}", CauseKind.UNREACHABLE, _pddl(lit))
        return min(links, key=lambda link: link.rank)

    def _achiever(self, act: Action, effect_params: tuple[Param, ...], effect_args: tuple[str, ...],
                  condition: Formula, atom: GroundAtom, seen: list[Lit], it: str) -> _Link | None:
        """How close the action comes to making the atom's literal hold; None if it cannot for these objects."""
        params = (*act.params, *effect_params)
        types = {p.name: p.types for p in params}
        b = self.state.unify(effect_args, atom[1], {}, types)
        if b is None:
            return None
        step = _step(act, b)
        if missing := next((p for p in params if p.name not in b and not self.state.of_type(p.types)), None):
            t = " or ".join(missing.types)
            return _Link(f"{step} would make {it} so, but needs a {t} ({missing.name}), and the graph has none",
                         CauseKind.MISSING_OBJECT, t, (2,))
        conds = [*conjuncts(act.precondition), *conjuncts(condition)]
        statics = [c for c in conds if isinstance(c, Atom) and c.predicate in self.static]
        best: tuple[tuple[int, int, int], Binding, list[Formula]] | None = None
        candidates = (jb | nb for jb in self.state.join(statics, b, types)
                      for nb in self.state.bindings(tuple(p for p in params if p.name not in jb)))
        for full in islice(candidates, BINDINGS):
            unmet = [c for c in conds if self.explorer.support(c, full) is None]
            lits = [_ground(c, full) for c in unmet]  # the closest: no cycle, nothing no action could make
            score = (sum(lit in seen for lit in lits), sum(lit is not None and not self._can(lit) for lit in lits),
                     len(unmet))
            if best is None or score < best[0]:
                best = score, full, unmet
            if score <= (0, 0, 1):
                break
        if best is None:  # no binding of the static preconditions: a fact the graph lacks and no action adds
            gone = next((a for a in statics if not any(self.state.unify(a.args, args, b, types) is not None
                                                       for args in self.state.match(a.predicate, pattern(a, b)))),
                        statics[-1] if statics else None)
            if gone is None:  # the types alone leave no binding (the achieved atom's object of another type)
                return None
            need = substitute(gone, b)
            return _Link(f"{step} would make {it} so, but needs {say(self.domain, need)}, which no fact of the graph "
                         "says and no action makes true", CauseKind.BLOCKED, str(need), (1,))
        score, full, unmet = best
        step = _step(act, full)
        fresh = [c for c in unmet if _ground(c, full) not in seen] or unmet
        first = _ground(fresh[0], full)
        if first is None:
            text = to_pddl(substitute(fresh[0], full))
            return _Link(f"{step} would make {it} so, but needs {text}, which is never reachable", CauseKind.BLOCKED,
                         text, (0, *score))
        needs = f"{step} would make {it} so, but needs {say(self.domain, *first)}"
        if first in seen:
            return _Link(needs + ", which needs it first: nothing starts the chain", CauseKind.BLOCKED,
                         _pddl(first), (0, *score))
        return _Link(needs, CauseKind.BLOCKED, _pddl(first), (0, *score), first)

    def _can(self, lit: Lit) -> bool:
        """Whether some action could make the literal hold, by its objects' types."""
        atom, pos = lit
        return any(self.state.unify(eff.atom.args, atom[1], {}, {p.name: p.types for p in (*act.params, *eff.params)})
                   is not None for act, eff in self.relevance.achievers.get((atom[0], pos), ()))


def _ground(f: Formula, b: Binding) -> Lit | None:
    """A literal formula grounded under `b`; None for anything else."""
    return _literal(substitute(f, b))


def _pddl(lit: Lit) -> str:
    return show(lit[0]) if lit[1] else f"(not {show(lit[0])})"


def _step(act: Action, b: Binding) -> str:
    return f"({' '.join((act.name, *(b.get(p.name, p.name) for p in act.params)))})"


def explain_graph(graph: WorldGraph, state: State, goal: Formula, relevance: Relevance | None = None) -> WhyNot:
    """`explain` on the graph's state, with what the whole-graph check finds (the robot with no place)."""
    return explain(state, goal, check_graph(graph, incomplete=True), relevance)


def stopped(graph: WorldGraph, step: Step, index: int, since: int | None, before: Iterable[Step] = ()) -> Cause | None:
    """Why `step`, a plan's step `index`, cannot run on the graph as it is now after the steps `before` it (those not
    run yet): its first unmet precondition, and the changes after change `since` (when the plan was made) that
    touched it; None if it can run."""
    state = State(graph.domain, *graph.snapshot())
    for earlier in before:
        state.apply(earlier)
    try:
        act, b = state.bind(step)
    except PlanError as e:  # an object gone since the plan was made
        return Cause(CauseKind.CHANGED, str(step), f"step {index} cannot run: {e}")
    for c in conjuncts(act.precondition):
        if state.holds(c, b):
            continue
        lit, text = _ground(c, b), to_pddl(substitute(c, b))
        said = say(graph.domain, *lit) if lit else text
        changes = _touching(graph, lit[0], since) if lit else []
        by = (f"; changed since the plan was made by {', '.join(changes)}" if changes else
              "; no change since the plan was made touched it: an earlier step no longer does what was planned"
              if since is not None else "")
        return Cause(CauseKind.CHANGED, text, f"step {index} {step} needs {said}{by}", text)
    return None


def _touching(graph: WorldGraph, atom: GroundAtom, since: int, most: int = 200) -> list[str]:
    """The changes after `since` (newest first, at most `most` read) that added or removed `atom`, in words."""
    out, before = [], None
    while len(page := graph.changes(50, before)) and page[0].id > since and most > 0:
        for s in page:
            if s.id <= since:
                return out
            most -= 1
            if any(v > len(getattr(s.delta, k)) for k, v in s.sizes.items()):
                s = graph.change_slice(s.id, limit=None) or s
            how = ("added" if any(f.atom == atom for f in s.delta.add) else
                   "removed" if any(f.atom == atom for f in s.delta.remove) else None)
            if how:
                out.append(f"change #{s.id} ({s.delta.source}{': ' + repr(s.delta.text) if s.delta.text else ''}), "
                           f"which {how} {show(atom)}")
        before = page[-1].id
    return out
