"""TextWorld-Express exploration benchmark: the PDDLEGO loop (agent/explore.py) on seeds of one game.

Reports success with a 95% Wilson interval, steps among successes, the omniscient optimum for the same
seeds (Coin Collector: the shortest path on the whole map; Cooking World: TWX's gold path, which may
not be the shortest), invalid actions per episode, replans and planner time; in LLM mode also LLM calls,
tokens and refused edits per episode.

    kgplan bench twx --game coin --mode sensor --seeds 10-59 --json results/twx-coin.json
    kgplan bench twx --game coin --mode llm --llm oracle --seeds 10-59

LLM mode with `--llm oracle` uses SensorOracleLLM (agent.pddl_edit): a device that answers the true edits read
by the sensor, to check the PDDL-edit path loses nothing; `--llm openai` uses the endpoint from KGPLAN_LLM_*.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import asdict
from pathlib import Path

from rich.table import Table

from benchmarks import console as bench_console


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a success rate."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def seed_range(text: str) -> list[int]:
    """"10-59" or "3" or "1,4,7" -> the seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        try:
            seeds += list(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad seeds {text!r}: use e.g. 10-59 or 1,4,7") from None
    return seeds


def mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def summary(game: str, episodes: list, counted: list[int] | None = None) -> dict:
    """The measurements over episodes; `counted`: LLM mode's prompt tokens per episode, counted offline."""
    n, wins = len(episodes), [e for e in episodes if e.success]
    calls = sum(e.llm_calls for e in episodes)
    lo, hi = wilson(len(wins), n)
    steps, gold = mean([e.steps for e in wins]), mean([e.optimal for e in wins])
    return {"game": game, "episodes": n, "success_rate": len(wins) / n if n else 0.0, "wilson_95": [lo, hi],
            "mean_steps_success": steps, "mean_optimal_steps": gold,
            "steps_over_optimal": steps / gold if steps and gold else None,
            "invalid_actions_per_episode": mean([e.invalid for e in episodes]),
            "replans_per_episode": mean([e.replans for e in episodes]),
            "planner_seconds_per_episode": mean([e.planner_seconds for e in episodes]),
            "llm_calls_per_episode": mean([e.llm_calls for e in episodes]),
            "prompt_tokens_per_episode": mean([e.prompt_tokens for e in episodes]),
            "completion_tokens_per_episode": mean([e.completion_tokens for e in episodes]),
            "refused_edits_per_episode": mean([e.refused_edits for e in episodes]),
            "prompt_tokens_o200k_per_episode": mean(counted) if counted else None,
            "prompt_tokens_o200k_per_call": sum(counted) / calls if counted and calls else None,
            "pddlego_gpt4_reference": {"coin": "78% success, 7.8 steps", "cooking-easy": "98%",
                                       "cooking-hard": "46%"}.get(game)}


def plot(game: str, episodes: list, path: Path, mode: str = "sensor") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, 4))
    seeds = [e.seed for e in episodes]
    ax.bar(seeds, [e.steps for e in episodes], color=["tab:green" if e.success else "tab:red" for e in episodes],
           label="agent steps (green: success, red: failure)")
    ax.plot(seeds, [e.optimal for e in episodes], "k.", label="omniscient optimum")
    ax.set_xlabel("seed")
    ax.set_ylabel("steps")
    ax.set_title(f"TextWorld-Express {game}, {mode} mode")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from agent.environments import TWX_GAMES, TextWorldExpress, TWXUnavailable
    from agent.explore import SENSORS, explore
    from agent.llm import LLM, LLMConfig, OpenAIClient
    from agent.pddl_edit import SensorOracleLLM
    from benchmarks.l3mp import Counting

    ap = argparse.ArgumentParser(prog="kgplan bench twx", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game", choices=sorted(TWX_GAMES), default="coin")
    ap.add_argument("--mode", choices=["sensor", "llm"], default="sensor",
                    help="sensor: structured outputs only; llm: an LLM edits the problem from the prose (PDDL-edit)")
    ap.add_argument("--llm", choices=["oracle", "openai"], default="openai",
                    help="LLM mode: oracle (true edits from the sensor, a check device) or openai (KGPLAN_LLM_*)")
    ap.add_argument("--seeds", type=seed_range, default=seed_range("0-9"),
                    help="seeds, e.g. 10-59 (0-9 are for development)")
    ap.add_argument("--planner", default=None, help="fd, fd-opt or symk-opt (default: the domain's)")
    ap.add_argument("--json", type=Path, default=None, help="write the summary and episodes here")
    ap.add_argument("--plot", type=Path, default=None, help="PNG of steps per seed (default results/twx-GAME.png)")
    args = ap.parse_args(argv)
    out = bench_console()
    if args.game not in SENSORS:
        out.print(f"[red]error:[/red] no sensor for {args.game} yet: only {', '.join(SENSORS)}")
        return 2
    try:
        env = TextWorldExpress(args.game)
    except TWXUnavailable as e:
        out.print(f"[red]error:[/red] {e}")
        return 2
    episodes, counted = [], []
    llm: LLM | None = None
    if args.mode == "llm" and args.llm == "oracle":
        llm = SensorOracleLLM(SENSORS[args.game][1])
        env = llm.watch(env)
    elif args.mode == "llm":
        llm = OpenAIClient(LLMConfig.from_env())
    counter = Counting(llm) if llm else None  # prompt tokens (messages only) counted with o200k
    try:
        for seed in args.seeds:
            before = sum(counter.counted) if counter else 0
            ep = explore(env, args.game, seed, planner=args.planner, llm=counter)
            counted += [sum(counter.counted) - before] if counter else []
            episodes.append(ep)
            out.print(f"seed {seed}: {'success' if ep.success else 'FAILURE (' + ep.reason + ')'} in {ep.steps} "
                      f"steps (optimum {ep.optimal}), {ep.replans} replans, {ep.planner_seconds:.1f}s planning"
                      + (f", {ep.llm_calls} LLM calls, {ep.refused_edits} refused edits" if llm else ""))
            if args.json:  # after every episode: nothing lost if the run is cut short
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps({**summary(args.game, episodes, counted), "seeds": args.seeds,
                                                 "episodes": [asdict(e) for e in episodes]}, indent=1))
    finally:
        env.close()
    s = summary(args.game, episodes, counted)
    mode = args.mode + (f" ({args.llm})" if llm else "")
    table = Table(title=f"TWX {args.game}, {mode} mode, seeds {args.seeds[0]}-{args.seeds[-1]}")
    cols = ["success", "95% Wilson", "steps (successes)", "optimal steps", "ratio", "invalid/ep", "replans/ep",
            "planner s/ep"] + (["LLM calls/ep", "tokens/ep", "prompt tokens/call (o200k)", "refused edits/ep"]
                               if llm else [])
    for col in cols:
        table.add_column(col, justify="right")
    tokens = (s["prompt_tokens_per_episode"] or 0) + (s["completion_tokens_per_episode"] or 0)
    table.add_row(f"{s['success_rate']:.0%}", f"{s['wilson_95'][0]:.0%}-{s['wilson_95'][1]:.0%}",
                  fmt(s["mean_steps_success"]), fmt(s["mean_optimal_steps"]), fmt(s["steps_over_optimal"]),
                  fmt(s["invalid_actions_per_episode"]), fmt(s["replans_per_episode"]),
                  fmt(s["planner_seconds_per_episode"]),
                  *([fmt(s["llm_calls_per_episode"]), fmt(tokens), fmt(s["prompt_tokens_o200k_per_call"]),
                     fmt(s["refused_edits_per_episode"])] if llm else []))
    out.print(table)
    png = args.plot or Path(f"results/twx-{args.game}-{args.mode}.png")
    plot(args.game, episodes, png, mode)
    out.print(f"plot: {png}")
    if args.json:
        out.print(f"json: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
