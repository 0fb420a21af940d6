"""The L3M+P harness on small runs written here from the bundled household world, and the corrupting oracle."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from kgplan.benchmarks import l3mp
from kgplan.benchmarks.l3mp import CORRUPTIONS, Counting, Oracle, after_goal, evaluate, summarise
from kgplan.domains.model import Problem
from kgplan.graph.backends import open_graph
from kgplan.language.llm import LLMError, ScriptedLLM, choice, enum_model
from kgplan.planners.pipeline import plan
from tests.conftest import HOUSEHOLD
from tests.support import fake_llm

Atoms = set[tuple[str, tuple[str, ...]]]
START = Problem.parse((HOUSEHOLD / "world.pddl").read_text())
INIT: Atoms = set(START.init)
TIMINGS = {"seconds", "llm_latency_s", "planner_s", "llm_latency_s_mean", "planner_s_mean", "seconds_per_change",
           "seconds_per_goal"}


def change(state: Atoms, add: list[str] = (), remove: list[str] = ()) -> Atoms:
    def atoms(xs: list[str]) -> Atoms:
        return {(w[0], tuple(w[1:])) for w in (x.strip("()").split() for x in xs)}

    return (state - atoms(remove)) | atoms(add)


def write_run(root: Path, steps: list[tuple[str, str, Atoms, str | None]], start: Atoms = INIT) -> Path:
    """A run in the L3M+P layout: the household domain, its world (`start`), and (kind, text, true state, goal)
    steps."""
    def problem(state: Atoms, goal: str | None) -> str:
        objects = "\n".join(f"    {o} - {t}" for o, t in sorted(START.objects.items()))
        init = "\n".join(f"    ({' '.join((p, *args))})" for p, args in sorted(state))
        return (f"(define (problem p) (:domain household)\n  (:objects\n{objects})\n  (:init\n{init})\n"
                + (f"  (:goal {goal})\n" if goal else "") + ")\n")

    root.mkdir(parents=True)
    shutil.copy(HOUSEHOLD / "domain.pddl", root / "domain.pddl")
    (root / "problem.pddl").write_text(problem(start, None))
    for i, (kind, text, state, goal) in enumerate(steps):
        step = root / f"time_{i:04d}_{kind}"
        step.mkdir()
        (step / ("goal.txt" if kind == "goal" else "state_change.txt")).write_text(text)
        (step / "problem.pddl").write_text(problem(state, goal))
    return root


def delta(add: list[str] = (), remove: list[str] = ()) -> str:
    def facts(xs: list[str]) -> list[dict]:
        return [{"predicate": w[0], "args": w[1:]} for w in (x.strip("()").split() for x in xs)]

    return json.dumps({"add": facts(list(add)), "remove": facts(list(remove))})


APPLE = (["(on apple kitchen_table)"], ["(on apple kitchen_counter)"])
SANDRA = (["(person_at sandra kitchen)"], ["(person_at sandra living_room)"])
WINDOW = ([], ["(window_open bedroom_window)"])
GOAL = "(not (switched_on kitchen_light))"


def light_run(root: Path, robot_returns: bool) -> Path:
    """A change, the task "switch off the kitchen light", and two more changes. The dataset's state after the
    task holds the simulator's execution of it (the light off; the robot in the kitchen, or back in the hallway,
    which the agent's plan cannot know) together with the next sentence's change."""
    s0 = change(INIT, *APPLE)
    done = change(s0, [] if robot_returns else ["(agent_at robot kitchen)"],
                  ["(switched_on kitchen_light)", *([] if robot_returns else ["(agent_at robot hallway)"])])
    s2 = change(done, *SANDRA)
    return write_run(root, [("state_change", "Omar moved the apple to the kitchen table.", s0, None),
                            ("goal", "Switch off the kitchen light.", s0, GOAL),
                            ("state_change", "Sandra went to the kitchen.", s2, None),
                            ("state_change", "Lena closed the bedroom window.", change(s2, *WINDOW), None)])


@pytest.mark.parametrize("robot_returns", [False, True])
def test_after_a_goal_the_plan_is_executed_and_the_rest_observed(tmp_path: Path, robot_returns: bool) -> None:
    """A model that reports only what each sentence says is scored right after a goal, too."""
    run = light_run(tmp_path / "run", robot_returns)
    llm = ScriptedLLM([delta(*APPLE), json.dumps({"goal": GOAL}), delta(*SANDRA), delta(*WINDOW)])
    rows = evaluate(run, "R-V", Counting(llm), None, Console(quiet=True))
    changes = [r for r in rows if r["kind"] == "state_change"]
    assert [r["strict"] for r in changes] == [True] * 3 and all(r["success"] for r in changes)
    goal = rows[1]
    assert goal["success"] and goal["plan_length"] == 2 and goal["executed_steps"] == 2
    # the simulator's robot went back to the hallway: one fact removed, one added
    assert goal["sensor_facts"] == (2 if robot_returns else 0) and goal["plan_reproduced"] is not robot_returns
    s = summarise(rows)
    assert s["state_strict_rate"] == 1.0 and s["plan_reproduced_rate"] == (0.0 if robot_returns else 1.0)
    assert s["sensor_facts_total"] == goal["sensor_facts"]


def test_plan_and_sensor_changes_are_verified_and_recorded(tmp_path: Path, household) -> None:
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(household)
    g.load_problem(START)
    report = plan(g, GOAL)
    truth = Problem.parse(f"(define (problem p) (:domain household) (:objects) (:init) (:goal {GOAL}))")
    after = change(INIT, ["(person_at sandra kitchen)"],
                   ["(switched_on kitchen_light)", "(person_at sandra living_room)", "(window_open bedroom_window)"])
    row, prev = after_goal(g, report, truth, INIT, after)
    assert [c.delta.source for c in g.history()[-3:]] == ["plan", "plan", "sensor"]
    sensor = g.history()[-1].delta
    # the robot is back in the hallway; the goal's light is the plan's; sandra and the window are left to sentences
    assert {str(f) for f in sensor.add} == {"(agent_at robot hallway)"}
    assert {str(f) for f in sensor.remove} == {"(agent_at robot kitchen)"}
    assert row == {"executed_steps": 2, "execution_failure": None, "sensor_facts": 2, "sensor_error": None,
                   "plan_reproduced": False}
    assert prev == change(INIT, [], ["(switched_on kitchen_light)"])


def test_after_a_goal_its_literals_hold_though_the_next_state_holds_the_next_sentences_change(tmp_path: Path,
                                                                                                household) -> None:
    """The next step's state holds the next sentence's change too: there the kitchen light is on again ("turned on
    the light"). The task made it off, so it is not observed on before the sentence is read (seed194)."""
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(household)
    g.load_problem(START)
    report = plan(g, GOAL)
    truth = Problem.parse(f"(define (problem p) (:domain household) (:objects) (:init) (:goal {GOAL}))")
    assert ("switched_on", ("kitchen_light",)) in INIT
    row, prev = after_goal(g, report, truth, INIT, INIT)
    assert ("switched_on", ("kitchen_light",)) not in l3mp._atoms(g) | prev
    assert row["executed_steps"] == 2 and row["sensor_facts"] == 2  # the robot observed back in the hallway alone


def test_after_a_goal_its_literals_of_a_predicate_no_state_records_are_observed_as_the_next_state_says(
        tmp_path: Path, household) -> None:
    """The generator never writes `dish_is_clean` into a problem file (seed391, "wash all the dishes"): kept after the
    task, the washed plate would be a change the next sentence is asked to undo though it does not mention it."""
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(household)
    g.load_problem(START)
    washed = "(clean plate)"
    report = plan(g, washed)
    assert report.solved and ("clean", ("plate",)) not in INIT
    truth = Problem.parse(f"(define (problem p) (:domain household) (:objects) (:init) (:goal {washed}))")
    kept = after_goal(g, report, truth, INIT, INIT)[1]
    assert ("clean", ("plate",)) in kept
    g = open_graph(f"sqlite:{tmp_path / 'w2.db'}")
    g.init(household)
    g.load_problem(START)
    row, prev = after_goal(g, plan(g, washed), truth, INIT, INIT, unrecorded=frozenset({"clean"}))
    assert row["executed_steps"] > 0 and not row["plan_reproduced"]
    assert ("clean", ("plate",)) not in l3mp._atoms(g) | prev


def test_after_a_goal_that_held_already_the_robot_is_observed_where_the_simulator_left_it(tmp_path: Path,
                                                                                          household) -> None:
    """The goal holds, so the agent's plan is empty; the simulator's robot went to the kitchen all the same. The robot
    knows where it is: its place is corrected with the task, not left to the next sentence's score."""
    g = open_graph(f"sqlite:{tmp_path / 'w.db'}")
    g.init(household)
    g.load_problem(START)
    held = "(switched_on kitchen_light)"
    report = plan(g, held)
    truth = Problem.parse(f"(define (problem p) (:domain household) (:objects robot - agent) (:init) (:goal {held}))")
    after = change(INIT, ["(agent_at robot kitchen)"], ["(agent_at robot hallway)"])
    row, prev = after_goal(g, report, truth, INIT, after)
    assert row["executed_steps"] == 0 and row["sensor_facts"] == 2
    assert ("agent_at", ("robot", "kitchen")) in l3mp._atoms(g) and prev == after


def test_record_and_replay_are_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused replies and endpoint errors are recorded in order; the replay gives the same results; outputs go
    next to --json, in folders that did not exist."""
    run = light_run(tmp_path / "run", robot_returns=True)
    scripted = ScriptedLLM(["I moved it.",  # not JSON
                            json.dumps({"add": [{"predicate": "sitting_on", "args": ["apple"]}], "remove": []}),
                            delta(*APPLE), json.dumps({"goal": GOAL}),
                            LLMError("fake-model: request failed: InternalServerError: boom"),
                            delta(*WINDOW)])
    monkeypatch.setattr(l3mp, "OpenAIClient", lambda config: scripted)
    monkeypatch.chdir(tmp_path)
    first, second = tmp_path / "a" / "deep" / "r.json", tmp_path / "b" / "r.json"
    assert l3mp.main([str(run), "--variant", "R-V", "--no-recall", "--json", str(first), "--record"]) == 0
    record = first.with_suffix(".replies.json")
    assert first.with_suffix(".png").is_file() and not (tmp_path / "results").exists()
    replies = json.loads(record.read_text())
    assert [("error" in r, r.get("raw")) for r in replies] == [
        (True, "I moved it."), (True, replies[1]["raw"]), (False, None), (False, None), (True, None), (False, None)]
    assert "sitting_on" in replies[1]["error"] and replies[4]["error"].startswith("fake-model: request failed")

    assert l3mp.main([str(run), "--variant", "R-V", "--no-recall", "--llm-replay", str(record),
                      "--json", str(second)]) == 0

    def untimed(x: object) -> object:
        if isinstance(x, dict):
            return {k: untimed(v) for k, v in x.items() if k not in TIMINGS}
        return [untimed(v) for v in x] if isinstance(x, list) else x

    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    assert untimed(a) == untimed(b)
    rows = a["steps"]["R-V"]["run"]
    # the endpoint failed on Sandra's move, which stays missing; the next change adds no new discrepancy
    assert [(r.get("strict"), r["success"]) for r in rows] == [(True, True), (None, True), (False, False),
                                                               (False, True)]
    assert rows[0]["retries"] == 2 and "fake-model: request failed" in rows[2]["error"]


def test_every_reply_is_corrupted_independently() -> None:
    objects = dict(START.objects)
    fact = enum_model("Fact", predicate=["on", "person_at"], args=(list[choice(objects)], ...))
    schema = enum_model("StateChange", add=(list[fact], ...), remove=(list[fact], ...))
    truth = {"add": {("on", ("apple", "kitchen_table"))}, "remove": {("on", ("apple", "kitchen_counter"))},
             "objects": objects}
    oracle = Oracle(corrupt=0.5, seed=3)
    kinds: list[list[str | None]] = []
    for _ in range(100):  # 100 sentences, each answered three times (a first reply and two re-prompts)
        oracle.new_step(truth)
        replies = []
        for _ in range(3):
            with contextlib.suppress(LLMError):  # an invented predicate does not fit the schema
                oracle.complete([], schema)
            replies.append(oracle.last_corruption)
        kinds.append(replies)
    for i in range(3):  # re-prompted replies are corrupted as often as first ones
        assert 35 <= sum(bool(k[i]) for k in kinds) <= 65
    assert {k for ks in kinds for k in ks} == {None, *CORRUPTIONS}


@pytest.mark.dataset
@pytest.mark.parametrize(("corrupt", "seed"), [(1.0, 0), (0.3, 1)])
def test_corruption_recovery_is_measured(corrupt: float, seed: int) -> None:
    """Each kind occurs and is counted; caught <= n and recovered <= caught; with every reply corrupted,
    re-prompting cannot converge, so recovered < caught."""
    from tests.conftest import l3mp_runs

    oracle = Oracle(corrupt=corrupt, seed=seed)
    llm = Counting(oracle)
    rows = evaluate(l3mp_runs()[0], "R-V", llm, oracle, Console(quiet=True), limit=40)
    s = summarise(rows)
    recovery = s["recovery"]
    assert set(recovery) == set(CORRUPTIONS)
    first = [r for r in rows if r.get("corruption")]
    assert sum(r["n"] for r in recovery.values()) == len(first) == s["corrupted"]
    assert s["corrupted_replies"] == sum(bool(c.get("corruption")) for c in llm.replies) >= len(first)
    for kind, r in recovery.items():
        assert r["n"] == sum(x["corruption"] == kind for x in first) >= 1
        assert r["caught"] <= r["n"] and r["recovered"] <= r["caught"]
        assert r["caught_rate"] == r["caught"] / r["n"] and r["recovered_rate"] == r["recovered"] / r["n"]
    assert recovery["invented_predicate"]["caught"] == recovery["invented_predicate"]["n"]  # the schema refuses it
    caught, recovered = (sum(r[k] for r in recovery.values()) for k in ("caught", "recovered"))
    if corrupt == 1.0:
        assert recovered < caught
    else:
        assert 0 < recovered <= caught


def pick(**glosses: str) -> Callable[[list[dict]], str]:
    """A scripted choice per predicate: the candidate shown with the gloss given for it."""
    return lambda messages: fake_llm.pick(messages, **glosses)


def test_propose_and_choose_scored_with_facts_clarifications_and_stages(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """PC: the model names and chooses; a clarification is a failure, counted apart, and answered as the user who
    sees the world would (the mug the true change washed), so the change completes; record and replay exact.
    Strict: the graph is the true state; exact: the sentence changed exactly the facts it should."""
    s0 = change(INIT, *SANDRA)
    s1 = change(s0, *WINDOW)
    run = write_run(tmp_path / "run", [("state_change", "Sandra went to the kitchen.", s0, None),
                                       ("state_change", "Lena closed the bedroom window.", s1, None),
                                       ("state_change", "Omar washed the mug.", change(s1, ["(clean red_mug)"]), None)])
    shutil.copy(HOUSEHOLD / "domain.toml", run / "domain.toml")  # glosses; people move (`told`)
    scripted = ScriptedLLM([json.dumps({"mentions": ["Sandra", "the kitchen"]}),
                            pick(person_at="now: person sandra is in room kitchen"),
                            json.dumps({"mentions": ["Lena", "the bedroom window"]}),
                            pick(),  # misses that the window closed
                            json.dumps({"mentions": ["Omar", "the mug"]}), json.dumps({"answer": "unclear"}),
                            json.dumps({"mentions": ["Omar", "the mug"]}), *[pick(clean="now: red mug is clean")] * 2])
    monkeypatch.setattr(l3mp, "OpenAIClient", lambda config: scripted)
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert l3mp.main([str(run), "--variant", "PC", "--no-recall", "--json", str(first), "--record"]) == 0
    rows = json.loads(first.read_text())["steps"]["PC"]["run"]
    assert [(r["strict"], r["exact"]) for r in rows] == [(True, True), (False, False), (False, False)]
    assert "'the mug'" in rows[2]["clarification"] and rows[1]["clarification"] is None
    assert rows[2]["answered"] and rows[2]["facts_changed"] == rows[2]["facts_right"] == 1 and rows[2]["llm_calls"] == 5
    assert (rows[0]["facts_changed"], rows[0]["facts_wanted"], rows[0]["facts_right"]) == (2, 2, 2)
    assert (rows[1]["facts_changed"], rows[1]["facts_wanted"], rows[1]["error"]) == (0, 1, "the sentence changes "
                                                                                      "nothing in the graph")
    assert set(rows[1]["stages"]) == {"mentions", "ground", "candidates", "choose", "apply"}
    s = json.loads(first.read_text())["variants"]["PC"]
    assert s["clarification_rate"] == s["state_exact_rate"] == pytest.approx(1 / 3)
    assert (s["fact_precision"], s["fact_recall"]) == (1.0, 0.5)
    assert set(s["stages_per_change"]["choose"]) == {"seconds", "prompt_tokens", "completion_tokens"}
    assert l3mp.main([str(run), "--variant", "PC", "--no-recall", "--json", str(second), "--llm-replay",
                      str(first.with_suffix(".replies.json"))]) == 0
    replayed = json.loads(second.read_text())["steps"]["PC"]["run"]
    assert [(r["strict"], r["clarification"], r["facts_changed"]) for r in replayed] == [
        (r["strict"], r["clarification"], r["facts_changed"]) for r in rows]
    with pytest.raises(SystemExit):
        l3mp.main([str(run), "--variant", "PC", "--llm", "oracle"])


def test_facts_of_a_predicate_no_state_records_are_not_scored(tmp_path: Path) -> None:
    """As the generator never writes `dish_is_clean`: a sentence that makes the mug clean as well is exact on what the
    run records (the clean mug counted apart), and the clean mug does not count against the sentences after it."""
    start = {a for a in INIT if a[0] != "clean"}
    s0 = change(start, *SANDRA)
    run = write_run(tmp_path / "run", [("state_change", "Sandra went to the kitchen and washed the red mug.", s0, None),
                                       ("state_change", "Lena closed the bedroom window.", change(s0, *WINDOW), None)],
                    start)
    shutil.copy(HOUSEHOLD / "domain.toml", run / "domain.toml")
    sandra = pick(person_at="now: person sandra is in room kitchen", clean="now: red mug is clean")
    window = pick(window_open="no longer: window bedroom window is open")
    llm = ScriptedLLM([fake_llm.mentions("Sandra", "the kitchen", "the red mug"), sandra, sandra,
                       fake_llm.mentions("Lena", "the bedroom window"), window])
    rows = evaluate(run, "PC", Counting(llm), None, Console(quiet=True))
    assert [(r["strict"], r["exact"], r["facts_unscored"]) for r in rows] == [(True, True, 1), (True, True, 0)]
    assert (rows[0]["facts_changed"], rows[0]["facts_right"]) == (2, 2)


def test_pc_goals_are_chosen_and_scored_with_the_changes_from_the_oracle(tmp_path: Path) -> None:
    """`--variant PC --changes oracle`: the state changes get the true change, the goals are chosen among the literals
    the domain admits (language.goals); scored by plan, exact goal and seconds."""
    run = light_run(tmp_path / "run", robot_returns=False)
    llm = ScriptedLLM([json.dumps({"scope": "named", "mentions": ["the kitchen light"], "kinds": []}),
                       json.dumps({"switched_on": "not: switched on kitchen light"})])  # no glosses
    rows = evaluate(run, "PC", Counting(llm), None, Console(quiet=True), change_oracle=Oracle())
    assert [r["strict"] for r in rows if r["kind"] == "state_change"] == [True] * 3
    goal = rows[1]
    assert goal["goal"] == f"(and {GOAL})" and goal["goal_exact"] and goal["success"]
    assert set(goal["stages"]) == {"words", "ground", "candidates", "choose"}
    s = summarise(rows)
    assert s["plan_success_rate"] == s["goal_exact_rate"] == 1.0 and s["goal_clarification_rate"] == 0.0


def test_a_question_is_answered_with_the_option_the_true_change_tells() -> None:
    """Between facts, the one that holds after the change; between things, the one its new facts are about, else the
    one all it changed is about; none where it tells none or several."""
    from kgplan.language.update import Clarification

    washed = change(INIT, ["(clean red_mug)"])
    held = Clarification("(holding robot red_mug) or (clean red_mug)", "?",
                         ["(holding robot red_mug)", "(clean red_mug)"])
    assert l3mp._answer(held, INIT, washed) == "(clean red_mug)"
    mug = Clarification("the mug", "?", ["red_mug", "blue_mug"])
    assert l3mp._answer(mug, INIT, washed) == "red_mug"
    assert l3mp._answer(mug, INIT, INIT) is None
    moved = change(INIT, *SANDRA)  # sandra leaves the living room for the kitchen: the kitchen is the new one
    assert l3mp._answer(Clarification("the room", "?", ["kitchen", "living_room"]), INIT, moved) == "kitchen"
    assert l3mp._answer(Clarification("the room", "?", ["kitchen", "living_room"]), moved, moved) is None
