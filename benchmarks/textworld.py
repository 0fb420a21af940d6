"""TextWorld exploration benchmark: the PDDLEGO loop (agent/explore.py) in sensor mode on games that
tw-make's generator makes offline, one per seed, into a temporary folder.

Reports what `kgplan bench twx` does (success with a 95% Wilson interval, steps among successes, the
optimum = the game's walkthrough length, invalid actions, replans, planner time) and, at every step, the
precision and recall of the agent's graph against the true facts about what the player has perceived
(TextWorld's full state restricted to `kgplan.games.textworld.observable`, gathered since the start, written
in the domain's predicates; placeholder rooms are unknowns, not claims, and are left out). The table
shows the minimum over all steps of all episodes; the target is 1.0.

Games (the registry kgplan.games.GAMES; settings in kgplan.games.textworld.TW_GAMES): textworld-coin
(tw-coin_collector level 204: 12 rooms, the coin 4 steps away, domains/coin_collector) and textworld-cooking
(tw-cooking: 6 rooms with doors, 2 ingredients to find, cut and cook, domains/textworld_cooking).

    kgplan bench textworld --game textworld-coin --seeds 10-59 --json results/textworld-coin.json
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from kgplan.agent.agent import Agent
from kgplan.agent.explore import explore
from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks.twx import CoinEpisode, arguments, coin_bounds, explorer_bound, run
from kgplan.games import GAMES
from kgplan.games.base import GameUnavailable, Observation
from kgplan.games.textworld import TW_DIRECTIONS, TextWorld, TextWorldSensor
from kgplan.graph.model import Fact


@dataclass
class ScoredEpisode(CoinEpisode):
    """An episode with its graph's worst precision and recall over the steps (and for Coin Collector what
    its map allows, see `benchmarks.twx.explorer_bound`)."""

    min_precision: float = 1.0
    min_recall: float = 1.0
    steps_scored: int = 0


class Scoring:
    """A TextWorld game that, before each step and at the end (the agent has applied its last observation
    then), scores the agent's graph in `store` against the perceived truth."""

    def __init__(self, env: TextWorld, sensor: TextWorldSensor, store: str) -> None:
        self.env, self.sensor, self.store = env, sensor, store
        self.budget, self.commands = env.budget, env.commands
        self.scores: list[tuple[float, float]] = []

    def optimum(self, seed: int) -> int:
        return self.env.optimum(seed)

    def reset(self, seed: int) -> Observation:
        self.scores = []
        return self.env.reset(seed)

    def step(self, action: str) -> Observation:
        self.score()
        return self.env.step(action)

    def compare(self) -> tuple[set[Fact], set[Fact]]:
        """(the graph's claims, the perceived truth), in the domain's predicates the sensor writes."""
        truth = set(self.sensor.translate(self.env.truth & self.env.seen, self.env.types))
        with Agent(self.store) as agent:
            facts = agent.facts()
        unknown = {f.args[0] for f in facts if f.predicate == "unknown"}
        return {f for f in facts if f.predicate in self.sensor.predicates and not set(f.args) & unknown}, truth

    def score(self) -> None:
        graph, truth = self.compare()
        right = len(graph & truth)
        self.scores.append((right / len(graph) if graph else 1.0, right / len(truth) if truth else 1.0))


def room_map(truth: Iterable[tuple[str, ...]]) -> tuple[dict[str, dict[str, int]], str]:
    """A doorless TextWorld map from the true facts (room -> neighbour -> 1), and the player's room."""
    exits: dict[str, dict[str, int]] = {}
    for _, there, here in (a for a in truth if a[0] in TW_DIRECTIONS):
        exits.setdefault(here, {})[there] = 1
    return exits, next(a[2] for a in truth if a[:2] == ("at", "P"))


def main(argv: list[str] | None = None) -> int:
    ap = arguments("kgplan bench textworld", __doc__, [g.name for g in GAMES if g.family == "textworld"])
    args = ap.parse_args(argv)
    game = args.game
    try:
        env = GAMES[game].environment()
    except GameUnavailable as e:
        bench_console().print(f"[red]error:[/red] {e}")
        return 2

    def play(seed: int) -> ScoredEpisode:
        env.reset(seed)
        bounds = explorer_bound(*room_map(env.truth)) if game == "textworld-coin" else (0.0, 0.0)
        with tempfile.TemporaryDirectory(prefix="kgplan-bench-textworld-") as tmp:
            store = f"sqlite:{Path(tmp) / 'world.db'}"
            scoring = Scoring(env, GAMES[game].sensor(), store)
            ep = explore(scoring, game, seed, planner=args.planner, store=store)
            scoring.score()
        return ScoredEpisode(**asdict(ep), mean_optimum_any_room=bounds[0], explorer_bound=bounds[1],
                             min_precision=min(p for p, _ in scoring.scores),
                             min_recall=min(r for _, r in scoring.scores), steps_scored=len(scoring.scores))

    def worst(episodes: list[ScoredEpisode]) -> dict[str, float | None]:
        return {**(coin_bounds(episodes) if game == "textworld-coin" else {}),
                "min_precision": min(e.min_precision for e in episodes),
                "min_recall": min(e.min_recall for e in episodes)}

    try:
        return run(args, f"TextWorld {args.game}, sensor mode", Path(f"results/textworld-{args.game}.png"), play,
                   worst)
    finally:
        env.close()


if __name__ == "__main__":
    raise SystemExit(main())
