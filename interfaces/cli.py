"""The `kgplan` command line: build, inspect and correct the world graph, tell it changes and plan tasks."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from enum import StrEnum
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import click
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from kgplan.agent.agent import DEPTH, Agent, GoalMode, Retriever, TellMode, Unclear, load_observations, problem_file
from kgplan.agent.search import BELIEFS, SEARCH_METHODS
from kgplan.domains.model import resolve_domain
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import InputError, KgplanError, LLMError
from kgplan.games import GAMES
from kgplan.games.mcdml import GAME_SEARCHES
from kgplan.graph.backends import BACKENDS, creating
from kgplan.graph.model import Change, Entity, Fact, Stamp, Unknown
from kgplan.planners.engines import PLANNERS
from kgplan.registry import Registry

if TYPE_CHECKING:
    from kgplan.domains.model import Domain
    from kgplan.language.llm import LLMConfig
    from kgplan.language.update import Clarification, Outcome
    from kgplan.planners.mcts import Decision
    from kgplan.planners.pipeline import PlanReport
    from kgplan.planners.whynot import Cause

app = typer.Typer(help=__doc__, no_args_is_help=True, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})
out = Console()
err = Console(stderr=True)
STATE: dict[str, Any] = {"store": None, "llm": {}}
T = TypeVar("T")


@app.callback()
def main(
    store: Annotated[str | None, typer.Option(
        "--store", "-s", envvar="KGPLAN_STORE",
        help="Where the world graph lives, a URL: sqlite:PATH (the default is sqlite:kgplan.db) or "
             "neo4j://HOST:PORT; `kgplan list stores` lists the backends.")] = None,
    llm_url: Annotated[str | None, typer.Option(
        "--llm-url", envvar="KGPLAN_LLM_BASE_URL", show_envvar=True,
        help="OpenAI-compatible endpoint for tell/plan/chat, e.g. http://127.0.0.1:8080/v1 (default: OpenAI); "
             "the key comes from OPENAI_API_KEY.")] = None,
    llm_model: Annotated[str | None, typer.Option(
        "--llm-model", envvar="KGPLAN_LLM_MODEL", help="Model name at that endpoint (default gpt-4o-mini).")] = None,
) -> None:
    """kgplan: a planning agent whose memory is a verified world-state graph.

    Start with `kgplan init --domain household --problem world.pddl`, then inspect it with
    `show` and `facts`, correct it with `add`/`remove`/`change`/`observe`, and look back with `history`.
    """
    STATE["store"] = store
    STATE["llm"] = {k: v for k, v in (("base_url", llm_url), ("model", llm_model)) if v}


def report(e: Exception, refused: str = "Change refused") -> bool:
    """Print an expected error (refused change, bad input, unreachable store or LLM); False if unexpected."""
    if isinstance(e, ChangeRefused):
        err.print(f"[red]{escape(refused)}[/red] (the graph is unchanged):")
        for issue in e.issues:
            err.print(f"  [yellow]-[/yellow] {escape(f'[{issue.kind}]')} {escape(issue.message)}", highlight=False)
    elif isinstance(e, KgplanError):
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
    else:
        return False
    return True


def run_guarded(fn: Callable[[], T]) -> T:
    """Run a command (its value), turning expected errors into a red message and exit code 1."""
    try:
        return fn()
    except Exception as e:
        if not report(e):
            raise
        raise typer.Exit(1) from None


def _llm() -> LLMConfig | None:
    """The LLM settings given before the command (None: from the environment when needed)."""
    if not STATE["llm"]:
        return None
    from kgplan.language.llm import LLMConfig

    return LLMConfig.from_env(**STATE["llm"])


@contextmanager
def agent(at: str | None = None) -> Iterator[Agent]:
    """The Agent on the store and LLM settings given before the command (on the graph as of `at`, if given)."""
    with Agent(STATE["store"], llm=_llm()) as a:
        yield a.at(at)


At = Annotated[str | None, typer.Option(
    "--at", help="Read the graph as it was right after a change: its id (e.g. 120) or a time, the last change "
                 "made then (ISO, UTC unless it says: 2026-11-20T08:00).")]


def print_facts(new: Iterable[Entity], gone: Iterable[Entity | str], remove: Iterable[Fact],
                add: Iterable[Fact], how: dict[str, str] | None = None) -> None:
    """Entities that appear and go, then facts removed and added, a line each (with how each was chosen, if
    given)."""
    how = how or {}
    for e in new:
        out.print(f"  [cyan]new[/cyan] {e.name} - {e.type}", highlight=False)
    for e in gone:
        out.print(f"  [red]gone[/red] {e if isinstance(e, str) else f'{e.name} - {e.type}'}", highlight=False)
    for sign, facts in (("[red]-[/red]", remove), ("[green]+[/green]", add)):
        for f in facts:
            note = f"  [dim]{escape(how[str(f)])}[/dim]" if str(f) in how else ""
            out.print(f"  {sign} {escape(str(f))}{note}", highlight=False)


def print_change(c: Change, title: str = "Applied change") -> None:
    d = c.delta
    out.print(f"[green]{title} #{c.id}[/green] ({d.source}{': ' + d.text if d.text else ''})",
              highlight=False)
    print_facts(d.new_entities, d.removed_entities, d.remove, d.add, d.how)
    for u in d.unknown:
        out.print(f"  [yellow]unknown[/yellow] {u}{' (a placeholder)' if u.predicate is None else ''}",
                  highlight=False)
    for u in d.known:
        out.print(f"  [green]known[/green] {u if u.predicate else f'{u.entity} (no longer a placeholder)'}",
                  highlight=False)


@app.command()
def init(
    domain: Annotated[str, typer.Option(help="A bundled domain name (e.g. household) or a path "
                                             "to a domain.pddl or its folder.")] = "household",
    problem: Annotated[Path | None, typer.Option(help="A PDDL problem whose :objects and :init become the "
                                                      "initial graph: a path, or a problem of the domain's folder "
                                                      "by name from any directory (household: world).")] = None,
    force: Annotated[bool, typer.Option(help="Wipe an existing store first.")] = False,
) -> None:
    """Create the world graph for a domain, optionally loading a PDDL problem.

    The domain's invariants are derived once, here, for the problem's initial state (the empty
    state without one; a problem loaded later into the empty graph derives them again), and
    stored; groups the initial state violates are dropped and listed. All or nothing: if
    anything fails, the store is left as it was (a new sqlite file is removed).
    """

    def go() -> None:
        path = problem and problem_file(resolve_domain(domain), problem)  # to say which file was loaded
        with creating(STATE["store"]) as g:
            a = Agent(g)
            synthesis = a.init(domain, path, force)
            dom = a.domain
            out.print(f"Initialised {g.url} with domain [bold]{dom.name}[/bold] "
                      f"({len(dom.predicates)} predicates, {len(dom.actions)} actions, "
                      f"{len(dom.invariants)} invariants: see `kgplan invariants`)")
            for d in synthesis.dropped:
                out.print(f"  [yellow]not an invariant here:[/yellow] {d.describe()}", highlight=False)
            if not synthesis.complete:
                out.print("  [yellow]the invariant search ran out of time: some may be missing[/yellow]")
            if path:
                n_ent, n_fact = a.count()
                out.print(f"Loaded {path}: {n_ent} entities, {n_fact} facts")

    run_guarded(go)


@app.command()
def invariants(
    suggest: Annotated[bool, typer.Option(help="Propose invariants the graph satisfies for predicates "
                                               "no action changes (mined from the current graph).")] = False,
    accept: Annotated[str | None, typer.Option(help="Store proposed invariants: 'all' or their numbers "
                                                    "from --suggest, e.g. 1,3.")] = None,
    remove: Annotated[str | None, typer.Option(help="Stop enforcing accepted invariants: 'all' or their numbers "
                                                    "in the list `kgplan invariants` prints, e.g. 4.")] = None,
) -> None:
    """Show the invariants verification enforces: derived from the actions, declared in
    domain.toml, or mined from the graph and accepted. Accepting and removing are changes in the history."""

    def go() -> None:
        with agent() as a:
            if remove is not None:
                known = a.invariants()
                chosen = ([g for g in known if g.origin == "mined"] if remove.strip() == "all"
                          else pick(known, remove, "--remove", "invariant"))
                change = a.remove_invariants(chosen)
                for inv in chosen:
                    out.print(f"[green]removed[/green] {inv.describe()}", highlight=False)
                out.print(f"recorded as change #{change.id}")
                return
            if not suggest and accept is None:
                for i, inv in enumerate(a.invariants(), 1):
                    out.print(f"  {i}. {inv.origin:8} {inv.describe()}", markup=False, highlight=False)
                return
            mined = a.suggest_invariants()
            if accept is None:
                for i, (inv, gloss) in enumerate(zip(mined.suggested, mined.glosses, strict=True), 1):
                    out.print(f"  {i}. {inv.describe()}\n     {gloss}", markup=False, highlight=False)
                for note in mined.notes:
                    out.print(f"  [dim]{note}[/dim]", highlight=False)
                if not mined.suggested:
                    out.print("No invariants to suggest.")
                return
            chosen = pick(mined.suggested, accept, "--accept", "suggestion")
            change = a.accept_invariants(chosen)
            for inv in chosen:
                out.print(f"[green]accepted[/green] {inv.describe()}", highlight=False)
            out.print(f"recorded as change #{change.id}")

    run_guarded(go)


def pick(items: list, spec: str, option: str, what: str) -> list:
    """The items named by 'all' or comma-separated 1-based numbers."""
    if spec.strip() == "all":
        return items
    try:
        numbers = [int(n) for n in spec.split(",")]
    except ValueError:
        raise InputError(f"{option} takes 'all' or numbers like 1,3, not {spec!r}") from None
    if bad := [n for n in numbers if not 1 <= n <= len(items)]:
        raise InputError(f"no {what} {bad[0]}: there are {len(items)}")
    return [items[n - 1] for n in numbers]


@app.command()
def show(entity: Annotated[str | None, typer.Argument(help="Entity to show; omit for a summary.")] = None,
         depth: Annotated[int, typer.Option(min=0, help="Fact hops around the entity.")] = 1,
         unknown: Annotated[bool, typer.Option(
             "--unknown", help="List what the graph marks unknown (about ENTITY, if given).")] = False,
         belief: Annotated[str | None, typer.Option("--belief", help="Show where an item whose place is unknown "
                                                    "probably is (the MCTS belief stored with the graph).")]
         = None, at: At = None) -> None:
    """Show the facts around an entity as a tree, or a summary of the whole graph.

    Unknowns are marked: placeholders (an entity seen but not identified, e.g. a room seen through an exit)
    and facts not known for an entity (e.g. where an item is: "(on apple ?)").
    """

    def go() -> None:
        with agent(at) as a:
            dom = a.domain
            if belief is not None:
                t = Table("place", "probability", title=f"Belief: where {belief} is")
                for place, q in sorted(a.belief(belief).items(), key=lambda x: -x[1]):
                    t.add_row(place, f"{q:.3f}")
                out.print(t if t.row_count else f"no belief stored about {belief} (its place is known, or no "
                          "search has needed it yet)")
                return
            if unknown:
                marks = a.unknowns(None if entity is None else [entity])
                types = {e.name: e.type for e in a.graph.entities({u.entity for u in marks})}
                t = Table("entity", "type", "unknown", "meaning", title=f"Unknowns ({len(marks)})")
                for u in marks:
                    t.add_row(u.entity, types.get(u.entity, "?"), "placeholder" if u.predicate is None else str(u),
                              "not yet identified" if u.predicate is None else said(dom, u.predicate))
                out.print(t)
                return
            if entity is None:
                ents, facts, last = a.entities(), a.facts(), a.history(1)
                out.print(f"{a.graph.url}: domain {dom.name}, {len(ents)} entities, {len(facts)} facts, "
                          f"{len(a.unknowns())} unknowns, {last[0].id if last else 0} changes")
                t = Table("type", "entities", title="Entities by type")
                for k, v in sorted(Counter(e.type for e in ents).items()):
                    t.add_row(k, str(v))
                p = Table("predicate", "facts", "meaning", title="Facts by predicate")
                for k, v in sorted(Counter(f.predicate for f in facts).items()):
                    p.add_row(k, str(v), said(dom, k))
                out.print(t, p)
                return
            n = a.show(entity, depth)
            types = {e.name: e.type for e in n.entities}
            marks = a.unknowns([entity])
            placeholder = " [yellow](placeholder: not yet identified)[/yellow]" if any(
                u.predicate is None for u in marks) else ""
            tree = Tree(f"[bold]{entity}[/bold] - {n.entity.type}{placeholder}")
            for u in marks:
                if u.predicate is not None:
                    tree.add(f"[yellow]unknown: {u}[/yellow]  [dim]{escape(said(dom, u.predicate))}[/dim]")
            for k, v in n.entity.attrs.items():
                tree.add(f"[dim]{k}: {v}[/dim]")
            by_pred: dict[str, list[Fact]] = {}
            for f in n.facts:
                by_pred.setdefault(f.predicate, []).append(f)
            for pred, fs in sorted(by_pred.items()):
                branch = tree.add(f"[cyan]{pred}[/cyan]  [dim]{escape(said(dom, pred))}[/dim]")
                for f in fs:
                    args = ", ".join(f"{a} ({types.get(a, '?')})" if a != entity else f"[bold]{a}[/bold]"
                                     for a in f.args)
                    branch.add(f"{args or '(true)'}  [dim]{escape(said(dom, pred, f.args))}[/dim]")
            out.print(tree)

    run_guarded(go)


def said(dom: Domain, predicate: str, args: Sequence[str] | None = None) -> str:
    """A predicate's gloss (domain.toml's) in words: filled in with the arguments, or with its parameters' types
    (e.g. "the robot <robot> is in room <room>")."""
    pred = dom.predicates.get(predicate)
    if args is None:
        args = [f"<{' or '.join(p.types)}>" for p in pred.params] if pred else []
    return dom.gloss(predicate, args)


@app.command()
def facts(predicate: Annotated[str | None, typer.Option(help="Only this predicate.")] = None,
          entity: Annotated[str | None, typer.Option(help="Only facts mentioning this entity.")] = None,
          at: At = None) -> None:
    """List facts as PDDL atoms, one per line."""

    def go() -> None:
        with agent(at) as a:
            for f in a.facts(predicate, entity):
                out.print(str(f), highlight=False, soft_wrap=True)

    run_guarded(go)


def _edit(adds: list[str], removes: list[str], text: str, entities: list[str] | None = None,
          unknown: list[str] | None = None, known: list[str] | None = None, new: list[str] | None = None,
          dry_run: bool = False, hint: bool = True) -> None:
    """Verify and apply one change (print it), or print why it was refused; `hint`: say how to add and remove
    in one change (after `add` or `remove` alone)."""
    if not (adds or removes or entities or unknown or known or new):
        raise typer.BadParameter("nothing to change: give facts, entities or marks (see --help)")

    def go() -> None:
        with agent() as a:
            try:
                c = a.change(adds, removes, text, [_entity(e) for e in new or ()], dry_run, entities or (),
                             [Unknown.parse(m) for m in unknown or ()], [Unknown.parse(m) for m in known or ()])
            except ChangeRefused as e:
                report(e)
                if hint and any(i.kind == "invariant" for i in e.issues):  # e.g. "also remove" the old place
                    err.print('to add and remove in one change: kgplan change --add "(FACT)" --remove "(FACT)"',
                              markup=False, highlight=False)
                raise typer.Exit(1) from None
        if dry_run:
            out.print("[cyan]dry run[/cyan], verified but not applied:")
        print_change(c, "Proposed change" if dry_run else "Applied change")

    run_guarded(go)


def _entity(spec: str) -> Entity:
    """An entity written NAME:TYPE."""
    name, colon, type_ = spec.partition(":")
    if not (colon and name.strip() and type_.strip()):
        raise InputError(f"--new takes NAME:TYPE, e.g. green_mug:cup, not {spec!r}")
    return Entity(name=name.strip(), type=type_.strip())


UnknownOpt = Annotated[list[str] | None, typer.Option(
    "--unknown", help='Mark unknown: "(PREDICATE ENTITY ?)" (e.g. "(on apple ?)": where it is) or "ENTITY" (a '
                      "placeholder, not yet identified); repeatable.")]
KnownOpt = Annotated[list[str] | None, typer.Option(
    "--known", help='Clear an unknown mark, written as for --unknown; repeatable (see `show --unknown`).')]


@app.command()
def add(facts: Annotated[list[str] | None, typer.Argument(help='Facts such as "(light_on kitchen_light)".')] = None,
        unknown: UnknownOpt = None, known: KnownOpt = None,
        note: Annotated[str, typer.Option(help="Why (kept in the history).")] = "") -> None:
    """Add facts to the graph, and set or clear unknown marks (verified; all or nothing)."""
    _edit(facts or [], [], note, unknown=unknown, known=known)


@app.command()
def remove(facts: Annotated[list[str] | None, typer.Argument(
               help='Facts such as "(light_on kitchen_light)".')] = None,
           entity: Annotated[list[str] | None, typer.Option(
               help="Also remove this entity with all its facts (repeatable).")] = None,
           unknown: UnknownOpt = None, known: KnownOpt = None,
           note: Annotated[str, typer.Option(help="Why (kept in the history).")] = "") -> None:
    """Remove facts and/or entities from the graph, and set or clear unknown marks (verified; all or nothing;
    `undo` restores). E.g. `kgplan remove "(on apple table)" --unknown "apple on"`: where the apple is, is unknown."""
    _edit([], facts or [], note, entity, unknown, known)


@app.command()
def change(
    add: Annotated[list[str] | None, typer.Option(
        "--add", help='A fact to add, e.g. "(on apple kitchen_table)"; repeatable.')] = None,
    remove: Annotated[list[str] | None, typer.Option("--remove", help="A fact to remove; repeatable.")] = None,
    new: Annotated[list[str] | None, typer.Option(
        "--new", help="A new entity NAME:TYPE, e.g. green_mug:cup; repeatable.")] = None,
    remove_entity: Annotated[list[str] | None, typer.Option(
        "--remove-entity", help="An entity to remove with all its facts; repeatable.")] = None,
    unknown: UnknownOpt = None, known: KnownOpt = None,
    note: Annotated[str, typer.Option(help="Why (kept in the history).")] = "",
    dry_run: Annotated[bool, typer.Option(help="Verify only: show the change without applying it.")] = False,
) -> None:
    """Correct the graph in one verified change (all or nothing): facts added and removed, entities created and
    removed, unknown marks set and cleared.

    E.g. the apple moved: kgplan change --remove "(on apple kitchen_counter)" --add "(on apple kitchen_table)";
    a new mug: kgplan change --new green_mug:cup --add "(on green_mug kitchen_counter)" --add "(clean green_mug)".
    """
    _edit(add or [], remove or [], note, remove_entity, unknown, known, new, dry_run, hint=False)


@app.command()
def observe(file: Annotated[Path | None, typer.Argument(help="JSON: {\"add\": [\"(fact ...)\"], \"remove\": "
                                                            "[...], \"new_entities\": [{\"name\", \"type\"}], "
                                                            "\"removed_entities\": [\"name\"], "
                                                            "\"text\": \"...\"}, or a list of those.")] = None,
            scene: Annotated[Path | None, typer.Option(
                "--scene", help="A scene graph instead (JSON: VirtualHome's environment graph, or {\"nodes\": "
                                "[{\"id\" or \"ref\", \"class\", \"states\"}], \"relations\": [[subject, "
                                "relation, object]], \"observed\": [ids]}), mapped onto the domain by its "
                                "domain.toml's [scene] table and applied as one change.")] = None) -> None:
    """Apply sensor observations, each on its own: each is verified and applied as one change, or refused
    (the others still apply). Says which were applied and which refused; exit status 1 if any was refused.

    With --scene, a perceived scene graph becomes one verified change (items moved, appeared, gone; states
    changed); what the scan could not see is marked unknown, not removed.
    """
    if (file is None) == (scene is None):
        err.print("[red]give an observation file or --scene FILE[/red]")
        raise typer.Exit(2)
    if scene is not None:
        run_guarded(lambda: _scene(scene))
        return

    def go() -> None:
        deltas = load_observations(file)
        with agent() as a:
            results = a.observe_each(deltas)
        applied = {i: r for i, r in enumerate(results, 1) if isinstance(r, Change)}
        for i, r in enumerate(results, 1):
            if isinstance(r, Change):
                print_change(r, f"Observation {i} applied as change")
            else:
                report(r, f"Observation {i} refused")
        refused = [i for i in range(1, len(results) + 1) if i not in applied]
        summary = [f"{len(applied)} applied ({', '.join(f'{i}: change #{c.id}' for i, c in applied.items())})"
                   if applied else "none applied"]
        if refused:
            summary.append(f"{len(refused)} refused ({', '.join(map(str, refused))})")
        out.print(f"{len(results)} observation(s): " + "; ".join(summary), highlight=False)
        if refused:
            raise typer.Exit(1)

    run_guarded(go)


def _scene(path: Path) -> None:
    from kgplan.games.scene import load_scene

    scan = load_scene(path)
    with agent() as a:
        change, _ = a.observe_scene(scan)
    if change is None:
        out.print("The scene shows what the graph holds: nothing changed", highlight=False)
    else:
        print_change(change, "Scene applied as change")


@app.command()
def check(at: At = None) -> None:
    """Check the whole graph: every typing and invariant violation (exit status 1 if any)."""

    def go() -> None:
        with agent(at) as a:
            issues = a.check(incomplete=True)
        for i in issues:
            out.print(f"  - [{i.kind}] {i.message}", markup=False, highlight=False, soft_wrap=True)
        if issues:
            err.print(f"[red]{len(issues)} issue(s)[/red]")
            raise typer.Exit(1)
        out.print("no issues")

    run_guarded(go)


@app.command()
def history(limit: Annotated[int, typer.Option(min=1, help="Show the newest N changes.")] = 20) -> None:
    """Show the change history with provenance."""

    def go() -> None:
        with agent() as a:
            t = Table("id", "time (UTC)", "source", "text", "+", "-", "new", "undo of")
            for c in reversed(a.history(limit)):
                d, n = c.delta, c.sizes
                t.add_row(str(c.id), c.time.strftime("%Y-%m-%d %H:%M:%S"), d.source, d.text[:60],
                          str(n["add"]), str(n["remove"]), str(n["new_entities"]), str(c.undo_of or ""))
            out.print(t)

    run_guarded(go)


LARGE_UNDO = 10  # entities and facts an undo may remove without asking


def interactive() -> bool:
    """Whether a person can be asked (standard input is a terminal)."""
    return sys.stdin.isatty()


@app.command()
def undo(change_id: Annotated[int, typer.Argument(help="The id shown by `kgplan history`.")],
         yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask, however much the undo removes.")]
         = False) -> None:
    """Undo a change by applying its inverse as a new change.

    An undo that would remove more than a handful of entities and facts (e.g. of the change that loaded the
    world) asks first; without a terminal it is refused unless --yes is given.
    """

    def go() -> None:
        with agent() as a:
            c = a.diff(change_id, 0, 0)
            ents, facts = c.sizes["new_entities"], c.sizes["add"]
            if not yes and (ents + facts > LARGE_UNDO or c.delta.source == "load"):
                what = f"undoing change #{change_id} ({c.delta.source}) removes {ents} entities and {facts} facts"
                if not interactive():
                    raise InputError(f"{what}: give --yes to do it")
                if not typer.confirm(f"{what}. Undo it?"):
                    raise InputError("not undone")
            print_change(a.undo(change_id), "Undo applied as change")

    run_guarded(go)


@app.command()
def export(pddl: Annotated[bool, typer.Option("--pddl", help="Print a PDDL problem (:objects "
                                                            "and :init).")] = False, at: At = None) -> None:
    """Export the graph; `--pddl` prints it as a complete PDDL problem on stdout."""

    def go() -> None:
        if not pddl:
            raise InputError("choose an export format: --pddl")
        with agent(at) as a:
            sys.stdout.write(a.export_pddl())

    run_guarded(go)


# ---- the history: a fact's timeline, the difference between two moments ---------------------------------
def stamp(s: Stamp | None) -> str:
    """A change's provenance in one line."""
    if s is None:
        return "(holds still)"
    undo = f" (undo of #{s.undo_of})" if s.undo_of else ""
    return f"#{s.id} {s.time:%Y-%m-%d %H:%M:%S} {s.source}{undo}{': ' + s.text if s.text else ''}"


@app.command()
def timeline(pattern: Annotated[str, typer.Argument(help='A fact, any of its names "*": "(on apple *)".')],
             at: At = None) -> None:
    """When each fact matching PATTERN held: every interval, with the change that added the fact and the one that
    removed it (an undo too) and their provenance, oldest first."""

    def go() -> None:
        with agent(at) as a:
            intervals = a.timeline(pattern)
            hows = a.how(intervals)
        for i, how in zip(intervals, hows, strict=True):  # one line each (times in UTC)
            out.print(f"{escape(str(i.fact))}  [green]from[/green] {escape(stamp(i.opened))}  [red]until[/red] "
                      f"{escape(stamp(i.closed))}{f'  [dim]({escape(how)})[/dim]' if how else ''}",
                      highlight=False, soft_wrap=True)
        if not intervals:
            out.print(f"no fact matching {escape(pattern)} ever held", highlight=False)

    run_guarded(go)


@app.command()
def diff(start: Annotated[str, typer.Argument(help="A change id or an ISO time (see --at of `show`).")],
         end: Annotated[str, typer.Argument(help="Another one.")]) -> None:
    """What changed between two moments: facts and entities that hold at END and not at START (+, new), and the
    reverse (-, gone)."""

    def go() -> None:
        with agent() as a:
            d = a.difference(start, end)
        out.print(f"[bold]From change #{d.start} to change #{d.end}[/bold]", highlight=False)
        print_facts(d.new_entities, d.removed_entities, d.remove, d.add)
        if not (d.add or d.remove or d.new_entities or d.removed_entities):
            out.print("  no difference")

    run_guarded(go)


@app.command()
def demo(store: Annotated[str, typer.Option(help="Store for the demo (wiped first).")]
         = "sqlite:kgplan-demo.db") -> None:
    """The main job: build the household world, apply sensor observations, plan a task and execute it."""
    from kgplan.interfaces.demo import run_demo

    STATE["store"] = store
    run_guarded(lambda: run_demo(store, out, print_change))


Answer = Annotated[list[str] | None, typer.Option(
    "--answer", "-a", help="The answer to a question the text may raise (an option it lists: an entity's name or a "
                           "fact as PDDL); repeatable. Without one, a terminal is asked.")]


RetrieverOption = Annotated[Retriever, typer.Option(
    help="What the LLM writing a change (--mode rewrite) or a goal is shown: select, the entities it selects from the "
         "list; search, RS: a query graph it describes, grounded by embeddings and search; whole, the whole graph.")]
Depth = Annotated[int, typer.Option(min=0, help="Fact hops retrieved around the entities found.")]


def settle(c: Clarification, given: Sequence[str]) -> str:
    """The user's answer to a clarification: a given --answer among its options, else the number of one, asked at
    a terminal; without a terminal the question and the options are printed and the command exits with status 3."""
    if (picked := next((a for a in given if a in c.options), None)) is not None:
        return picked
    out.print(f"[yellow]{escape(c.question)}[/yellow]", highlight=False)
    for i, (option, label) in enumerate(zip(c.options, c.labels or c.options, strict=True), 1):
        out.print(f"  {i}. {escape(label)}" + (f" [dim]({escape(option)})[/dim]" if label != option else ""),
                  highlight=False)
    if not interactive():
        err.print("answer with --answer OPTION (the name or fact in brackets)")
        raise typer.Exit(3)
    return c.options[click.prompt("which one", type=click.IntRange(1, len(c.options))) - 1]


def answered(ask: Callable[[dict[str, str]], T], given: Sequence[str] = ()) -> T:
    """`ask(answers)` again after each question it raises (Unclear, or an outcome's clarification) is settled."""
    answers: dict[str, str] = {}
    while True:
        try:
            result = ask(answers)
            c = getattr(result, "clarification", None)
        except Unclear as e:
            c = e.clarification
        if c is None:
            return result
        if c.word in answers:
            raise LLMError(f"the answer {answers[c.word]!r} to {c.question!r} was asked again")
        answers[c.word] = settle(c, given)


def print_outcome(o: Outcome) -> None:
    """What `tell` did with a sentence: the refused replies, then the change (or the dry run's)."""
    for i, issues in enumerate(o.rounds, 1):
        err.print(f"[yellow]reply {i} refused:[/yellow] " + escape("; ".join(issues)), highlight=False)
    if o.change:
        print_change(o.change)
    elif o.delta and not o.error:
        out.print("[cyan]dry run[/cyan], verified but not applied:")
        print_change(Change(id=0, delta=o.delta), "Proposed change")
    out.print(f"[dim]{len(o.calls)} LLM call(s), {o.prompt_tokens} prompt tokens[/dim]")
    if o.error:
        raise LLMError(o.error)


def print_plan(r: PlanReport, explain: bool = False) -> None:
    colour = "green" if r.solved else "red"
    state = "the full state" if r.used_full_state else f"{r.facts_pruned} of {r.facts_full} facts"
    if r.widenings:
        state += f" after {r.widenings} pruned state(s) given up"
    out.print(f"[{colour}]{r.status}[/{colour}] by {r.planner} in {r.seconds:.2f} s on {state} "
              f"(pruning {r.prune_seconds * 1000:.0f} ms)", highlight=False)
    for i, step in enumerate(r.plan, 1):
        out.print(f"  {i:3d}. {step}", highlight=False)
    if r.cost is not None:
        out.print(f"cost {r.cost:g} (total-cost)", highlight=False)
    if r.message:
        out.print(f"[dim]{r.message}[/dim]", highlight=False)
    print_why(r.why, r.alternative)
    if explain and r.problem_pddl:
        which = "the full state" if r.used_full_state else f"the pruned state ({r.facts_pruned} facts)"
        out.rule(f"the problem the planner answered: on {which}")
        out.print(r.problem_pddl, highlight=False, markup=False)


def print_why(causes: list[Cause], alternative: str | None) -> None:
    """Why a goal cannot be reached, each cause with its kind, and the closest goal that can."""
    for c in causes:
        out.print(f"[yellow]why not:[/yellow] {escape(f'[{c.kind}]')} {escape(c.explanation)}", highlight=False)
    if alternative:
        out.print(f"[cyan]the closest goal that can be reached:[/cyan] {escape(alternative)}", highlight=False)


def decide(d: Decision, as_json: bool) -> None:
    """Print one MCTS decision (its step is kept for `kgplan run`); exit status 2 if there is none."""
    if as_json:
        sys.stdout.write(json.dumps({**asdict(d), "step": str(d.step) if d.step else None}) + "\n")
    elif d.step is None:
        out.print(f"[red]no action[/red] after {d.simulations} simulations", highlight=False)
    else:
        out.print(f"[green]decided[/green] {d.step} after {d.simulations} simulations in {d.seconds:.2f} s "
                  f"(value {d.value:.2f}); `kgplan run` takes it, then observe and decide again", highlight=False)
    if d.step is None:
        raise typer.Exit(2)


@app.command()
def tell(
    text: Annotated[str, typer.Argument(help='A state change in English, e.g. "Sandra turned off the laundry '
                                             'room light".')],
    dry_run: Annotated[bool, typer.Option(help="Show the verified change without applying it.")] = False,
    retriever: RetrieverOption = Retriever.select,
    depth: Depth = DEPTH,
    rounds: Annotated[int, typer.Option(min=1, help="Replies allowed before giving up.")] = 3,
    mode: Annotated[TellMode, typer.Option(help="propose: the LLM names what the sentence is about and chooses "
                                                "among the changes the domain admits; rewrite: it writes the change, "
                                                "verification issues go back to it (--retriever, --depth and "
                                                "--rounds are for rewrite).")] = TellMode.propose,
    answer: Answer = None,
) -> None:
    """Tell the agent what changed: the LLM names what the sentence is about and chooses among the changes the
    domain admits, verification checks the change. Where the sentence does not tell which thing or fact it
    means, you are asked (numbered options), or it exits with status 3 naming them: then give --answer.

    The LLM is any OpenAI-compatible endpoint: KGPLAN_LLM_BASE_URL, KGPLAN_LLM_MODEL, OPENAI_API_KEY.
    """

    def go() -> None:
        with agent() as a:
            print_outcome(answered(lambda answers: a.tell(
                text, retriever=retriever, depth=depth, rounds=rounds, dry_run=dry_run,
                propose=mode == TellMode.propose, answers=answers), answer or ()))

    run_guarded(go)


@app.command()
def plan(
    task: Annotated[str | None, typer.Argument(help='A task in English, e.g. "Can you silence all the phones?" '
                                                    "(the LLM writes the goal).")] = None,
    goal: Annotated[str | None, typer.Option("--goal", "-g", help='A PDDL goal instead, e.g. "(and (not '
                                             '(switched_on kitchen_light)))"; and/or/not/imply/forall/exists.')]
    = None,
    planner: Annotated[PLANNERS.choice, typer.Option(help="The planner (`kgplan list planners` says what each is).")
                       ] = "fd",
    timeout: Annotated[float, typer.Option(help="Seconds for the whole plan call.")] = 60.0,
    memory: Annotated[int, typer.Option(min=1, help="Memory cap in MB (planner, grounding, pruning).")] = 4096,
    prune: Annotated[bool, typer.Option(help="Plan on the relevance-pruned state first.")] = True,
    explain: Annotated[bool, typer.Option(help="Also print the problem file the planner answered on, saying "
                                               "whether that was the pruned or the full state.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead.")] = False,
    search: Annotated[SEARCH_METHODS.choice | None, typer.Option(
        help="Decide one step by a tree search over the belief about unknown places instead (a one-step plan; "
             "observe, then decide again); `kgplan list searches` says what each method is.")] = None,
    simulations: Annotated[int, typer.Option(min=1, help="Simulations per decision (with --search).")] = 100,
    belief: Annotated[BELIEFS.choice | None, typer.Option(
        help="With --search: where the items probably are, from this belief in place of the method's own "
             "(llm needs an LLM).")] = None,
    answer: Answer = None,
    goal_mode: Annotated[GoalMode, typer.Option(help="write: the LLM writes the task's goal from what --retriever "
                                                     "shows it (L3M+P); propose: it names what the task is about and "
                                                     "chooses among the goal literals the domain admits.")
                         ] = GoalMode.write,
    retriever: RetrieverOption = Retriever.select,
    depth: Depth = DEPTH,
) -> None:
    """Plan for a task (English, through the LLM) or a PDDL goal; `kgplan run` then executes the plan."""

    def go() -> None:
        if task is None and goal is None:
            raise InputError("give a task in English or a PDDL goal with --goal")
        with agent() as a:
            text = goal if task is None else answered(
                lambda answers: a.goal_for(task, answers, propose=goal_mode == GoalMode.propose,
                                           retriever=retriever, depth=depth), answer or ())
            if task is not None and not as_json:
                out.print(f"goal: {text}", highlight=False)
            if search:
                decide(a.search(text, str(search), simulations=simulations, belief=belief and str(belief)), as_json)
                return
            r = a.plan(goal=text, planner=str(planner), timeout=timeout, prune=prune, memory_mb=memory)
        if as_json:
            sys.stdout.write(json.dumps(r.to_json()) + "\n")
        else:
            print_plan(r, explain)
        if not r.solved:
            raise typer.Exit(2)

    run_guarded(go)


@app.command()
def chat() -> None:
    """Talk to the agent: say what changed or what to do; the LLM tells the two apart.

    /run executes the last plan, /history shows the changes, /quit (or an empty line) ends.
    """

    def go() -> None:
        with agent() as a:
            a.llm  # noqa: B018  (no LLM configured: say so before the first line)
            while (line := typer.prompt("you", default="", show_default=False).strip()) not in ("", "/quit"):
                try:
                    if line in ("/run", "/history"):
                        (run_plan if line == "/run" else history)()
                    elif line.startswith("/"):
                        err.print("commands: /run /history /quit")
                    elif a.classify(line) == "task":
                        goal_text = answered(lambda answers: a.goal_for(line, answers))
                        out.print(f"goal: {goal_text}", highlight=False)
                        print_plan(a.plan(goal=goal_text))
                    else:
                        print_outcome(answered(lambda answers: a.tell(line, answers=answers)))
                except typer.Exit:
                    pass  # the command has said why
                except Exception as e:
                    if not report(e):
                        raise

    run_guarded(go)


@app.command(name="run")
def run_plan() -> None:
    """Execute the last plan on the graph, one verified change per action (provenance `plan`).

    The plan is first simulated on the graph as it is now: one that no longer applies is refused, nothing
    executed. A plan runs once; plan again to run anew.
    """

    def go() -> None:
        with agent() as a:
            _, n, result = a.run()
        out.print(f"Executed {len(result.changes)} of {n} steps as changes "
                  f"{', '.join(f'#{c}' for c in result.changes) or '(none)'}")
        if result.failure:
            err.print(f"[red]stopped:[/red] {escape(str(result.failure))}; replan with `kgplan plan --goal ...`",
                      highlight=False)
            if result.why:
                err.print(f"[yellow]why:[/yellow] {escape(result.why.explanation)}", highlight=False)
            raise typer.Exit(1)

    run_guarded(go)


@app.command()
def why(
    goal: Annotated[str, typer.Argument(help='A PDDL goal, e.g. "(person_at omar bedroom)".')],
    planner: Annotated[PLANNERS.choice, typer.Option(help="The planner (`kgplan list planners`).")] = "fd",
    timeout: Annotated[float, typer.Option(help="Seconds for each plan call (the goal, then the closest one).")]
    = 60.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead.")] = False,
) -> None:
    """Why a goal cannot be reached from the graph's state (its facts that no action reaches and their first missing
    link, the invariants it contradicts, the names or facts the graph lacks), and the closest goal that can be
    reached, planned (`kgplan run` runs that plan). Exit status 2 if the goal cannot be reached."""

    def go() -> None:
        with agent() as a:
            r, w, alt = a.why(goal, planner=str(planner), timeout=timeout)
        if as_json:
            sys.stdout.write(json.dumps({"goal": goal, "solved": w is None,
                                         "why": [c.to_json() for c in w.causes] if w else [],
                                         "alternative": w.alternative if w else None,
                                         "alternative_plan": alt.to_json() if alt else None}) + "\n")
        elif w is None:
            out.print("[green]nothing stops it[/green]: the goal can be reached (`kgplan run` runs the plan)")
            if r is not None:
                print_plan(r)
        else:
            print_why(w.causes, None)
            if alt is not None:
                out.print(f"[cyan]the closest goal that can be reached:[/cyan] {escape(w.alternative or '')}",
                          highlight=False)
                print_plan(alt)
        if w is not None:
            raise typer.Exit(2)

    run_guarded(go)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on; anything but loopback needs KGPLAN_API_TOKEN "
                                           "(or --insecure-no-token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    domain: Annotated[str | None, typer.Option(help="Initialise an empty store with this domain first (a bundled "
                                                    "name or a path); a store already set up is kept.")] = None,
    problem: Annotated[Path | None, typer.Option(help="With --domain: the PDDL problem an empty store is loaded "
                                                      "with.")] = None,
    token: Annotated[str | None, typer.Option(envvar="KGPLAN_API_TOKEN", show_envvar=True, show_default=False,
                                              help="A token every write must send as `Authorization: Bearer`.")]
    = None,
    allowed_host: Annotated[list[str] | None, typer.Option(help="Another name clients reach the server by (its Host "
                                                                "header; IP addresses, localhost and --host always); "
                                                                "* for any.")] = None,
    insecure_no_token: Annotated[bool, typer.Option(help="Serve writes beyond this machine without a token.")]
    = False,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the web page at / to inspect and correct the graph."""
    from kgplan.interfaces.api import check_exposure
    from kgplan.interfaces.api import serve as run_server

    def go() -> None:
        check_exposure(host, token, insecure_no_token)
        with agent() as a:
            if domain and not a.initialised:
                a.init(domain, problem)
            a.domain  # noqa: B018  (fail now, with a clear message, if the store is not initialised)
            out.print(f"kgplan on {a.graph.url}: http://{host}:{port}/ (API docs at /docs)")
            run_server(a, host, port, token, allowed_host or ())

    run_guarded(go)


@app.command()
def mcp() -> None:
    """Serve the agent to an LLM assistant over MCP on stdio (tools: tell, plan, decide, run, show, search, history,
    undo)."""
    from kgplan.interfaces.mcp import serve as run_server

    def go() -> None:
        with agent() as a:
            run_server(a)

    run_guarded(go)


ExploreMode = StrEnum("ExploreMode", ["sensor", "llm"])
ExploreLLM = StrEnum("ExploreLLM", ["openai", "oracle"])


@app.command()
def explore(
    game: Annotated[GAMES.choice, typer.Option(help="The game (`kgplan list games` says what each is).")] = "coin",
    seed: Annotated[int, typer.Option(min=0, max=2**31 - 1, help="Game seed (0-9 for development, 10-59 are the "
                                                                   "reported ones).")] = 0,
    planner: Annotated[PLANNERS.choice | None, typer.Option(
        help="Planner for the goal and the sub-goals (default: the domain's, see its domain.toml).")] = None,
    mode: Annotated[ExploreMode, typer.Option(
        help="sensor: read the game's structured outputs; llm: the LLM edits the problem from the prose.")
    ] = ExploreMode.sensor,
    llm: Annotated[ExploreLLM, typer.Option(
        help="LLM mode's model: openai (the endpoint of --llm-url / KGPLAN_LLM_*) or oracle (a check device "
             "answering the true edits, read by the sensor).")] = ExploreLLM.openai,
) -> None:
    """Play a partially observed game: plan for the goal or the domain's sub-goals, act, observe, replan.

    Each step shows the observation, the verified graph change, the goal tried, the plan and the action.
    The graph is a fresh one per game (the --store option is not used). The TextWorld-Express games need
    textworld-express and Java 17, the TextWorld ones textworld.
    """
    from kgplan.agent.explore import explore as play
    from kgplan.games.base import GameUnavailable
    from kgplan.games.oracle import SensorOracleLLM

    model = None
    if mode == ExploreMode.llm and llm == ExploreLLM.openai:
        from kgplan.language.llm import LLMConfig, OpenAIClient

        model = run_guarded(lambda: OpenAIClient(_llm() or LLMConfig.from_env()))
    try:
        env = GAMES[game].environment()
    except GameUnavailable as e:
        err.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from None
    if mode == ExploreMode.llm and llm == ExploreLLM.oracle:
        model = SensorOracleLLM(GAMES[game].sensor)
        env = model.watch(env)
    try:
        ep = run_guarded(lambda: play(env, str(game), seed, planner=planner and str(planner), llm=model,
                                      show=lambda line: out.print(line, highlight=False, markup=False)))
    finally:
        env.close()
    raise typer.Exit(0 if ep.success else 1)


REGISTRIES: dict[str, Registry] = {"planners": PLANNERS, "games": GAMES, "searches": SEARCH_METHODS,
                                   "game-searches": GAME_SEARCHES, "stores": BACKENDS}


@app.command(name="list")
def list_(what: Annotated[str, typer.Argument(help="planners, games, searches, game-searches or stores")]) -> None:
    """List what can be chosen, with what each one is: the planners (`plan --planner`), the games (`explore
    --game`), the search methods (`plan --search`), the searches over a game engine (`bench textgames
    --methods`), the store backends (`--store`)."""

    def go() -> None:
        if what not in REGISTRIES:
            raise InputError(f"list what? choose one of {', '.join(REGISTRIES)}")
        t = Table("name", "what it is", title=what)
        for entry in REGISTRIES[what]:
            t.add_row(entry.name, entry.help)
        out.print(t)

    run_guarded(go)


def benchmarks() -> dict[str, EntryPoint]:
    """The benchmarks installed: entry points of the group `kgplan.benchmarks` (pyproject.toml), each a
    `main(argv) -> exit status`."""
    return {e.name: e for e in entry_points(group="kgplan.benchmarks")}


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []})
def bench(ctx: typer.Context, name: Annotated[str | None, typer.Argument(
        help="The benchmark; `kgplan bench NAME --help` lists its options.")] = None) -> None:
    """Run a benchmark (its own options follow; see `kgplan bench NAME --help`)."""
    found = benchmarks()
    if name in (None, "-h", "--help"):
        out.print(ctx.get_help())
        out.print(f"benchmarks: {', '.join(sorted(found))}")
        return
    if name not in found:
        err.print(f"[red]error:[/red] no benchmark {name!r}: choose {', '.join(sorted(found))}")
        raise typer.Exit(1)
    raise typer.Exit(found[name].load()(ctx.args))
