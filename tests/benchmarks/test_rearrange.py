"""`kgplan bench rearrange`: its JSON per method, budget, family and limit; methods from the registry; the
puct_llm wiring with a scripted LLM; LLM-MCTS's policy through an OpenAI-compatible endpoint (`--llm openai`)."""

from __future__ import annotations

import json

import pytest

from kgplan.benchmarks import rearrange
from kgplan.language.llm import ScriptedLLM
from kgplan.language.mcts import ActionScores, Reflection
from tests.support.fake_llm import FakeServer, ok


def test_rearrange_bench_writes_each_method_and_family(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The figures the issue asks for; the episodes are written as they end (a stopped run keeps them)."""
    written: list[int] = []
    write = rearrange.write_json
    monkeypatch.setattr(rearrange, "write_json", lambda path, data: (written.append(len(data["episodes"])),
                                                                     write(path, data)))
    out = tmp_path / "new" / "r.json"
    assert rearrange.main(["--seeds", "3", "--scenes", "generated", "--methods", "explore,uct",
                           "--families", "simple,comp2", "--simulations", "10,5", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert written == [1, 2, 3, 4, 5, 6, 6]  # 2 families x (explore + uct at 2 budgets), then the summary
    rows = {(r["method"], r["budget"], r["family"], r["limit"]): r for r in data["results"]}
    assert set(rows) == {(m, b, f, lim) for m, b in (("explore", 0), ("uct", 10), ("uct", 5))
                         for f in ("simple", "comp2") for lim in (10, 15, 30)}
    for r in rows.values():
        assert {"success_rate", "wilson_95", "mean_steps", "simulations_per_decision",
                "llm_calls_per_decision", "seconds_per_decision"} <= set(r)
    assert rows["uct", 5, "simple", 15]["simulations_per_decision"] == 5
    assert out.with_suffix(".png").stat().st_size > 0


def test_the_json_and_the_png_go_under_results_by_default(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert rearrange.main(["--seeds", "3", "--scenes", "generated", "--methods", "uct", "--families", "simple",
                           "--simulations", "2", "--limits", "2"]) == 0
    assert json.loads((tmp_path / "results" / "rearrange.json").read_text())["results"]
    assert (tmp_path / "results" / "rearrange.png").stat().st_size > 0


def test_methods_come_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert rearrange.main(["--methods", "uct,bogus", "--scenes", "generated"]) == 2
    assert "unknown search method 'bogus'" in capsys.readouterr().out
    assert rearrange.main(["--methods", "uct+magic", "--scenes", "generated"]) == 2
    assert "unknown switch magic" in capsys.readouterr().out
    assert rearrange.main(["--methods", "uct", "--set", "speed=2", "--scenes", "generated"]) == 2
    assert "FIELD=VALUE" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        rearrange.main(["--help"])
    shown = capsys.readouterr().out
    assert "dr_mcts: DR-MCTS: llm_mcts with the doubly robust backup" in shown and "explore, uct, llm_mcts" in shown
    assert "handover: Fast Downward takes over" in shown and "window" in shown


def test_every_named_configuration_and_ablation_runs_without_an_llm(tmp_path) -> None:
    """The papers' configurations search every step (no hand-over: no planner call) with their settings in
    the JSON; a switch adds kgplan's hand-over; `--set` assigns a setting to every method."""
    out = tmp_path / "r.json"
    named = ["uct", "llm_mcts", "llm_mcts_no_policy", "llm_mcts_uniform_belief", "llm_mcts_full_obs", "is_mcts",
             "dr_mcts"]
    assert rearrange.main(["--seeds", "1", "--scenes", "generated", "--methods", ",".join([*named, "dr_mcts+handover"]),
                           "--families", "simple", "--simulations", "5", "--limits", "4,6", "--set", "horizon=8",
                           "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    episodes = {e["method"]: e for e in data["episodes"]}
    assert set(episodes) == {*named, "dr_mcts+handover"}
    for m in named:
        e = episodes[m]
        assert e["planner_calls"] == 0 and e["llm_calls"] == 0 and e["decisions"] == e["steps"] > 0
        assert e["simulations"] == 5 * e["decisions"]
    methods = data["settings"]["methods"]
    assert methods["dr_mcts"]["estimator"] == "dr" and methods["dr_mcts"]["belief"] == "uniform"
    assert methods["dr_mcts+handover"]["handover"] and not methods["dr_mcts"]["handover"]
    assert {m["horizon"] for m in methods.values()} == {8} and data["settings"]["limits"] == [4, 6]
    assert {(r["method"], r["limit"]) for r in data["results"]} == {(m, lim) for m in episodes for lim in (4, 6)}


def test_fully_observable_tells_the_agent_where_the_items_are() -> None:
    scene = rearrange.Scene("tiny", {"fridge": ("container", "kitchen"), "kitchen_counter": ("surface", "kitchen"),
                                     "bed": ("surface", "bedroom")}, {"milk": "kitchen_counter"}, {"milk": "milk"})
    task = rearrange.Task("simple", ["milk"], "fridge", "bed")
    ep = rearrange.episode(scene, task, "llm_mcts_full_obs", 0, simulations=200, limit=12)
    # it walks straight to the counter where the milk is (5 steps at best: walk, pick, walk, open, put)
    assert ep.success and ep.steps <= 6 and ep.planner_calls == 0 and ep.decisions == ep.steps


def test_rearrange_episode_with_a_scripted_llm_prior() -> None:
    """The benchmark's puct_llm wiring: LLM belief and LLM prior, within the calls per decision."""

    def reply(messages: list[dict]):
        text = messages[0]["content"]
        if "Name the places of a home" in text:
            return "kitchen counter"
        if "This attempt failed" in text:
            return Reflection(reflection="look on the counters first")
        return ActionScores(scores=[])

    scene = rearrange.Scene("tiny", {"fridge": ("container", "kitchen"), "kitchen_counter": ("surface", "kitchen"),
                                     "bed": ("surface", "bedroom")}, {"milk": "kitchen_counter"}, {"milk": "milk"})
    task = rearrange.Task("simple", ["milk"], "fridge", "bed")
    llm = ScriptedLLM([reply] * 500)
    ep = rearrange.episode(scene, task, "puct_llm", 0, simulations=30, limit=15, llm=llm, llm_calls=3)
    assert ep.success and ep.steps <= 8
    # five belief samples for the item, then at most 3 prior/reflection calls per decision
    assert 5 < ep.llm_calls <= 5 + 3 * ep.decisions and ep.llm_calls == len(llm.prompts)
    assert any("Name the places of a home" in p[0]["content"] for p in llm.prompts)


def test_learned_belief_of_a_scene_is_fit_on_the_others_only() -> None:
    places = {"fridge": ("container", "kitchen"), "bed": ("surface", "bedroom")}
    corpus = {"a": rearrange.Scene("a", places, {"milk": "fridge"}), "b": rearrange.Scene("b", places, {"milk": "bed"}),
              "c": rearrange.Scene("c", places, {"milk_2": "bed"})}
    prior = rearrange.make_belief("learned", "a", corpus, None)
    assert prior is not None
    b = prior({"milk": "item"}, {p: t for p, (t, _) in places.items()})["milk"]
    assert b["bed"] > b["fridge"]
    assert rearrange.hits(prior, corpus["a"], ["milk"]) == [(0.0, 1.0)]  # second of two places
    assert rearrange.hits(None, corpus["a"], ["milk"]) == [(0.5, 1.0)]  # uniform: a tie, broken at random


def test_beliefs_are_chosen_like_methods(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--belief` runs each belief in place of puct's own and reports each one's place accuracy; `--lifelong`
    runs successive episodes in one home on one graph and reports success by episode."""
    out = tmp_path / "r.json"
    assert rearrange.main(["--seeds", "3", "--scenes", "generated", "--methods", "explore,uct,puct",
                           "--belief", "learned,uniform", "--families", "simple", "--simulations", "5",
                           "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    runs = {(r["method"], r["belief"]) for r in data["results"]}
    assert runs == {("explore", ""), ("uct", ""), ("puct", "learned"), ("puct", "uniform")}
    accuracy = {a["belief"]: a for a in data["belief_accuracy"]}
    assert set(accuracy) == {"learned", "uniform"} and accuracy["learned"]["items"] == len(rearrange.ITEMS)
    assert accuracy["learned"]["belief_top1"] > accuracy["uniform"]["belief_top1"]
    assert rearrange.main(["--seeds", "3", "--scenes", "generated", "--methods", "puct", "--belief", "learned",
                           "--families", "simple,comp2", "--simulations", "5", "--lifelong", "3",
                           "--json", str(out)]) == 0
    curve = json.loads(out.read_text())["lifelong"]
    assert [(c["episode"], c["episodes"], c["belief"]) for c in curve] == [(k, 1, "learned") for k in range(3)]
    assert all({"success_rate", "wilson_95", "belief_top1"} <= set(c) for c in curve)
    assert out.with_name("r_lifelong.png").stat().st_size > 0
    assert rearrange.main(["--belief", "bogus", "--scenes", "generated"]) == 2
    assert "unknown belief: bogus" in capsys.readouterr().out


def test_saved_counts_are_the_learned_belief_of_search_methods(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgplan.agent.search import BELIEFS, SEARCH_METHODS

    path = tmp_path / "counts.json"
    assert rearrange.main(["--scenes", "generated", "--save-counts", str(path)]) == 0
    counts = json.loads(path.read_text())
    assert counts["milk"]["fridge"] > counts["milk"].get("kitchen_counter", 0) > 0
    monkeypatch.setenv("KGPLAN_PLACE_COUNTS", str(path))
    b = BELIEFS["learned"].make(None)({"milk": "item"}, {"fridge": "container", "bed": "surface"})
    assert max(b["milk"], key=b["milk"].__getitem__) == "fridge"
    assert SEARCH_METHODS["puct_lifelong"].belief == "lifelong"


def test_the_llm_policy_through_an_endpoint(tmp_path, server: FakeServer, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`--llm openai`: llm_mcts samples its belief and its policy (the prompt with expert examples from homes no
    run evaluates), and the JSON counts the LLM calls per decision, those of the search apart; `--record` keeps
    the replies and `--llm replay` repeats the run from them; without an LLM it says which kinds it searches
    with; `--llm openai` with no endpoint is an error."""
    def answer(request: dict):
        text = request["messages"][0]["content"]
        return ok("kitchen counter" if "Name the places of a home" in text else "walk to kitchen counter")(request)

    out = tmp_path / "r.json"
    args = ["--seeds", "1", "--scenes", "generated", "--methods", "llm_mcts", "--families", "simple",
            "--simulations", "3", "--limits", "2", "--llm-calls", "15", "--json", str(out)]
    monkeypatch.delenv("KGPLAN_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert rearrange.main([*args, "--llm", "openai"]) == 2 and "no LLM is configured" in capsys.readouterr().out
    assert rearrange.main(args) == 0
    assert "llm_mcts without an LLM (--llm openai for its LLM's): belief uniform, prior belief_mass" in \
        capsys.readouterr().out
    monkeypatch.setenv("KGPLAN_LLM_BASE_URL", server.url)
    monkeypatch.setenv("KGPLAN_LLM_MODEL", "fake-model")
    server.script = [answer] * 500
    assert rearrange.main([*args, "--llm", "openai", "--record", str(tmp_path / "replies.json")]) == 0
    data = json.loads(out.read_text())
    (e,) = data["episodes"]
    samples = [r for r in server.requests if "Next actions:" in r["messages"][0]["content"]]
    assert e["decisions"] == 2 and e["search_llm_calls"] == len(samples) and 0 < len(samples) <= 2 * 15
    assert e["llm_calls"] == len(server.requests) > len(samples)  # the belief's samples too
    (row,) = data["results"]
    assert row["search_llm_calls_per_decision"] == len(samples) / 2
    assert data["settings"]["methods"]["llm_mcts"]["prior"] == "llm_policy"
    assert "Example tasks:" in samples[0]["messages"][0]["content"]
    replies = json.loads((tmp_path / "replies.json").read_text())
    assert len(replies) == len(server.requests) and replies[-1] == {"reply": "walk to kitchen counter"}
    again = tmp_path / "again.json"
    assert rearrange.main([*args[:-1], str(again), "--llm", "replay", "--llm-replay",
                           str(tmp_path / "replies.json")]) == 0
    (e2,) = json.loads(again.read_text())["episodes"]
    assert {k: v for k, v in e2.items() if k != "decision_seconds"} == {k: v for k, v in e.items()
                                                                        if k != "decision_seconds"}


def test_the_llm_belief_is_asked_once_per_item_kind(tmp_path, server: FakeServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`--belief llm`: its place accuracy asks about every item of the home (5 samples each); the episode asks
    nothing more (its items' answers are cached per item kind and place set)."""
    monkeypatch.setenv("KGPLAN_LLM_BASE_URL", server.url)
    monkeypatch.setenv("KGPLAN_LLM_MODEL", "fake-model")
    server.script = [ok("fridge, kitchen counter")] * 500
    out = tmp_path / "r.json"
    assert rearrange.main(["--seeds", "1", "--scenes", "generated", "--methods", "llm_mcts_no_policy", "--belief",
                           "llm", "--families", "simple,comp2", "--simulations", "2", "--limits", "2", "--llm",
                           "openai", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert all("Name the places of a home" in r["messages"][0]["content"] for r in server.requests)
    assert len(server.requests) == 5 * len(rearrange.ITEMS)
    assert [(e["belief"], e["llm_calls"]) for e in data["episodes"]] == [("llm", 0), ("llm", 0)]
    (accuracy,) = data["belief_accuracy"]
    assert accuracy["belief"] == "llm" and accuracy["items"] == len(rearrange.ITEMS)


def test_saved_examples_are_the_llm_policy_examples_of_search_methods(tmp_path, monkeypatch) -> None:
    from kgplan.agent.search import PRIORS, PriorInput
    from kgplan.domains.model import resolve_domain
    from kgplan.planners.mcts.priors import UniformPrior

    path = tmp_path / "examples.json"
    assert rearrange.main(["--save-examples", str(path)]) == 0
    monkeypatch.setenv("KGPLAN_POLICY_EXAMPLES", str(path))
    task = rearrange.Task("comp2", ["milk", "cheese"], "dining_table", "sofa")
    made = PRIORS["llm_policy"].make(PriorInput(resolve_domain("rearrange"), rearrange.goal_formula(task),
                                                ScriptedLLM(), UniformPrior()))
    assert len(made.examples) == 3 and made.examples[0].task == "item cheese is in or on place dining table"
    assert json.loads(path.read_text())[0]["actions"][0].startswith("walk to ")
