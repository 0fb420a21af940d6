"""The domain model: types, predicates, actions, problems, and `either` compiled away for planners."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from kgplan.domains.formula import (
    TRUE,
    And,
    Atom,
    Cost,
    Effect,
    Equals,
    Formula,
    GroundAtom,
    Or,
    Param,
    Quantified,
    map_children,
    number_pddl,
    params_pddl,
    parse_effect,
    parse_formula,
    parse_numeric_fact,
    parse_typed_list,
    quantifiers,
    scoped,
    to_pddl,
    type_pddl,
)
from kgplan.domains.sexpr import Expr, PDDLError, SList, Sym, pos_of, read
from kgplan.errors import DomainError, InputError, NotFound
from kgplan.files import read_text

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from kgplan.domains.invariants import MutexGroup, Synthesis

TOTAL_COST = "total-cost"  # the plan's cost under :action-costs, never a stored fact
NAME_RE = re.compile(r"[a-z][a-z0-9_\-]*")  # a whole name: use fullmatch (`$` would allow a trailing newline)


@dataclass(frozen=True)
class Predicate:
    name: str
    params: tuple[Param, ...]

    @property
    def arity(self) -> int:
        return len(self.params)


@dataclass(frozen=True)
class Action:
    name: str
    params: tuple[Param, ...]
    precondition: Formula
    effects: tuple[Effect, ...]
    cost: tuple[Cost, ...] = ()  # increases of (total-cost), summed


@dataclass
class Problem:
    """A PDDL problem: objects with types, the initial atoms and an optional goal."""

    name: str
    domain: str
    objects: dict[str, str]
    init: list[GroundAtom]
    goal: Formula | None = None
    numbers: dict[GroundAtom, float] = field(default_factory=dict)  # (= (f args) value) in :init

    @classmethod
    def parse(cls, text: str, source: str = "") -> Problem:
        exprs = read(text, source)
        if len(exprs) != 1 or not isinstance(exprs[0], SList) or exprs[0][:1] != ["define"]:
            raise PDDLError("a problem must be one (define (problem NAME) ...)", 1, 1, source)
        d = exprs[0]
        name, domain, objects, init, goal = "problem", "", {}, [], None
        numbers: dict[GroundAtom, float] = {}
        for sec in d[1:]:
            if not isinstance(sec, SList) or not sec:
                raise PDDLError("expected a section", *pos_of(sec), source)
            key = sec[0]
            if key == "problem":
                name = _name(sec, "problem", source)
            elif key == ":domain":
                domain = _name(sec, "domain", source)
            elif key == ":objects":
                for p in parse_typed_list(list(sec[1:]), source):
                    if len(p.types) != 1:
                        raise PDDLError(f"object {p.name} must have one type", *pos_of(sec), source)
                    _declare(objects, p, "object", source)
            elif key == ":init":
                for e in sec[1:]:
                    if isinstance(e, SList) and e[:1] == ["="]:
                        atom, value = parse_numeric_fact(e, source)
                        if atom.predicate != TOTAL_COST:  # the plan's cost, not a fact
                            numbers[GroundAtom(atom.predicate, atom.args)] = value
                        continue
                    f = parse_formula(e, source)
                    if not isinstance(f, Atom):
                        raise PDDLError(":init may only hold atoms", *pos_of(e), source)
                    init.append(GroundAtom(f.predicate, f.args))
            elif key == ":goal":
                goal = parse_formula(sec[1], source)
            elif key not in (":requirements", ":metric"):
                raise PDDLError(f"unknown problem section '{key}'", *pos_of(sec), source)
        return cls(name, domain, objects, init, goal, numbers)

    def to_pddl(self, costs: bool = False, type_text: Callable[[tuple[str, ...]], str] = type_pddl) -> str:
        """The problem as PDDL text (the one problem writer): objects sorted, `init` and `numbers` in their order;
        with `costs` (`:action-costs`), ``(= (total-cost) 0)`` and the metric that minimises it; `type_text`
        renders the types of the goal's quantified variables."""
        lines = [f"(define (problem {self.name})", f"  (:domain {self.domain})", "  (:objects"]
        lines += [f"    {o} - {t}" for o, t in sorted(self.objects.items())]
        lines += ["  )", "  (:init"]
        lines += [f"    {a}" for a in map(GroundAtom._make, self.init)]
        lines += [f"    (= {GroundAtom._make(a)} {number_pddl(v)})" for a, v in self.numbers.items()]
        lines += [f"    (= ({TOTAL_COST}) 0)"] if costs else []
        lines.append("  )")
        lines += [f"  (:goal {to_pddl(self.goal, type_text)})"] if self.goal is not None else []
        lines += [f"  (:metric minimize ({TOTAL_COST}))"] if costs else []
        return "\n".join(lines) + "\n)\n"


@dataclass
class Domain:
    """A parsed PDDL domain with its type hierarchy and optional metadata (domain.toml)."""

    name: str
    requirements: list[str]
    types: dict[str, str | None]  # type -> parent (None for "object")
    constants: dict[str, str]
    predicates: dict[str, Predicate]
    actions: dict[str, Action]
    text: str = ""
    path: Path | None = None
    meta: dict = field(default_factory=dict)
    functions: dict[str, Predicate] = field(default_factory=dict)  # numeric, e.g. total-cost

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, source: str = "") -> Domain:
        """Parse and check a domain; every error names the line and column of the expression."""
        exprs = read(text, source)
        if len(exprs) != 1 or not isinstance(exprs[0], SList) or exprs[0][:1] != ["define"]:
            raise PDDLError("a domain must be one (define (domain NAME) ...)", 1, 1, source)
        d = exprs[0]
        name = ""
        reqs: list[str] = []
        types: dict[str, str | None] = {"object": None}
        constants: dict[str, str] = {}
        preds: dict[str, Predicate] = {}
        functions: dict[str, Predicate] = {}
        raw_actions: list[SList] = []
        typed: list[tuple[str, Param]] = []  # (what, typed name) to check once all types are known
        for sec in d[1:]:
            if not isinstance(sec, SList) or not sec or not isinstance(sec[0], Sym):
                raise PDDLError("expected a section like (:predicates ...)", *pos_of(sec), source)
            key = sec[0]
            if key == "domain":
                name = _name(sec, "domain", source)
            elif key == ":requirements":
                reqs = [str(r) for r in sec[1:]]
            elif key == ":types":
                for p in parse_typed_list(list(sec[1:]), source):
                    if len(p.types) != 1:
                        raise PDDLError(f"type {p.name} must have one parent", p.line, p.col, source)
                    if p.name != "object":
                        _declare(types, p, "type", source)
                        typed.append((f"type '{p.name}'", p))
            elif key == ":constants":
                for p in parse_typed_list(list(sec[1:]), source):
                    if len(p.types) != 1:
                        raise PDDLError(f"constant {p.name} must have one type", p.line, p.col, source)
                    _declare(constants, p, "constant", source)
                    typed.append((f"constant '{p.name}'", p))
            elif key == ":predicates":
                for pe in sec[1:]:
                    if not isinstance(pe, SList) or not pe or not isinstance(pe[0], Sym):
                        raise PDDLError("expected (predicate ?x - type ...)", *pos_of(pe), source)
                    if str(pe[0]) in preds:
                        raise PDDLError(f"predicate '{pe[0]}' declared twice", *pos_of(pe), source)
                    _check_name(pe[0], "predicate", source)
                    pred = Predicate(str(pe[0]), tuple(parse_typed_list(list(pe[1:]), source)))
                    preds[pred.name] = pred
                    typed += [(f"predicate '{pred.name}'", p) for p in pred.params]
            elif key == ":functions":
                for f in _parse_functions(sec, preds, source):
                    functions[f.name] = f
                    typed += [(f"function '{f.name}'", p) for p in f.params]
            elif key == ":action":
                raw_actions.append(sec)
            else:
                raise PDDLError(f"unsupported domain section '{key}'", *pos_of(sec), source)
        dom = cls(name, reqs, types, constants, preds, {}, text, functions=functions)
        for what, p in typed:
            dom._check_types(p, what, source)
        for sec in raw_actions:
            act = _parse_action(sec, source)
            if act.name in dom.actions:
                raise PDDLError(f"action '{act.name}' declared twice", *pos_of(sec), source)
            dom._check_action(act, source)
            dom.actions[act.name] = act
        return dom

    @classmethod
    def load(cls, path: str | Path) -> Domain:
        """Load `domain.pddl` (or a folder holding it, with an optional domain.toml)."""
        import tomllib

        path = Path(path)
        folder = path if path.is_dir() else path.parent
        pddl = path / "domain.pddl" if path.is_dir() else path
        if not pddl.is_file():
            raise NotFound(f"no domain file at {pddl}")
        dom = cls.parse(read_text(pddl, "domain file"), str(pddl))
        dom.path = pddl
        toml = folder / "domain.toml"
        if toml.is_file() and toml.resolve() != pddl.resolve():
            try:
                dom.meta = tomllib.loads(read_text(toml, "domain.toml"))
            except tomllib.TOMLDecodeError as e:
                raise InputError(f"{toml}: not TOML: {e}") from None
        return dom

    def _check_types(self, p: Param, what: str, source: str) -> None:
        """The types of a declaration exist; a type's ancestry has no cycle."""
        for t in p.types:
            if t not in self.types:
                raise PDDLError(f"unknown type '{t}' in {what}", p.line, p.col, source)
        if what.startswith("type "):
            seen, t = {p.name}, p.name
            while (parent := self.types.get(t)) is not None:
                if parent in seen:
                    raise PDDLError(f"type hierarchy has a cycle through '{p.name}'", p.line, p.col, source)
                seen.add(parent)
                t = parent

    def _check_action(self, act: Action, source: str) -> None:
        """Every atom of the action names a known predicate with the right number of arguments,
        each a declared variable or a constant whose type(s) the predicate accepts."""
        where = f"action '{act.name}'"
        for p in act.params:
            self._check_types(p, where, source)
        scope = {p.name: p for p in act.params}
        bodies = [(act.precondition, scope)]
        for e in act.effects:
            for p in e.params:
                self._check_types(p, where, source)
            bodies.append((And((e.condition, e.atom)), {**scope, **{p.name: p for p in e.params}}))
        for body, outer in bodies:
            for p in (p for q in quantifiers(body) for p in q.params):
                self._check_types(p, where, source)
            for f, inner in scoped(body, outer):
                self._check_terms(f, inner, where, source)
        for term in act.cost:
            if isinstance(term, Atom):
                if TOTAL_COST not in self.functions:
                    raise PDDLError("(increase (total-cost) ...) needs (:functions (total-cost) ...)",
                                    term.line, term.col, source)
                self._check_terms(term, scope, where, source, self.functions)

    def _check_terms(self, f: Atom | Equals, scope: dict[str, Param], where: str, source: str,
                     table: dict[str, Predicate] | None = None) -> None:
        """Variables declared, constants known; for an atom (a function term with `table` given),
        a known predicate (function) with the right arity and argument types."""
        at = (f.line, f.col, source)
        terms = (f.left, f.right) if isinstance(f, Equals) else f.args
        for a in terms:
            if a.startswith("?") and a not in scope:
                raise PDDLError(f"undeclared variable '{a}' in {where}", *at)
            if not a.startswith("?") and a not in self.constants:
                raise PDDLError(f"unknown constant '{a}' in {where}", *at)
        if isinstance(f, Equals):
            return
        pred = (self.predicates if table is None else table).get(f.predicate)
        if pred is None or pred.name == TOTAL_COST:
            kind = "predicate" if table is None else "static function"
            raise PDDLError(f"unknown {kind} '{f.predicate}' in {where}", *at)
        if pred.arity != len(f.args):
            raise PDDLError(f"{f} in {where}: '{pred.name}' takes {pred.arity} argument(s)", *at)
        for i, (a, p) in enumerate(zip(f.args, pred.params, strict=True), 1):
            # wrongly typed: a member type of a variable none of whose objects fits; a constant that does not
            given = scope[a].types if a in scope else (self.constants[a],)
            fits = all(self.overlap(p.types, t) for t in given) if a in scope else self.accepts(p.types, given[0])
            if not fits:
                raise PDDLError(f"{f} in {where}: argument {i} '{a}' is a {' or '.join(given)}, but "
                                f"{pred.name} expects a {' or '.join(p.types)}", *at)

    # ---- types -----------------------------------------------------------------------------
    def ancestors(self, t: str) -> list[str]:
        """`t` and its supertypes up to `object`."""
        out = []
        cur: str | None = t
        while cur is not None:
            out.append(cur)
            cur = self.types.get(cur)
        return out

    def is_subtype(self, t: str, of: str) -> bool:
        return of in self.ancestors(t)

    def accepts(self, types: tuple[str, ...], t: str) -> bool:
        """Whether an object of type `t` fits a parameter typed `types` (either-aware)."""
        anc = self.ancestors(t)
        return any(x in anc for x in types)

    def overlap(self, types: tuple[str, ...], t: str) -> bool:
        """Whether some object of type `t` (or of a subtype) can fit a parameter typed `types`."""
        return any(self.is_subtype(t, x) or self.is_subtype(x, t) for x in types)

    def reduce_types(self, types: tuple[str, ...]) -> tuple[str, ...]:
        """Drop members of an either-set already covered by a supertype in the set."""
        return tuple(
            sorted(t for t in types if not any(o != t and self.is_subtype(t, o) for o in types))
        )

    def common_supertype(self, types: tuple[str, ...]) -> str:
        common = self.ancestors(types[0])
        for t in types[1:]:
            anc = set(self.ancestors(t))
            common = [c for c in common if c in anc]
        return common[0]

    # ---- either compilation ------------------------------------------------------------------
    @cached_property
    def either_sets(self) -> dict[tuple[str, ...], str]:
        """Either-sets of action parameters, mapped to the type predicate planners get for them.

        Quantified variables need none: `compile_formula` splits them by member type.
        """
        sets: dict[tuple[str, ...], str] = {}
        for a in self.actions.values():
            for p in a.params:
                r = self.reduce_types(p.types)
                if len(r) > 1:
                    sets.setdefault(r, "is_" + "_or_".join(r))
        return sets

    def split_either(self, params: tuple[Param, ...]) -> list[tuple[Param, ...]]:
        """`params` once per combination of the member types of their (reduced) either-sets."""
        members = [self.reduce_types(p.types) for p in params]
        return [tuple(Param(p.name, (t,)) for p, t in zip(params, combo, strict=True))
                for combo in itertools.product(*members)]

    def type_text(self, types: tuple[str, ...]) -> str:
        """A planner-safe type: the single reduced type or the common supertype of an either-set."""
        r = self.reduce_types(types)
        return r[0] if len(r) == 1 else self.common_supertype(r)

    def guard(self, params: tuple[Param, ...]) -> list[Formula]:
        """Type-predicate atoms that restore the meaning of widened either-typed params."""
        out: list[Formula] = []
        for p in params:
            r = self.reduce_types(p.types)
            if len(r) > 1:
                out.append(Atom(self.either_sets[r], (p.name,)))
        return out

    def compile_formula(self, f: Formula) -> Formula:
        """Split quantifiers over either-types into one per member type (a conjunction for
        `forall`, a disjunction for `exists`), so every quantified variable has one type."""
        if isinstance(f, Quantified):
            body = self.compile_formula(f.body)
            parts = tuple(Quantified(f.kind, ps, body) for ps in self.split_either(f.params))
            return parts[0] if len(parts) == 1 else (And if f.kind == "forall" else Or)(parts)
        return map_children(f, self.compile_formula)

    def compiled_pddl(self) -> str:
        """This domain as PDDL without `either` types, accepted by unified-planning and FD."""
        return self._compiled_pddl

    @cached_property
    def _compiled_pddl(self) -> str:  # rendered once per domain (milliseconds; once per plan otherwise)
        tt = self.type_text
        lines = [f"(define (domain {self.name})"]
        if self.requirements:
            lines.append(f"  (:requirements {' '.join(self.requirements)})")
        if subtypes := [f"{t} - {p}" for t, p in self.types.items() if p]:  # none in an untyped domain
            lines.append("  (:types " + " ".join(subtypes) + ")")
        if self.constants:
            lines.append("  (:constants " + " ".join(f"{c} - {t}" for c, t in self.constants.items()) + ")")
        preds = [f"({p.name} {params_pddl(p.params, tt)})".replace(" )", ")") for p in self.predicates.values()]
        preds += [f"({name} ?x - {self.common_supertype(s)})" for s, name in self.either_sets.items()]
        lines.append("  (:predicates\n    " + "\n    ".join(preds) + ")")
        if self.functions:
            funcs = [f"({f.name} {params_pddl(f.params, tt)})".replace(" )", ")") + " - number"
                     for f in self.functions.values()]
            lines.append("  (:functions " + " ".join(funcs) + ")")
        for a in self.actions.values():
            pre = self.compile_formula(a.precondition)
            g = self.guard(a.params)
            if g:
                pre = And((*g, *(pre.args if isinstance(pre, And) else (pre,))))
            lines.append(f"  (:action {a.name}\n    :parameters ({params_pddl(a.params, tt)})")
            lines.append(f"    :precondition {to_pddl(pre, tt)}")
            effects = [self._effect_pddl(e) for e in a.effects]
            effects += [f"(increase ({TOTAL_COST}) {c if isinstance(c, Atom) else number_pddl(c)})" for c in a.cost]
            lines.append(f"    :effect (and {' '.join(effects)}))")
        lines.append(")")
        return "\n".join(lines) + "\n"

    def _effect_pddl(self, e: Effect) -> str:
        tt = self.type_text
        lit = str(e.atom) if e.add else f"(not {e.atom})"
        if e.condition != TRUE:
            lit = f"(when {to_pddl(self.compile_formula(e.condition), tt)} {lit})"
        if not e.params:
            return lit
        return " ".join(f"(forall ({params_pddl(ps, tt)}) {lit})" for ps in self.split_either(e.params))

    def type_facts(self, objects: dict[str, str]) -> list[GroundAtom]:
        """The static type-predicate atoms the compiled domain needs for these objects."""
        return [
            GroundAtom(name, (o,))
            for s, name in self.either_sets.items()
            for o, t in {**self.constants, **objects}.items()
            if self.accepts(s, t)
        ]

    # ---- metadata -------------------------------------------------------------------------------
    def gloss(self, predicate: str, words: Sequence[str] | None = None) -> str:
        """English gloss of a predicate from domain.toml, or a readable default; with `words`, its places
        ({0}, {1}, ...) filled with them (a gloss whose braces are not its places is given as it is)."""
        g = self.meta.get("predicates", {}).get(predicate, {}).get("gloss") or predicate.replace("_", " ")
        if words is None:
            return g
        try:
            return g.format(*words)
        except (IndexError, KeyError, ValueError):
            return g

    @cached_property
    def invariants(self) -> list[MutexGroup]:
        """The invariants verification enforces.

        A store sets the ones it keeps (see `graph.world.WorldGraph.init`); a domain on its own
        has those derived for the empty start state.
        """
        return self.derive_invariants().kept

    def derive_invariants(self, init: Iterable[tuple[str, tuple[str, ...]]] = ()) -> Synthesis:
        """Mutex groups synthesised from the action schemas and kept for the start state `init`,
        plus domain.toml's declared ones (always kept).

        Declared invariants may only constrain predicates that no action changes (such as where
        people are): everything an action changes is covered by the synthesis. Raises ValueError
        if the synthesis rejects the domain or a declared invariant is not of that kind.
        """
        from kgplan.domains.invariants import InvariantPart, MutexGroup, synthesize_invariants

        synthesis = synthesize_invariants(self.compiled_pddl(), init)
        static = self.static_predicates()
        for decl in self.meta.get("invariants", []):
            parts = []
            for p in decl["parts"]:
                pred = self.predicates.get(p["predicate"])
                if pred is None or pred.name not in static:
                    raise DomainError(f"domain.toml invariant on '{p['predicate']}': only predicates "
                                     f"of the domain that no action changes may be declared")
                key = tuple(p["key"])
                rest = [i for i in range(pred.arity) if i not in key]
                parts.append(InvariantPart(pred.name, key, rest[0] if len(rest) == 1 else None))
            synthesis.kept.append(MutexGroup(tuple(parts), bool(decl.get("exactly_one", False)), "declared"))
        return synthesis

    def static_predicates(self) -> set[str]:
        """Predicates that no action adds or deletes."""
        changed = {e.atom.predicate for a in self.actions.values() for e in a.effects}
        return set(self.predicates) - changed


def _parse_action(sec: SList, source: str) -> Action:
    if len(sec) < 2 or not isinstance(sec[1], Sym):
        raise PDDLError("action needs a name", *pos_of(sec), source)
    name = _check_name(sec[1], "action", source)
    fields: dict[str, Expr] = {}
    it = iter(sec[2:])
    for k in it:
        if not isinstance(k, Sym) or not k.startswith(":"):
            raise PDDLError(f"expected a keyword in action '{name}'", *pos_of(k), source)
        v = next(it, None)
        if v is None:
            raise PDDLError(f"keyword {k} has no value", *pos_of(k), source)
        fields[str(k)] = v
    params_e = fields.get(":parameters", SList())
    if not isinstance(params_e, SList):
        raise PDDLError(":parameters must be a list", *pos_of(params_e), source)
    params = tuple(parse_typed_list(list(params_e), source))
    pre_e = fields.get(":precondition")
    pre = parse_formula(pre_e, source) if pre_e is not None and pre_e != SList() else TRUE
    eff_e = fields.get(":effect")
    effects, cost = parse_effect(eff_e, source) if eff_e is not None else ([], [])
    return Action(name, params, pre, tuple(effects), tuple(cost))


def _parse_functions(sec: SList, predicates: dict[str, Predicate], source: str) -> list[Predicate]:
    """``(:functions (total-cost) - number (f ?a - t) - number ...)``: numeric functions."""
    out: list[Predicate] = []
    items = list(sec[1:])
    for i, e in enumerate(items):
        if isinstance(e, SList) and e and isinstance(e[0], Sym):
            if str(e[0]) in predicates or any(f.name == e[0] for f in out):
                raise PDDLError(f"function '{e[0]}' declared twice or as a predicate", *pos_of(e), source)
            _check_name(e[0], "function", source)
            out.append(Predicate(str(e[0]), tuple(parse_typed_list(list(e[1:]), source))))
        elif e == "-" and i + 1 < len(items) and items[i + 1] == "number":
            continue
        elif not (e == "number" and i and items[i - 1] == "-"):
            raise PDDLError("expected (function ?x - type ...) - number", *pos_of(e), source)
    return out


def _check_name(sym: Expr, what: str, source: str) -> str:
    """A declared name: a letter, then letters, digits, '_' and '-' (no keyword such as :effect, no '=')."""
    if not isinstance(sym, Sym) or not NAME_RE.fullmatch(sym):
        raise PDDLError(f"{what} name {str(sym)!r} is not a name: use letters, digits, '_' and '-', "
                        "starting with a letter", *pos_of(sym), source)
    return str(sym)


def _name(sec: SList, what: str, source: str) -> str:
    """The one name of a section such as (domain NAME) or (:domain NAME)."""
    if len(sec) != 2:
        raise PDDLError(f"({sec[0]} ...) must give one {what} name", *pos_of(sec), source)
    return _check_name(sec[1], what, source)


def _declare(table: dict[str, str], p: Param, what: str, source: str) -> None:
    """Enter a typed name declared once (an object, constant or type), refusing a second declaration."""
    _check_name(Sym(p.name, p.line, p.col), what, source)
    if p.name in table:
        again = f"as a {table[p.name]} and a {p.types[0]}" if table[p.name] != p.types[0] else "twice"
        raise PDDLError(f"{what} '{p.name}' is declared {again}", p.line, p.col, source)
    table[p.name] = p.types[0]


BUNDLED = Path(__file__).parent


def resolve_domain(spec: str | Path) -> Domain:
    """Load a bundled domain by name (e.g. ``household``) or a domain.pddl / folder path."""
    p = Path(spec)
    if not p.exists() and (BUNDLED / str(spec) / "domain.pddl").is_file():
        p = BUNDLED / str(spec)
    if not p.exists():
        names = sorted(d.name for d in BUNDLED.iterdir() if (d / "domain.pddl").is_file())
        raise NotFound(f"no domain '{spec}': not a file, and bundled domains are {names}")
    return Domain.load(p)
