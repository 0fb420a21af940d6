"""Public-domain benchmark: relevance pruning against the full state on problems made by the
generators of the PyPI package pypddl-datasets (`pip install pypddl-datasets`, or kgplan[test]).

Every classical generator of the package with a fixed domain is tried; a domain whose file or whose
problems kgplan does not accept (`Domain.load`, `Problem.parse`) is counted as not accepted, with the
reason. Per domain, problems are made at up to three sizes (`SIZES`, smallest first) and several
seeds into a folder, then planned on with Fast Downward: once on the full state alone, once on the
first (relaxed-plan) pruned state alone, and once as `kgplan plan` does it on a sqlite graph holding
the problem (pruning, widening, the race with the full state; its plan checked on the full state).
The properties checked: no problem whose full task the planner solves and whose first pruned task it
cannot (a loss), and no plan call slower than the full state alone + 0.5 s.

    kgplan bench public [--domains ipc/barman,ipc/sokoban] [--sizes 0,1] [--seeds 1,2] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from rich.progress import track
from rich.table import Table

from kgplan.benchmarks import console as bench_console
from kgplan.benchmarks import write_json
from kgplan.domains.formula import to_pddl
from kgplan.domains.model import Domain, Problem
from kgplan.graph.backends import open_graph
from kgplan.graph.world import WorldGraph
from kgplan.planners.pipeline import plan
from kgplan.planners.problem import Task
from kgplan.planners.relevance import Relevance
from kgplan.planners.solve import solve
from kgplan.planners.state import State, simulate

PACKAGE = "pypddl_datasets.generators.classical"
BOUND_S = 0.5  # the plan call may take this much longer than the full state alone
# keyword arguments of `make_problem` per size, smallest first, by generator name: a name alone fits every
# folder (ipc/, autoscale/, ipc_learning/, misc/) whose generator takes them, a path only that folder
SIZES: dict[str, list[dict]] = {
    "agricola": [{"last_stage": 1}, {"last_stage": 2}, {"last_stage": 3}],
    "assembly": [{"num_parts": 2}, {"num_parts": 3}, {"num_parts": 4}],
    "barman": [dict(num_cocktails=1, num_ingredients=2, num_shots=2), dict(num_cocktails=2, num_ingredients=3,
               num_shots=3), dict(num_cocktails=3, num_ingredients=3, num_shots=4)],
    "blocks_3": [{"num_blocks": 4}, {"num_blocks": 6}, {"num_blocks": 8}],
    "blocks_4": [{"num_blocks": 4}, {"num_blocks": 6}, {"num_blocks": 8}],
    "blocksworld": [{"num_blocks": 4}, {"num_blocks": 6}, {"num_blocks": 8}],
    "cavediving": [dict(cave_branches=[2], objectives=[2]), dict(cave_branches=[3, 2], objectives=[2]),
                   dict(cave_branches=[3, 2], objectives=[3, 2])],
    "childsnack": [dict(num_children=3, num_trays=1, gluten_factor=0.4), dict(num_children=5, num_trays=2,
                   gluten_factor=0.4), dict(num_children=8, num_trays=2, gluten_factor=0.4)],
    "citycar": [dict(num_rows=3, num_columns=3, num_cars=1, num_garages=1),
                dict(num_rows=3, num_columns=3, num_cars=2, num_garages=1),
                dict(num_rows=4, num_columns=4, num_cars=2, num_garages=2)],
    "data_network": [dict(num_items=4, num_layers=2, num_scripts=3, network="tiny-network"),
                     dict(num_items=5, num_layers=2, num_scripts=4, network="tiny-network"),
                     dict(num_items=6, num_layers=3, num_scripts=5, network="tiny-network")],
    "delivery": [dict(grid_size=3, num_packages=1), dict(grid_size=4, num_packages=2),
                 dict(grid_size=5, num_packages=3)],
    "depots": [dict(num_depots=1, num_distributors=1, num_trucks=1, num_pallets=2, num_hoists=2, num_crates=2),
               dict(num_depots=1, num_distributors=2, num_trucks=2, num_pallets=3, num_hoists=3, num_crates=3),
               dict(num_depots=2, num_distributors=2, num_trucks=2, num_pallets=4, num_hoists=4, num_crates=4)],
    "driverlog": [dict(num_locations=3, num_drivers=1, num_packages=2, num_trucks=1),
                  dict(num_locations=4, num_drivers=2, num_packages=3, num_trucks=2),
                  dict(num_locations=5, num_drivers=2, num_packages=4, num_trucks=2)],
    "elevators": [dict(num_areas=1, area_size=4, num_passengers=2, num_fast_elevators=1),
                  dict(num_areas=2, area_size=3, num_passengers=3, num_fast_elevators=1),
                  dict(num_areas=2, area_size=4, num_passengers=4, num_fast_elevators=1)],
    "ferry": [dict(num_cars=2, num_locations=3), dict(num_cars=4, num_locations=4), dict(num_cars=6, num_locations=5)],
    "floortile": [dict(num_rows=2, num_columns=3, num_robots=1), dict(num_rows=3, num_columns=3, num_robots=2),
                  dict(num_rows=3, num_columns=4, num_robots=2)],
    "folding": [dict(scenario="zigzag", num_nodes=4, num_folds=1), dict(scenario="zigzag", num_nodes=5, num_folds=2),
                dict(scenario="spiral", num_nodes=6, num_folds=2)],
    "ipc/freecell": [{"num_cards": 2, "num_cells": 2, "num_columns": 4}, {"num_cards": 3, "num_cells": 2,
                     "num_columns": 4}, {"num_cards": 4, "num_cells": 3, "num_columns": 5}],
    "autoscale/freecell": [dict(num_cells=2, num_columns=4, num_stacks=1, suit_size=2),
                           dict(num_cells=2, num_columns=4, num_stacks=1, suit_size=3),
                           dict(num_cells=3, num_columns=5, num_stacks=1, suit_size=4)],
    "ged": [{"num_genes": 4}, {"num_genes": 5}, {"num_genes": 6}],
    "goldminer": [dict(num_rows=3, num_cols=3), dict(num_rows=3, num_cols=4), dict(num_rows=4, num_cols=4)],
    "grid": [dict(width=3, height=3), dict(width=4, height=4), dict(width=5, height=5)],
    "gripper": [{"num_balls": 2}, {"num_balls": 4}, {"num_balls": 6}],
    "hiking": [dict(num_couples=1, num_cars=2, num_places=3), dict(num_couples=2, num_cars=2, num_places=3),
               dict(num_couples=2, num_cars=3, num_places=4)],
    "hiking_binary": [dict(num_couples=1, num_cars=2, num_places=3), dict(num_couples=2, num_cars=2, num_places=3),
                      dict(num_couples=2, num_cars=3, num_places=4)],
    "labyrinth": [dict(size=3, num_rotations=1), dict(size=3, num_rotations=2), dict(size=4, num_rotations=2)],
    "logistics": [dict(num_cities=2, city_size=2, num_packages=2, num_airplanes=1),
                  dict(num_cities=2, city_size=3, num_packages=4, num_airplanes=1),
                  dict(num_cities=3, city_size=3, num_packages=6, num_airplanes=1)],
    "maintenance": [dict(num_days=3, num_planes=2, num_visits=2), dict(num_days=4, num_planes=3, num_visits=3),
                    dict(num_days=5, num_planes=4, num_visits=3)],
    "miconic": [dict(num_floors=3, num_passengers=2), dict(num_floors=5, num_passengers=4),
                dict(num_floors=8, num_passengers=6)],
    "miconic_fulladl": [dict(num_floors=3, num_passengers=2), dict(num_floors=4, num_passengers=3),
                        dict(num_floors=6, num_passengers=4)],
    "miconic_fulladl_goal": [dict(num_floors=3, num_passengers=2), dict(num_floors=4, num_passengers=3),
                             dict(num_floors=6, num_passengers=4)],
    "miconic_simpleadl": [dict(num_floors=3, num_passengers=2), dict(num_floors=5, num_passengers=4),
                          dict(num_floors=8, num_passengers=6)],
    "movie": [{"num_snacks": 2}, {"num_snacks": 4}, {"num_snacks": 6}],
    "mprime": [dict(num_locations=4, num_vehicles=1, num_cargos=2, num_fuel_levels=3, num_space_levels=2,
                    num_goals=2),
               dict(num_locations=5, num_vehicles=2, num_cargos=3, num_fuel_levels=3, num_space_levels=2,
                    num_goals=3),
               dict(num_locations=6, num_vehicles=2, num_cargos=4, num_fuel_levels=4, num_space_levels=2,
                    num_goals=4)],
    "autoscale/mprime": [dict(num_locations=4, max_fuel=3, max_space=2, num_vehicles=1, num_cargos=2),
                         dict(num_locations=5, max_fuel=3, max_space=2, num_vehicles=2, num_cargos=3),
                         dict(num_locations=6, max_fuel=4, max_space=2, num_vehicles=2, num_cargos=4)],
    "mystery": [dict(num_locations=4, num_vehicles=1, num_cargos=2, num_fuel_levels=3, num_space_levels=2,
                     num_goals=2),
                dict(num_locations=5, num_vehicles=2, num_cargos=3, num_fuel_levels=3, num_space_levels=2,
                     num_goals=3),
                dict(num_locations=6, num_vehicles=2, num_cargos=4, num_fuel_levels=4, num_space_levels=2,
                     num_goals=4)],
    "nomystery": [dict(num_locations=3, num_packages=2), dict(num_locations=4, num_packages=3),
                  dict(num_locations=5, num_packages=4)],
    "nurikabe": [{"width": 3}, {"width": 4}, {"width": 5}],
    "openstacks": [dict(num_products=3, num_orders=3, density=50), dict(num_products=4, num_orders=4, density=50),
                   dict(num_products=5, num_orders=5, density=50)],
    "parking": [dict(num_curbs=3, num_cars=2), dict(num_curbs=4, num_cars=4), dict(num_curbs=5, num_cars=6)],
    "pegsol": [{"num_pegs": 3}, {"num_pegs": 5}, {"num_pegs": 7}],
    "pipesworld_notankage": [dict(network=1, num_batches=5, num_goals=1), dict(network=1, num_batches=6, num_goals=2),
                             dict(network=2, num_batches=8, num_goals=2)],
    "pipesworld_tankage": [dict(network=1, num_batches=5, num_goals=1), dict(network=1, num_batches=6, num_goals=2),
                           dict(network=2, num_batches=8, num_goals=2)],
    "recharging_robots": [dict(kind="covers", num_robots=2, num_obstacles=1, num_viewpoints=3),
                          dict(kind="covers", num_robots=2, num_obstacles=2, num_viewpoints=4),
                          dict(kind="covers", num_robots=3, num_obstacles=2, num_viewpoints=5)],
    "ricochet_robots": [{"board_size": 4}, {"board_size": 5}, {"board_size": 6}],
    "rovers": [dict(num_rovers=1, num_waypoints=4, num_objectives=2, num_cameras=1, num_goals=2),
               dict(num_rovers=2, num_waypoints=5, num_objectives=2, num_cameras=2, num_goals=3),
               dict(num_rovers=2, num_waypoints=6, num_objectives=3, num_cameras=2, num_goals=4)],
    "rubiks_cube": [{"num_moves": 1}, {"num_moves": 2}, {"num_moves": 3}],
    "satellite": [dict(num_satellites=1, max_instruments=1, num_modes=2, num_targets=3, num_observations=2),
                  dict(num_satellites=2, max_instruments=2, num_modes=2, num_targets=4, num_observations=3),
                  dict(num_satellites=2, max_instruments=2, num_modes=3, num_targets=5, num_observations=4)],
    "ipc_learning/satellite": [dict(num_satellites=1, num_instruments=1, num_modes=2, num_targets=3,
                                    num_observations=2),
                               dict(num_satellites=2, num_instruments=2, num_modes=2, num_targets=4,
                                    num_observations=3),
                               dict(num_satellites=2, num_instruments=3, num_modes=3, num_targets=5,
                                    num_observations=4)],
    "scanalyzer": [{"size": 2}, {"size": 3}, {"size": 4}],
    "schedule": [{"num_parts": 2}, {"num_parts": 3}, {"num_parts": 4}],
    "settlers": [dict(num_locations=3, num_edges=2, num_seas=0, num_goals=1),
                 dict(num_locations=4, num_edges=3, num_seas=0, num_goals=2),
                 dict(num_locations=5, num_edges=4, num_seas=1, num_goals=2)],
    "slitherlink": [dict(rows=2, cols=3), dict(rows=3, cols=3), dict(rows=3, cols=4)],
    "snake": [dict(width=4, height=4, spawn_percentage=10, num_initial_apples=1),
              dict(width=4, height=4, spawn_percentage=10, num_initial_apples=2),
              dict(width=5, height=5, spawn_percentage=10, num_initial_apples=3)],
    "sokoban": [dict(width=6, height=6, num_floor=14, num_stones=1), dict(width=7, height=7, num_floor=18,
                num_stones=2), dict(width=8, height=8, num_floor=22, num_stones=2)],
    "ipc_learning/sokoban": [dict(grid_size=5, boxes=1), dict(grid_size=6, boxes=2), dict(grid_size=7, boxes=2)],
    "spanner": [dict(num_spanners=2, num_nuts=1, num_locations=3), dict(num_spanners=3, num_nuts=2, num_locations=4),
                dict(num_spanners=4, num_nuts=3, num_locations=5)],
    "spider": [dict(num_decks=1, num_suits=1, num_values=3, num_piles=2, num_deals=0),
               dict(num_decks=1, num_suits=1, num_values=4, num_piles=2, num_deals=0),
               dict(num_decks=1, num_suits=1, num_values=5, num_piles=2, num_deals=1)],
    "storage": [dict(num_crates=1, num_hoists=1, num_store_areas=2),
                dict(num_crates=2, num_hoists=2, num_store_areas=4),
                dict(num_crates=3, num_hoists=2, num_store_areas=5)],
    "termes": [dict(size_x=3, size_y=3, min_height=1, max_height=1, num_towers=1),
               dict(size_x=3, size_y=3, min_height=1, max_height=2, num_towers=1),
               dict(size_x=4, size_y=3, min_height=1, max_height=2, num_towers=1)],
    "tetris": [{"num_rows": 4}, {"num_rows": 6}],
    "thoughtful": [dict(num_cards=2, num_columns=2), dict(num_cards=3, num_columns=2),
                   dict(num_cards=3, num_columns=3)],
    "tidybot": [dict(world_size=5, num_tables=1), dict(world_size=6, num_tables=1), dict(world_size=6, num_tables=2)],
    "tpp": [dict(num_products=2, num_markets=2, num_trucks=1, num_depots=1, max_level=2),
            dict(num_products=3, num_markets=2, num_trucks=1, num_depots=1, max_level=2),
            dict(num_products=4, num_markets=3, num_trucks=2, num_depots=1, max_level=3)],
    "transport": [dict(kind="city", num_nodes=4, num_trucks=1, num_packages=2),
                  dict(kind="city", num_nodes=5, num_trucks=2, num_packages=3),
                  dict(kind="two-cities", num_nodes=4, num_trucks=2, num_packages=4)],
    "ipc_learning/transport": [dict(num_locations=4, num_trucks=1, num_packages=2),
                               dict(num_locations=5, num_trucks=2, num_packages=3),
                               dict(num_locations=6, num_trucks=2, num_packages=4)],
    "transport_fuel": [dict(num_locations=4, num_trucks=1, num_packages=2),
                       dict(num_locations=5, num_trucks=2, num_packages=3),
                       dict(num_locations=6, num_trucks=2, num_packages=4)],
    "trucks": [dict(num_trucks=1, num_locations=2, num_packages=2, num_areas=2),
               dict(num_trucks=1, num_locations=3, num_packages=3, num_areas=2),
               dict(num_trucks=2, num_locations=3, num_packages=4, num_areas=3)],
    "visitall": [{"width": 3}, {"width": 4}, {"width": 5}],
    "woodworking": [dict(num_parts=2, num_machines=2), dict(num_parts=3, num_machines=3),
                    dict(num_parts=4, num_machines=3)],
    "zenotravel": [dict(num_cities=2, num_planes=1, num_people=2), dict(num_cities=3, num_planes=2, num_people=4),
                   dict(num_cities=4, num_planes=2, num_people=6)],
    "scalability_deterministic": [dict(num_flights=1, jigs_per_flight=1, num_racks=2, initial_occupancy=0,
                                       max_delivery_delay=0),
                                  dict(num_flights=2, jigs_per_flight=1, num_racks=2, initial_occupancy=0,
                                       max_delivery_delay=0)],
}


def generators() -> dict[str, Path]:
    """Every generator folder of the package with a fixed domain, by its path under classical/ (e.g.
    ipc/barman); empty where pypddl-datasets is not installed."""
    try:
        root = Path(importlib.import_module(PACKAGE).__file__ or "").parent
    except ImportError:
        return {}
    return {str(d.relative_to(root)): d for d in sorted(p.parent for p in root.rglob("domain.pddl"))
            if (d / "generator.py").is_file()}


Maker = Callable[[dict, int], str | None]  # a size's keyword arguments and a seed -> a problem's text, or None


def maker(name: str, folder: Path) -> tuple[Maker, list[dict]]:
    """A generator's `make_problem` called with a size's arguments and the seed where it takes one, and its
    sizes (those of its path, else of its last part)."""
    fn = importlib.import_module(f"{PACKAGE}.{name.replace('/', '.')}.generator").make_problem
    seeded = "seed" in inspect.signature(fn).parameters
    return (lambda kwargs, seed: fn(**kwargs, **({"seed": seed} if seeded else {}))), SIZES.get(
        name, SIZES.get(folder.name, []))


def plan_pruned(g: WorldGraph, domain: Domain, state: State, problem: Problem, timeout: float) -> dict:
    """The first pruned task's outcome (solved with a plan valid on the full state, or why not) and its size;
    then the call as `kgplan plan` makes it (pruning, widening, the race with the full state) on `g` holding the
    problem: its seconds, widenings, the attempt that answered and whether it gave a valid plan."""
    goal = problem.goal
    first = next(Relevance(domain).prunings(state, goal))
    out: dict = {"facts": len(first.facts), "first": "unreachable"}
    if first.reachable:
        r = solve(Task(domain, first.objects, first.facts, goal, state.numbers), "fd", timeout)
        out["first"] = "solved" if r.solved and simulate(state.copy(), r.plan, goal) is None else str(r.status)
    g.init(domain, force=True)
    g.load_problem(problem, verified=False)
    t = time.perf_counter()
    report = plan(g, to_pddl(goal), timeout=timeout)  # its plans are checked on the full state
    return out | {"seconds": time.perf_counter() - t, "widenings": report.widenings, "winner": report.winner,
                  "solved": report.solved}


def run(names: list[str] | None, sizes: list[int], seeds: list[int], timeout: float, out: Path,
        progress: Callable = lambda xs, **_: xs) -> tuple[list[dict], dict[str, str]]:
    """Make the problems into `out` and plan on each (pruned, then full): a row per problem, and the
    domains not taken with the reason."""
    found = generators()
    skipped: dict[str, str] = {}
    cases = []
    for name in names or sorted(found):
        if name not in found:
            skipped[name] = "no such generator"
            continue
        try:
            domain = Domain.load(found[name] / "domain.pddl")
            fn, all_sizes = maker(name, found[name])
        except Exception as e:  # a domain or generator this project cannot take: counted, with the reason
            skipped[name] = f"not accepted: {type(e).__name__}: {str(e)[:120]}"
            continue
        if not all_sizes:
            skipped[name] = "no sizes given for its generator"
            continue
        cases += [(name, domain, fn, i, all_sizes[i], seed) for i in sizes if i < len(all_sizes) for seed in seeds]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        g = open_graph(f"sqlite:{Path(tmp) / 'public.db'}")
        for name, domain, fn, size, kwargs, seed in progress(cases, description="public problems"):
            rows.append(_measure(g, name, domain, fn, size, kwargs, seed, timeout, out))
    for name in {r["domain"] for r in rows}:
        mine = [r for r in rows if r["domain"] == name]
        if all(r.get("error", "").startswith("not accepted") for r in mine):
            skipped[name] = mine[0]["error"]
    return rows, skipped


def _measure(g: WorldGraph, name: str, domain: Domain, fn: Maker, size: int, kwargs: dict,
             seed: int, timeout: float, out: Path) -> dict:
    """One generated problem: made into `out`, planned on the full state alone and as `kgplan plan` does."""
    row: dict = {"domain": name, "size": size, "seed": seed}
    try:
        text = fn(kwargs, seed)
    except Exception as e:
        row["error"] = f"generator: {type(e).__name__}: {str(e)[:120]}"
        return row
    if not text:
        row["error"] = "generator: no problem for these arguments"
        return row
    path = out / name / f"s{size}-seed{seed}.pddl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    try:
        problem = Problem.parse(text, path.stem)
        state = State(domain, problem.objects, problem.init, problem.numbers)
    except Exception as e:
        row["error"] = f"not accepted: {type(e).__name__}: {str(e)[:120]}"
        return row
    if problem.goal is None or state.holds(problem.goal):
        row["error"] = "no goal, or the goal holds already"
        return row
    t = time.perf_counter()
    full = solve(Task(domain, dict(problem.objects), set(state.facts), problem.goal, state.numbers), "fd",
                 timeout)
    row |= {"facts_full": len(state.facts), "full": str(full.status), "full_seconds": time.perf_counter() - t,
            "full_solved": full.solved and simulate(state.copy(), full.plan, problem.goal) is None}
    try:
        row |= {f"pruned_{k}": v for k, v in plan_pruned(g, domain, state, problem, timeout).items()}
    except Exception as e:  # a name or fact the graph refuses: counted, with the reason
        row["error"] = f"not accepted: {type(e).__name__}: {str(e)[:120]}"
        return row
    row["loss"] = row["full_solved"] and row["pruned_first"] != "solved"
    row["slow"] = row["pruned_seconds"] > row["full_seconds"] + BOUND_S
    return row


def summarise(rows: list[dict]) -> dict[str, dict]:
    """Per domain: problems, full solved, first pruning solved, losses, widenings, facts kept / full and the
    seconds of the plan call and of the full state alone (medians over the problems the full task solved)."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["domain"]].append(r)
    out = {}
    for name, mine in sorted(by.items()):
        ok = [r for r in mine if r.get("full_solved") and "error" not in r]
        out[name] = {
            "problems": len([r for r in mine if "full" in r]),
            "errors": len([r for r in mine if "error" in r]),
            "full_solved": len(ok),
            "first_solved": len([r for r in ok if r["pruned_first"] == "solved"]),
            "losses": len([r for r in ok if r["loss"]]),
            "slow": len([r for r in ok if r["slow"]]),
            "widenings": sum(r["pruned_widenings"] for r in ok),
            "kept": statistics.median(r["pruned_facts"] / r["facts_full"] for r in ok) if ok else None,
            "pruned_s": statistics.median(r["pruned_seconds"] for r in ok) if ok else None,
            "full_s": statistics.median(r["full_seconds"] for r in ok) if ok else None,
        }
    return out


def _range(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kgplan bench public", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domains", help="comma-separated generators, e.g. ipc/barman,autoscale/sokoban (default: all)")
    ap.add_argument("--sizes", type=_range, default=[0, 1, 2], help="size indexes of SIZES, e.g. 0,1 (default 0,1,2)")
    ap.add_argument("--seeds", type=_range, default=[1, 2], help="generator seeds, e.g. 1,2")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per planner call")
    ap.add_argument("--out", type=Path, help="folder for the problems (default: a temporary one)")
    ap.add_argument("--json", type=Path, default=Path("results/public.json"))
    args = ap.parse_args(argv)
    console = bench_console()
    if not generators():
        console.print("[red]error:[/red] pypddl-datasets is not installed: pip install pypddl-datasets")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        rows, skipped = run(args.domains.split(",") if args.domains else None, args.sizes, args.seeds,
                            args.timeout, args.out or Path(tmp), lambda xs, **kw: track(xs, console=console, **kw))
    summary = summarise(rows)
    table = Table(title="relevance pruning on public domains (Fast Downward; seconds are medians)")
    for col in ("domain", "problems", "full solved", "first pruning solved", "losses", "widenings",
                f"calls > full + {BOUND_S} s", "facts kept / full", "plan call s", "full s", "errors"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    for name, s in summary.items():
        def num(x: float | None, fmt: str) -> str:
            return "-" if x is None else format(x, fmt)
        table.add_row(name, str(s["problems"]), str(s["full_solved"]), str(s["first_solved"]),
                      f"[red]{s['losses']}[/red]" if s["losses"] else "0", str(s["widenings"]),
                      f"[red]{s['slow']}[/red]" if s["slow"] else "0",
                      num(s["kept"], ".0%"), num(s["pruned_s"], ".2f"), num(s["full_s"], ".2f"), str(s["errors"]))
    console.print(table)
    losses = sum(s["losses"] for s in summary.values())
    slow = sum(s["slow"] for s in summary.values())
    console.print(f"{len(summary)} domains, {sum(s['full_solved'] for s in summary.values())} problems solved on "
                  f"the full state, {losses} lost by the first pruning, {slow} plan calls slower than the full state + "
                  f"{BOUND_S} s; {len(skipped)} domains not taken")
    for name, why in sorted(skipped.items()):
        console.print(f"  {name}: {why}")
    write_json(args.json, {"summary": summary, "skipped": skipped, "rows": rows})
    console.print(f"results: {args.json}")
    return 1 if losses or slow else 0
