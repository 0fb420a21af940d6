"""`kgplan bench textgames` on a TextWorld game made offline (needs `textworld`): every game search and the PDDLEGO
loop, with no LLM and with a scripted endpoint (its log-probabilities), the figures of the issue in the JSON and
a PNG; `--record` keeps the replies and `--llm replay` repeats the run from them."""

from __future__ import annotations

import importlib.util
import json

import pytest

from kgplan.benchmarks import textgames
from kgplan.games.mcdml import GAME_SEARCHES
from tests.support.fake_llm import FakeServer, ok

pytestmark = pytest.mark.skipif(importlib.util.find_spec("textworld") is None, reason="needs textworld")
METHODS = [*GAME_SEARCHES.names(), textgames.PDDLEGO]
FIGURES = {"success_rate", "wilson_95", "mean_score", "mean_steps", "simulations_per_decision",
           "llm_calls_per_decision", "seconds_per_decision"}


def args(tmp_path, name: str, *more: str) -> list[str]:
    return ["--games", "textworld-coin-easy", "--seeds", "0", "--methods", ",".join(METHODS), "--simulations", "3",
            "--steps", "3", "--json", str(tmp_path / f"{name}.json"), "--plot", str(tmp_path / f"{name}.png"), *more]


def test_every_search_runs_without_an_llm(tmp_path) -> None:
    assert textgames.main(args(tmp_path, "none")) == 0
    results = json.loads((tmp_path / "none.json").read_text())["results"]["textworld-coin-easy"]
    assert list(results) == METHODS
    for method, r in results.items():
        assert set(r) >= FIGURES and r["episodes"] == 1 and r["llm_calls_per_decision"] == 0, method
    assert results["mcdml"]["simulations_per_decision"] >= 3 and results["random"]["simulations_per_decision"] == 0
    assert (tmp_path / "none.png").stat().st_size > 0


def test_every_search_with_an_llm_recorded_and_replayed(tmp_path, server: FakeServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The LLM searches ask for the first token's log-probabilities, each prompt once (the prior is cached per
    prompt); the JSON counts the calls per decision; the replay of the recorded replies gives the same episodes."""
    monkeypatch.setenv("KGPLAN_LLM_BASE_URL", server.url)
    monkeypatch.setenv("KGPLAN_LLM_MODEL", "fake-model")
    server.script = [ok("1", top_logprobs={"1": -0.1, "0": -1.0, "2": -3.0})] * 500
    record = tmp_path / "replies.json"
    assert textgames.main(args(tmp_path, "llm", "--llm", "openai", "--record", str(record))) == 0
    data = json.loads((tmp_path / "llm.json").read_text())
    results = data["results"]["textworld-coin-easy"]
    asked = [json.dumps(r["messages"]) for r in server.requests]
    assert all(r["logprobs"] for r in server.requests)
    episodes = {run["method"]: run["episodes"][0] for run in data["episodes"]}
    with_llm = [m.name for m in GAME_SEARCHES if m.settings.llm_prior and not m.random]
    assert sum(episodes[m]["llm_calls"] for m in with_llm) == len(asked)
    for m in with_llm:  # the episodes ask in turn, each prompt once
        mine, asked = asked[:episodes[m]["llm_calls"]], asked[episodes[m]["llm_calls"]:]
        assert len(set(mine)) == len(mine) > 0, m
    for m in with_llm:
        assert results[m]["llm_calls_per_decision"] == episodes[m]["llm_calls"] / episodes[m]["steps"] > 0, m
        assert results[m]["prior_entropy"] is not None
    assert results["uct_game"]["llm_calls_per_decision"] == 0
    replies = json.loads(record.read_text())
    assert len(replies) == len(server.requests)
    assert replies[0] == {"reply": "1", "top": {"1": -0.1, "0": -1.0, "2": -3.0}}
    server.requests.clear()
    assert textgames.main(args(tmp_path, "again", "--llm", "replay", "--llm-replay", str(record))) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert not server.requests

    def same(d: dict) -> list:
        return [{**e, "seconds": 0} for run in d["episodes"] for e in run["episodes"]]

    assert same(again) == same(data)


def test_the_llm_options_say_what_is_missing(tmp_path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("KGPLAN_LLM_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert textgames.main(args(tmp_path, "x", "--llm", "openai")) == 2
    assert "no LLM is configured" in capsys.readouterr().out
    assert textgames.main(args(tmp_path, "x", "--llm", "replay")) == 2
    assert "--llm replay needs --llm-replay PATH" in capsys.readouterr().out
