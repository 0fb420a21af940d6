"""TextWorld-Express exploration benchmark: the PDDLEGO loop (agent/explore.py) on seeds of one game.

Reports success with a 95% Wilson interval, steps among successes, the omniscient optimum for the same
seeds (Coin Collector: the shortest path on the whole map; Cooking World: TWX's gold path, which may
not be the shortest), invalid actions per episode, replans and planner time; in LLM mode also LLM calls,
tokens and refused edits per episode. For Coin Collector also, with the coin in any room alike, the mean
optimum and a lower bound on the mean steps of an explorer that knows the map but not the coin's room
(`explorer_bound`): what the ratio to the optimum can be at best; with --coin-anywhere the agent's own
mean on the same maps, the coin in each room in turn.

    kgplan bench twx --game coin --mode sensor --seeds 10-59 --json results/twx-coin.json
    kgplan bench twx --game coin --mode llm --llm oracle --seeds 10-59

LLM mode with `--llm oracle` uses SensorOracleLLM (kgplan.games.oracle): a device that answers the true edits read
by the sensor, to check the PDDL-edit path loses nothing; `--llm openai` uses the endpoint from KGPLAN_LLM_*.
"""

from __future__ import annotations

import argparse
import functools
import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from kgplan.agent.explore import Episode
from kgplan.benchmarks import bench_llm, write_json
from kgplan.benchmarks import console as bench_console
from kgplan.games.base import Room, shortest
from kgplan.games.twx import CoinReplica


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a success rate (scipy's; (0, 1) for no trials)."""
    if n == 0:
        return 0.0, 1.0
    from scipy.stats import binomtest

    ci = binomtest(successes, n).proportion_ci(method="wilson")
    return float(ci.low), float(ci.high)


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


def summary(game: str, episodes: list) -> dict:
    n, wins = len(episodes), [e for e in episodes if e.success]
    lo, hi = wilson(len(wins), n)
    steps, gold = mean([e.steps for e in wins]), mean([e.optimal for e in wins])
    return {"game": game, "episodes": n, "success_rate": len(wins) / n if n else 0.0, "wilson_95": [lo, hi],
            "mean_steps_success": steps, "mean_optimal_steps": gold,
            "steps_over_optimal": steps / gold if steps and gold else None,
            "invalid_actions_per_episode": mean([e.invalid for e in episodes]),
            "replans_per_episode": mean([e.replans for e in episodes]),
            "planner_seconds_per_episode": mean([e.planner_seconds for e in episodes]),
            "pddlego_gpt4_reference": {"coin": "78% success, 7.8 steps", "cooking-easy": "98%",
                                       "cooking-hard": "46%"}.get(game)}


def llm_figures(episodes: list, counted: list[int]) -> dict[str, float | None]:
    """LLM mode's measurements; `counted`: the prompt tokens of each episode, counted offline (o200k)."""
    calls = sum(e.llm_calls for e in episodes)
    return {"llm_calls_per_episode": mean([e.llm_calls for e in episodes]),
            "prompt_tokens_per_episode": mean([e.prompt_tokens for e in episodes]),
            "completion_tokens_per_episode": mean([e.completion_tokens for e in episodes]),
            "refused_edits_per_episode": mean([e.refused_edits for e in episodes]),
            "rereads_per_episode": mean([e.rereads for e in episodes]),
            "llm_seconds_per_step": (sum(e.llm_seconds for e in episodes) / steps
                                     if (steps := sum(max(e.steps, 1) for e in episodes)) else None),
            "prompt_tokens_o200k_per_episode": mean(counted) if counted else None,
            "prompt_tokens_o200k_per_call": sum(counted) / calls if counted and calls else None}


def explorer_bound(exits: dict[Room, dict[Room, int]], start: Room = (0, 0)) -> tuple[float, float]:
    """Coin Collector, the coin in any room alike: (the mean omniscient optimum, a lower bound on the mean
    steps of the best explorer that knows the whole map but not the coin's room). That explorer visits the
    rooms in the order of least total arrival time (minimum latency, by dynamic programming over the sets
    of visited rooms); the bound counts a door's opening only on the way into a new room, so it is below
    what any explorer, and one without the map all the more, can expect."""
    rooms = sorted(exits)
    at = {r: i for i, r in enumerate(rooms)}
    near = [[(at[b], c) for b, c in exits[r].items()] for r in rooms]
    n = len(rooms)

    @functools.cache
    def latency(visited: int, here: int) -> int:
        """The least sum of the arrival times of the rooms not yet visited."""
        left = n - visited.bit_count()
        if not left:
            return 0
        inside, todo = {here: 0}, [here]  # unit steps between visited rooms (their doors may still be shut)
        for x in todo:
            for y, _ in near[x]:
                if visited >> y & 1 and y not in inside:
                    inside[y] = inside[x] + 1
                    todo.append(y)
        return min((d + c) * left + latency(visited | 1 << y, y)
                   for x, d in inside.items() for y, c in near[x] if not visited >> y & 1)

    dist = shortest(exits, start)
    return statistics.fmean(d + 1 for d in dist.values()), (latency(1 << at[start], at[start]) + n) / n


def plot(title: str, episodes: list, path: Path) -> None:
    """A PNG of the agent's steps per seed (green: success, red: failure) against the optimum."""
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
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def arguments(prog: str, doc: str | None, games: list[str]) -> argparse.ArgumentParser:
    """The options every exploration benchmark takes."""
    ap = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game", choices=games, default=games[0])
    ap.add_argument("--seeds", type=seed_range, default=seed_range("0-9"),
                    help="seeds, e.g. 10-59 (0-9 are for development)")
    ap.add_argument("--planner", default=None, help="fd, fd-opt or symk-opt (default: the domain's)")
    ap.add_argument("--json", type=Path, default=None, help="write the summary and episodes here")
    ap.add_argument("--plot", type=Path, default=None, help="PNG of steps per seed (default results/NAME-GAME.png)")
    return ap


# figures of `run`'s `extra` shown in its table, with their column titles (the others go to the JSON only)
COLUMNS = {"opt_anywhere": "optimum, coin anywhere", "bound_anywhere": "explorer bound",
           "bound_ratio": "bound/optimum", "agent_anywhere": "agent, coin anywhere", "agent_ratio": "agent/optimum",
           "llm_calls_per_episode": "LLM calls/ep", "prompt_tokens_per_episode": "prompt tokens/ep",
           "prompt_tokens_o200k_per_call": "prompt tokens/call (o200k)", "refused_edits_per_episode": "refused/ep",
           "llm_seconds_per_step": "LLM s/step",
           "min_precision": "min precision", "min_recall": "min recall"}


def run(args: argparse.Namespace, title: str, png: Path, play: Callable[[int], Any],
        extra: Callable[[list], dict[str, float | None]] = lambda _: {}) -> int:
    """Play each seed (`play(seed)` -> an Episode), print a line per episode and the summary table (with
    `extra`'s figures named in COLUMNS as more columns), write the JSON after every episode and the PNG at
    the end."""
    out = bench_console()
    episodes = []
    for seed in args.seeds:
        ep = play(seed)
        episodes.append(ep)
        out.print(f"seed {seed}: {'success' if ep.success else 'FAILURE (' + ep.reason + ')'} in {ep.steps} "
                  f"steps (optimum {ep.optimal}), {ep.replans} replans, {ep.planner_seconds:.1f}s planning"
                  + (f", {ep.llm_calls} LLM calls, {ep.refused_edits} refused edits" if ep.llm_calls else ""))
        if args.json:  # after every episode: nothing lost if the run is cut short
            write_json(args.json, {**summary(args.game, episodes), **extra(episodes), "seeds": args.seeds,
                                   "episodes": [asdict(e) for e in episodes]})
    s, more = summary(args.game, episodes), extra(episodes)
    more = {name: more[key] for key, name in COLUMNS.items() if key in more}
    table = Table(title=f"{title}, seeds {args.seeds[0]}-{args.seeds[-1]}")
    for col in ("success", "95% Wilson", "steps (successes)", "optimal steps", "ratio", "invalid/ep",
                "replans/ep", "planner s/ep", *more):
        table.add_column(col, justify="right")
    table.add_row(f"{s['success_rate']:.0%}", f"{s['wilson_95'][0]:.0%}-{s['wilson_95'][1]:.0%}",
                  fmt(s["mean_steps_success"]), fmt(s["mean_optimal_steps"]), fmt(s["steps_over_optimal"]),
                  fmt(s["invalid_actions_per_episode"]), fmt(s["replans_per_episode"]),
                  fmt(s["planner_seconds_per_episode"]), *map(fmt, more.values()))
    out.print(table)
    png = args.plot or png
    plot(title, episodes, png)
    out.print(f"plot: {png}")
    if args.json:
        out.print(f"json: {args.json}")
    return 0


@dataclass
class CoinEpisode(Episode):
    """A Coin Collector episode with what its map allows, the coin in any room alike (see `explorer_bound`),
    and with --coin-anywhere the agent's own mean steps on that map over the coin's rooms (else 0)."""

    mean_optimum_any_room: float = 0.0
    explorer_bound: float = 0.0
    agent_any_room: float = 0.0


def coin_bounds(episodes: list[CoinEpisode]) -> dict[str, float | None]:
    """The means over the seeds of `explorer_bound`'s two figures (the optimum and the explorer's bound,
    the coin in any room alike), their ratio, and the agent's own where measured."""
    opt, bound = sum(e.mean_optimum_any_room for e in episodes), sum(e.explorer_bound for e in episodes)
    agent = sum(e.agent_any_room for e in episodes)
    return {"opt_anywhere": opt / len(episodes), "bound_anywhere": bound / len(episodes), "bound_ratio": bound / opt,
            **({"agent_anywhere": agent / len(episodes), "agent_ratio": agent / opt} if agent else {})}


def main(argv: list[str] | None = None) -> int:
    from kgplan.agent.explore import explore
    from kgplan.benchmarks.l3mp import Counting
    from kgplan.games import GAMES
    from kgplan.games.base import GameUnavailable
    from kgplan.games.oracle import SensorOracleLLM
    from kgplan.language.llm import LLM

    ap = arguments("kgplan bench twx", __doc__, [g.name for g in GAMES if g.family == "twx"])
    ap.add_argument("--mode", choices=["sensor", "llm"], default="sensor",
                    help="sensor: structured outputs only; llm: an LLM edits the problem from the prose (PDDL-edit)")
    ap.add_argument("--llm", choices=["oracle", "openai", "replay"], default="openai",
                    help="LLM mode: oracle (true edits from the sensor, a check device), openai (KGPLAN_LLM_*) or "
                         "replay (the replies --record wrote, answered again in order: the same seeds replay exactly)")
    ap.add_argument("--llm-replay", type=Path, metavar="PATH", help="--llm replay: the replies --record wrote")
    ap.add_argument("--record", type=Path, default=None, help="LLM mode: write every reply here (after each episode)")
    ap.add_argument("--trace", type=Path, default=None,
                    help="write each episode's trace (observations, graph changes, plans, actions) to DIR/seed-N.log")
    ap.add_argument("--coin-anywhere", action="store_true",
                    help="coin: also play each seed's map again with the coin in every room (CoinReplica)")
    args = ap.parse_args(argv)
    try:
        twx = env = GAMES[args.game].environment()
    except GameUnavailable as e:
        bench_console().print(f"[red]error:[/red] {e}")
        return 2
    llm: LLM | None = None
    if args.mode == "llm" and args.llm == "oracle":
        llm = SensorOracleLLM(GAMES[args.game].sensor)
        env = llm.watch(env)
    elif args.mode == "llm":
        llm = bench_llm(args.llm, replay=args.llm_replay)
    counter = Counting(llm) if llm else None  # prompt tokens (messages only) counted with o200k
    counted: list[int] = []

    def play(seed: int) -> Episode:
        before = sum(counter.counted) if counter else 0
        if args.trace:
            args.trace.mkdir(parents=True, exist_ok=True)
        # each line as it comes: a stopped or crashed episode (a lost one runs for many minutes) keeps its trace
        with (args.trace / f"seed-{seed}.log").open("w") if args.trace else nullcontext() as trace:
            ep = explore(env, args.game, seed, planner=args.planner, llm=counter, free_edits=args.llm == "oracle",
                         show=lambda line: print(line, file=trace, flush=True) if trace else None)
        counted.extend([sum(counter.counted) - before] if counter else [])
        if counter and args.record:
            write_json(args.record, counter.replies)
        if args.game != "coin":
            return ep
        exits, _ = twx.coin_map(seed)
        optimum, bound = explorer_bound(exits)
        agent = statistics.fmean(explore(CoinReplica(exits, room), "coin", seed, planner=args.planner).steps
                                 for room in exits) if args.coin_anywhere else 0.0
        return CoinEpisode(**asdict(ep), mean_optimum_any_room=optimum, explorer_bound=bound, agent_any_room=agent)

    def extra(episodes: list) -> dict[str, float | None]:
        return {**(coin_bounds(episodes) if args.game == "coin" else {}),
                **(llm_figures(episodes, counted) if llm else {})}

    mode = args.mode + (f" ({args.llm})" if llm else "")
    try:
        return run(args, f"TWX {args.game}, {mode} mode", Path(f"results/twx-{args.game}-{args.mode}.png"), play,
                   extra)
    finally:
        env.close()


if __name__ == "__main__":
    raise SystemExit(main())
