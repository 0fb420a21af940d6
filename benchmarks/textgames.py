"""Text-game search benchmark: MC-DML (kgplan.games.mcdml) over TextWorld's own engine, its ablations, UCT
with a uniform prior, random play, and the PDDLEGO loop (agent/explore.py, sensor mode: the true
observations, an oracle of what the player perceives), on the same games that tw-make makes offline per seed.

Games (kgplan.games.textworld.TW_GAMES): textworld-coin-easy (Coin Collector level 102), textworld-coin (level 204),
textworld-cooking-easy (the kitchen, 1 ingredient to take, cut and cook), textworld-cooking (6 rooms with doors, 2
ingredients). Reports per
game and method: success (won) with a 95% Wilson interval, the mean final score, losses, moves, simulations,
LLM calls and seconds per decision; with an LLM prior also how informative it is at the roots: its entropy
against the uniform's (log of the number of commands) and the rank of the walkthrough's next command under it.
Without an LLM, MC-DML's prior is uniform and it writes no reflections (mcdml_no_dynamic is then uct_game).

    kgplan bench textgames --games textworld-coin-easy,textworld-cooking-easy --seeds 0-2 --simulations 20 --steps 20
    kgplan bench textgames --llm openai --methods mcdml,uct_game --seeds 0-2   # KGPLAN_LLM_* (needs logprobs)
    kgplan bench textgames --llm openai --record replies.json ...   # then --llm replay --llm-replay replies.json ...
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.table import Table

from kgplan.agent.explore import explore
from kgplan.benchmarks import bench_llm, write_json
from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks.twx import fmt, mean, seed_range, wilson
from kgplan.errors import InputError
from kgplan.games.base import GameUnavailable, Observation
from kgplan.games.mcdml import GAME_SEARCHES, Played, play
from kgplan.games.textworld import TW_GAMES, TextWorld
from kgplan.language.llm import Recording

PDDLEGO = "pddlego"


class LastSeen:
    """A TextWorld game that keeps its last observation (the PDDLEGO loop's final score)."""

    def __init__(self, game: TextWorld) -> None:
        self.game, self.budget, self.commands = game, game.budget, game.commands
        self.last: Observation | None = None

    def optimum(self, seed: int) -> int:
        return self.game.optimum(seed)

    def reset(self, seed: int) -> Observation:
        self.last = self.game.reset(seed)
        return self.last

    def step(self, action: str) -> Observation:
        self.last = self.game.step(action)
        return self.last

    def close(self) -> None:
        self.game.close()


def pddlego(game: TextWorld, name: str, seed: int) -> Played:
    """The PDDLEGO loop on the seed (the coin or cooking domain of kgplan.games.GAMES)."""
    seen, start = LastSeen(game), time.perf_counter()
    ep = explore(seen, "textworld-coin" if name.startswith("textworld-coin") else "textworld-cooking", seed)
    last = seen.last
    return Played(seed, last.score, last.won, game.lost, ep.steps, seconds=time.perf_counter() - start)


def summary(episodes: list[Played]) -> dict:
    n, wins = len(episodes), sum(e.won for e in episodes)
    decisions = sum(e.steps for e in episodes)
    roots = [d for e in episodes for d in e.decisions if d.prior_entropy is not None]
    ranked = [d for d in roots if d.gold_rank is not None]
    return {"episodes": n, "success_rate": wins / n if n else 0.0, "wilson_95": list(wilson(wins, n)),
            "mean_score": mean([e.score for e in episodes]), "losses": sum(e.lost for e in episodes),
            "mean_steps": mean([e.steps for e in episodes]),
            "simulations_per_decision": sum(e.simulations for e in episodes) / decisions if decisions else None,
            "llm_calls_per_decision": sum(e.llm_calls for e in episodes) / decisions if decisions else None,
            "seconds_per_decision": sum(e.seconds for e in episodes) / decisions if decisions else None,
            "prior_entropy": mean([d.prior_entropy for d in roots]),
            "uniform_entropy": mean([math.log(d.commands) for d in roots]),
            "gold_rank": mean([d.gold_rank for d in ranked]),
            "gold_top1": sum(d.gold_rank == 1 for d in ranked) / len(ranked) if ranked else None,
            "gold_prob": mean([d.gold_prob for d in ranked]),
            "uniform_prob": mean([1 / d.commands for d in ranked])}


def plot(results: dict[str, dict[str, dict]], path: Path) -> None:
    """Success (with its Wilson interval) and mean score per method, one panel pair per game."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(2, len(results), figsize=(4 + 3 * len(results), 6), squeeze=False)
    for col, (game, methods) in enumerate(results.items()):
        names = list(methods)
        rates = [methods[m]["success_rate"] for m in names]
        errs = [[r - methods[m]["wilson_95"][0] for r, m in zip(rates, names, strict=True)],
                [methods[m]["wilson_95"][1] - r for r, m in zip(rates, names, strict=True)]]
        axes[0][col].bar(names, rates, yerr=errs, capsize=3)
        axes[0][col].set_title(f"{game}: success (95% Wilson)")
        axes[1][col].bar(names, [methods[m]["mean_score"] or 0 for m in names], color="tab:orange")
        axes[1][col].set_title(f"{game}: mean score")
        for ax in (axes[0][col], axes[1][col]):
            ax.tick_params(axis="x", rotation=60)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@dataclass
class Run:
    game: str
    method: str
    episodes: list[Played]


def main(argv: list[str] | None = None) -> int:
    methods = [*GAME_SEARCHES.names(), PDDLEGO]
    ap = argparse.ArgumentParser(prog="kgplan bench textgames", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", default="textworld-coin-easy,textworld-cooking-easy",
                    help=f"comma-separated, of {', '.join(TW_GAMES)}")
    ap.add_argument("--methods", default=",".join(methods), help=f"comma-separated, of {', '.join(methods)}")
    ap.add_argument("--seeds", type=seed_range, default=seed_range("0-2"))
    ap.add_argument("--steps", type=int, default=20, help="moves per episode at most (every method)")
    ap.add_argument("--simulations", type=int, default=20, help="MC-DML and UCT: simulations per root")
    ap.add_argument("--llm", choices=["none", "openai", "replay"], default="none",
                    help="none: MC-DML with a uniform prior and no reflections; openai: KGPLAN_LLM_* (log-probs); "
                         "replay: the replies of --llm-replay")
    ap.add_argument("--record", type=Path, metavar="PATH", help="--llm openai: write every reply here, in order")
    ap.add_argument("--llm-replay", type=Path, metavar="PATH", help="--llm replay: the replies --record wrote")
    ap.add_argument("--json", type=Path, default=Path("results/textgames.json"))
    ap.add_argument("--plot", type=Path, default=Path("results/textgames.png"))
    args = ap.parse_args(argv)
    games, chosen = args.games.split(","), args.methods.split(",")
    for name in games:
        if name not in TW_GAMES:
            ap.error(f"unknown game {name!r}: choose among {', '.join(TW_GAMES)}")
    for name in chosen:
        if name not in methods:
            ap.error(f"unknown method {name!r}: choose among {', '.join(methods)}")
    if args.steps < 1 or args.simulations < 1:
        ap.error("--steps and --simulations must be at least 1")
    out = bench_console()
    try:
        llm = bench_llm(args.llm, args.record, args.llm_replay)
    except InputError as e:
        out.print(f"[red]error:[/red] {e}")
        return 2
    runs: list[Run] = []

    def write() -> dict[str, dict[str, dict]]:
        results = {g: {r.method: summary(r.episodes) for r in runs if r.game == g} for g in games}
        write_json(args.json, {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                               "results": results, "episodes": [{"game": r.game, "method": r.method,
                                                                 "episodes": [asdict(e) for e in r.episodes]}
                                                                for r in runs]})
        if isinstance(llm, Recording):
            write_json(args.record, llm.replies)
        return results

    for name in games:
        try:
            game = TextWorld(name)
        except GameUnavailable as e:
            out.print(f"[red]error:[/red] {e}")
            return 2
        game.budget = args.steps
        try:
            for method in chosen:
                run = Run(name, method, [])
                runs.append(run)
                for seed in args.seeds:
                    if method == PDDLEGO:
                        ep = pddlego(game, name, seed)
                    else:
                        spec = GAME_SEARCHES[method]
                        settings = replace(spec.settings, simulations=args.simulations)
                        ep = play(game, seed, spec, llm, args.steps, settings)
                    run.episodes.append(ep)
                    end = "won" if ep.won else "lost" if ep.lost else "not won"
                    out.print(f"{name} {method} seed {seed}: score {ep.score:g}, {end} in {ep.steps} moves, "
                              f"{ep.simulations} simulations, {ep.llm_calls} LLM calls, {ep.seconds:.1f}s")
                    write()
        finally:
            game.close()
    results = write()
    table = Table(title=f"Text games, seeds {args.seeds[0]}-{args.seeds[-1]}, {args.simulations} simulations, "
                        f"{args.steps} moves, LLM {args.llm}")
    for col in ("game", "method", "success", "95% Wilson", "score", "losses", "moves", "sims/dec", "LLM calls/dec",
                "s/dec", "prior H (uniform)", "gold rank", "gold top-1"):
        table.add_column(col, justify="right")
    for game_name, by_method in results.items():
        for method, s in by_method.items():
            table.add_row(game_name, method, f"{s['success_rate']:.0%}",
                          f"{s['wilson_95'][0]:.0%}-{s['wilson_95'][1]:.0%}", fmt(s["mean_score"]), str(s["losses"]),
                          fmt(s["mean_steps"]), fmt(s["simulations_per_decision"]), fmt(s["llm_calls_per_decision"]),
                          fmt(s["seconds_per_decision"]),
                          f"{fmt(s['prior_entropy'])} ({fmt(s['uniform_entropy'])})", fmt(s["gold_rank"]),
                          fmt(s["gold_top1"]))
    out.print(table)
    plot(results, args.plot)
    out.print(f"json: {args.json}\nplot: {args.plot}")
    if llm is not None:
        out.print(f"LLM: {llm.usage.calls} calls, {llm.usage.latency_s:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
