"""A ground state in memory: indexed facts, formula evaluation and the effects of actions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice

from kgplan.domains.formula import (
    And,
    Atom,
    Equals,
    Formula,
    GroundAtom,
    Imply,
    Not,
    Or,
    Param,
    Quantified,
    map_children,
    to_pddl,
)
from kgplan.domains.model import TOTAL_COST, Action, Domain
from kgplan.errors import InputError
from kgplan.planners.budget import tick

Binding = dict[str, str]


class PlanError(InputError):
    """A plan step that does not fit the domain (unknown action, wrong arguments)."""


@dataclass(frozen=True)
class Step:
    """One ground action of a plan, e.g. ``(turn_off_light the_agent kitchen_light kitchen)``."""

    action: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"({' '.join((self.action, *self.args))})"

    @classmethod
    def parse(cls, text: str) -> Step:
        words = text.strip().strip("()").split()
        if not words:
            raise PlanError(f"empty plan step {text!r}")
        return cls(words[0].lower(), tuple(w.lower() for w in words[1:]))


def action_text(step: Step, templates: Mapping[str, str]) -> str:
    """A step in words, from domain.toml's [explore.actions] templates where the action has one."""
    words = [a.replace("_", " ") for a in step.args]
    t = templates.get(step.action)
    return t.format(*words) if t else " ".join([step.action.replace("_", " "), *words])


class State:
    """Objects with their types and a set of true atoms, indexed by argument position."""

    def __init__(self, domain: Domain, objects: dict[str, str], facts: Iterable[GroundAtom],
                 numbers: dict[GroundAtom, float] | None = None) -> None:
        self.domain = domain
        self.objects = {**domain.constants, **objects}
        self.numbers = dict(numbers or {})  # static function values, e.g. travel costs
        self.facts: set[GroundAtom] = set()
        self._of_type: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._by_pred: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        self._by_arg: dict[tuple[str, int, str], set[tuple[str, ...]]] = defaultdict(set)
        self._about: dict[str, set[GroundAtom]] = defaultdict(set)
        for f in facts:
            self.add(f)

    def add(self, atom: GroundAtom) -> None:
        if atom in self.facts:
            return
        self.facts.add(atom)
        p, args = atom
        self._by_pred[p].add(args)
        for i, a in enumerate(args):
            self._by_arg[p, i, a].add(args)
            self._about[a].add(atom)

    def discard(self, atom: GroundAtom) -> None:
        if atom not in self.facts:
            return
        self.facts.remove(atom)
        p, args = atom
        self._by_pred[p].discard(args)
        for i, a in enumerate(args):
            self._by_arg[p, i, a].discard(args)
            self._about[a].discard(atom)

    def copy(self) -> State:
        """An independent state with the same objects and facts."""
        return State(self.domain, self.objects, self.facts, self.numbers)

    def about(self, name: str) -> set[GroundAtom]:
        """The true atoms that mention `name`."""
        return set(self._about.get(name, ()))

    def match(self, predicate: str, pattern: tuple[str | None, ...]) -> Iterator[tuple[str, ...]]:
        """Arguments of the true atoms of `predicate` that agree with `pattern` (None = any)."""
        bound = [(i, a) for i, a in enumerate(pattern) if a is not None]
        if not bound:
            yield from list(self._by_pred.get(predicate, ()))
            return
        smallest = min((self._by_arg.get((predicate, i, a), set()) for i, a in bound), key=len)
        for args in list(smallest):
            if all(args[i] == a for i, a in bound):
                yield args

    def count(self, predicate: str, pattern: tuple[str | None, ...]) -> int:
        """An upper bound on the matches of `pattern`: the size of the smallest index it reads."""
        bound = [(i, a) for i, a in enumerate(pattern) if a is not None]
        if not bound:
            return len(self._by_pred.get(predicate, ()))
        return min(len(self._by_arg.get((predicate, i, a), ())) for i, a in bound)

    def of_type(self, types: tuple[str, ...]) -> tuple[str, ...]:
        """Objects (and constants) that fit a parameter typed `types` (cached: a state's objects do not change)."""
        if (fits := self._of_type.get(types)) is None:
            fits = tuple(sorted(o for o, t in self.objects.items() if self.domain.accepts(types, t)))
            self._of_type[types] = fits
        return fits

    # ---- evaluation ------------------------------------------------------------------------
    def holds(self, f: Formula, b: Binding | None = None) -> bool:
        b = b or {}
        if isinstance(f, Atom):
            return ground(f, b) in self.facts
        if isinstance(f, Equals):
            return b.get(f.left, f.left) == b.get(f.right, f.right)
        if isinstance(f, Not):
            return not self.holds(f.arg, b)
        if isinstance(f, And):
            return all(self.holds(a, b) for a in f.args)
        if isinstance(f, Or):
            return any(self.holds(a, b) for a in f.args)
        if isinstance(f, Imply):
            return not self.holds(f.left, b) or self.holds(f.right, b)
        test = all if f.kind == "forall" else any
        return test(self.holds(f.body, {**b, **nb}) for nb in self.bindings(f.params))

    def bindings(self, params: tuple[Param, ...]) -> Iterator[Binding]:
        """Every assignment of objects to typed parameters."""
        if not params:
            yield {}
            return
        first, rest = params[0], params[1:]
        for o in self.of_type(first.types):
            for tail in self.bindings(rest):
                tick()
                yield {first.name: o, **tail}

    def failed_conjunct(self, f: Formula, b: Binding | None = None) -> str | None:
        """The first top-level conjunct of `f` that is false, written as PDDL; None if `f` holds."""
        for part in conjuncts(f):
            if not self.holds(part, b):
                return to_pddl(substitute(part, b or {}))
        return None

    def unify(self, variables: tuple[str, ...], args: tuple[str, ...], b: Binding,
              types: Mapping[str, tuple[str, ...]]) -> Binding | None:
        """`b` extended so that `variables` (names or constants) match `args`, within the variables' types."""
        out = dict(b)
        for v, a in zip(variables, args, strict=True):
            if not v.startswith("?"):
                if v != a:
                    return None
            elif out.setdefault(v, a) != a or not self.domain.accepts(types.get(v, ("object",)),
                                                                       self.objects.get(a, "")):
                return None
        return out

    def join(self, atoms: list[Atom], b: Binding, types: Mapping[str, tuple[str, ...]]) -> Iterator[Binding]:
        """Bindings extending `b` under which every atom is a fact of the state."""
        if not atoms:
            yield b
            return
        for args in self.match(atoms[0].predicate, pattern(atoms[0], b)):
            if (nb := self.unify(atoms[0].args, args, b, types)) is not None:
                yield from self.join(atoms[1:], nb, types)

    # ---- actions -----------------------------------------------------------------------------
    def makers(self, atom: GroundAtom, add: bool, limit: int = 1000) -> list[Step] | None:
        """The steps applicable in this state that make `atom` true (`add`) or false, by an effect of their action
        (the preconditions' facts joined first); None where an effect leaves more than `limit` bindings to try."""
        out = []
        for act in self.domain.actions.values():
            for e in act.effects:
                if e.add != add or e.atom.predicate != atom.predicate:
                    continue
                params = (*act.params, *e.params)
                types = {p.name: p.types for p in params}
                if (b := self.unify(e.atom.args, atom.args, {}, types)) is None:
                    continue
                facts = [c for c in conjuncts(act.precondition) if isinstance(c, Atom)]
                full = (jb | nb for jb in self.join(facts, b, types)
                        for nb in self.bindings(tuple(p for p in params if p.name not in jb)))
                if len(tried := list(islice(full, limit + 1))) > limit:
                    return None
                out += [Step(act.name, tuple(fb[p.name] for p in act.params)) for fb in tried
                        if self.holds(act.precondition, fb) and self.holds(e.condition, fb)]
        return list(dict.fromkeys(out))

    def bind(self, step: Step) -> tuple[Action, Binding]:
        """The action of a step and its parameter binding; checks arity and argument types."""
        act = self.domain.actions.get(step.action)
        if act is None:
            raise PlanError(f"{step}: unknown action '{step.action}'")
        if len(act.params) != len(step.args):
            raise PlanError(f"{step}: '{act.name}' takes {len(act.params)} argument(s)")
        for p, a in zip(act.params, step.args, strict=True):
            t = self.objects.get(a)
            if t is None or not self.domain.accepts(p.types, t):
                raise PlanError(f"{step}: '{a}' is not a {' or '.join(p.types)}")
        return act, dict(zip((p.name for p in act.params), step.args, strict=True))

    def cost(self, step: Step) -> float:
        """What a step adds to (total-cost): its action's cost terms, summed (0 without)."""
        act, b = self.bind(step)
        total = 0.0
        for term in act.cost:
            if isinstance(term, Atom):
                if (value := self.numbers.get(ground(term, b))) is None:
                    raise PlanError(f"{step}: {to_pddl(substitute(term, b))} has no value")
                total += value
            else:
                total += term
        return total

    def plan_cost(self, plan: Iterable[Step]) -> float | None:
        """The (total-cost) of a plan under :action-costs (costs are static); None without costs."""
        return sum(self.cost(s) for s in plan) if TOTAL_COST in self.domain.functions else None

    def effects(self, step: Step) -> tuple[set[GroundAtom], set[GroundAtom]]:
        """(adds, deletes) of a step in this state (conditional and forall effects evaluated)."""
        act, b = self.bind(step)
        adds: set[GroundAtom] = set()
        dels: set[GroundAtom] = set()
        for e in act.effects:
            for eb in self.bindings(e.params):
                full = {**b, **eb}
                if self.holds(e.condition, full):
                    (adds if e.add else dels).add(ground(e.atom, full))
        return adds, dels

    def apply(self, step: Step) -> tuple[set[GroundAtom], set[GroundAtom]]:
        """Apply a step (deletes before adds, as PDDL does); returns the net (added, removed)."""
        adds, dels = self.effects(step)
        removed = {a for a in dels - adds if a in self.facts}
        added = {a for a in adds if a not in self.facts}
        for a in removed:
            self.discard(a)
        for a in added:
            self.add(a)
        return added, removed


def implied(state: State, add: Collection[GroundAtom], remove: Collection[GroundAtom], named: Collection[str] = ()
            ) -> tuple[dict[GroundAtom, GroundAtom], dict[GroundAtom, GroundAtom]]:
    """What the steps making the literals of a change so imply, in `state` (as the change that made `add` true and
    `remove` false left it): (removed, added), each fact with its literal. Removed: the facts that every step making
    one of the literals so, applicable where it alone is undone, also makes false. "Switched the channel of the TV to
    ESPN" tells the new channel, not the old one, and no invariant says a TV plays one channel (FD's synthesis cannot
    use turn_tv_on's negative precondition), but the one action that changes a playing TV's channel removes the old
    one; "turned off the TV" so removes the channel it played. Added: the facts that every such step making an added
    literal true also makes true, of the steps whose arguments are `named` wherever an object of their type is ("turned
    on the TV and set it to Fox News" with the TV on chosen and Fox News named: turn_tv_on(tv, fox_news) plays it)."""
    kinds = {state.objects.get(n) for n in named}
    removed: dict[GroundAtom, GroundAtom] = {}
    added: dict[GroundAtom, GroundAtom] = {}
    for x, made in [*((a, True) for a in add), *((a, False) for a in remove)]:
        before = state.copy()
        (before.discard if made else before.add)(x)
        gone: set[GroundAtom] | None = None
        also: set[GroundAtom] | None = None
        for step in before.makers(x, made) or ():  # none, or too many to tell: nothing implied
            adds, dels = before.effects(step)
            mine = {a for a in dels - adds if a in state.facts and a not in add}
            gone = mine if gone is None else gone & mine
            if made and named and all(a in named or state.objects.get(a) not in kinds for a in step.args):
                mine = {a for a in adds - dels if a not in state.facts}
                also = mine if also is None else also & mine
        removed |= {GroundAtom(*a): x for a in gone or ()}
        added |= {GroundAtom(*a): x for a in also or ()}
    return removed, added


def conjuncts(f: Formula) -> list[Formula]:
    """The parts of a top-level conjunction (the formula itself if it is none)."""
    return list(f.args) if isinstance(f, And) else [f]


def pattern(atom: Atom, b: Binding) -> tuple[str | None, ...]:
    """The atom's arguments under `b`, None where a variable is unbound (for `State.match`)."""
    return tuple(b.get(a) if a.startswith("?") else a for a in atom.args)


def ground(atom: Atom, b: Binding) -> GroundAtom:
    return (atom.predicate, tuple(map(b.get, atom.args, atom.args)))


def substitute(f: Formula, b: Binding) -> Formula:
    """`f` with the variables of `b` replaced by objects."""
    if isinstance(f, Atom):
        return Atom(f.predicate, tuple(b.get(a, a) for a in f.args))
    if isinstance(f, Equals):
        return Equals(b.get(f.left, f.left), b.get(f.right, f.right))
    if isinstance(f, Quantified):
        b = {k: v for k, v in b.items() if k not in {p.name for p in f.params}}
    return map_children(f, lambda g: substitute(g, b))


@dataclass(frozen=True)
class Failure:
    """Why a plan does not work: the failing step (1-based; 0 = the goal) and what was false."""

    step: int
    action: str
    reason: str

    def __str__(self) -> str:
        if self.step == 0:
            return f"the plan ends without reaching the goal: {self.reason} is false"
        return f"step {self.step} {self.action} cannot run: {self.reason}"


def simulate(state: State, plan: Iterable[Step], goal: Formula | None) -> Failure | None:
    """Run a plan on `state` (changed in place); the first failure, or None if it reaches `goal`."""
    for i, step in enumerate(plan, 1):
        try:
            act, b = state.bind(step)
        except PlanError as e:
            return Failure(i, str(step), str(e))
        if (bad := state.failed_conjunct(act.precondition, b)) is not None:
            return Failure(i, str(step), f"precondition {bad} is false")
        state.apply(step)
    if goal is not None and (bad := state.failed_conjunct(goal)) is not None:
        return Failure(0, "", bad)
    return None
