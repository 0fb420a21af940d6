"""The LLM client layer: OpenAIClient against a fake OpenAI-compatible HTTP server on 127.0.0.1, ScriptedLLM, and
recording replies (Recording) to replay them (Replay)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from kgplan.language.llm import (
    LLMConfig,
    LLMError,
    OpenAIClient,
    Recording,
    Replay,
    ScriptedLLM,
    TokenChoice,
    choice,
    enum_model,
    strict_schema,
)
from tests.conftest import HOUSEHOLD
from tests.support.fake_llm import FakeServer, Response, Script, error, ok

Fact = enum_model("Fact", predicate=["at", "holding"], args=(list[choice(["robot", "kitchen", "cup"])], ...))
MESSAGES = [
    {"role": "system", "content": "You extract facts."},
    {"role": "user", "content": "The robot is in the kitchen."},
]
FACT = {"predicate": "at", "args": ["robot", "kitchen"]}


class Inner(BaseModel):
    name: str = "x"


class Outer(BaseModel):
    inner: Inner
    described: Inner | None = None
    kind: choice(["only"])


def objects(schema: Any) -> Iterator[dict]:
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from objects(value)


def test_strict_schema_requires_everything_and_forbids_extras() -> None:
    schema = strict_schema(Outer)
    assert "default" not in json.dumps(schema)
    found = list(objects(schema))
    assert len(found) == 2  # Outer and Inner (in $defs)
    for obj in found:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert schema["properties"]["kind"]["enum"] == ["only"]
    assert Outer.model_validate({"inner": {"name": "a"}, "described": None, "kind": "only"}).inner.name == "a"


def test_schema_request_and_validated_reply(server: FakeServer) -> None:
    server.script = [ok(FACT)]
    llm = server.client(temperature=0.0)
    fact, record = llm.complete(MESSAGES, Fact)
    assert isinstance(fact, Fact) and fact.predicate == "at" and fact.args == ["robot", "kitchen"]
    (request,) = server.requests
    assert request["model"] == "fake-model" and request["messages"] == MESSAGES and request["temperature"] == 0.0
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Fact" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["properties"]["predicate"]["enum"] == ["at", "holding"]
    assert schema["properties"]["args"]["items"]["enum"] == ["robot", "kitchen", "cup"]
    assert schema["additionalProperties"] is False and schema["required"] == ["predicate", "args"]
    assert record.mode == "json_schema" and record.attempts == 1 and record.error is None


def test_invalid_reply_raises_clear_error(server: FakeServer) -> None:
    server.script = [ok({"predicate": "teleported", "args": ["robot"], "pad": "z" * 2000})]
    llm = server.client()
    with pytest.raises(LLMError) as caught:
        llm.complete(MESSAGES, Fact)
    message = str(caught.value)
    assert "Fact" in message and "predicate" in message and "teleported" in message
    assert "more chars]" in message and len(message) < 2000
    assert caught.value.raw is not None and len(caught.value.raw) > 2000
    assert llm.records[-1].error == message and llm.records[-1].prompt_tokens == 10

    server.script = [ok("I cannot answer that.")]
    with pytest.raises(LLMError, match=r"not JSON.*I cannot answer that"):
        llm.complete(MESSAGES, Fact)


@pytest.mark.parametrize("status", [500, 429, 503])
def test_retries_transient_errors(server: FakeServer, status: int) -> None:
    """The openai client retries them itself (max_retries = max_attempts - 1)."""
    server.script = [error(status), ok(FACT)]
    llm = server.client()
    fact, record = llm.complete(MESSAGES, Fact)
    assert fact.predicate == "at" and record.attempts == 2 and len(server.requests) == 2


def test_retries_timeouts(server: FakeServer) -> None:
    server.script = [ok(FACT, delay=1.0), ok(FACT)]
    llm = server.client(timeout_s=0.2)
    _, record = llm.complete(MESSAGES, Fact)
    assert record.attempts == 2


def test_gives_up_after_max_attempts(server: FakeServer) -> None:
    server.script = [error(500) for _ in range(5)]
    llm = server.client(max_attempts=3)
    with pytest.raises(LLMError, match="request failed after 3 attempts: InternalServerError"):
        llm.complete(MESSAGES, Fact)
    assert len(server.requests) == 3 and llm.records[-1].attempts == 3 and llm.usage.failed == 1


def test_unreachable_endpoint() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections are refused
    config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", max_attempts=2)
    with pytest.raises(LLMError, match="request failed after 2 attempts: APIConnectionError"):
        OpenAIClient(config).complete(MESSAGES, Fact)


def test_other_client_errors_are_not_retried(server: FakeServer) -> None:
    server.script = [error(400, "model 'nope' not found"), error(401, "bad key")]
    llm = server.client()
    with pytest.raises(LLMError, match=r"request rejected.*model 'nope' not found"):
        llm.complete(MESSAGES, Fact)
    with pytest.raises(LLMError, match="AuthenticationError"):
        llm.complete(MESSAGES, Fact)
    assert len(server.requests) == 2 and llm.mode == "json_schema"


def reject(kind: str, status: int = 400) -> Script:
    """A reply format rejected by the endpoint (as older vLLM/llama.cpp servers do), other requests answered."""

    def respond(request: dict) -> Response:
        if request.get("response_format", {}).get("type") == kind:
            return status, {"error": {"message": f"response_format type {kind} is not supported"}}, 0.0
        return ok(FACT)(request)

    return respond


@pytest.mark.parametrize("status", [400, 422, 500])  # llama-cpp-python 0.3 answers json_schema with a 500
def test_falls_back_to_json_object(server: FakeServer, status: int) -> None:
    server.script = [reject("json_schema", status)] * 10
    llm = server.client(max_attempts=3)
    llm.complete(MESSAGES, Fact)
    _, record = llm.complete(MESSAGES, Fact)  # the fallback sticks
    tries = 3 if status == 500 else 1  # the openai client retries a 500 before it reaches us
    assert [r.get("response_format", {}).get("type") for r in server.requests] == [
        *["json_schema"] * tries,
        "json_object",
        "json_object",
    ]
    assert record.mode == "json_object" and llm.records[0].attempts == tries + 1
    *before, last = server.requests[tries]["messages"]
    assert last["content"].startswith(MESSAGES[-1]["content"]) and "JSON schema" in last["content"]
    assert '"enum": ["at", "holding"]' in last["content"]
    assert before == MESSAGES[:-1]  # the schema comes last: prompts with other schemas share the prefix


def test_a_grammar_endpoint_gets_the_schema_only_as_its_grammar(server: FakeServer) -> None:
    """KGPLAN_LLM_SCHEMA_IN_PROMPT=0: the messages go as they are (a small model copies worse with the schema)."""
    server.script = [ok(FACT)]
    config = LLMConfig.from_env({"KGPLAN_LLM_BASE_URL": server.url, "KGPLAN_LLM_SCHEMA_IN_PROMPT": "0"},
                                response_format="json_object")
    OpenAIClient(config).complete(MESSAGES, Fact)
    (request,) = server.requests
    assert request["messages"] == MESSAGES and request["response_format"]["schema"]["properties"]["predicate"]


def test_falls_back_to_text_and_extracts_json(server: FakeServer) -> None:
    server.script = [reject("json_object"), lambda r: ok(f"Sure:\n```json\n{json.dumps(FACT)}\n```")(r)]
    llm = server.client(response_format="json_object")  # the configured starting format
    fact, record = llm.complete(MESSAGES[1:], Fact)
    assert fact.args == ["robot", "kitchen"] and record.mode == "text"
    assert server.requests[0]["response_format"]["type"] == "json_object"
    assert server.requests[0]["response_format"]["schema"]["properties"]["predicate"]["enum"] == ["at", "holding"]
    assert "response_format" not in server.requests[1]
    assert "JSON schema" in server.requests[1]["messages"][-1]["content"]  # the schema instruction, added


def test_usage_and_latency_accounting(server: FakeServer) -> None:
    server.script = [ok(FACT, 100, 20, delay=0.05), ok(FACT, 7, 3), ok(FACT, prompt_tokens=None)]
    llm = server.client()
    records = [llm.complete(MESSAGES, Fact)[1] for _ in range(3)]
    assert [(r.prompt_tokens, r.completion_tokens) for r in records] == [(100, 20), (7, 3), (0, 0)]
    assert records[0].latency_s >= 0.05 and all(r.latency_s > 0 for r in records)
    assert llm.records == records
    usage = llm.usage
    assert (usage.calls, usage.failed, usage.prompt_tokens, usage.completion_tokens) == (3, 0, 107, 23)
    assert usage.latency_s == pytest.approx(sum(r.latency_s for r in records))


def test_config_from_env() -> None:
    env = {
        "KGPLAN_LLM_BASE_URL": "http://localhost:11434/v1",
        "KGPLAN_LLM_MODEL": "qwen2.5:7b",
        "OPENAI_API_KEY": "sk-x",
        "KGPLAN_LLM_RESPONSE_FORMAT": "json_object",
        "KGPLAN_LLM_TIMEOUT": "600",
        "KGPLAN_LLM_MAX_TOKENS": "1024",
    }
    config = LLMConfig.from_env(env, max_attempts=2)
    assert (config.base_url, config.model, config.api_key) == ("http://localhost:11434/v1", "qwen2.5:7b", "sk-x")
    assert config.response_format == "json_object" and config.max_attempts == 2 and config.timeout_s == 600.0
    assert config.max_tokens == 1024
    assert LLMConfig.from_env({}) == LLMConfig()
    with pytest.raises(ValueError, match="KGPLAN_LLM_RESPONSE_FORMAT"):
        LLMConfig.from_env({"KGPLAN_LLM_RESPONSE_FORMAT": "xml"})
    for bad in ("0", "-5", "many"):
        with pytest.raises(ValueError, match="KGPLAN_LLM_MAX_TOKENS"):
            LLMConfig.from_env({"KGPLAN_LLM_MAX_TOKENS": bad})


def test_no_endpoint_is_said_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21 item 13: neither a base URL nor a key: LLMError naming the settings at once (no request, no
    retries); a base URL alone (a local server) or a key alone (OpenAI) is an endpoint."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match=r"no LLM is configured: set KGPLAN_LLM_BASE_URL .* or OPENAI_API_KEY"):
        OpenAIClient(LLMConfig.from_env({}))
    assert not LLMConfig().configured
    assert LLMConfig(base_url="http://127.0.0.1:8080/v1").configured and LLMConfig(api_key="sk-x").configured
    assert LLMConfig.from_env({"OPENAI_BASE_URL": "http://h/v1"}).base_url == "http://h/v1"


def test_max_tokens_bounds_a_reply_and_a_cut_reply_says_so(server: FakeServer) -> None:
    """Unbounded, a grammar-constrained local model can write until its context is full (many minutes)."""
    cut = '{"predicate": "at", "args": ["robot", "kit'
    server.script = [ok(cut, finish_reason="length"), ok(FACT)]
    llm = server.client(max_tokens=16)
    with pytest.raises(LLMError, match="cut at its length limit") as caught:
        llm.complete(MESSAGES, Fact)
    assert caught.value.raw == cut and server.requests[0]["max_tokens"] == 16
    server.client().complete(MESSAGES, Fact)
    assert "max_tokens" not in server.requests[1]  # unset: the endpoint's own bound


def test_scripted_llm_replays_validates_and_records_prompts() -> None:
    def by_prompt(messages: list[dict]) -> str:
        return json.dumps({"predicate": "holding", "args": [messages[-1]["content"]]})

    llm = ScriptedLLM([json.dumps(FACT), Fact(predicate="holding", args=["cup"]), by_prompt, '{"predicate": "flying"}'])
    first, _ = llm.complete(MESSAGES, Fact)
    second, _ = llm.complete([{"role": "user", "content": "2"}], Fact)
    third, _ = llm.complete([{"role": "user", "content": "cup"}], Fact)
    assert (first.predicate, second.args, third.args) == ("at", ["cup"], ["cup"])
    with pytest.raises(LLMError, match="predicate"):
        llm.complete([{"role": "user", "content": "4"}], Fact)
    with pytest.raises(LLMError, match="no reply left for call 5"):
        llm.complete([{"role": "user", "content": "5"}], Fact)
    assert llm.prompts[0] == MESSAGES and [p[-1]["content"] for p in llm.prompts[1:]] == ["2", "cup", "4", "5"]
    assert (llm.usage.calls, llm.usage.failed) == (5, 2)



def test_recorded_replies_replay_in_order(server: FakeServer) -> None:
    """Structured replies, a refused one (its raw text kept), sampled texts and an endpoint error are recorded in
    order, as JSON; the replay answers the same calls alike. The client's records are the recording's."""
    server.script = [ok(FACT), ok("I moved it."), ok("walk to kitchen"), ok("open fridge"), error(400)]
    inner = server.client()
    llm = Recording(inner)

    def calls(llm: Any) -> list:
        out: list = [llm.complete(MESSAGES, Fact)[0]]
        with pytest.raises(LLMError) as refused:
            llm.complete(MESSAGES, Fact)
        out += [refused.value.raw, llm.sample(MESSAGES, 2, temperature=0.6, max_tokens=8, stop=[","])[0]]
        with pytest.raises(LLMError) as failed:
            llm.complete(MESSAGES, Fact)
        return [*out, str(failed.value), failed.value.raw]

    recorded = calls(llm)
    assert recorded[1:3] == ["I moved it.", ["walk to kitchen", "open fridge"]]
    assert "request rejected" in recorded[3] and recorded[4] is None
    assert llm.records is inner.records and (llm.usage.calls, llm.usage.failed) == (5, 2)
    assert [sorted(r) for r in llm.replies] == [["reply", "schema"], ["error", "raw", "schema"], ["reply"], ["reply"],
                                                ["error", "raw", "schema"]]
    replay = Replay(json.loads(json.dumps(llm.replies)))
    assert calls(replay) == recorded and (replay.usage.calls, replay.usage.failed) == (5, 2)
    with pytest.raises(LLMError, match="no reply left"):
        replay.complete(MESSAGES, Fact)
    old = Replay([{"reply": "walk to kitchen"}, {"error": "boom"}])  # rearrange's older files: no schema, no raw
    assert old.sample(MESSAGES, 1, 0.6, 8)[0] == ["walk to kitchen"]
    with pytest.raises(LLMError, match="boom"):
        old.complete(MESSAGES, Fact)

def test_complete_many_asks_every_replica_at_once(server: FakeServer, replica: FakeServer) -> None:
    """Two endpoints of one model (two one-thread llama.cpp servers on a 2-core machine): the i-th request goes to
    the i-th endpoint, all at once (each endpoint answers only once the other has its request); the results come
    in order, a failure in its place (not raised); a recording keeps them in order and its replay answers alike.
    Without replicas, or through a client that has none (ScriptedLLM), the requests go one after the other."""
    met = threading.Barrier(2, timeout=10)

    def meeting(reply: Script) -> Script:
        def answer(request: dict) -> Response:
            met.wait()
            return reply(request)
        return answer
    other = {"predicate": "holding", "args": ["cup"]}
    server.script, replica.script = [meeting(ok(FACT)), ok(FACT)], [meeting(ok(other)), error(400)]
    llm = Recording(server.client(replicas=(replica.url,), max_attempts=1))
    first, second = llm.complete_many([(MESSAGES, Fact), ([{"role": "user", "content": "2"}], Fact)])
    assert not isinstance(first, LLMError) and not isinstance(second, LLMError)
    assert (first[0].predicate, second[0].predicate) == ("at", "holding")
    assert [r["messages"][-1]["content"] for r in (*server.requests, *replica.requests)] == [MESSAGES[-1]["content"],
                                                                                             "2"]
    ok_, failed = llm.complete_many([(MESSAGES, Fact), (MESSAGES, Fact)])
    assert isinstance(failed, LLMError) and "request rejected" in str(failed) and not isinstance(ok_, LLMError)
    assert [sorted(r) for r in llm.replies] == [["reply", "schema"]] * 3 + [["error", "raw", "schema"]]
    replay = Replay(json.loads(json.dumps(llm.replies)))
    again = replay.complete_many([(MESSAGES, Fact)] * 4)
    assert [r[0] for r in again[:3]] == [first[0], second[0], ok_[0]] and str(again[3]) == failed.reason
    assert len(server.client().complete_many([])) == 0
    with pytest.raises(ValueError, match="an empty URL"):
        LLMConfig.from_env({"KGPLAN_LLM_BASE_URL": "http://a/v1,"})
    config = LLMConfig.from_env({"KGPLAN_LLM_BASE_URL": "http://a/v1, http://b/v1"})
    assert (config.base_url, config.replicas) == ("http://a/v1", ("http://b/v1",))


def test_first_token_replies_are_recorded_and_replayed(server: FakeServer) -> None:
    """MC-DML's log-probability calls: a recording keeps each first token's alternatives (and an endpoint without
    them as an error), its replay answers the same; a first-token reply where a structured one is asked is an
    LLMError."""
    server.script = [ok("1", top_logprobs={"1": -0.2, " 0": -1.7}), ok("1")]
    llm = Recording(server.client())

    def calls(llm: Any) -> list:
        first = llm.first_token(MESSAGES, top=2)[0]
        with pytest.raises(LLMError) as none:
            llm.first_token(MESSAGES)
        return [first, str(none.value)]

    recorded = calls(llm)
    assert recorded[0] == TokenChoice("1", {"1": -0.2, " 0": -1.7}) and "no log-probabilities" in recorded[1]
    assert llm.replies[0] == {"reply": "1", "top": {"1": -0.2, " 0": -1.7}}
    replay = Replay(json.loads(json.dumps(llm.replies)))
    assert calls(replay) == recorded and (replay.usage.calls, replay.usage.failed) == (2, 1)
    with pytest.raises(LLMError, match="first token"):
        Replay(llm.replies[:1]).complete(MESSAGES, Fact)


def test_cli_flags_choose_the_endpoint(server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from kgplan.interfaces import cli

    monkeypatch.delenv("KGPLAN_LLM_BASE_URL", raising=False)
    store = ["--store", f"sqlite:{tmp_path / 'w.db'}"]
    runner = CliRunner()
    assert runner.invoke(cli.app, [*store, "init", "--problem", str(HOUSEHOLD / "world.pddl")]).exit_code == 0
    move = {"add": [{"predicate": "on", "args": ["apple", "kitchen_table"]}],
            "remove": [{"predicate": "on", "args": ["apple", "kitchen_counter"]}]}
    server.script = [ok({"entities": ["apple", "kitchen_table", "kitchen_counter"]}), ok(move)]
    res = runner.invoke(cli.app, [*store, "--llm-url", server.url, "--llm-model", "local-qwen", "tell", "--dry-run",
                                  "--mode", "rewrite", "The apple is on the kitchen table now."])
    assert res.exit_code == 0, res.output
    assert [r["model"] for r in server.requests] == ["local-qwen", "local-qwen"]
    assert "(on apple kitchen_table)" in res.output and "dry run" in res.output.lower()


def test_the_openai_client_is_imported_only_by_the_client_that_uses_it() -> None:
    """A command line start does not load the openai package (most of its start): only an OpenAIClient does."""
    import subprocess
    import sys

    code = ("import sys; import kgplan.interfaces.cli; assert 'openai' not in sys.modules; "
            "from kgplan.language.llm import LLMConfig, OpenAIClient; OpenAIClient(LLMConfig(base_url='http://x/v1')); "
            "assert 'openai' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_local_model_server_says_the_settings_that_point_kgplan_at_it() -> None:
    """What `local_model --serve` prints: the endpoint and model, and greedy replies in the server's grammar (without
    them the client sends the schema in the prompt and the server samples at 0.8)."""
    from kgplan.language.local_model import settings

    config = LLMConfig.from_env(settings("0.5b", 8123))
    assert config.base_url == "http://127.0.0.1:8123/v1" and config.model == "qwen2.5-coder-0.5b"
    assert config.temperature == 0.0 and config.response_format == "json_object" and not config.schema_in_prompt
    assert config.max_tokens == 1024 and config.timeout_s == 600.0


def test_the_local_model_server_keeps_a_prompt_cache_unless_told_not_to() -> None:
    """The exploration's short questions come between long prompts that share their instructions and examples: with
    llama-cpp-python's RAM cache each resumes from the longest prefix it shares with any prompt before (a cooking
    episode of the 1.5B: 39309 prompt tokens evaluated with one slot, 14421 with the cache)."""
    import argparse

    from kgplan.language.local_model import server_argv

    def args(cache_mb: int) -> argparse.Namespace:
        return argparse.Namespace(model="0.5b", port=8123, threads=1, ctx=8192, logprobs=False, cache_mb=cache_mb,
                                  batch=64)

    argv = server_argv(Path("m.gguf"), args(512))
    assert argv[argv.index("--cache") + 1] == "true" and argv[argv.index("--cache_size") + 1] == str(512 << 20)
    assert argv[argv.index("--n_batch") + 1] == "64"  # the logits each kept prompt copies: 64 rows, not 512
    assert "--cache" not in server_argv(Path("m.gguf"), args(0))
