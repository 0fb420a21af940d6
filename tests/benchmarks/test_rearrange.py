"""`kgplan bench rearrange`: its JSON per method, budget, family and limit; methods from the registry; the
puct_llm wiring with a scripted LLM."""

from __future__ import annotations

import json

import pytest

from kgplan.benchmarks import rearrange
from kgplan.language.llm import ScriptedLLM
from kgplan.language.mcts import ActionScores, PlaceChoice, Reflection


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
                         for f in ("simple", "comp2") for lim in (10, 15)}
    for r in rows.values():
        assert {"success_rate", "wilson_95", "mean_steps", "simulations_per_decision",
                "llm_calls_per_decision", "seconds_per_decision"} <= set(r)
    assert rows["uct", 5, "simple", 15]["simulations_per_decision"] == 5
    assert out.with_suffix(".png").stat().st_size > 0


def test_methods_come_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert rearrange.main(["--methods", "uct,bogus", "--scenes", "generated"]) == 2
    assert "unknown method or family: bogus" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        rearrange.main(["--help"])
    shown = capsys.readouterr().out
    assert "puct_dr: puct with DR-MCTS's hybrid leaf values" in shown and "explore, uct, puct" in shown


def test_rearrange_episode_with_a_scripted_llm_prior() -> None:
    """The benchmark's puct_llm wiring: LLM belief and LLM prior, within the calls per decision."""

    def reply(messages: list[dict]):
        text = messages[0]["content"]
        if "most likely to be" in text:
            return PlaceChoice(place="kitchen_counter")
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
    assert any("most likely to be" in p[0]["content"] for p in llm.prompts)
