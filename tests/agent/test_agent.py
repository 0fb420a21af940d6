"""The Agent facade, and the CLI papercuts of issue 9 item 17 (through Typer's CliRunner)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgplan.agent.agent import Agent, Retriever
from kgplan.domains.verify import ChangeRefused
from kgplan.errors import KgplanError
from kgplan.graph.model import Delta, Fact
from kgplan.interfaces.cli import app
from kgplan.language.llm import ScriptedLLM
from tests.conftest import HOUSEHOLD
from tests.support.fake_llm import mentions, pick

runner = CliRunner()


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    a = Agent(f"sqlite:{tmp_path / 'a.db'}", llm=ScriptedLLM())
    a.init("household", HOUSEHOLD / "world.pddl")
    return a


def test_change_undo_history_and_dry_run(agent: Agent) -> None:
    before = agent.facts()
    with pytest.raises(ChangeRefused):
        agent.change(add=["(on apple kitchen_table)"])
    assert agent.facts() == before
    proposed = agent.change(add=["(switched_on hallway_light)"], note="dry", dry_run=True)
    assert proposed.id == 0 and agent.facts() == before
    c = agent.change(add=["(switched_on hallway_light)"], note="I turned it on")
    assert "(switched_on hallway_light)" in map(str, agent.facts("switched_on"))
    assert agent.history(1)[0].delta.text == "I turned it on"
    agent.undo(c.id)
    assert agent.facts() == before
    with pytest.raises(KgplanError, match="empty"):
        agent.change()


def test_reads(agent: Agent) -> None:
    n = agent.show("kitchen", depth=1)
    assert n.entity.name == "kitchen" and any("kitchen" in f.args for f in n.facts)
    assert {e.name for e in agent.entities(type="light")} >= {"kitchen_light"}
    assert all("phone" in e.name or "phone" in e.type for e in agent.entities(search="phone"))
    with pytest.raises(KgplanError, match="no entity"):
        agent.show("nowhere")
    with pytest.raises(KgplanError, match="unknown predicate"):
        agent.facts("flying")
    with pytest.raises(KgplanError, match="unknown type"):
        agent.entities(type="spaceship")
    assert agent.settings()["domain"] == "household"


def test_tell_plan_and_run_through_the_facade(agent: Agent) -> None:
    light = next(f for f in agent.facts("switched_on"))
    name = light.args[0]
    said = name.replace("_", " ")
    agent._llm = ScriptedLLM([mentions(said), lambda m: pick(m, switched_on=f"no longer: {said} is switched on")])
    steps: list[str] = []
    o = agent.tell(f"{light.args[0]} was switched off", progress=steps.append)
    assert o.change is not None and o.error is None and steps
    assert light not in agent.facts("switched_on")
    r = agent.plan(goal=f"(switched_on {light.args[0]})")
    assert r.solved and r.plan
    _, n, done = agent.run()
    assert done.done and len(done.changes) == n and light in agent.facts("switched_on")
    with pytest.raises(KgplanError, match="either"):
        agent.plan()


def test_domain_given_initialises_an_empty_store(tmp_path: Path) -> None:
    with Agent(f"sqlite:{tmp_path / 'b.db'}", domain="household") as a:
        assert a.domain.name == "household" and a.count() == (0, 0)


def test_bench_help_is_the_benchmarks_own() -> None:
    r = runner.invoke(app, ["bench", "planning", "--help"])
    assert r.exit_code == 0 and "kgplan bench planning" in r.output and "--scaling" in r.output
    r = runner.invoke(app, ["bench", "--help"])
    assert r.exit_code == 0 and "graph_ops" in r.output
    r = runner.invoke(app, ["bench", "nope"])
    assert r.exit_code == 1 and "choose api, graph_ops" in r.output


def test_unknown_planner_lists_the_choices(tmp_path: Path) -> None:
    r = runner.invoke(app, ["-s", f"sqlite:{tmp_path / 'c.db'}", "plan", "--planner", "foo", "-g", "(x)"])
    assert r.exit_code == 2
    assert "fd-opt" in r.output and "symk-opt" in r.output and "Traceback" not in r.output


def test_explain_says_which_attempt_answered(agent: Agent) -> None:
    store = agent.graph.url
    agent.close()
    r = runner.invoke(app, ["-s", store, "plan", "-g", "(not (switched_on kitchen_light))", "--explain"])
    assert r.exit_code == 0, r.output
    assert "answered: on the pruned state" in r.output and "(:init" in r.output
    r = runner.invoke(app, ["-s", store, "plan", "-g", "(not (switched_on kitchen_light))", "--explain",
                            "--no-prune"])
    assert r.exit_code == 0 and "answered: on the full state" in r.output


def test_cli_commands_through_the_agent(tmp_path: Path) -> None:
    store = ["-s", f"sqlite:{tmp_path / 'cli.db'}"]
    r = runner.invoke(app, [*store, "init", "--problem", str(HOUSEHOLD / "world.pddl")])
    assert r.exit_code == 0 and "invariants" in r.output, r.output
    assert runner.invoke(app, [*store, "check"]).output.strip() == "no issues"
    r = runner.invoke(app, [*store, "invariants"])
    assert r.exit_code == 0 and r.output.strip()
    r = runner.invoke(app, [*store, "show", "kitchen_light"])
    assert r.exit_code == 0 and "switched_on" in r.output
    r = runner.invoke(app, [*store, "show", "atlantis"])
    assert r.exit_code == 1 and "no entity named 'atlantis'" in r.output
    r = runner.invoke(app, [*store, "remove", "--entity", "kitchen_light", "--note", "taken down"])
    assert r.exit_code == 0 and "gone" in r.output, r.output
    assert runner.invoke(app, [*store, "show", "kitchen_light"]).exit_code == 1
    r = runner.invoke(app, [*store, "undo", "2"])
    assert r.exit_code == 0 and runner.invoke(app, [*store, "show", "kitchen_light"]).exit_code == 0
    r = runner.invoke(app, [*store, "add", "(on apple kitchen_table)"])
    assert r.exit_code == 1 and "Change refused" in r.output


@pytest.mark.parametrize(("reply", "rest", "act"), [
    ({"mentions": ["the kitchen light"]}, [lambda m: pick(m, switched_on="no longer: kitchen light is switched on")],
     lambda a: a.tell("the kitchen light went off")),
    ({"add": [], "remove": [{"predicate": "switched_on", "args": ["kitchen_light"]}]}, [],
     lambda a: a.tell("the kitchen light went off", retriever=Retriever.whole, propose=False)),
    ({"init": {"delete": ["(switched_on kitchen_light)"]}}, [],  # exploration's reading of an observation
     lambda a: a.read_observation("The kitchen light is off.")),
], ids=["tell", "tell_rewrite", "read_observation"])
def test_the_llm_is_asked_without_the_writers_lock(agent: Agent, reply: dict, rest: list, act) -> None:
    """Issue 21 item 14: while a tell (or an observation read by the LLM) waits for a slow LLM, a plain change on
    the same agent is applied; the LLM's change is verified against the graph as it is when the reply comes."""
    asked, answer = threading.Event(), threading.Event()

    def slow(messages: list[dict]) -> str:
        asked.set()
        answer.wait(60)
        return json.dumps(reply)

    agent._llm = ScriptedLLM([slow, *rest])
    done: list = []
    asking = threading.Thread(target=lambda: done.append(act(agent)))
    asking.start()
    assert asked.wait(60)
    plain = threading.Thread(target=agent.change, kwargs={"add": ["(switched_on hallway_light)"], "note": "plain"})
    plain.start()
    plain.join(60)  # a bound against a deadlock, not a timing
    waited = plain.is_alive()
    answer.set()
    asking.join(60)
    assert not waited, "the plain change waited for the LLM call"
    assert done and done[0].change is not None, done
    assert [c.delta.text for c in agent.history(2)][1] == "plain"
    on = set(map(str, agent.facts("switched_on")))
    assert "(switched_on hallway_light)" in on and "(switched_on kitchen_light)" not in on


def test_run_simulates_the_plan_first_and_runs_it_once(agent: Agent) -> None:
    """Issue 21 item 8, through the Agent (the API's and MCP's run): a stale plan is refused with the step and
    its unmet precondition, nothing applied; a plan that ran is not run again."""
    assert agent.plan(goal="(and (switched_on hallway_light) (not (switched_on kitchen_light)))").solved
    agent.change(remove=["(switched_on kitchen_light)"])
    before = agent.history(1)[0].id
    with pytest.raises(KgplanError, match=r"no longer applies .*cannot run: precondition \(switched_on "
                                          r"kitchen_light\) is false"):
        agent.run()
    assert agent.history(1)[0].id == before
    assert agent.plan(goal="(switched_on hallway_light)").solved
    _, n, done = agent.run()
    assert done.done and n == 1
    with pytest.raises(KgplanError, match=rf"already run \(#{done.changes[0]}\)"):
        agent.run()


def test_a_plan_stopped_while_running_says_which_change_broke_its_step(agent: Agent) -> None:
    """Issue 25 item 3: another writer's change lands after the plan was simulated (it writes to the store, not through
    this Agent): the run stops at the step, naming its unmet precondition and that change."""
    assert agent.plan(goal="(and (switched_on hallway_light) (not (switched_on kitchen_light)))").solved
    changed: list[int] = []

    def meanwhile(said: str) -> None:
        if said.startswith("executing"):
            changed.append(agent.graph.apply(Delta(remove=[Fact.parse("(switched_on kitchen_light)")],
                                                   text="Omar switched it off")).id)

    _, _, done = agent.run(meanwhile)
    assert not done.done and done.failure is not None and done.why is not None
    assert (done.why.kind, done.why.literal) == ("changed", "(switched_on kitchen_light)")
    assert done.why.explanation == (
        f"step {done.failure.step} {done.failure.action} needs (switched_on kitchen_light) (\"kitchen_light is "
        f"switched on\"); changed since the plan was made by change #{changed[0]} (user: 'Omar switched it off'), "
        "which removed (switched_on kitchen_light)")
