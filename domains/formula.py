"""PDDL formulas and effects as small immutable trees, parsed from s-expressions."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from kgplan.domains.sexpr import Expr, PDDLError, SList, Sym, pos_of


def _pos() -> int:
    """A source position (line or column, 0 if unknown) that equality and hashing ignore."""
    return field(default=0, compare=False, repr=False)


@dataclass(frozen=True)
class Param:
    """A typed variable; `types` has several entries for an `(either ...)` type.

    `line`/`col` locate its type where one was written (its name otherwise)."""

    name: str
    types: tuple[str, ...] = ("object",)
    line: int = _pos()
    col: int = _pos()


@dataclass(frozen=True)
class Atom:
    predicate: str
    args: tuple[str, ...]
    line: int = _pos()
    col: int = _pos()

    def __str__(self) -> str:
        return f"({' '.join((self.predicate, *self.args))})"


class GroundAtom(NamedTuple):
    """A ground atom such as ``(on apple table)``: the one type of a fact that domains, the graph and the
    planners share. A tuple, so it equals (and hashes as) the plain pair ``(predicate, args)``."""

    predicate: str
    args: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"({' '.join((self.predicate, *self.args))})"


@dataclass(frozen=True)
class Equals:
    left: str
    right: str
    line: int = _pos()
    col: int = _pos()


@dataclass(frozen=True)
class Not:
    arg: Formula


@dataclass(frozen=True)
class And:
    args: tuple[Formula, ...]


@dataclass(frozen=True)
class Or:
    args: tuple[Formula, ...]


@dataclass(frozen=True)
class Imply:
    left: Formula
    right: Formula


@dataclass(frozen=True)
class Quantified:
    kind: str  # "forall" | "exists"
    params: tuple[Param, ...]
    body: Formula


Formula = Atom | Equals | Not | And | Or | Imply | Quantified
TRUE = And(())


@dataclass(frozen=True)
class Effect:
    """One literal effect, under universally quantified `params` and an optional condition."""

    params: tuple[Param, ...]
    condition: Formula
    atom: Atom
    add: bool


def parse_typed_list(items: list[Expr], source: str, default: str = "object") -> list[Param]:
    """Parse `?a ?b - t ?c - (either u v)` (or names instead of variables) into Params."""
    out: list[Param] = []
    pending: list[Sym] = []
    i = 0
    while i < len(items):
        item = items[i]
        if item == "-":
            if i + 1 >= len(items):
                raise PDDLError("'-' must be followed by a type", *pos_of(item), source)
            types = parse_type(items[i + 1], source)
            if not pending:
                raise PDDLError("type given without names before it", *pos_of(item), source)
            out += [Param(str(n), types, *pos_of(items[i + 1])) for n in pending]
            pending = []
            i += 2
            continue
        if not isinstance(item, Sym):
            raise PDDLError("expected a name in a typed list", *pos_of(item), source)
        pending.append(item)
        i += 1
    out += [Param(str(n), (default,), *pos_of(n)) for n in pending]
    return out


def parse_type(expr: Expr, source: str) -> tuple[str, ...]:
    if isinstance(expr, Sym):
        return (str(expr),)
    if len(expr) >= 2 and expr[0] == "either" and all(isinstance(t, Sym) for t in expr[1:]):
        return tuple(dict.fromkeys(str(t) for t in expr[1:]))
    raise PDDLError("expected a type name or (either t1 t2 ...)", *pos_of(expr), source)


def parse_formula(expr: Expr, source: str) -> Formula:
    """Parse a goal/precondition formula."""
    if not isinstance(expr, SList) or not expr:
        raise PDDLError("expected a parenthesised formula", *pos_of(expr), source)
    head, rest = expr[0], expr[1:]
    if not isinstance(head, Sym):
        raise PDDLError("formula must start with a name", *pos_of(expr), source)
    if head == "and":
        return And(tuple(parse_formula(e, source) for e in rest))
    if head == "or":
        return Or(tuple(parse_formula(e, source) for e in rest))
    if head == "not":
        _arity(expr, 1, source)
        return Not(parse_formula(rest[0], source))
    if head == "imply":
        _arity(expr, 2, source)
        return Imply(parse_formula(rest[0], source), parse_formula(rest[1], source))
    if head in ("forall", "exists"):
        _arity(expr, 2, source)
        if not isinstance(rest[0], SList):
            raise PDDLError(f"{head} needs a variable list", *pos_of(rest[0]), source)
        params = tuple(parse_typed_list(list(rest[0]), source))
        return Quantified(str(head), params, parse_formula(rest[1], source))
    if head in ("<", ">", "<=", ">="):
        raise PDDLError(f"numeric conditions ({head} ...) are not supported", *pos_of(expr), source)
    if head == "=":
        _arity(expr, 2, source)
        return Equals(*(_term(t, source) for t in rest), *pos_of(expr))
    return Atom(str(head), tuple(_term(t, source) for t in rest), *pos_of(expr))


Cost = Atom | float  # a static function term such as (travel-cost ?a ?b), or a number


def parse_effect(expr: Expr, source: str) -> tuple[list[Effect], list[Cost]]:
    """Flatten an effect into literal effects (handles and / not / forall / when) and the
    unconditional increases of (total-cost) (action costs)."""
    out: list[Effect] = []
    costs: list[Cost] = []

    def walk(e: Expr, params: tuple[Param, ...], cond: Formula) -> None:
        if not isinstance(e, SList) or not e:
            raise PDDLError("expected a parenthesised effect", *pos_of(e), source)
        head = e[0]
        if head == "and":
            for sub in e[1:]:
                walk(sub, params, cond)
        elif head == "forall":
            _arity(e, 2, source)
            new = tuple(parse_typed_list(list(e[1]), source)) if isinstance(e[1], SList) else ()
            walk(e[2], params + new, cond)
        elif head == "when":
            _arity(e, 2, source)
            c = parse_formula(e[1], source)
            walk(e[2], params, c if cond == TRUE else And((cond, c)))
        elif head == "increase":
            _arity(e, 2, source)
            if e[1] != ["total-cost"] or params or cond != TRUE:
                raise PDDLError("only unconditional (increase (total-cost) ...) effects are supported",
                                *pos_of(e), source)
            costs.append(parse_number(e[2], source) if isinstance(e[2], Sym) else _function_term(e[2], source))
        elif head in ("decrease", "assign", "scale-up", "scale-down"):
            raise PDDLError(f"numeric effects ({head} ...) are not supported, only (increase (total-cost) ...)",
                            *pos_of(e), source)
        elif head == "not":
            _arity(e, 1, source)
            atom = parse_formula(e[1], source)
            if not isinstance(atom, Atom):
                raise PDDLError("only atoms can be deleted", *pos_of(e[1]), source)
            out.append(Effect(params, cond, atom, add=False))
        else:
            atom = parse_formula(e, source)
            if not isinstance(atom, Atom):
                raise PDDLError(f"unsupported effect '{head}'", *pos_of(e), source)
            out.append(Effect(params, cond, atom, add=True))

    walk(expr, (), TRUE)
    return out, costs


def parse_number(e: Expr, source: str) -> float:
    """A finite non-negative number (action costs and function values)."""
    try:
        value = float(e) if isinstance(e, Sym) else -1.0
    except ValueError:
        value = -1.0
    if not 0 <= value < math.inf:
        raise PDDLError(f"expected a finite non-negative number, got {e}", *pos_of(e), source)
    return value


def _function_term(e: Expr, source: str) -> Atom:
    """A function term such as (travel-cost ?a ?b): a name and variables or object names."""
    f = parse_formula(e, source)
    if not isinstance(f, Atom):
        raise PDDLError("expected a function term like (travel-cost ?from ?to)", *pos_of(e), source)
    return f


def parse_numeric_fact(e: SList, source: str) -> tuple[Atom, float]:
    """An :init entry ``(= (function arg ...) number)``."""
    _arity(e, 2, source)
    return _function_term(e[1], source), parse_number(e[2], source)


def _term(t: Expr, source: str) -> str:
    if not isinstance(t, Sym):
        raise PDDLError("expected a variable or object name", *pos_of(t), source)
    return str(t)


def _arity(expr: SList, n: int, source: str) -> None:
    if len(expr) != n + 1:
        raise PDDLError(f"'{expr[0]}' takes {n} argument(s), got {len(expr) - 1}", *pos_of(expr), source)


def children(f: Formula) -> tuple[Formula, ...]:
    """The immediate sub-formulas of `f`, in order (none for an atom or an equality)."""
    if isinstance(f, Not):
        return (f.arg,)
    if isinstance(f, And | Or):
        return f.args
    if isinstance(f, Imply):
        return (f.left, f.right)
    if isinstance(f, Quantified):
        return (f.body,)
    return ()


def polar_children(f: Formula, positive: bool = True) -> list[tuple[Formula, bool]]:
    """The immediate sub-formulas of `f` with the polarity each occurs in, `f` occurring in `positive`
    (a negation and an implication's premise flip it)."""
    if isinstance(f, Not):
        return [(f.arg, not positive)]
    if isinstance(f, Imply):
        return [(f.left, not positive), (f.right, positive)]
    return [(g, positive) for g in children(f)]


def map_children(f: Formula, fn: Callable[[Formula], Formula]) -> Formula:
    """`f` with `fn` applied to each immediate sub-formula (an atom or an equality as it is)."""
    if isinstance(f, Not):
        return Not(fn(f.arg))
    if isinstance(f, And | Or):
        return type(f)(tuple(map(fn, f.args)))
    if isinstance(f, Imply):
        return Imply(fn(f.left), fn(f.right))
    if isinstance(f, Quantified):
        return Quantified(f.kind, f.params, fn(f.body))
    return f


def subformulas(f: Formula) -> Iterator[Formula]:
    """`f` and every formula within it, outermost first (pre-order)."""
    yield f
    for g in children(f):
        yield from subformulas(g)


def atoms(f: Formula) -> Iterator[Atom]:
    """Every atom occurring in a formula."""
    return (g for g in subformulas(f) if isinstance(g, Atom))


def number_pddl(value: float) -> str:
    """A number as PDDL (integers without a fraction, as Fast Downward requires for costs; inf and nan as such)."""
    return str(int(value)) if math.isfinite(value) and value == int(value) else str(value)


def type_pddl(types: tuple[str, ...]) -> str:
    """A parameter's type as PDDL: ``t`` or ``(either t1 t2 ...)``."""
    return types[0] if len(types) == 1 else f"(either {' '.join(types)})"


def to_pddl(f: Formula, type_text: Callable[[tuple[str, ...]], str] = type_pddl) -> str:
    """Write a formula as PDDL; `type_text` renders a parameter's type tuple."""
    if isinstance(f, Atom):
        return str(f)
    if isinstance(f, Equals):
        return f"(= {f.left} {f.right})"
    if isinstance(f, Not):
        return f"(not {to_pddl(f.arg, type_text)})"
    if isinstance(f, And | Or):
        word = "and" if isinstance(f, And) else "or"
        return f"({word} {' '.join(to_pddl(a, type_text) for a in f.args)})".replace(" )", ")")
    if isinstance(f, Imply):
        return f"(imply {to_pddl(f.left, type_text)} {to_pddl(f.right, type_text)})"
    return f"({f.kind} ({params_pddl(f.params, type_text)}) {to_pddl(f.body, type_text)})"


def params_pddl(params: tuple[Param, ...] | list[Param], type_text: Callable[[tuple[str, ...]], str]) -> str:
    return " ".join(f"{p.name} - {type_text(p.types)}" for p in params)


def scoped(f: Formula, scope: dict[str, Param] | None = None) -> Iterator[tuple[Atom | Equals, dict[str, Param]]]:
    """Every atom and equality of `f` with the variables in scope there (`scope`: the outer ones)."""
    scope = scope or {}
    if isinstance(f, Atom | Equals):
        yield f, scope
    if isinstance(f, Quantified):
        scope = {**scope, **{p.name: p for p in f.params}}
    for g in children(f):
        yield from scoped(g, scope)


def quantifiers(f: Formula) -> list[Quantified]:
    """Every quantified sub-formula of `f`, outermost first."""
    return [g for g in subformulas(f) if isinstance(g, Quantified)]
