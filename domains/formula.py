"""PDDL formulas and effects as small immutable trees, parsed from s-expressions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from domains.sexpr import Expr, PDDLError, SList, Sym, pos_of


@dataclass(frozen=True)
class Param:
    """A typed variable; `types` has several entries for an `(either ...)` type."""

    name: str
    types: tuple[str, ...] = ("object",)


@dataclass(frozen=True)
class Atom:
    predicate: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"({' '.join((self.predicate, *self.args))})"


@dataclass(frozen=True)
class Equals:
    left: str
    right: str


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
    pending: list[str] = []
    i = 0
    while i < len(items):
        item = items[i]
        if item == "-":
            if i + 1 >= len(items):
                raise PDDLError("'-' must be followed by a type", *pos_of(item), source)
            types = parse_type(items[i + 1], source)
            if not pending:
                raise PDDLError("type given without names before it", *pos_of(item), source)
            out += [Param(n, types) for n in pending]
            pending = []
            i += 2
            continue
        if not isinstance(item, Sym):
            raise PDDLError("expected a name in a typed list", *pos_of(item), source)
        pending.append(str(item))
        i += 1
    out += [Param(n, (default,)) for n in pending]
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
    if head == "=":
        _arity(expr, 2, source)
        return Equals(*(_term(t, source) for t in rest))
    return Atom(str(head), tuple(_term(t, source) for t in rest))


def parse_effect(expr: Expr, source: str) -> list[Effect]:
    """Flatten an effect into literal effects (handles and / not / forall / when)."""
    out: list[Effect] = []

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
    return out


def _term(t: Expr, source: str) -> str:
    if not isinstance(t, Sym):
        raise PDDLError("expected a variable or object name", *pos_of(t), source)
    return str(t)


def _arity(expr: SList, n: int, source: str) -> None:
    if len(expr) != n + 1:
        raise PDDLError(f"'{expr[0]}' takes {n} argument(s), got {len(expr) - 1}", *pos_of(expr), source)


def atoms(f: Formula) -> Iterator[Atom]:
    """Every atom occurring in a formula."""
    if isinstance(f, Atom):
        yield f
    elif isinstance(f, Not):
        yield from atoms(f.arg)
    elif isinstance(f, And | Or):
        for a in f.args:
            yield from atoms(a)
    elif isinstance(f, Imply):
        yield from atoms(f.left)
        yield from atoms(f.right)
    elif isinstance(f, Quantified):
        yield from atoms(f.body)


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


def quantifiers(f: Formula) -> list[Quantified]:
    """Every quantified sub-formula of `f`, outermost first."""
    if isinstance(f, Quantified):
        return [f, *quantifiers(f.body)]
    if isinstance(f, Not):
        return quantifiers(f.arg)
    if isinstance(f, And | Or):
        return [q for a in f.args for q in quantifiers(a)]
    if isinstance(f, Imply):
        return quantifiers(f.left) + quantifiers(f.right)
    return []
