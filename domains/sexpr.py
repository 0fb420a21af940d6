"""S-expression reader for PDDL with line/column positions for clear error messages."""

from __future__ import annotations

import bisect
import re

from kgplan.errors import InputError


class PDDLError(InputError):
    """Malformed PDDL; carries the 1-based line and column where the problem was found."""

    def __init__(self, message: str, line: int = 0, col: int = 0, source: str = "") -> None:
        self.message, self.line, self.col, self.source = message, line, col, source
        where = f"{source}:" if source else ""
        pos = f"{where}{line}:{col}: " if line else where and f"{where} "
        super().__init__(f"{pos}{message}")


class Sym(str):
    """A symbol (lower-cased, as PDDL is case-insensitive) remembering where it was read."""

    line: int
    col: int

    def __new__(cls, text: str, line: int = 0, col: int = 0) -> Sym:
        s = super().__new__(cls, text.lower())
        s.line, s.col = line, col
        return s


class SList(list):
    """A parenthesised list remembering the position of its opening parenthesis."""

    def __init__(self, line: int = 0, col: int = 0) -> None:
        super().__init__()
        self.line, self.col = line, col


Expr = Sym | SList


TOKEN = re.compile(r"[()]|;[^\n]*|[^\s();]+")
MAX_DEPTH = 100  # parentheses nested deeper than this are refused: what reads a formula recurses on it


def read(text: str, source: str = "") -> list[Expr]:
    """Read every top-level expression of `text` (comments start with ';'), nested at most `MAX_DEPTH` deep."""
    newlines = [i for i, c in enumerate(text) if c == "\n"]

    def where(offset: int) -> tuple[int, int]:
        line = bisect.bisect_left(newlines, offset)
        return line + 1, offset - (newlines[line - 1] if line else -1)

    stack: list[SList] = [SList()]
    for m in TOKEN.finditer(text):
        tok = m.group()
        if tok == "(":
            if len(stack) > MAX_DEPTH:
                raise PDDLError(f"parentheses nested more than {MAX_DEPTH} deep", *where(m.start()), source)
            lst = SList(*where(m.start()))
            stack[-1].append(lst)
            stack.append(lst)
        elif tok == ")":
            if len(stack) == 1:
                raise PDDLError("unexpected ')'", *where(m.start()), source)
            stack.pop()
        elif tok[0] != ";":
            stack[-1].append(Sym(tok, *where(m.start())))
    if len(stack) > 1:
        raise PDDLError("unclosed '(' (missing ')')", stack[-1].line, stack[-1].col, source)
    return list(stack[0])


def pos_of(expr: Expr | None) -> tuple[int, int]:
    """Position of an expression, (0, 0) if unknown."""
    return (getattr(expr, "line", 0), getattr(expr, "col", 0))
