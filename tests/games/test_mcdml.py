"""MC-DML over a game engine (kgplan.games.mcdml) on small hand-computed cases: the log-probability prior,
reflections at losing states and their cap, dynamic depth, the argmax-Q command; the client asking the
endpoint for log-probabilities; a TextWorld game's save and restore (needs `textworld`)."""

from __future__ import annotations

import importlib.util
import math
from dataclasses import replace

import pytest

from kgplan.errors import LLMError
from kgplan.games.base import Observation
from kgplan.games.mcdml import GAME_SEARCHES, MCDML, Settings, labels, log_prob_prior, play
from kgplan.language.llm import ScriptedLLM, TokenChoice
from tests.support.fake_llm import FakeServer, ok


class Corridor:
    """A test's toy game: walk `length` steps `forward` to win (score 1); `jump` (where offered) loses."""

    budget = 40

    def __init__(self, length: int, jump: bool = False, forward: bool = True) -> None:
        self.length, self.moves = length, [m for m, on in (("forward", forward), ("jump", jump), ("wait", True)) if on]
        self.pos, self.lost = 0, False

    def observe(self, text: str) -> Observation:
        won = self.pos == self.length
        return Observation(text, [] if won or self.lost else list(self.moves), float(won), won or self.lost, won)

    def reset(self, seed: int) -> Observation:
        self.pos, self.lost = 0, False
        return self.observe("You stand in a corridor.")

    def step(self, action: str) -> Observation:
        self.pos += action == "forward"
        self.lost = action == "jump"
        return self.observe(f"You {action}.")

    def save(self) -> tuple[int, bool]:
        return self.pos, self.lost

    def restore(self, snapshot: tuple[int, bool]) -> None:
        self.pos, self.lost = snapshot

    def look(self) -> tuple[str, str]:
        return f"Corridor, step {self.pos}.", "You carry nothing."

    @property
    def policy(self) -> list[str]:
        return ["forward"] * (self.length - self.pos)


def logprobs(top: dict[str, float]):
    """A scripted endpoint's reply: log-probabilities for a prior's call, a reflection for the others."""
    def reply(request: dict):
        if request.get("logprobs"):
            return ok("0", top_logprobs=top)(request)
        return ok({"suggestion": f"lesson {sum('lesson' in str(m) for m in request['messages'])}"})(request)
    return reply


def test_the_prior_is_a_softmax_at_temperature_5_with_minus_10_for_absent_indices():
    prior = log_prob_prior({"0": -0.5, " 1": -1.5, "1": -3.0, "go": -0.1}, ["0", "1", "2"])
    z = math.exp(-0.1) + math.exp(-0.3) + math.exp(-2.0)  # -0.5/5, -1.5/5 (" 1" beats "1"), -10/5
    assert prior == pytest.approx([math.exp(-0.1) / z, math.exp(-0.3) / z, math.exp(-2.0) / z])
    assert prior == pytest.approx([0.50805, 0.41596, 0.07599], abs=1e-5)


def test_more_than_10_commands_are_labelled_by_letters_whose_tokens_give_the_prior():
    """A tokenizer that splits numbers into digits (Qwen's) starts "11" with "1": past 10 commands the labels
    are letters, one token each."""
    assert labels(3) == ["0", "1", "2"] and labels(12)[-2:] == ["K", "L"] and labels(54)[50:] == ["y", "z", "52", "53"]
    game = Corridor(1)
    game.moves = [f"wait {i}" for i in range(11)] + ["forward"]
    llm = ScriptedLLM([TokenChoice("L", {"L": -0.1, "1": -2.0})])
    decision = MCDML(game, Settings(simulations=1, dynamic_depth=False), llm).decide(game.reset(0))
    prompt = llm.prompts[0][-1]["content"]
    assert "\nA: wait 0\n" in prompt and "\nL: forward\n" in prompt and prompt.endswith("command's letter only.")
    assert decision.gold_rank == 1 and decision.gold_prob == pytest.approx(1 / (1 + 11 * math.exp(-9.9 / 5)))


def test_the_client_asks_for_log_probabilities_and_reads_the_first_tokens(server: FakeServer):
    server.script = [ok("1", top_logprobs={"1": -0.2, "0": -1.7}), ok("1")]
    choice, record = server.client().first_token([{"role": "user", "content": "pick"}], top=2)
    assert (choice.text, choice.top) == ("1", {"1": -0.2, "0": -1.7})
    assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 2
    assert server.requests[0]["max_tokens"] == 2 and record.error is None
    with pytest.raises(LLMError, match="no log-probabilities"):
        server.client().first_token([{"role": "user", "content": "pick"}])


def test_a_losing_simulation_writes_a_reflection_at_most_3_per_root(server: FakeServer):
    server.script = [logprobs({"0": -0.1})] * 20
    game = Corridor(3, jump=True, forward=False)  # the commands: jump (loses), wait
    search = MCDML(game, Settings(simulations=8, dynamic_depth=False), server.client())
    decision = search.decide(game.reset(0))
    assert decision.reflections == ["lesson 0", "lesson 0", "lesson 0"]  # written at losing states only, 3 at most
    prompts = [r["messages"][-1]["content"] for r in server.requests if r.get("logprobs")]
    assert "lesson" in prompts[-1] and prompts[-1].count("lesson 0") == 3  # the prior is asked again with them
    assert decision.llm_calls == len(server.requests) == 3 + len(prompts)
    assert decision.action == "wait"  # Q(jump) = -10 < Q(wait)


def test_no_reflection_without_a_loss_or_without_cross_trial_memory(server: FakeServer):
    server.script = [logprobs({"0": -0.1})] * 20
    game = Corridor(1)
    assert MCDML(game, Settings(simulations=4), server.client()).decide(game.reset(0)).reflections == []
    game = Corridor(3, jump=True, forward=False)
    decision = MCDML(game, Settings(simulations=4, cross_trial=False), server.client()).decide(game.reset(0))
    assert decision.reflections == [] and not any(not r.get("logprobs") for r in server.requests)


def test_dynamic_depth_goes_20_deeper_when_the_best_q_is_0():
    game = Corridor(12)  # the score lies 12 steps away: beyond depth 10
    deep = MCDML(game, Settings(simulations=5, llm_prior=False)).decide(game.reset(0))
    assert (deep.depth, deep.simulations) == (30, 10)
    assert game.pos == 0  # the game is back at the root, where the second tree began too
    flat = MCDML(game, Settings(simulations=5, llm_prior=False, dynamic_depth=False)).decide(game.reset(0))
    assert (flat.depth, flat.simulations) == (10, 5)
    game = Corridor(1)  # reached at once: Q(forward) = 1
    near = MCDML(game, Settings(simulations=5, llm_prior=False)).decide(game.reset(0))
    assert (near.depth, near.simulations, near.action) == (10, 5, "forward")


def test_the_command_played_is_the_argmax_q_not_the_prior_favourite(server: FakeServer):
    server.script = [logprobs({"1": 0.0})] * 60  # the prior: 1 ("wait") far likelier than 0 ("forward")
    game = Corridor(1)
    decision = MCDML(game, Settings(simulations=20), server.client()).decide(game.reset(0))
    assert decision.q["forward"] == 1.0 and decision.q["wait"] <= 0.95  # won at once; a step later, discounted
    assert decision.action == "forward"
    assert decision.gold_rank == 2 and decision.commands == 2  # the walkthrough's "forward" ranks second


def test_without_an_llm_mcdml_plays_with_a_uniform_prior_and_random_plays_admissible_commands():
    game = Corridor(1)
    played = play(game, 0, GAME_SEARCHES["mcdml"], settings=replace(GAME_SEARCHES["mcdml"].settings, simulations=8))
    assert played.won and played.score == 1 and played.steps == 1 and played.llm_calls == 0
    assert all(d.action in ("forward", "wait") for d in play(game, 0, GAME_SEARCHES["random"], steps=5).decisions)


@pytest.mark.skipif(importlib.util.find_spec("textworld") is None, reason="needs textworld")
def test_a_textworld_game_restored_is_in_the_state_it_was_saved_in():
    from kgplan.games.textworld import TextWorld

    game = TextWorld("textworld-coin-easy")
    try:
        start = game.reset(0)
        snapshot, facts, look = game.save(), game.truth, game.look()
        first = game.policy[0]
        after = game.step(first)
        game.step(next(a for a in after.admissible if a != first))
        game.restore(snapshot)
        assert (game.truth, game.look(), game.policy[0], game.lost) == (facts, look, first, False)
        again = game.step(first)
        assert (again.text, again.admissible, again.score, again.facts) == (after.text, after.admissible,
                                                                             after.score, after.facts)
        game.restore(snapshot)
        assert game.step(first).admissible == after.admissible  # a snapshot restores any number of times
        assert start.admissible != after.admissible
    finally:
        game.close()
