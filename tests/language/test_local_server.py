"""The local server's parts (language/local_model): its greedy sampler against llama-cpp-python's own chain (on the
0.5B model) and its prompts kept on disk; skipped where the local model is not installed (it is opt-in)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgplan.language import local_model

llama_cpp = pytest.importorskip("llama_cpp", reason="the local model is opt-in: pip install -e '.[local-llm]'")

CHOICE = {"type": "object", "properties": {
    "person_in_room": {"enum": ["now: omar is in the kitchen", "now: omar is in the hall", "none"]},
    "light_on": {"enum": ["now: the kitchen light is on", "no longer: the kitchen light is on", "none"]}}}
MENTIONS = {"type": "object", "properties": {"mentions": {"type": "array", "items": {"type": "string"}}},
            "required": ["mentions"]}
ASKED = [  # a choice, free words, and a reply the model would begin otherwise ("Hello", "```json")
    ("Sentence: Omar went into the kitchen and switched the light off.\nCandidates:\n- now: omar is in the kitchen\n"
     "- now: omar is in the hall\n- now: the kitchen light is on\n- no longer: the kitchen light is on", CHOICE),
    ("Copy the words naming people, rooms and things: Omar left the hall for the kitchen, then Omar's lamp, "
     "Omar's mug and Omar's kettle went on in the kitchen.", MENTIONS),
    ("Say hello to Omar in three words.", MENTIONS),
]


@pytest.fixture(scope="module")
def model_file() -> str:
    try:
        return str(local_model.model_path(model="0.5b"))
    except SystemExit as e:
        pytest.skip(str(e))


def replies(path: str) -> list[str]:
    llm = llama_cpp.Llama(model_path=path, n_threads=1, n_ctx=1024, n_batch=64, verbose=False)
    return [llm.create_chat_completion([{"role": "user", "content": text}], temperature=0, max_tokens=60,
                                       repeat_penalty=1.1, response_format={"type": "json_object", "schema": schema}
                                       )["choices"][0]["message"]["content"] for text, schema in ASKED]


def test_the_grammar_asked_about_the_best_token_first_gives_the_chains_reply(model_file, monkeypatch) -> None:
    """The same replies, token for token, with the penalties (1.1, the server's default) and the grammar refusing
    the model's first wish (the JSON's opening brace); the first two are what the schemas ask."""
    shipped = replies(model_file)
    monkeypatch.setattr(llama_cpp, "Llama", llama_cpp.Llama)  # greedy_first replaces it: put back afterwards
    local_model.greedy_first()
    used = []
    monkeypatch.setattr(local_model.GreedyFirst, "sample", lambda self, ctx, idx, f=local_model.GreedyFirst.sample: (
        used.append(self), f(self, ctx, idx))[1])
    assert replies(model_file) == shipped
    assert used and all(isinstance(s, local_model.GreedyFirst) for s in used)
    assert any(s.every is not None for s in used)  # the whole vocabulary asked where the best token was refused
    assert json.loads(shipped[0])["person_in_room"] == "now: omar is in the kitchen"
    assert "Omar" in json.loads(shipped[1])["mentions"]


def test_the_prompt_cache_counts_the_logits_each_prompt_keeps(monkeypatch) -> None:
    """llama-cpp-python counts only each kept prompt's KV state, not its copy of a batch of logits (about 300 MB for
    Qwen's vocabulary): a 512 MB cache of the 0.5B held 10 GB. Counted, it keeps what fits."""
    monkeypatch.setattr(llama_cpp, "LlamaRAMCache", llama_cpp.LlamaRAMCache)  # restored after the test
    local_model.prompt_cache()
    cache = llama_cpp.LlamaRAMCache(capacity_bytes=10_000)
    for k in range(3):  # 100 bytes of state and 4000 of logits each: two fit
        cache[[k, 1, 2, 3]] = llama_cpp.llama.LlamaState(
            input_ids=np.arange(2, dtype=np.intc), scores=np.zeros((2, 500), np.single), n_tokens=2,
            llama_state=b"x" * 100, llama_state_size=100, seed=0)
    assert cache.cache_size == 8200 and [key[0] for key in cache.cache_state] == [1, 2]


def state(n: int) -> object:
    return llama_cpp.llama.LlamaState(input_ids=np.arange(n, dtype=np.intc), scores=np.zeros((2, 3), np.single),
                                      n_tokens=n, llama_state=b"kv" * n, llama_state_size=2 * n, seed=0)


def test_prompts_long_to_read_are_kept_on_disk_and_a_restarted_server_reads_them_back(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(llama_cpp, "LlamaRAMCache", llama_cpp.LlamaRAMCache)  # prompt_cache replaces it
    local_model.prompt_cache(tmp_path, 1 << 20)
    cache = llama_cpp.LlamaRAMCache(capacity_bytes=1 << 20)
    examples = tuple(range(1000, 1600))
    cache[(*examples, 1, 2)] = state(602)  # read from nothing: kept
    cache[(*examples, 3, 4, 5)] = state(603)  # 3 tokens read after the kept prefix: not kept
    assert len(list(tmp_path.glob("*.state"))) == 1
    restarted = llama_cpp.LlamaRAMCache(capacity_bytes=1 << 20)
    assert restarted[(*examples, 9)].n_tokens == 602  # the longest prefix it shares: the kept prompt's
    assert list(restarted.cache_state) == [(*examples, 1, 2)]


def test_kept_prompts_stay_under_their_size_newest_first(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(llama_cpp, "LlamaRAMCache", llama_cpp.LlamaRAMCache)
    local_model.prompt_cache(tmp_path, 8_000)  # room for one state of 600 tokens (5.5 KB pickled), not two
    cache = llama_cpp.LlamaRAMCache(capacity_bytes=1 << 20)
    cache[tuple(range(600))] = state(600)
    cache[tuple(range(5000, 5600))] = state(600)
    (kept,) = tmp_path.glob("*.state")
    assert llama_cpp.LlamaRAMCache(capacity_bytes=1 << 20)[tuple(range(5000, 5010))].n_tokens == 600
    assert kept.stat().st_size < 8_000
