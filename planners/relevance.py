"""Relevance pruning by relaxed planning: the part of a state a planner needs for a goal.

1. Backward, lifted and state-free: the goal's literals are regressed through the action effects
   that can produce them, as patterns whose arguments are objects named by the goal or "any"
   (None). This gives the relevant effects and, per action, the partial bindings that matter.
   Nothing is dropped on the ground that "any" might match an ancestor: the only cut is for an
   achiever that needs the complement of what it achieves when that is wanted only to be undone.
2. Forward, relaxed (delete-free) and ground lazily from the state: layer by layer, the relevant
   actions whose preconditions hold in the relaxed sense are instantiated by joining their positive
   precondition atoms with the reached facts through argument indexes (new facts trigger the
   joins). A negative literal is reached when its atom is false in the state or deleted by a
   reached action; disjunctions, quantifiers and conditional effects are judged on those sets, so
   the relaxation over-approximates what the real task can reach.
3. FF-style extraction back from the goal gives a relaxed plan. Its steps are run for real, each
   one the state reached cannot run replaced by a relaxed plan from there (`Relevance._executed`),
   so that resources the relaxation lets one object provide many times get their other objects;
   when the goal is reached, the pruned state holds a plan. The pruned state is every fact among
   the objects named (plus the agents' objects): the induced sub-state, so that negative
   preconditions over kept objects are judged exactly.

`Relevance.prunings` yields the relaxed-plan pruning, then wider ones (the objects sharing a fact
with those kept; every object of every relevant action reached before the goal), or the widest
alone when building a plan met a dead end or got stuck; each is checked by relaxed reachability on
itself; the caller plans on them in turn and on the full state last.
A plan found on a pruned state uses only kept objects and is checked on the full state.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain

from kgplan.domains import formula
from kgplan.domains.formula import (
    TRUE,
    And,
    Atom,
    Effect,
    Equals,
    Formula,
    Imply,
    Not,
    Or,
    Param,
    Quantified,
    quantifiers,
)
from kgplan.domains.model import Action, Domain
from kgplan.planners.budget import tick
from kgplan.planners.state import Binding, State, Step, ground, pattern

Pattern = tuple[str | None, ...]
Lit = tuple[formula.GroundAtom, bool]  # a ground literal: (atom, positive)
Key = tuple[str, tuple[str, ...]]  # a ground action: (name, arguments)
LEVELS = ("relaxed plan", "neighbours", "relaxed reachable")
# relaxed plans extracted at most while a plan is built from them (`Relevance._executed`): each costs about an
# exploration of the state, so 64 on small states, fewer on larger ones (ROUNDS_WORK / facts), never below 16 nor
# GOAL_ROUNDS per goal literal false at first; and PROGRESS_ROUNDS more for each goal literal the run makes hold
# beyond the most so far (a goal of 100 items goes on while items arrive, a run going round in circles does not)
ROUNDS, ROUNDS_WORK, MIN_ROUNDS, GOAL_ROUNDS, PROGRESS_ROUNDS = 64, 10_000, 16, 4, 4


@dataclass
class Pruned:
    """The objects and facts kept for a goal, and whether the goal is relaxed-reachable on them."""

    objects: dict[str, str]
    facts: set[formula.GroundAtom]
    level: str = LEVELS[0]
    reachable: bool = True
    hopeless: bool = False  # the goal is not relaxed-reachable on the full state either: no plan exists


def literals(f: Formula, positive: bool = True) -> Iterator[tuple[Atom, bool]]:
    """The atoms of a formula with the polarity in which they occur (both, under `imply`)."""
    if isinstance(f, Atom):
        yield f, positive
    for g, p in formula.polar_children(f, positive):
        yield from literals(g, p)


def _required(f: Formula) -> Iterator[tuple[Atom, bool]]:
    """The literals of a formula's top-level conjunction (each one is needed for `f` to hold)."""
    if isinstance(f, Atom):
        yield f, True
    elif isinstance(f, Not) and isinstance(f.arg, Atom):
        yield f.arg, False
    elif isinstance(f, And):
        for g in f.args:
            yield from _required(g)


def _conjuncts(f: Formula) -> list[Atom]:
    """The positive atoms of a formula's top-level conjunction (those a join can bind from)."""
    return [a for a, pos in _required(f) if pos]


def _condition(act: Action, eff: Effect) -> Formula:
    return act.precondition if eff.condition == TRUE else And((act.precondition, eff.condition))


def _subsumes(general: Pattern, specific: Pattern) -> bool:
    return all(g is None or g == s for g, s in zip(general, specific, strict=True))


class Relevance:
    """Relaxed-plan relevance over one domain's actions."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.explored: tuple[State, Formula, _Explorer] | None = None  # the last `prunings`' exploration of the state
        self.achievers: dict[tuple[str, bool], list[tuple[Action, Effect]]] = defaultdict(list)
        for act in domain.actions.values():
            for e in act.effects:
                self.achievers[e.atom.predicate, e.add].append((act, e))
        # the statics that only ever enable an action: without one of their facts, fewer actions apply (see `prunings`)
        self.enabling = domain.static_predicates() - {
            a.predicate for act in domain.actions.values()
            for f in (act.precondition, *(e.condition for e in act.effects))
            for a, pos in literals(f) if not pos or f is not act.precondition}

    def explore(self, state: State, goal: Formula) -> tuple[_Explorer, bool]:
        """The relaxed exploration from `state` over the actions relevant to `goal` (run until the goal holds
        or nothing new is reached), and whether it reached the goal; the one `prunings` made, if it was for these."""
        if self.explored is not None and self.explored[0] is state and self.explored[1] == goal:
            explorer = self.explored[2]
            return explorer, explorer.support(goal, {}) is not None
        explorer = _Explorer(self.domain, state, *self._relevant(state, goal))
        return explorer, explorer.run(goal)

    def prune(self, state: State, goal: Formula) -> Pruned:
        """The relaxed-plan pruning of `state` for `goal` (the first of `prunings`)."""
        return next(self.prunings(state, goal))

    def prunings(self, state: State, goal: Formula) -> Iterator[Pruned]:
        """Ever wider prunings: the objects of the relaxed plans a plan was built from (`_executed`),
        then also the objects that share a fact with them, then also every object of the relevant
        actions reached before the goal; only the last when building a plan met a dead end or got stuck (the
        relaxed-plan objects would likely be too few). Each says whether its goal is
        relaxed-reachable on it; if the goal is not relaxed-reachable on the full state, one
        hopeless pruning (the relaxation over-approximates what a plan can reach: there is none)."""
        patterns, bindings = self._relevant(state, goal)
        full = _Explorer(self.domain, state, patterns, bindings)
        t = self.domain.meta.get("agent_type", "agent")  # the objects that act (domain.toml)
        acting = full.of_type((t,)) if t in self.domain.types else []
        base = set(acting) | set(self.domain.constants)
        base |= {a for o in acting for _, args in state.about(o) for a in args}
        reached = full.run(goal)
        self.explored = state, goal, full  # (for `explore`: why an unsolvable goal is so)
        if not reached:
            yield Pruned({}, set(), LEVELS[0], reachable=False, hopeless=True)
            return
        named, spared, read = self._executed(state, goal, full, patterns, bindings)
        keep = base | named
        near = keep | {a for o in keep for _, args in state.about(o) for a in args}
        wider = near | {a for _, args in full.fired for a in args}
        unread = self.enabling - {a.predicate for a, pos in literals(goal) if not pos}
        for level, objects in list(zip(LEVELS, (keep, near, wider), strict=True))[0 if spared else 2:]:
            pruned = _induced(self.domain, state, objects, level)
            if level == LEVELS[0] and read is not None:  # the plan run reads these: the rest only adds choices
                pruned.facts = {f for f in pruned.facts if f[0] not in unread or f in read}
            sub = State(self.domain, pruned.objects, pruned.facts)
            pruned.reachable = _Explorer(self.domain, sub, patterns, bindings).run(goal)
            yield pruned

    def _executed(self, state: State, goal: Formula, full: _Explorer,
                  patterns: dict[tuple[str, bool], list[Pattern]],
                  bindings: dict[str, list[Binding]]) -> tuple[set[str], bool, set[formula.GroundAtom] | None]:
        """The objects of every relaxed plan extracted while a real plan is built from them, False if
        the run met a dead end or got stuck, and, if the run reached the goal, the facts of `enabling` statics
        it read (its steps' preconditions and the goal).

        The delete relaxation lets one object serve every step that consumes it (one sandwich serves
        every child, one free hand picks up every item, a shaker is filled twice from the same level,
        a cell stays clear under the stone pushed onto it, a dry cloth stays dry after washing), so the
        relaxed plan's objects can be too few. Its steps are therefore run for real on `state`, earliest
        layer first. A step whose precondition is false there is replaced by a relaxed plan, from the
        state reached, for what the step was in the plan for (its purpose: the next sandwich, the next
        shaker level) or, if that is out of reach, for its false preconditions (a free hand, the player
        behind the stone), whose steps are run in turn; goal literals false at the end get a relaxed
        plan the same way. A step that would falsify a literal a later step or the goal needs is run
        after those steps (once), where its precondition may no longer hold and its purpose is
        reached otherwise (the player walks around the stone instead of pushing it aside). Every
        relaxed plan is extracted where the consumed facts are gone, so it names the objects that
        replace them. If the goal then holds, the steps run are a plan on the full state over the
        objects named (they and those their preconditions and the goal rest on are among them), so the
        sub-state these objects induce is solvable. A dead end (no relaxed plan left for a false goal
        literal: the greedy run used up what another step needed, a gluten-free portion for a plain
        sandwich, a stone pushed into a corner) shows that the choice of objects matters: False; so does
        a goal repair asked for again in the same state (the run goes round in circles; a step's repair
        asked for again is skipped), and so do rounds run out before the goal holds (a snake wandering round
        the apple, freecell cards moved back and forth; a run that brings goal literals about gets more: laundry
        for thirty clothes, every fruit to the fridge). `state` is restored before this returns."""
        now = _Explorer(self.domain, state, {}, {})  # judges formulas on `state` as it changes
        named: set[str] = set()
        used: set[str] = set()
        read: set[formula.GroundAtom] = set()
        undo: list[tuple[set[formula.GroundAtom], set[formula.GroundAtom]]] = []
        agenda = self._steps(full, goal, named)
        required = [(ground(a, {}), pos) for a, pos in _required(goal)]
        most = sum(now.lit_level(lit) == 0 for lit in required)  # goal literals that held at once, so far
        rounds = max(MIN_ROUNDS, min(ROUNDS, ROUNDS_WORK // max(len(state.facts), 1)),
                     GOAL_ROUNDS * (len(required) - most))
        postponed: set[Key] = set()
        here: set[formula.GroundAtom] = set()  # how the state differs from the one given
        away: set[formula.GroundAtom] = set()
        seen: set[tuple[frozenset, frozenset, tuple[Lit, ...]]] = set()

        def spend() -> bool:
            """Take a round: False if none is left."""
            nonlocal rounds, most
            if (holding := sum(now.lit_level(lit) == 0 for lit in required)) > most:
                rounds, most = rounds + PROGRESS_ROUNDS * (holding - most), holding
            if not rounds:
                return False
            rounds -= 1
            return True

        def visit(target: list[Lit]) -> bool:
            """False if the same repair was asked for in the same state before."""
            mark = frozenset(here), frozenset(away), tuple(sorted(target))
            if mark in seen:
                return False
            seen.add(mark)
            return True

        try:
            while True:
                while agenda:
                    key, purpose = agenda.pop()
                    rests: list[Lit] = []
                    precondition = self.domain.actions[key[0]].precondition
                    if now.support(precondition, self._binding(key), True, rests) == 0:
                        if key not in postponed and (at := self._threat(state, key, agenda, goal)) is not None:
                            postponed.add(key)  # once: after the last step that needs what it undoes
                            agenda.insert(at, (key, purpose))
                            continue
                        used.update(key[1], (a for (_, xs), _ in rests for a in xs))
                        read.update(a for a, pos in rests if pos and a[0] in self.enabling)
                        used |= self._quantified_objects([key], full)
                        undo.append(state.apply(Step(*key)))
                        for a in undo[-1][0]:
                            (away.discard if a in away else here.add)(a)
                        for a in undo[-1][1]:
                            (here.discard if a in here else away.add)(a)
                        if now.support(goal, {}) == 0:
                            break
                        continue
                    wanted = [lit for lit in purpose if now.lit_level(lit) is None]
                    if not wanted or not spend():
                        continue
                    if not visit(wanted):  # asked before in this very state: the run goes round in circles
                        continue
                    fix = self._repair(state, _conjunction(wanted), named, self._needed(state, agenda, goal))
                    if fix is None:  # the purpose is out of reach: restore the step's preconditions
                        b = self._binding(key)
                        false = [(ground(a, b), pos) for a, pos in _required(precondition)
                                 if now.lit_level((ground(a, b), pos)) is None]
                        fix = self._repair(state, _conjunction(false), named) if false else None
                        if fix is not None:
                            agenda.append((key, purpose))
                    agenda.extend(fix or ())
                goal_rests: list[Lit] = []
                if now.support(goal, {}, True, goal_rests) == 0:
                    read.update(a for a, pos in goal_rests if pos and a[0] in self.enabling)
                    return named | used | {a for (_, xs), _ in goal_rests for a in xs}, True, read
                # the goal, else (a dead end for part of it) the first false goal literal still in reach
                false = [lit for lit in required if now.lit_level(lit) is None]
                protected = self._needed(state, [], goal)
                for lits in (false, *([lit] for lit in false)):
                    if not spend():  # stuck, as at a dead end
                        return named | used, False, None
                    if not visit(lits):  # in circles: the greedy run cannot get there, as at a dead end
                        return named | used, False, None
                    target = goal if lits is false else _conjunction(lits)
                    relevant = (patterns, bindings) if target is goal else None
                    if agenda := self._repair(state, target, named, protected, relevant) or []:
                        break
                else:  # a dead end: greedy choices used up what the goal needs, so objects must be spared
                    return named | used, False, None
        finally:
            for added, removed in reversed(undo):
                for a in added:
                    state.discard(a)
                for a in removed:
                    state.add(a)

    def _threat(self, state: State, key: Key, agenda: list[tuple[Key, list[Lit]]], goal: Formula) -> int | None:
        """Where in the agenda (a stack) a step must go so as to run after every later step that needs a
        literal it would falsify (the push that moves the stone off the cell another push needs it on);
        0 if only the goal needs one; None if it falsifies nothing needed."""
        adds, dels = state.effects(Step(*key))
        undone = {(a, True) for a in dels - adds if a in state.facts} | {(a, False) for a in adds - state.facts}
        if not undone or not agenda:
            return None
        for i, (other, _) in enumerate(agenda):
            b = self._binding(other)
            if any((ground(a, b), pos) in undone for a, pos in _required(self.domain.actions[other[0]].precondition)):
                return i
        return 0 if any((ground(a, {}), pos) in undone for a, pos in _required(goal)) else None

    def _needed(self, state: State, agenda: list[tuple[Key, list[Lit]]], goal: Formula) -> set[Lit]:
        """The literals that hold in `state` and that a step of the agenda or the goal needs."""
        needed = {(ground(a, self._binding(k)), pos) for k, _ in agenda
                  for a, pos in _required(self.domain.actions[k[0]].precondition)}
        needed |= {(ground(a, {}), pos) for a, pos in _required(goal)}
        return {(a, pos) for a, pos in needed if (a in state.facts) == pos}

    def _repair(self, state: State, target: Formula, named: set[str], protected: set[Lit] = frozenset(),
                relevant: tuple[dict[tuple[str, bool], list[Pattern]], dict[str, list[Binding]]] | None = None,
                ) -> list[tuple[Key, list[Lit]]] | None:
        """The steps of a relaxed plan for `target` from `state` (see `_steps`), or None if out of reach:
        by actions that falsify none of the `protected` literals if it can, else by any. The exploration runs
        over the actions relevant to `target` (`relevant`, if given, are): a step's purpose needs far fewer
        than the goal (one item to its shelf, not every item)."""
        patterns, bindings = relevant or self._relevant(state, target)
        for guard in ((protected, set()) if protected else (set(),)):
            explorer = _Explorer(self.domain, state, patterns, bindings)
            explorer.protected = guard
            if explorer.run(target):
                return self._steps(explorer, target, named)
        return None

    def _steps(self, explorer: _Explorer, target: Formula, named: set[str]) -> list[tuple[Key, list[Lit]]]:
        """The relaxed plan for `target` of an explorer that reached it, as (step, purpose), the step that reached its
        purpose latest first (a stack: a washer whose precondition holds at once but whose washing waits for the
        cloth inside runs after the cloth is put in); its objects are added to `named`."""
        plan, lits = explorer.extract(target)
        named |= {a for key in plan for a in key[1]} | {a for (_, args), _ in lits for a in args}
        named |= self._quantified_objects(list(plan), explorer)
        layer = {key: max(explorer.lit_level(lit) or 1 for lit in purpose) - 1 for key, purpose in plan.items()}
        return sorted(plan.items(), key=lambda kv: -layer[kv[0]])

    def _binding(self, key: Key) -> Binding:
        return dict(zip((p.name for p in self.domain.actions[key[0]].params), key[1], strict=True))

    def _quantified_objects(self, plan: list[Key], full: _Explorer) -> set[str]:
        """Every object a quantifier of a plan's actions ranges over."""
        return {o for name, _ in plan for q in self._quantified(name) for p in q.params for o in full.of_type(p.types)}

    def _quantified(self, act: str) -> list[Quantified]:
        a = self.domain.actions[act]
        return [q for f in (a.precondition, *(e.condition for e in a.effects)) for q in quantifiers(f)]

    def _relevant(self, state: State, goal: Formula) -> tuple[dict[tuple[str, bool], list[Pattern]],
                                                               dict[str, list[Binding]]]:
        """Backward over lifted patterns: the relevant literal patterns per (predicate, polarity) and
        the partial bindings under which each action is relevant."""
        patterns: dict[tuple[str, bool], list[Pattern]] = defaultdict(list)
        bindings: dict[str, list[Binding]] = defaultdict(list)
        queue: list[tuple[str, Pattern, bool]] = []
        # Why each pattern is wanted: by the goal (None) or as the precondition `atom` of an action that achieves a
        # relevant effect under a binding. An achiever that itself needs what every one of these actions would
        # achieve is of no use for it (the delete relaxation had it before): putting an item on a shelf only for
        # it to be taken again, closed(?c) for open(?c). Such achievers are skipped, and looked at again if the
        # pattern is later wanted for another reason.
        reasons: dict[tuple[str, Pattern, bool], list[_Reason | None]] = defaultdict(list)
        done: dict[tuple[str, Pattern, bool], set[int]] = defaultdict(set)  # achievers regressed through
        skipped: set[tuple[str, Pattern, bool]] = set()

        def note(atom: Atom, b: Binding, pos: bool, reason: _Reason | None) -> None:
            pat = pattern(atom, b)
            known = patterns[atom.predicate, pos]
            covering = [p for p in known if _subsumes(p, pat)] or [pat]
            if covering == [pat] and pat not in known:
                known.append(pat)
                queue.append((atom.predicate, pat, pos))
            for p in covering:
                key = atom.predicate, p, pos
                reasons[key].append(reason)
                if key in skipped:
                    skipped.discard(key)
                    queue.append(key)

        for atom, pos in literals(goal):
            note(atom, {}, pos, None)
        while queue:
            key = pred, pat, pos = queue.pop()
            for i, (act, eff) in enumerate(self.achievers.get((pred, pos), ())):
                if i in done[key]:
                    continue
                b = self._unify(state, act, eff, pat)
                if b is None:
                    continue
                if all(r is not None and r.undone_by(act, eff, b, state) for r in reasons[key]):
                    skipped.add(key)
                    continue
                done[key].add(i)
                bindings[act.name].append({p.name: b[p.name] for p in act.params if p.name in b})
                for atom, lpos in literals(_condition(act, eff)):
                    note(atom, b, lpos, _Reason(act, eff, b, atom))
        return patterns, bindings

    def _unify(self, state: State, act: Action, eff: Effect, target: Pattern) -> Binding | None:
        """Bind the effect's variables so that its atom matches `target` (None matches anything)."""
        types = {p.name: p.types for p in (*act.params, *eff.params)}
        b: Binding = {}
        for var, value in zip(eff.atom.args, target, strict=True):
            if value is None:
                continue
            if not var.startswith("?"):
                if var != value:
                    return None
            elif b.setdefault(var, value) != value or not self.domain.accepts(
                    types[var], state.objects.get(value, "")):
                return None
        return b


@dataclass(frozen=True)
class _Reason:
    """A pattern is wanted as the precondition `atom` of `act` achieving its relevant effect `eff` under `b`."""

    act: Action
    eff: Effect
    b: Binding
    atom: Atom

    def undone_by(self, achiever: Action, eff: Effect, b: Binding, state: State) -> bool:
        """Whether `achiever`, achieving `atom` by `eff` under `b`, needs the very literal `act` would achieve
        with it, whatever the objects (a variable of neither action's binding is the same object only as the same
        variable, linked through `atom`, or as the one object of its type)."""
        link: dict[str, str | None] = {}
        for mine, theirs in zip(self.atom.args, eff.atom.args, strict=True):
            if mine.startswith("?"):
                link[mine] = theirs if link.get(mine, theirs) == theirs else None

        def resolve(term: str | None, binding: Binding, types: dict[str, tuple[str, ...]]) -> tuple[str, str] | None:
            if term is None or not term.startswith("?"):
                return None if term is None else ("object", term)
            if term in binding:
                return "object", binding[term]
            fits = state.of_type(types[term]) if term in types else ()
            return ("object", fits[0]) if len(fits) == 1 else None

        theirs = {p.name: p.types for p in (*achiever.params, *eff.params)}
        mine = {p.name: p.types for p in (*self.act.params, *self.eff.params)}

        def through(term: str) -> tuple[str, str] | None:  # a term of `act`, in the achiever's terms
            if term.startswith("?") and term not in self.b and link.get(term):
                other = link[term]
                return resolve(other, b, theirs) or (("variable", other) if other.startswith("?") else None)
            return resolve(term, self.b, mine)

        want = [through(t) for t in self.eff.atom.args]
        if None in want:
            return False
        return any(a.predicate == self.eff.atom.predicate and pos == self.eff.add
                   and [resolve(t, b, theirs) or ("variable", t) for t in a.args] == want
                   for a, pos in _required(_condition(achiever, eff)))


def _conjunction(lits: Iterable[Lit]) -> Formula:
    return And(tuple(Atom(p, args) if pos else Not(Atom(p, args)) for (p, args), pos in sorted(lits)))


def _literal_conjunction(f: Formula, pos: bool = True) -> list[tuple[str | None, tuple[str, ...], bool]] | None:
    """A formula that holds when each of some literals does (a conjunction of atoms, equalities and their negations):
    (predicate, arguments, positive) for each, the predicate None for an equality; None for any other formula."""
    if isinstance(f, Atom):
        return [(f.predicate, f.args, pos)]
    if isinstance(f, Equals):
        return [(None, (f.left, f.right), pos)]
    if isinstance(f, Not):
        return _literal_conjunction(f.arg, not pos)
    if isinstance(f, And) and pos:
        out: list[tuple[str | None, tuple[str, ...], bool]] = []
        for g in f.args:
            if (part := _literal_conjunction(g)) is None:
                return None
            out += part
        return out
    return None


def _repeats(b: Binding) -> bool:
    return len(set(b.values())) < len(b)


def _induced(domain: Domain, state: State, keep: set[str], level: str) -> Pruned:
    """Every fact of `state` among the kept objects."""
    keep = {o for o in keep if o in state.objects}
    facts = {f for o in keep for f in state.about(o) if all(a in keep for a in f[1])}
    facts |= {(p.name, ()) for p in domain.predicates.values() if p.arity == 0 and (p.name, ()) in state.facts}
    return Pruned({o: state.objects[o] for o in keep if o not in domain.constants}, facts, level)


class _Explorer:
    """Layered relaxed reachability from a state over the relevant actions, with the first
    achiever of every literal for relaxed plan extraction."""

    def __init__(self, domain: Domain, state: State, patterns: dict[tuple[str, bool], list[Pattern]],
                 bindings: dict[str, list[Binding]]) -> None:
        self.domain, self.state, self.patterns = domain, state, patterns
        self.protected: set[Lit] = set()  # literals no action may falsify (see `Relevance._repair`)
        self.new = State(domain, {}, ())  # facts reached beyond the state
        self.level: dict[Lit, int] = {}  # literals reached beyond the state, with their layer
        self.achiever: dict[Lit, tuple[str, Binding, Effect]] = {}
        self.peers: dict[Lit, list[tuple[str, Binding, Effect]]] = defaultdict(list)  # its other first-layer achievers
        self.fired: dict[Key, Binding] = {}
        self.horizon = math.inf  # while exploring, the layer being built: later literals are not seen
        self.counts: dict[tuple[str, Pattern], int] | None = None  # `_count`'s while no fact is reached (joins)
        self._types: dict[tuple[str, ...], list[str]] = {}
        self._by_type: dict[str, list[str]] = defaultdict(list)
        self._fits: dict[tuple[tuple[str, ...], str], bool] = {}
        self.allowed: dict[str, dict[str, set[str]]] = {}  # action -> parameter -> the values that matter
        for name, bs in bindings.items():
            params = [p.name for p in domain.actions[name].params]
            self.allowed[name] = {p: {b[p] for b in bs} for p in params if all(p in b for b in bs)}
        self.effects = {name: [e for e in domain.actions[name].effects if self._relevant_effect(e)]
                        for name in bindings}
        # (speed) per action: the effects reached as soon as it fires, those joined with their condition each layer,
        # its parameters' names and its precondition's literals, when it is a conjunction of literals
        self.plain = {n: [e for e in es if not e.params and e.condition == TRUE] for n, es in self.effects.items()}
        self.conditional = {n: [e for e in es if e.params or e.condition != TRUE] for n, es in self.effects.items()}
        self.names = {n: [p.name for p in domain.actions[n].params] for n in bindings}
        self.pre = {n: _literal_conjunction(domain.actions[n].precondition) for n in bindings}
        self.actions = [(domain.actions[name], {p.name: p.types for p in domain.actions[name].params},
                         _conjuncts(domain.actions[name].precondition),
                         {p: next(iter(vs)) for p, vs in self.allowed[name].items() if len(vs) == 1})
                        for name in bindings]

    def _relevant_effect(self, e: Effect) -> bool:
        return bool(self.patterns.get((e.atom.predicate, e.add)))

    def of_type(self, types: tuple[str, ...]) -> list[str]:
        """The objects that fit a parameter typed `types` (indexed by type on first use)."""
        if not self._by_type:
            for o, t in self.state.objects.items():
                self._by_type[t].append(o)
        if types not in self._types:
            self._types[types] = [o for t, os in self._by_type.items() if self.domain.accepts(types, t) for o in os]
        return self._types[types]

    def fits(self, types: tuple[str, ...], obj: str) -> bool:
        key = types, self.state.objects.get(obj, "")
        if key not in self._fits:
            self._fits[key] = self.domain.accepts(*key)
        return self._fits[key]

    # ---- reached literals ------------------------------------------------------------------
    def lit_level(self, lit: Lit) -> int | None:
        """The layer a literal holds from, if it is not beyond the horizon."""
        atom, pos = lit
        if (atom in self.state.facts) == pos:
            return 0
        lvl = self.level.get(lit)
        return lvl if lvl is not None and lvl <= self.horizon else None

    def match(self, pred: str, pattern: Pattern) -> Iterable[tuple[str, ...]]:
        return chain(self.state.match(pred, pattern), self.new.match(pred, pattern))

    def _conjunction_level(self, lits: list[tuple[str | None, tuple[str, ...], bool]], b: Binding) -> int | None:
        """`support` of a conjunction of literals (`_literal_conjunction`) under `b`, without walking its formula."""
        facts, level, horizon, out = self.state.facts, self.level, self.horizon, 0
        for pred, args, pos in lits:
            if pred is None:  # (= left right)
                if (b.get(args[0], args[0]) == b.get(args[1], args[1])) != pos:
                    return None
                continue
            atom = (pred, tuple(map(b.get, args, args)))
            if (atom in facts) == pos:
                continue
            lvl = level.get((atom, pos))
            if lvl is None or lvl > horizon:
                return None
            out = max(out, lvl)
        return out

    def support(self, f: Formula, b: Binding, pos: bool = True, lits: list[Lit] | None = None) -> int | None:
        """The earliest layer `f` holds from (relaxed) under `b`, or None; the literals it rests on
        are appended to `lits` when given."""
        if isinstance(f, Atom):
            lit = (ground(f, b), pos)
            lvl = self.lit_level(lit)
            if lvl is not None and lits is not None:
                lits.append(lit)
            return lvl
        if isinstance(f, Equals):
            return 0 if (b.get(f.left, f.left) == b.get(f.right, f.right)) == pos else None
        if isinstance(f, Not):
            return self.support(f.arg, b, not pos, lits)
        if isinstance(f, Imply):
            f = Or((Not(f.left), f.right))
        if isinstance(f, Quantified):
            parts: Iterable[tuple[Formula, Binding]] = ((f.body, {**b, **nb}) for nb in self._bindings(f.params))
            every = (f.kind == "forall") == pos
        else:
            parts = ((g, b) for g in f.args)
            every = isinstance(f, And) == pos
        if every:
            lvl = 0
            for g, gb in parts:
                s = self.support(g, gb, pos, lits)
                if s is None:
                    return None
                lvl = max(lvl, s)
            return lvl
        best: tuple[int, list[Lit]] | None = None
        for g, gb in parts:
            mine: list[Lit] | None = None if lits is None else []
            s = self.support(g, gb, pos, mine)
            if s is not None and (best is None or s < best[0]):
                best = s, mine or []
                if s == 0 and lits is None:
                    break
        if best is not None and lits is not None:
            lits.extend(best[1])
        return None if best is None else best[0]

    def _bindings(self, params: tuple[Param, ...], b: Binding | None = None) -> Iterator[Binding]:
        """Every assignment of objects to the parameters not bound in `b`."""
        b = b or {}
        free = [p for p in params if p.name not in b]
        if not free:
            tick()
            yield b
            return
        for o in self.of_type(free[0].types):
            yield from self._bindings(tuple(free[1:]), {**b, free[0].name: o})

    def _count(self, atom: Atom, b: Binding) -> int:
        """At most how many reached facts match `atom` under `b`."""
        key = atom.predicate, pattern(atom, b)
        if self.counts is not None and (n := self.counts.get(key)) is not None:
            return n
        n = self.state.count(*key) + self.new.count(*key)
        if self.counts is not None:
            self.counts[key] = n
        return n

    def _cost(self, atoms: list[Atom], b: Binding) -> int:
        """The facts the most selective atom would read."""
        return min((self._count(a, b) for a in atoms), default=0)

    def _join(self, atoms: list[Atom], b: Binding, types: dict[str, tuple[str, ...]],
              allowed: dict[str, set[str]] | None = None) -> Iterator[Binding]:
        """Extend `b` so that every atom matches a reached fact (the most selective atom first)."""
        if not atoms:
            tick()
            yield b
            return
        i = min(range(len(atoms)), key=lambda j: self._count(atoms[j], b)) if len(atoms) > 1 else 0
        atom, rest = atoms[i], atoms[:i] + atoms[i + 1:]
        for args in list(self.match(atom.predicate, pattern(atom, b))):
            nb = self._unify(atom, args, b, types, allowed)
            if nb is not None:
                yield from self._join(rest, nb, types, allowed)

    def _unify(self, atom: Atom, args: tuple[str, ...], b: Binding, types: dict[str, tuple[str, ...]],
               allowed: dict[str, set[str]] | None = None) -> Binding | None:
        """`b` extended so that `atom` matches `args`, within the variables' types and allowed values."""
        nb = dict(b)
        for v, a in zip(atom.args, args, strict=True):
            if not v.startswith("?"):
                if v != a:
                    return None
            elif v in nb:
                if nb[v] != a:
                    return None
            elif (v in types and not self.fits(types[v], a)) or (allowed and a not in allowed.get(v, (a,))):
                return None
            else:
                nb[v] = a
        return nb

    # ---- exploration -----------------------------------------------------------------------
    def run(self, goal: Formula) -> bool:
        """Explore layer by layer until `goal` holds (True) or nothing new is reached (False)."""
        blocked: set[Key] = set()
        fresh: dict[str, list[tuple[str, ...]]] | None = None  # last layer's facts; None: join from scratch
        conditional: dict[Key, tuple[Action, Binding, list[Effect]]] = {}
        layer = 0
        in_goal = {a.predicate for a, _ in literals(goal)}
        changed = True  # whether the last layer reached a literal the goal mentions
        while not changed or self.support(goal, {}) is None:
            self.horizon = layer
            found: dict[Key, tuple[Action, Binding]] = {}
            self.counts = {}  # the facts stay as they are while the layer's actions are joined
            try:
                for act, types, atoms, start in self.actions:
                    allowed, names = self.allowed[act.name], self.names[act.name]
                    for nb in self._triggered(atoms, start, types, fresh, allowed):
                        for full in self._bindings(act.params, nb):
                            if not allowed or all(full[p] in vs for p, vs in allowed.items()):
                                key = (act.name, tuple([full[n] for n in names]))
                                if key not in self.fired:
                                    found[key] = act, full
            finally:
                self.counts = None
            for key in blocked - found.keys():
                act = self.domain.actions[key[0]]
                found[key] = act, dict(zip((p.name for p in act.params), key[1], strict=True))
            blocked = set()
            new: list[Lit] = []
            for key, (act, full) in sorted(found.items()):  # (by key: keys differ) the same plan every run
                if self.protected and any((ground(e.atom, full), not e.add) in self.protected
                                          for e in act.effects if not e.params and e.condition == TRUE):
                    continue
                pre = self.pre[act.name]
                if (self._conjunction_level(pre, full) if pre is not None else self.support(act.precondition, full)
                        ) is None:
                    blocked.add(key)
                    continue
                self.fired[key] = full
                if effects := self.conditional[act.name]:
                    conditional[key] = act, full, effects
                for e in self.plain[act.name]:
                    self._reach(ground(e.atom, full), e.add, layer, act.name, full, e, new)
            for act, full, effects in conditional.values():
                for e in effects:
                    types = {p.name: p.types for p in e.params}
                    for eb in self._join(_conjuncts(e.condition), full, types):
                        for fb in self._bindings(e.params, eb):
                            if self.support(e.condition, fb) is not None:
                                self._reach(ground(e.atom, fb), e.add, layer, act.name, fb, e, new)
            self.horizon = math.inf
            if not new:
                return False
            changed = any(p in in_goal for (p, _), _ in new)
            fresh = defaultdict(list)
            for (p, args), pos in new:
                if pos:
                    fresh[p].append(args)
            layer += 1
        return True

    def _triggered(self, atoms: list[Atom], start: Binding, types: dict[str, tuple[str, ...]],
                   fresh: dict[str, list[tuple[str, ...]]] | None,
                   allowed: dict[str, set[str]]) -> Iterator[Binding]:
        """Bindings of the atoms over reached facts; after the first layer, only those that use
        at least one fact of the last layer."""
        triggers = 0 if fresh is None else sum(len(fresh.get(a.predicate, ())) for a in atoms)
        if fresh is not None and not triggers:
            return
        if fresh is None or self._cost(atoms, start) < triggers:
            yield from self._join(atoms, start, types, allowed)  # from scratch: fewer facts to read
            return
        for i, atom in enumerate(atoms):
            for args in fresh.get(atom.predicate, ()):
                nb = self._unify(atom, args, start, types, allowed)
                if nb is not None:
                    yield from self._join(atoms[:i] + atoms[i + 1:], nb, types, allowed)

    def _reach(self, atom: formula.GroundAtom, pos: bool, layer: int, act: str, b: Binding, e: Effect,
               new: list[Lit]) -> None:
        lit = (atom, pos)
        if (atom in self.state.facts) == pos or lit in self.level:
            # at the same layer, prefer an achiever whose arguments differ (two hands, not one twice)
            if self.level.get(lit) == layer + 1:
                self.peers[lit].append((act, b, e))
                if _repeats(self.achiever[lit][1]) and not _repeats(b):
                    self.achiever[lit] = act, b, e
            return
        self.level[lit] = layer + 1
        self.achiever[lit] = act, b, e
        if pos:
            self.new.add(atom)
        new.append(lit)

    def extract(self, goal: Formula) -> tuple[dict[Key, list[Lit]], set[Lit]]:
        """An FF relaxed plan back from the goal: its ground actions, each with the literals it is in
        the plan to achieve (its purpose), and the literals the plan uses."""
        stack: list[Lit] = []
        assert self.support(goal, {}, True, stack) is not None, "extract after a successful run"
        seen = set()
        plan: dict[Key, list[Lit]] = {}
        added: dict[Lit, Key] = {}  # what the plan's actions bring about, by the action
        aims = {(ground(a, {}), pos) for a, pos in _required(goal)}
        while stack:
            lit = stack.pop()
            if lit in seen:
                continue
            seen.add(lit)
            if self.lit_level(lit) == 0:
                continue
            if lit in added:  # a first achiever of it is in the plan already, for another literal
                plan[added[lit]].append(lit)
                continue
            name, b, e = self.achiever[lit]
            level = self.lit_level(lit)
            if peers := self.peers.get(lit):  # the first achiever that brings about most other literals wanted
                # (reached with it: it is their first achiever too) or of the goal (it may undo one that holds)
                wanted = aims | {w for w in stack if w not in seen and self.lit_level(w) == level}
                name, b, e = max([(name, b, e), *peers], key=lambda a: len(self._adds(a[0], a[1]) & wanted))
            act = self.domain.actions[name]
            key = name, tuple(b[p.name] for p in act.params)
            plan.setdefault(key, []).append(lit)
            added.update((a, key) for a in self._adds(name, b) if self.lit_level(a) == level)
            for f in (act.precondition, e.condition):
                assert self.support(f, b, True, stack) is not None
        return plan, seen

    def _adds(self, name: str, b: Binding) -> set[Lit]:
        """The literals an action's unconditional relevant effects bring about under `b`."""
        return {(ground(e.atom, b), e.add) for e in self.plain[name]}
