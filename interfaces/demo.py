"""`kgplan demo`: the household world end to end on the embedded store."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from kgplan.agent.agent import Agent, load_observations
from kgplan.domains.model import BUNDLED
from kgplan.domains.verify import ChangeRefused
from kgplan.graph.model import Change

HOUSEHOLD = BUNDLED / "household"


def run_demo(store: str, out: Console, print_change: Callable[[Change, str], None]) -> None:
    """Build the demo house, apply sensor observations (one is wrong and refused), undo one, then
    plan a task on the pruned graph and execute it."""
    with Agent(store) as a:
        a.init(HOUSEHOLD, HOUSEHOLD / "world.pddl", force=True)
        ents, facts = a.count()
        out.rule("1. The world graph")
        out.print(f"Loaded the household world into {a.graph.url}: {ents} entities, {facts} facts. "
                  "Invariants derived from the domain's actions for this initial state:")
        for inv in a.domain.invariants:
            out.print(f"  - {inv.describe()}", highlight=False)
        out.rule("2. Sensor observations (each verified before it is applied)")
        for delta in load_observations(HOUSEHOLD / "observations.json"):
            out.print(f"[bold]{delta.text}[/bold]")
            try:
                print_change(*a.observe([delta]), "Applied change")
            except ChangeRefused as e:
                out.print("[red]  refused, graph unchanged:[/red]")
                for issue in e.issues:
                    out.print(f"    [{issue.kind}] {issue.message}", highlight=False)
        out.rule("3. Correction: undo the light observation")
        print_change(a.undo(a.history(1)[0].id), "Undo applied as change")
        out.rule("4. Planning: hand Sandra her phone and switch off every light")
        goal = "(and (held_by sandra_phone sandra) (forall (?l - light) (not (switched_on ?l))))"
        out.print(f"goal: {goal}", highlight=False)
        r = a.plan(goal=goal)
        out.print(f"{r.status} by {r.planner} in {r.seconds:.2f} s, on {r.facts_pruned} of {r.facts_full} "
                  f"facts kept by relevance pruning:", highlight=False)
        for i, step in enumerate(r.plan, 1):
            out.print(f"  {i:2d}. {step}", highlight=False)
        _, _, done = a.run()
        out.print(f"executed {len(done.changes)} steps, each a verified change"
                  + (f"; stopped: {done.failure}" if done.failure else ""), highlight=False)
        out.rule("5. History")
        t = Table("id", "source", "text", "+", "-", "new")
        for ch in reversed(a.history(None)):
            n = ch.sizes
            t.add_row(str(ch.id), ch.delta.source, ch.delta.text, str(n["add"]), str(n["remove"]),
                      str(n["new_entities"]))
        out.print(t)
        ents, facts = a.count()
        out.print(f"Final graph: {ents} entities, {facts} facts. Inspect it with "
                  f"`kgplan --store {store} show kitchen`.")
