"""A fake OpenAI-compatible endpoint on 127.0.0.1: POST /v1/chat/completions answered by scripted responses."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kgplan.language.llm import LLMConfig, OpenAIClient

Response = tuple[int, dict, float]  # status, JSON body, delay before answering (s)
Script = Callable[[dict], Response]


def ok(content: Any, prompt_tokens: int | None = 10, completion_tokens: int = 5, delay: float = 0.0,
       finish_reason: str = "stop", top_logprobs: dict[str, float] | None = None) -> Script:
    """A 200 chat completion whose message content is `content` (JSON-encoded unless a string), with its first
    token's `top_logprobs` (token -> log-probability) where given."""
    text = content if isinstance(content, str) else json.dumps(content)
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": text}}],
    }
    if top_logprobs is not None:
        alternatives = [{"token": t, "logprob": lp, "bytes": None} for t, lp in top_logprobs.items()]
        body["choices"][0]["logprobs"] = {"content": [{"token": text[:1], "logprob": max(top_logprobs.values()),
                                                       "bytes": None, "top_logprobs": alternatives}]}
    if prompt_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return lambda request: (200, body, delay)


def error(status: int, message: str = "boom", delay: float = 0.0) -> Script:
    return lambda request: (status, {"error": {"message": message, "type": "server_error"}}, delay)


class FakeServer:
    """POST /v1/chat/completions answered by scripted responses in order; request bodies are kept."""

    def __init__(self) -> None:
        self.script: list[Script] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(request)
                if self.path != "/v1/chat/completions" or not server.script:
                    status, body, delay = 404, {"error": {"message": f"unscripted {self.path}"}}, 0.0
                else:
                    status, body, delay = server.script.pop(0)(request)
                time.sleep(delay)
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if status != 200:  # as OpenAI does: the openai client waits this long before retrying
                        self.send_header("retry-after-ms", "1")
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client timed out and hung up
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def client(self, **overrides: Any) -> OpenAIClient:
        config = LLMConfig(model="fake-model", base_url=self.url, api_key="sk-test", timeout_s=5)
        return OpenAIClient(LLMConfig(**{**config.__dict__, **overrides}))


# ---- replies to propose-then-choose (kgplan.language.propose) ----------------------------------------------
def mentions(*words: str) -> str:
    """The reply naming the words of a sentence that name people, rooms and things."""
    return json.dumps({"mentions": list(words)})


def pick(messages: list[dict], **glosses: str) -> str:
    """The reply choosing, per predicate, the candidate shown with that gloss (e.g. `switched_on="no longer:
    kitchen light is switched on"`), after checking the prompt: the sentence's candidates listed, the
    domain's worked examples before it."""
    last = messages[-1]["content"]
    assert "\nCandidates:\n" in last and any("Candidates:" in m["content"] for m in messages[1:-1]), messages
    shown = [line.removeprefix("- ") for line in last.split("\nCandidates:\n", 1)[1].split("\n")]
    missing = set(glosses.values()) - set(shown)
    assert not missing, f"not among the candidates: {missing}; shown: {shown}"
    return json.dumps(glosses)


def chooses(**glosses: str) -> Script:
    """`pick` as a scripted response of the fake endpoint."""
    return lambda request: ok(pick(request["messages"], **glosses))(request)
