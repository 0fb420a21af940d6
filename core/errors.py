"""kgplan's errors: one root, and a few kinds a caller can act on.

Every error kgplan raises for a reason a user can do something about is a `KgplanError`, whose message
says what went wrong and what to do; anything else is a bug. The interfaces map the kinds to messages and
status codes, each in one place (`kgplan.interfaces.cli.report`, `kgplan.interfaces.api.problem_of`,
`kgplan.interfaces.mcp.said`). Errors of one concept live beside it and derive from these: a malformed
PDDL text (`kgplan.domains.sexpr.PDDLError`), a change that breaks the domain's rules
(`kgplan.domains.verify.ChangeRefused`), a plan step that does not fit the domain
(`kgplan.planners.state.PlanError`).
"""

from __future__ import annotations

RAW_LIMIT = 500  # characters of an LLM reply an error shows


class KgplanError(Exception):
    """The root: an expected error, shown to a user without a traceback."""


class InputError(KgplanError, ValueError):
    """Bad input: malformed PDDL or JSON, an unknown name, an option out of range, a refused change."""


class NotFound(InputError):
    """A named entity, change, domain, plan or job that does not exist."""


class DomainError(KgplanError):
    """The domain cannot be used this way: its invariants cannot be derived, or a store or a method cannot
    handle what it declares."""


class StoreError(KgplanError):
    """The store cannot be opened, reached or written: not initialised, unreachable, refusing the credentials,
    or clashing with other writers."""


class PlannerError(KgplanError):
    """A planner that cannot be run as asked: unknown, or lacking what the task needs."""


class LLMError(KgplanError):
    """A language model call that failed: the endpoint is not configured, unreachable or refusing, or its reply
    does not fit the schema (`raw` holds that reply, None when the endpoint failed)."""

    def __init__(self, reason: str, raw: str | None = None) -> None:
        cut = raw is not None and len(raw) > RAW_LIMIT
        shown = f"{raw[:RAW_LIMIT]}... [{len(raw) - RAW_LIMIT} more chars]" if cut else raw
        super().__init__(reason if shown is None else f"{reason}; raw reply: {shown!r}")
        self.reason = reason
        self.raw = raw
