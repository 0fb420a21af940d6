"""LLM clients with structured (pydantic-validated) replies and per-call usage records.

`OpenAIClient` talks to any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server);
`ScriptedLLM` replays replies a test or an oracle specifies. Both implement `LLM.complete(messages, schema)`,
which returns the reply validated against the pydantic model `schema` and its `CallRecord`, or raises `LLMError`.
`Recording` keeps another client's replies in order (a benchmark's `--record`), `Replay` answers them again.

Reply schemas are plain pydantic models; restrict names to known ones with `choice` (a `Literal`, i.e. a
JSON-schema `enum`), e.g. ``enum_model("Fact", predicate=["at", "holding"], args=(list[choice(objects)], ...))``.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError, create_model

from kgplan.errors import InputError, LLMError

if TYPE_CHECKING:  # imported by the client that uses it: importing it takes most of a CLI command's start
    import openai

M = TypeVar("M", bound=BaseModel)
Mode = Literal["json_schema", "json_object", "text"]
MODES: tuple[Mode, ...] = ("json_schema", "json_object", "text")
FORMAT_WORDS = ("response_format", "json_schema", "json_object")  # in an error that rejects the reply format
NOT_CONFIGURED = ("no LLM is configured: set KGPLAN_LLM_BASE_URL (an OpenAI-compatible endpoint, e.g. "
                  "http://127.0.0.1:8080/v1, or --llm-url) or OPENAI_API_KEY (OpenAI), and KGPLAN_LLM_MODEL for the "
                  "model")


@dataclass(frozen=True)
class CallRecord:
    """One `complete` call: tokens from the API's `usage` (0 when not reported), wall time over all attempts
    (HTTP requests, the client's retries included)."""

    model: str
    mode: Mode
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int
    error: str | None = None


@dataclass(frozen=True)
class Usage:
    """Totals over a client's calls."""

    calls: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float


@dataclass(frozen=True)
class LLMConfig:
    """Endpoint and call policy; `from_env` reads it, callers override fields with `dataclasses.replace`.

    `response_format` is the first reply format tried; the client falls back json_schema -> json_object -> text
    when the endpoint rejects one (HTTP 400, 422 or 500 naming the format). `max_attempts` bounds the requests
    per reply format: the openai client retries connection errors, timeouts, 408/409/429 and 5xx itself
    (exponential backoff with jitter, honouring Retry-After), `timeout_s` is per request. `max_tokens` bounds a
    reply (unset: the endpoint's own bound, which for a llama.cpp server is the whole context window).
    `replicas` are further endpoints serving the same model (a second one-thread llama.cpp server on a 2-core
    machine): `complete_many` sends its requests to all of them at once, and `complete` has them read its prompt
    meanwhile (`OpenAIClient.mirror`).
    """

    model: str = "gpt-4o-mini"
    base_url: str | None = None
    replicas: tuple[str, ...] = ()
    api_key: str | None = None
    response_format: Mode = "json_schema"
    temperature: float | None = None
    timeout_s: float = 60.0
    max_attempts: int = 4
    max_tokens: int | None = None
    schema_in_prompt: bool = True  # off: the endpoint enforces json_object's schema itself (a llama.cpp grammar)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """`KGPLAN_LLM_BASE_URL` (else the openai client's `OPENAI_BASE_URL`; several, comma-separated: the
        first and its `replicas`), `KGPLAN_LLM_MODEL`, `OPENAI_API_KEY`,
        `KGPLAN_LLM_RESPONSE_FORMAT`, `KGPLAN_LLM_TIMEOUT` (seconds per request: raise it for a slow local
        model), `KGPLAN_LLM_MAX_TOKENS`, `KGPLAN_LLM_TEMPERATURE` (0: the same reply to the same prompt),
        `KGPLAN_LLM_SCHEMA_IN_PROMPT=0` (a llama.cpp server: json_object's schema is its grammar, and the prompt
        need not repeat it; small models copy worse with it)."""
        env = os.environ if env is None else env
        urls = [u.strip() for u in (env.get("KGPLAN_LLM_BASE_URL") or env.get("OPENAI_BASE_URL") or "").split(",")]
        if len(urls) > 1 and not all(urls):
            raise InputError(f"KGPLAN_LLM_BASE_URL={','.join(urls)!r}: an empty URL in the list")
        config = cls(
            model=env.get("KGPLAN_LLM_MODEL") or cls.model,
            base_url=urls[0] or None,
            replicas=tuple(urls[1:]),
            api_key=env.get("OPENAI_API_KEY") or None,
            timeout_s=float(env.get("KGPLAN_LLM_TIMEOUT") or cls.timeout_s),
        )
        limit = env.get("KGPLAN_LLM_MAX_TOKENS")
        if limit:
            if not limit.isdigit() or int(limit) == 0:
                raise InputError(f"KGPLAN_LLM_MAX_TOKENS={limit!r}: expected a positive whole number")
            config = replace(config, max_tokens=int(limit))
        if temperature := env.get("KGPLAN_LLM_TEMPERATURE"):
            try:
                config = replace(config, temperature=float(temperature))
            except ValueError:
                raise InputError(f"KGPLAN_LLM_TEMPERATURE={temperature!r}: expected a number") from None
        if env.get("KGPLAN_LLM_SCHEMA_IN_PROMPT") == "0":
            config = replace(config, schema_in_prompt=False)
        fmt = env.get("KGPLAN_LLM_RESPONSE_FORMAT")
        if fmt:
            if fmt not in MODES:
                raise InputError(f"KGPLAN_LLM_RESPONSE_FORMAT={fmt!r}: expected one of {', '.join(MODES)}")
            config = replace(config, response_format=fmt)
        return replace(config, **overrides)

    @property
    def configured(self) -> bool:
        """Whether there is an endpoint to ask: a base URL (a local server needs no key), or a key for OpenAI."""
        return bool(self.base_url or self.api_key)


def choice(values: Iterable[str]) -> Any:
    """The type accepting exactly these strings: `Literal[...]`, whose JSON schema is an `enum`."""
    values = tuple(dict.fromkeys(values))
    if not values:
        raise ValueError("choice() needs at least one value")
    return Literal[values]


def enum_model(name: str, /, **fields: Any) -> type[BaseModel]:
    """`pydantic.create_model(name, **fields)`, where a field given as a list of strings is a required `choice`.

    Other field values go to `create_model` unchanged: a type, or `(type, default)`.
    """
    spec = {k: (choice(v), ...) if isinstance(v, list) else v for k, v in fields.items()}
    return create_model(name, **spec)


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema made valid for OpenAI strict mode.

    Every object lists all its properties as required and has `additionalProperties: false`; defaults
    and titles are dropped (the model still applies defaults; titles only cost prompt tokens); `const`
    becomes a one-value `enum`; a `$ref` with sibling keywords (e.g. a description) is inlined.
    Free-form dicts (`dict[str, X]`) cannot be made strict.
    """
    root = model.model_json_schema()
    defs = root.get("$defs", {})

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node and len(node) > 1:
            node = dict(node)
            node = {**defs[node.pop("$ref").rsplit("/", 1)[-1]], **node}
        out = {
            key: {name: fix(sub) for name, sub in value.items()} if key in ("properties", "$defs") else fix(value)
            for key, value in node.items()
            if key not in ("default", "title")
        }
        if "const" in out:
            out["enum"] = [out.pop("const")]
        if "properties" in out:
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    return fix(root)


def schema_name(model: type[BaseModel]) -> str:
    """The model's name as the API accepts it (letters, digits, `_`, `-`; at most 64)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", model.__name__)[:64]


def extract_json(text: str) -> Any:
    """The reply's JSON value: the whole text, else the first decodable `{...}` in it (code fences, prose)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch == "{":
            try:
                return decoder.raw_decode(text, i)[0]
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON object found")


def parse_reply(text: str, schema: type[M]) -> M:
    """Validate a text reply against `schema`; `LLMError` says what is wrong and shows the (truncated) text."""
    try:
        return schema.model_validate(extract_json(text))
    except ValueError as e:  # ValidationError is a ValueError
        reason = str(e) if isinstance(e, ValidationError) else f"not JSON ({e})"
        raise LLMError(f"reply does not fit {schema.__name__}: {reason}", raw=text) from e


@dataclass(frozen=True)
class TokenChoice:
    """A short reply with its first token's alternatives: token -> log-probability."""

    text: str
    top: dict[str, float]


class LLM(ABC):
    """A chat model answering with replies validated against a pydantic schema; keeps a record per call."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    @abstractmethod
    def complete(self, messages: list[dict], schema: type[M]) -> tuple[M, CallRecord]:
        """Send `messages` (OpenAI chat format), return the reply as a `schema` instance; raise `LLMError`."""

    def first_token(self, messages: list[dict], top: int = 20, max_tokens: int = 2) -> tuple[TokenChoice, CallRecord]:
        """The reply's text and its first token's `top` most likely tokens with their log-probabilities
        (MC-DML's prior); `LLMError` where the client or its endpoint gives none."""
        raise LLMError(f"{type(self).__name__} gives no log-probabilities")

    def sample(self, messages: list[dict], n: int, temperature: float, max_tokens: int,
               stop: Sequence[str] = (), top_p: float = 1.0) -> tuple[list[str], list[CallRecord]]:
        """`n` plain-text replies sampled at `temperature` (nucleus `top_p`), each cut at `stop` (LLM-MCTS's
        policy), with the records of the calls made; `LLMError` where the client gives none."""
        raise LLMError(f"{type(self).__name__} gives no sampled text replies")

    def complete_many(self, requests: Sequence[tuple[list[dict], type[M]]]) -> list[tuple[M, CallRecord] | LLMError]:
        """`complete` for each (messages, schema), the results in order, a failure as its `LLMError` (not raised):
        one after the other, unless a client can ask several endpoints at once."""
        return [_or_error(self.complete, messages, schema) for messages, schema in requests]

    @property
    def usage(self) -> Usage:
        return Usage(
            calls=len(self.records),
            failed=sum(r.error is not None for r in self.records),
            prompt_tokens=sum(r.prompt_tokens for r in self.records),
            completion_tokens=sum(r.completion_tokens for r in self.records),
            latency_s=sum(r.latency_s for r in self.records),
        )


class OpenAIClient(LLM):
    """An OpenAI-compatible chat endpoint: the openai client's own retries, and the reply-format fallback.

    LLMError at once, before any request, when the settings name no endpoint (see `LLMConfig.configured`).
    """

    def __init__(self, config: LLMConfig | None = None) -> None:
        super().__init__()
        self.config = config or LLMConfig.from_env()
        if not self.config.configured:
            raise LLMError(NOT_CONFIGURED)
        self.mode: Mode = self.config.response_format  # lowered for good when the endpoint rejects a format
        import openai

        self._clients = [openai.OpenAI(
            base_url=url,
            api_key=self.config.api_key or "none",  # local servers need no key, the client insists on one
            timeout=self.config.timeout_s,
            max_retries=self.config.max_attempts - 1,
        ) for url in (self.config.base_url, *self.config.replicas)]
        self._client = self._clients[0]
        self._mirrors = ThreadPoolExecutor(len(self.config.replicas)) if self.config.replicas else None

    def complete_many(self, requests: Sequence[tuple[list[dict], type[M]]]) -> list[tuple[M, CallRecord] | LLMError]:
        """With `replicas`, the i-th request to endpoint i (modulo their number), all at once."""
        if len(self._clients) == 1 or len(requests) < 2:
            return super().complete_many(requests)

        def one(i: int) -> tuple[M, CallRecord] | LLMError:
            return _or_error(self.complete, *requests[i], client=self._clients[i % len(self._clients)])
        with ThreadPoolExecutor(len(self._clients)) as pool:
            return list(pool.map(one, range(len(requests))))

    def complete(self, messages: list[dict], schema: type[M], client: openai.OpenAI | None = None
                 ) -> tuple[M, CallRecord]:
        import openai

        if client is None:
            self.mirror(messages)
        start, attempts, client = time.perf_counter(), 0, client or self._client

        def fail(message: str, raw: str | None = None, usage: Any = None) -> LLMError:
            error = LLMError(f"{self.config.model}: {message}", raw)
            self._record(start, attempts, usage, str(error))
            return error

        while True:
            try:
                raw_response = client.chat.completions.with_raw_response.create(**self._request(messages, schema))
                attempts += raw_response.retries_taken + 1
                response = raw_response.parse()
                break
            except openai.OpenAIError as e:  # the client has retried what is worth retrying
                attempts += client.max_retries + 1 if _retried(e) else 1
                if self._format_rejected(e):  # not a retry: the same request in another format
                    self.mode = MODES[MODES.index(self.mode) + 1]
                    continue
                if isinstance(e, openai.BadRequestError):
                    raise fail(f"request rejected: {e}") from e
                raise fail(f"request failed after {attempts} attempts: {type(e).__name__}: {e}") from e

        message = response.choices[0].message if response.choices else None
        text = (message.content if message else None) or ""
        try:
            reply = parse_reply(text, schema)
        except LLMError as e:
            refusal = getattr(message, "refusal", None)
            reason = e.reason + (f"; refusal: {refusal}" if refusal else "")
            if response.choices and response.choices[0].finish_reason == "length":
                reason += "; the reply was cut at its length limit (max_tokens)"
            raise fail(reason, raw=e.raw, usage=response.usage) from e
        return reply, self._record(start, attempts, response.usage)

    def mirror(self, messages: list[dict]) -> None:
        """Has each replica read `messages` (a reply of one token) while the first endpoint answers them, without
        waiting: a llama.cpp server's prompt cache then holds their beginning, which the next requests share (the
        choice in two orders after the words question: the second server had to read the sentence first; on a
        cold start, the instructions and worked examples). Free where the replicas are idle meanwhile (one server
        per core); a failure only leaves the cache cold, and is recorded."""
        if self._mirrors is None:
            return
        import openai

        body = {"model": self.config.model, "messages": messages, "max_tokens": 1}

        def read(client: openai.OpenAI) -> None:
            start = time.perf_counter()
            try:
                response = client.with_options(max_retries=0).chat.completions.create(**body)
                self._record(start, 1, response.usage)
            except openai.OpenAIError as e:  # a cold cache is all it costs
                self._record(start, 1, None, f"{self.config.model}: mirror failed: {type(e).__name__}: {e}")
        for client in self._clients[1:]:
            self._mirrors.submit(read, client)

    def first_token(self, messages: list[dict], top: int = 20, max_tokens: int = 2) -> tuple[TokenChoice, CallRecord]:
        """Asks the endpoint for `logprobs` with `top_logprobs` (OpenAI allows at most 20; a llama.cpp server
        gives them too), a plain-text reply of at most `max_tokens`."""
        start, body = time.perf_counter(), {"model": self.config.model, "messages": messages, "max_tokens": max_tokens,
                                            "logprobs": True, "top_logprobs": top}
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        response, attempts = self._create(body, "log-probabilities", start)
        logprobs = response.choices[0].logprobs if response.choices else None
        if not logprobs or not logprobs.content:
            error = LLMError(f"{self.config.model}: the endpoint gave no log-probabilities")
            self._record(start, attempts, response.usage, str(error))
            raise error
        top_tokens = {t.token: t.logprob for t in logprobs.content[0].top_logprobs or ()}
        return (TokenChoice(response.choices[0].message.content or "", top_tokens),
                self._record(start, attempts, response.usage))

    def sample(self, messages: list[dict], n: int, temperature: float, max_tokens: int,
               stop: Sequence[str] = (), top_p: float = 1.0) -> tuple[list[str], list[CallRecord]]:
        """Asks for `n` choices, and again for those missing (a llama.cpp server gives one per request)."""
        texts: list[str] = []
        records: list[CallRecord] = []
        while len(texts) < n:
            start, body = time.perf_counter(), {"model": self.config.model, "messages": messages, "n": n - len(texts),
                                                "temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
            if stop:
                body["stop"] = list(stop)
            response, attempts = self._create(body, "sampling", start)
            records.append(self._record(start, attempts, response.usage))
            if not response.choices:
                raise LLMError(f"{self.config.model}: the endpoint gave no choices")
            texts += [c.message.content or "" for c in response.choices[:n - len(texts)]]
        return texts, records

    def _create(self, body: dict[str, Any], what: str, start: float) -> tuple[Any, int]:
        """One request as it is (no reply format) and its attempts; a failure recorded and raised as LLMError."""
        import openai

        try:
            raw_response = self._client.chat.completions.with_raw_response.create(**body)
            return raw_response.parse(), raw_response.retries_taken + 1
        except openai.OpenAIError as e:
            error = LLMError(f"{self.config.model}: {what} request failed: {type(e).__name__}: {e}")
            self._record(start, 1, None, str(error))
            raise error from e

    def _format_rejected(self, e: openai.OpenAIError) -> bool:
        """An error status that names the reply format: 400 from vLLM, 422 or 500 from llama-cpp-python."""
        import openai

        return (self.mode != "text" and isinstance(e, openai.APIStatusError) and e.status_code in (400, 422, 500)
                and any(w in str(e).lower() for w in FORMAT_WORDS))

    def _request(self, messages: list[dict], schema: type[BaseModel]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            body["max_tokens"] = self.config.max_tokens
        if self.mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name(schema), "schema": strict_schema(schema), "strict": True},
            }
            return body
        if self.mode == "json_object":  # llama.cpp servers turn the (non-standard) schema into a grammar
            body["response_format"] = {"type": "json_object", "schema": strict_schema(schema)}
            if not self.config.schema_in_prompt:
                return body
        body["messages"] = with_instruction(
            messages,
            "Reply with a single JSON object and nothing else. It must conform to this JSON schema:\n"
            + json.dumps(strict_schema(schema)),
        )
        return body

    def _record(self, start: float, attempts: int, usage: Any, error: str | None = None) -> CallRecord:
        record = CallRecord(
            model=self.config.model,
            mode=self.mode,
            prompt_tokens=getattr(usage, "prompt_tokens", None) or 0,
            completion_tokens=getattr(usage, "completion_tokens", None) or 0,
            latency_s=time.perf_counter() - start,
            attempts=attempts,
            error=error,
        )
        self.records.append(record)
        return record


def _or_error(call: Callable[..., tuple[M, CallRecord]], *args: Any, **kwargs: Any) -> tuple[M, CallRecord] | LLMError:
    """`call`'s result, or the `LLMError` it raised (`complete_many`'s failures are returned in place)."""
    try:
        return call(*args, **kwargs)
    except LLMError as e:
        return e


def _retried(e: openai.OpenAIError) -> bool:
    """Whether the openai client retried this error before raising it (connection errors, timeouts, 408/409/429,
    5xx)."""
    import openai

    return isinstance(e, openai.APIConnectionError) or (
        isinstance(e, openai.APIStatusError) and (e.status_code in (408, 409, 429) or e.status_code >= 500))


def with_instruction(messages: list[dict], instruction: str) -> list[dict]:
    """The messages with `instruction` appended to the last user message (or added as one): after everything
    else, so prompts that differ only in their schema share their prefix (a llama.cpp server computes it once)."""
    if messages and messages[-1].get("role") == "user" and isinstance(messages[-1].get("content"), str):
        return [*messages[:-1], {**messages[-1], "content": f"{messages[-1]['content']}\n\n{instruction}"}]
    return [*messages, {"role": "user", "content": instruction}]


Reply = str | BaseModel | TokenChoice | LLMError | Callable[[list[dict]], "str | BaseModel | TokenChoice"]


class ScriptedLLM(LLM):
    """Replies given in advance, in order: text, pydantic objects, `TokenChoice`s (`first_token`), callables of the
    messages, or an `LLMError` to raise (an endpoint that failed).

    Every prompt is kept in `prompts`; each reply is validated against the call's schema like a real one.
    """

    def __init__(self, replies: Sequence[Reply] = (), model: str = "scripted") -> None:
        super().__init__()
        self.replies: deque[Reply] = deque(replies)
        self.prompts: list[list[dict]] = []
        self.model = model

    def complete(self, messages: list[dict], schema: type[M]) -> tuple[M, CallRecord]:
        start = time.perf_counter()
        self.prompts.append(copy.deepcopy(messages))
        try:
            if not self.replies:
                raise LLMError(f"ScriptedLLM: no reply left for call {len(self.prompts)} ({schema.__name__})")
            reply = self.replies.popleft()
            if isinstance(reply, LLMError):
                raise reply
            if callable(reply):
                reply = reply(messages)
            if isinstance(reply, TokenChoice):
                raise LLMError(f"ScriptedLLM: call {len(self.prompts)} ({schema.__name__}) has a first token's reply")
            text = reply.model_dump_json() if isinstance(reply, BaseModel) else reply
            result = parse_reply(text, schema)
        except LLMError as e:
            self._record(start, str(e))
            raise
        return result, self._record(start)

    def sample(self, messages: list[dict], n: int, temperature: float, max_tokens: int,
               stop: Sequence[str] = (), top_p: float = 1.0) -> tuple[list[str], list[CallRecord]]:
        """The next `n` replies as texts (each one call), cut at the first of `stop`."""
        texts, records = [], []
        for _ in range(n):
            start = time.perf_counter()
            self.prompts.append(copy.deepcopy(messages))
            reply = self.replies.popleft() if self.replies else LLMError("ScriptedLLM: no reply left to sample")
            if isinstance(reply, LLMError):
                self._record(start, str(reply))
                raise reply
            text = reply(messages) if callable(reply) else reply
            text = text.model_dump_json() if isinstance(text, BaseModel) else text
            texts.append(re.split("|".join(map(re.escape, stop)), text)[0] if stop else text)
            records.append(self._record(start))
        return texts, records

    def first_token(self, messages: list[dict], top: int = 20, max_tokens: int = 2) -> tuple[TokenChoice, CallRecord]:
        """The next reply, a `TokenChoice` (or a callable of the messages giving one)."""
        start = time.perf_counter()
        self.prompts.append(copy.deepcopy(messages))
        reply = self.replies.popleft() if self.replies else LLMError("ScriptedLLM: no reply left for log-probabilities")
        reply = reply(messages) if callable(reply) and not isinstance(reply, LLMError) else reply
        if not isinstance(reply, TokenChoice):
            error = reply if isinstance(reply, LLMError) else LLMError(f"ScriptedLLM: {reply!r} is no TokenChoice")
            self._record(start, str(error))
            raise error
        return reply, self._record(start)

    def _record(self, start: float, error: str | None = None) -> CallRecord:
        record = CallRecord(self.model, "json_schema", 0, 0, time.perf_counter() - start, 1, error)
        self.records.append(record)
        return record


class Recording(LLM):
    """`inner`, its replies kept in order in `replies` for `Replay`: a structured reply as its schema's name and
    JSON, each sampled text, a first token's reply with its alternatives (`top`), an error as its reason and the
    refused reply (`raw`, None when the endpoint failed).
    Its `records` are the inner client's."""

    def __init__(self, inner: LLM) -> None:
        super().__init__()
        self.inner, self.records = inner, inner.records
        self.replies: list[dict] = []

    def complete(self, messages: list[dict], schema: type[M]) -> tuple[M, CallRecord]:
        result = _or_error(self.inner.complete, messages, schema)
        self._keep_result(schema, result)
        if isinstance(result, LLMError):
            raise result
        return result

    def complete_many(self, requests: Sequence[tuple[list[dict], type[M]]]) -> list[tuple[M, CallRecord] | LLMError]:
        results = self.inner.complete_many(requests)
        for (_, schema), result in zip(requests, results, strict=True):
            self._keep_result(schema, result)
        return results

    def _keep_result(self, schema: type[BaseModel], result: tuple[BaseModel, CallRecord] | LLMError) -> None:
        self._keep({"schema": schema.__name__} | ({"error": result.reason, "raw": result.raw}
                                                  if isinstance(result, LLMError)
                                                  else {"reply": result[0].model_dump_json()}))

    def sample(self, messages: list[dict], n: int, temperature: float, max_tokens: int,
               stop: Sequence[str] = (), top_p: float = 1.0) -> tuple[list[str], list[CallRecord]]:
        try:
            texts, records = self.inner.sample(messages, n, temperature, max_tokens, stop, top_p)
        except LLMError as e:
            self._keep({"error": e.reason, "raw": e.raw})
            raise
        for text in texts:
            self._keep({"reply": text})
        return texts, records

    def first_token(self, messages: list[dict], top: int = 20, max_tokens: int = 2) -> tuple[TokenChoice, CallRecord]:
        try:
            choice, record = self.inner.first_token(messages, top, max_tokens)
        except LLMError as e:
            self._keep({"error": e.reason, "raw": e.raw})
            raise
        self._keep({"reply": choice.text, "top": choice.top})
        return choice, record

    def _keep(self, entry: dict) -> None:
        self.replies.append(entry)


class Replay(ScriptedLLM):
    """The replies a `Recording` kept (its `replies`, or the JSON a benchmark wrote of them), answered again in
    their order: a seeded run makes the same calls."""

    def __init__(self, entries: Sequence[dict]) -> None:
        super().__init__([LLMError(e["error"], e.get("raw")) if "error" in e else
                          TokenChoice(e["reply"], e["top"]) if "top" in e else e["reply"] for e in entries], "replay")
