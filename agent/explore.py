"""Iterative planning in a partially observed world (PDDLEGO): plan for the end goal when the graph
allows it, else for the domain's sub-goals in order; act one step, observe, apply the verified change,
replan when the observation brought anything the plan did not expect; stop on success or budget.

Observations become changes in one of two modes: sensor mode reads the environment's structured outputs
(kgplan.games); LLM mode gives the prose to an LLM that edits the problem (kgplan.language.pddl_edit).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kgplan.agent.agent import Agent
from kgplan.domains.formula import GroundAtom
from kgplan.domains.model import Domain, Problem, resolve_domain
from kgplan.domains.verify import ChangeRefused
from kgplan.games import GAMES
from kgplan.games.base import Environment, Observation, Sensor
from kgplan.graph.model import Change, Delta
from kgplan.language.llm import LLM
from kgplan.language.pddl_edit import NO_EFFECTS, NO_PLAN, Effects, lasting, read, swap
from kgplan.planners.pipeline import PlanReport
from kgplan.planners.state import Step, action_text


@dataclass
class Episode:
    """One run of the loop on one seed, with the benchmark's measurements."""

    seed: int
    success: bool = False
    steps: int = 0
    optimal: int = 0  # length of an omniscient shortest solution
    invalid: int = 0  # actions that were not admissible when taken
    replans: int = 0
    planner_seconds: float = 0.0
    reason: str = ""
    llm_calls: int = 0  # LLM mode: calls, tokens, and observations whose edits were refused in every round
    prompt_tokens: int = 0
    completion_tokens: int = 0
    refused_edits: int = 0
    unread: int = 0
    llm_seconds: float = 0.0
    rereads: int = 0  # LLM mode: observations read again because the problem had no plan


def explore(env: Environment, game: str, seed: int, planner: str | None = None,
            show: Callable[[str], None] = lambda _: None, store: str | None = None, llm: LLM | None = None,
            rounds: int = 3, free_edits: bool = False) -> Episode:
    """Run the loop on one seed; a fresh sqlite graph per episode unless `store` is given; the planner
    is domain.toml's [explore] planner unless given. Sensor mode, or LLM mode given `llm`: the model names
    and chooses (pddl_edit.read), or with `free_edits` writes the edits itself (pddl_edit.observe); at most
    `rounds` replies per observation, and as in PDDLEGO an observation whose reading leaves no plan is read
    again, at most `rounds` times."""
    spec = GAMES[game]
    domain = resolve_domain(spec.domain)
    cfg = domain.meta["explore"]
    planner = planner or cfg.get("planner", "fd")
    ep = Episode(seed)
    sensor = spec.sensor()
    with tempfile.TemporaryDirectory(prefix="kgplan-explore-") as tmp:
        agent = Agent(store or f"sqlite:{Path(tmp) / 'world.db'}", llm=llm)
        ep.optimal = env.optimum(seed)
        obs = env.reset(seed)
        if llm is None:
            start(agent, domain, sensor, obs)
        elif free_edits:
            agent.graph.init(domain)  # the LLM's first edits make the first state
        else:  # the first state is what domain.toml says is known beforehand
            known = " ".join(f"{n} - {t}" for n, t in cfg.get("known", {}).items())
            agent.graph.init(domain, problem=Problem.parse(
                f"(define (problem start) (:domain {domain.name}) (:objects {known}) (:init))", "domain.toml"))
        action: str | None = None
        plan: list[Step] = []
        expected: set = set()
        effects: Effects = NO_EFFECTS
        took, rereads = False, 0
        settled: set[GroundAtom] = set()  # what admitted actions made false for good (LLM mode: never read true again)
        done: set[GroundAtom] = set()  # what admitted actions made true, until one makes it false (LLM mode: kept)
        refused = False  # the game did not admit the action (LLM mode: its answer is not read)
        while True:
            show(f"observation: {obs.text.strip()}")
            if llm is None:
                delta = sensor.delta(set(agent.facts()), {e.name for e in agent.entities()}, action, obs)
                try:
                    change = agent.observe([delta])[0] if not delta.is_empty() else None
                except ChangeRefused as e:
                    ep.reason = f"observation refused: {e}"
                    break
            else:
                change = _read(agent, action, obs, ep, rounds, show, free_edits, effects, took, settled, done, refused)
                effects = NO_EFFECTS if change else effects  # applied with the reading
            delta = change.delta if change else Delta()
            if change:
                show(f"graph change {change.id}: +{[str(f) for f in delta.add]} -{[str(f) for f in delta.remove]}"
                     + (f" new {[e.name for e in delta.new_entities]}" if delta.new_entities else "")
                     + (f" unknown {[str(u) for u in delta.unknown]}" if delta.unknown else ""))
            if obs.won:
                ep.success = True
                break
            if obs.done or ep.steps >= env.budget:
                ep.reason = "budget spent" if ep.steps >= env.budget else "the game ended in failure"
                break
            surprise = bool(delta.new_entities) or set(delta.add) | set(delta.remove) != expected
            if surprise or not plan:
                plan = _plan(agent, cfg, planner, ep, show)
                while not plan and llm is not None and not free_edits and rereads < rounds:
                    rereads += 1
                    ep.rereads += 1
                    show("no plan: the observation is read again")
                    if _read(agent, action, obs, ep, rounds, show, free_edits, effects, took, settled, done, refused,
                             NO_PLAN):
                        effects = NO_EFFECTS
                    plan = _plan(agent, cfg, planner, ep, show)
                if not plan and "belief" in agent.domain.meta:  # nothing symbolic: search the belief (MCTS)
                    plan = [d.step] if (d := agent.search(cfg["goal"])).step else []
                if not plan:
                    ep.reason = "no plan for the goal or any sub-goal"
                    break
            step = plan.pop(0)
            added, removed = agent.effects([step])[0]
            expected, rereads = set(added) | set(removed), 0
            action = action_text(step, cfg[env.commands])
            effects = ([f.atom for f in added], [f.atom for f in removed]) if action in obs.admissible else NO_EFFECTS
            settled |= lasting(agent.domain, effects[1])
            done = (done - set(effects[1])) | set(effects[0])
            refused = bool(obs.admissible) and action not in obs.admissible
            ep.invalid += action not in obs.admissible
            show(f"action {ep.steps + 1}: {action}")
            before, obs = set(obs.admissible), env.step(action)
            took = any(effects) and set(obs.admissible) != before  # a failed action changes no command
            ep.steps += 1
        agent.close()
    show(f"{'success' if ep.success else 'failure: ' + ep.reason} after {ep.steps} steps "
         f"(omniscient optimum {ep.optimal})")
    return ep


def start(agent: Agent, domain: Domain, sensor: Sensor, obs: Observation) -> None:
    """Initialise the graph with what the sensor knows beforehand and sees first (the invariants are
    derived for that state, as for any open-world domain: see graph.world._start)."""
    delta = sensor.delta(set(sensor.facts), set(sensor.objects), None, obs)
    objects = {**sensor.objects, **{e.name: e.type for e in delta.new_entities}}
    init = (set(sensor.facts) | set(delta.add)) - set(delta.remove)
    text = (f"(define (problem start) (:domain {domain.name}) (:objects "
            f"{' '.join(f'{n} - {t}' for n, t in objects.items())}) (:init {' '.join(sorted(map(str, init)))}))")
    agent.graph.init(domain, problem=Problem.parse(text, "first observation"))
    if delta.unknown:  # a PDDL problem holds no marks
        agent.observe([Delta(unknown=delta.unknown, source="sensor", text="start")])


def _read(agent: Agent, action: str | None, obs: Observation, ep: Episode, rounds: int,
          show: Callable[[str], None], free_edits: bool, effects: Effects, took: bool, settled: set[GroundAtom],
          done: set[GroundAtom], refused: bool, note: str | None = None) -> Change | None:
    """LLM mode: the change the LLM's reading of an observation made (None if none was applied); `effects`: what
    the action just taken made true and false, where the game accepted it; `took`: it changed the game's commands;
    `settled`: what admitted actions made false for good, `done` what they made true (until one makes it false), each
    renamed in place where the change merges a placeholder; `refused`: the game did not admit the action."""
    out = (agent.read_observation(obs.text, action, rounds) if free_edits else
           read(agent.llm, agent.graph, action, obs.text, obs.admissible, effects, rounds, note, agent.writes,
                took, settled, done, refused))
    ep.llm_calls += len(out.calls)
    ep.prompt_tokens += sum(c.prompt_tokens for c in out.calls)
    ep.completion_tokens += sum(c.completion_tokens for c in out.calls)
    ep.llm_seconds += sum(c.latency_s for c in out.calls)
    ep.refused_edits += len(out.rounds)
    for issues in out.rounds:
        show(f"edits refused: {'; '.join(issues)}")
    if out.error:
        ep.unread += 1
        show(f"observation not read: {out.error}")
    if out.change and (into := merged(out.change.delta)):
        for facts in (settled, done):
            renamed = {GroundAtom(a.predicate, tuple(into.get(x, x) for x in a.args)) for a in facts}
            facts.clear()
            facts |= renamed
    return out.change


def merged(delta: Delta) -> dict[str, str]:
    """The entities a recorded change merged into others (old -> new): a removed entity whose fact of two or more
    places the change adds again, the other places the same, with another name in its place (the placeholder
    room behind a door, once entered)."""
    gone, added = set(delta.removed_names()), [f.atom for f in delta.add]
    return {pair[0]: pair[1] for a in (f.atom for f in delta.remove) if len(a.args) > 1 for b in added
            if (pair := swap(a, b)) and pair[0] in gone}


def first_plan(agent: Agent, goals: list[str], planner: str, prune: bool = True,
               seen: Callable[[str, PlanReport], None] = lambda goal, report: None) -> list[Step]:
    """PDDLEGO's choice of what to plan for: a plan for the first of `goals` (the end goal, then the domain's
    sub-goals in order) that has one, empty if none; `seen` is told each goal tried and its report."""
    for goal in goals:
        report = agent.plan(goal=goal, planner=planner, prune=prune)
        seen(goal, report)
        if report.solved and report.plan:
            return list(report.plan)
    return []


def _plan(agent: Agent, cfg: dict, planner: str, ep: Episode, show: Callable[[str], None]) -> list[Step]:
    """A plan for the end goal, else for the first sub-goal that has one, on the whole graph (it is small)."""

    def seen(goal: str, report: PlanReport) -> None:
        ep.planner_seconds += report.seconds
        show(f"goal {goal}: plan {[str(s) for s in report.plan]}" if report.solved and report.plan
             else f"goal {goal}: {report.status}")

    ep.replans += 1
    return first_plan(agent, [cfg["goal"], *cfg.get("subgoals", [])], planner, prune=False, seen=seen)
