"""The language layer with a scripted LLM: prompts asserted on, replies verified, re-prompting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgplan.graph.model import Fact
from kgplan.graph.world import WorldGraph
from kgplan.language.llm import ScriptedLLM
from kgplan.language.update import full_graph, select_entities, update, write_goal

F = Fact.parse


def reply(add: list[str] = (), remove: list[str] = ()) -> str:
    def facts(xs: list[str]) -> list[dict]:
        return [{"predicate": f.predicate, "args": list(f.args)} for f in map(F, xs)]

    return json.dumps({"add": facts(list(add)), "remove": facts(list(remove))})


def test_update_applies_a_verified_change(world: WorldGraph) -> None:
    llm = ScriptedLLM([reply(["(on apple kitchen_table)"], ["(on apple kitchen_counter)"])])
    text = "Omar moved the apple to the kitchen table."
    out = update(llm, world, text, full_graph(world))
    assert out.error is None and out.change is not None and out.rounds == []
    assert F("(on apple kitchen_table)") in world.facts()
    last = world.history()[-1].delta
    assert last.source == "nl" and last.text == text and last.model == "scripted"
    system, user = llm.prompts[0]
    assert "(on ?i - item ?f - furniture): item ?i is on ?f" in system["content"]
    assert text in user["content"] and "(on apple kitchen_counter)" in user["content"]


def test_issues_are_fed_back_and_the_corrected_reply_applied(world: WorldGraph) -> None:
    llm = ScriptedLLM([reply(["(on apple kitchen_table)"]),  # forgets that the apple left the counter
                       reply(["(on apple kitchen_table)"], ["(on apple kitchen_counter)"])])
    out = update(llm, world, "The apple is on the kitchen table now.", full_graph(world))
    assert out.change is not None and len(out.rounds) == 1 and "at once" in out.rounds[0][0]
    feedback = llm.prompts[1][-1]["content"]
    assert "refused" in feedback and "(on apple kitchen_counter) and (on apple kitchen_table)" in feedback
    assert "if (on apple kitchen_table) is now true, also remove (on apple kitchen_counter)" in feedback
    assert llm.prompts[1][-2]["role"] == "assistant"


def test_refused_every_time_leaves_the_graph_unchanged(world: WorldGraph) -> None:
    before = world.facts()
    llm = ScriptedLLM([reply(["(switched_on kitchen_light)"])] * 3)
    out = update(llm, world, "The kitchen light came on.", full_graph(world), max_rounds=3)
    assert out.change is None and "no valid change after 3" in out.error and len(out.rounds) == 3
    assert world.facts() == before


def test_names_outside_the_enums_are_rejected_by_the_schema(world: WorldGraph) -> None:
    before = world.facts()
    bad = json.dumps({"add": [{"predicate": "light_on", "args": ["kitchen_light"]}], "remove": []})
    out = update(ScriptedLLM([bad]), world, "The light is on.", full_graph(world), max_rounds=1)
    assert out.change is None and "light_on" in out.error and world.facts() == before
    llm = ScriptedLLM([bad, reply(["(switched_on hallway_light)"])])
    out = update(llm, world, "The hall light is on.", full_graph(world))
    assert out.change is not None and out.error is None and len(out.rounds) == 1
    assert "invalid" in llm.prompts[1][-1]["content"] and "light_on" in llm.prompts[1][-1]["content"]


def test_dry_run_and_no_op(world: WorldGraph) -> None:
    n = len(world.history())
    out = update(ScriptedLLM([reply(["(switched_on hallway_light)"])]), world, "hall light on",
                 full_graph(world), dry_run=True)
    assert out.delta is not None and out.change is None and len(world.history()) == n
    out = update(ScriptedLLM([reply()]), world, "Nothing happened.", full_graph(world))
    assert out.error == "the sentence changes nothing in the graph"


def test_entity_selection_retrieves_the_neighbourhood(world: WorldGraph) -> None:
    llm = ScriptedLLM([json.dumps({"entities": ["laundry_room_light"]}),
                       reply(remove=["(switched_on bathroom_faucet)"])])
    r = select_entities(llm, world, "Sandra turned off the laundry room light.", depth=1)
    assert "laundry_room_light - light" in llm.prompts[0][-1]["content"]
    assert set(r.entities) == {"laundry_room_light", "laundry_room"}
    assert r.facts == [F("(in_room laundry_room_light laundry_room)")]
    out = update(llm, world, "The bathroom tap is off.", r, max_rounds=1)  # bathroom_faucet is not in the enum
    assert out.change is None and "bathroom_faucet" in out.error


def test_goal_is_checked_and_re_prompted(world: WorldGraph) -> None:
    llm = ScriptedLLM([json.dumps({"goal": "(not (light_on kitchen_light))"}),
                       json.dumps({"goal": "(forall (?l - light) (not (switched_on ?l)))"})])
    goal, out = write_goal(llm, world, "Switch off all the lights.", full_graph(world))
    assert goal is not None and out.goal.startswith("(forall") and len(out.rounds) == 1
    assert "unknown predicate 'light_on'" in llm.prompts[1][-1]["content"]
    assert "Switch off all the lights." in llm.prompts[0][-1]["content"]


@pytest.mark.dataset
@pytest.mark.parametrize("variant", ["R-", "R-V", "R+", "R+V", "RS", "RSV"])
def test_oracle_harness_loses_nothing(variant: str) -> None:
    """With the ground truth as the LLM's answers, every state change (those right after a goal too, once the
    agent's plan is executed and the rest observed) and every plan succeeds."""
    from rich.console import Console

    from kgplan.benchmarks.l3mp import Counting, Oracle, evaluate, summarise
    from tests.conftest import l3mp_runs

    oracle = Oracle()
    rows = [r for run in l3mp_runs() for r in evaluate(run, variant, Counting(oracle), oracle, Console(quiet=True))]
    s = summarise(rows)
    assert s["state_success_rate"] == 1.0 and s["state_strict_rate"] == 1.0 and s["plan_success_rate"] == 1.0
    assert s["state_changes"] == 200 and s["goals"] == 40 and s["sensor_refused"] == 0


@pytest.mark.dataset
def test_recall_is_measured_against_a_reference_plan() -> None:
    """The facts a goal needs come from a plan on the full true state; recall counts how many a retrieval kept."""
    from kgplan.benchmarks.l3mp import Reference, steps
    from kgplan.domains.model import Domain, Problem
    from tests.conftest import l3mp_runs

    run = l3mp_runs()[0]
    step = next(s for s in steps(run) if (s / "goal.txt").is_file())
    domain, truth = Domain.load(run / "domain.pddl"), Problem.parse((step / "problem.pddl").read_text())
    init = set(truth.init)
    ref = Reference()
    r = ref.recall(step, domain, truth, init, shown=set(), init=init)
    needed = ref.needed[str(step)]
    assert needed and needed <= init and r == {"needed_facts": len(needed), "recall_shown": 0.0, "recall_init": 1.0}
    half = set(sorted(needed)[: len(needed) // 2])
    assert ref.recall(step, domain, truth, init, shown=half, init=None)["recall_shown"] == len(half) / len(needed)


def test_chat_mixes_changes_and_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import kgplan.interfaces.cli as cli
    from tests.conftest import HOUSEHOLD
    from tests.support.fake_llm import mentions, pick

    llm = ScriptedLLM([json.dumps({"kind": "state_change"}), mentions("Omar", "the apple", "the kitchen table"),
                       *[lambda m: pick(m, on="now: item apple is on kitchen table")] * 2,  # proposes, chooses twice
                       json.dumps({"kind": "task"}), json.dumps({"entities": ["apple"]}),
                       json.dumps({"goal": "(holding robot apple)"})])
    monkeypatch.setattr(cli, "_llm", lambda: llm)
    store = ["--store", f"sqlite:{tmp_path / 'chat.db'}"]
    runner = CliRunner()
    assert runner.invoke(cli.app, [*store, "init", "--problem", str(HOUSEHOLD / "world.pddl")]).exit_code == 0
    lines = "Omar put the apple on the kitchen table.\nCould you bring me the apple?\n/run\n/quit\n"
    res = runner.invoke(cli.app, [*store, "chat"], input=lines)
    assert res.exit_code == 0, res.output
    assert "+ (on apple kitchen_table)" in res.output and "goal: (holding robot apple)" in res.output
    assert "2. (pick_up robot apple kitchen_table kitchen)" in res.output and "Executed 2 of 2 steps" in res.output
    assert "Could you bring me the apple?" in llm.prompts[4][-1]["content"]


def test_a_sentence_can_remove_an_entity(world: WorldGraph) -> None:
    """"The mug broke": the reply lists the entity in removed_entities and its facts go with it;
    undo brings both back."""
    llm = ScriptedLLM([json.dumps({"add": [], "remove": [], "removed_entities": ["apple"]})])
    before = sorted(map(str, world.facts()))
    out = update(llm, world, "Omar ate the apple.", full_graph(world))
    assert out.error is None and out.change is not None
    assert world.entities(["apple"]) == [] and not world.facts(entity="apple")
    assert "removed_entities" in llm.prompts[0][-1]["content"]
    world.undo(out.change.id)
    assert sorted(map(str, world.facts())) == before


def test_an_unverified_reply_no_store_can_hold_is_an_error_not_a_crash(world: WorldGraph) -> None:
    """The harness's unverified variants apply a reply as it is, but a fact of the wrong arity cannot be stored
    on any backend: the outcome says so and the graph is unchanged."""
    before = world.facts()
    bad = json.dumps({"add": [{"predicate": "switched_on", "args": ["kitchen_light", "hallway_light"]}],
                      "remove": []})
    out = update(ScriptedLLM([bad]), world, "Both lights came on.", full_graph(world), verify=False)
    assert out.change is None and "does not match a predicate" in out.error
    assert world.facts() == before
