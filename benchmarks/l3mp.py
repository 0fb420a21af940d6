"""The L3M+P evaluation harness: feed a run's English state changes and tasks to an agent variant.

Starting from a run's initial `problem.pddl`, every `state_change.txt` and `goal.txt` is fed in
order. A state change succeeds when it introduces no new discrepancy between the graph and the
ground-truth `:init` (the rule of the paper's own harness); strict equality is reported beside
it. A plan succeeds when, executed from the true state of that step, it reaches the true goal
(plans are scored, not executed on the graph). Caveat: the dataset's state after a goal already
holds the simulator's own execution of it (4-92 facts in the dev runs, against a median of 3 for a
plain change); the oracle's next answer carries those facts, a real LLM cannot know them, so with a
real LLM the first change after each goal usually counts as a failure. Prompt tokens are counted
with the o200k tokenizer (offline) for every LLM kind.

Variants: R- shows the LLM the whole graph, R+ the neighbourhood of the entities it picks from
the entity list, RS the neighbourhood of its query graph grounded by embeddings and search
(agent/retrieval.py); a trailing V verifies each change and re-prompts with the issues.

    python -m benchmarks.l3mp ../shared/bench/l3mp-household --variant R+V --llm oracle
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console
from rich.progress import track
from rich.table import Table

from agent.language import Outcome, Retrieval, full_graph, select_entities, update, write_goal
from agent.llm import LLM, CallRecord, LLMConfig, OpenAIClient, ScriptedLLM, parse_reply, strict_schema
from agent.planning import plan
from benchmarks import console as bench_console
from benchmarks.planning import needed_facts
from domains.formula import atoms, to_pddl
from domains.model import Domain, Problem
from graph.backends.sqlite import SqliteGraph
from planners.problem import Task
from planners.solve import solve
from planners.state import State, Step, simulate

# variant -> (retriever, verify): "full" shows the whole graph, "select" the entities the LLM picks from the
# entity list (retrieval a), "search" the LLM's query graph grounded by embeddings (retrieval b)
VARIANTS = {"R-": ("full", False), "R-V": ("full", True), "R+": ("select", False), "R+V": ("select", True),
            "RS": ("search", False), "RSV": ("search", True)}
Atoms = set[tuple[str, tuple[str, ...]]]


class Counting(LLM):
    """Counts prompt tokens with a real tokenizer and keeps every reply (for --record).

    The messages and the reply schema are counted apart: an OpenAI endpoint adds the schema to the
    prompt, a llama.cpp server turns it into a grammar instead.
    """

    def __init__(self, inner: LLM) -> None:
        super().__init__()
        import bpe_openai

        self.inner, self.encoding = inner, bpe_openai.get_encoding("o200k_base")
        self.replies: list[str] = []
        self.counted: list[int] = []
        self.schema_counted: list[int] = []

    def complete(self, messages: list[dict], schema: type[BaseModel]) -> tuple[BaseModel, CallRecord]:
        self.counted.append(sum(len(self.encoding.encode(m["content"])) for m in messages))
        self.schema_counted.append(len(self.encoding.encode(json.dumps(strict_schema(schema)))))
        reply, record = self.inner.complete(messages, schema)
        self.replies.append(reply.model_dump_json())
        self.records.append(record)
        return reply, record


CORRUPTIONS = ("wrong_entity", "half_pair", "invented_predicate", "extra_location")


class Oracle(LLM):
    """Answers every prompt with the dataset's ground truth for the current step.

    With `corrupt` > 0, that fraction of state changes gets a corrupted first answer (the kinds
    in turn); later answers for the same sentence are the truth, so verification and
    re-prompting can recover it.
    """

    def __init__(self, corrupt: float = 0.0, seed: int = 0) -> None:
        super().__init__()
        self.corrupt, self.rng = corrupt, random.Random(seed)
        self.truth: dict = {}
        self.kind: str | None = None  # the corruption pending for this step
        self.delivered: str | None = None  # the corruption this step's answer really carried
        self.corrupted = 0

    def new_step(self, truth: dict) -> None:
        """Set the ground truth of the next step and draw the corruption its first answer will get, if any."""
        self.truth = truth
        self.kind = self.delivered = None
        if (truth.get("add") or truth.get("remove")) and self.rng.random() < self.corrupt:
            self.kind = CORRUPTIONS[self.corrupted % len(CORRUPTIONS)]
            self.corrupted += 1

    def complete(self, messages: list[dict], schema: type[BaseModel]) -> tuple[BaseModel, CallRecord]:
        name = schema.__name__
        if name == "EntitySelection":
            text = json.dumps({"entities": self.truth["entities"]})
        elif name == "QueryGraph":  # each entity described by its name in words, with its type
            ents: list[str] = self.truth["entities"]
            objects: dict[str, str] = self.truth["objects"]
            text = json.dumps({
                "entities": [{"description": e.replace("_", " "), "type": objects.get(e)} for e in ents],
                "relations": [{"predicate": p, "args": [ents.index(a) for a in args]}
                              for p, args in sorted(self.truth["relations"])]})
        elif name == "StateChange":
            add, remove = set(self.truth["add"]), set(self.truth["remove"])
            if self.kind:
                corrupted = self._corrupt(self.kind, add, remove)
                self.delivered = self.kind if corrupted != (add, remove) else None  # some cannot change a delta
                add, remove = corrupted
                self.kind = None
            text = json.dumps({"add": _facts(add), "remove": _facts(remove)})
        else:
            text = json.dumps({"goal": self.truth["goal"]})
        record = CallRecord("oracle", "json_schema", 0, 0, 0.0, 1, None)
        self.records.append(record)
        return parse_reply(text, schema), record  # the same validation as any reply

    def _corrupt(self, kind: str, add: Atoms, remove: Atoms) -> tuple[Atoms, Atoms]:
        objects: dict[str, str] = self.truth["objects"]
        facts = sorted(add | remove)
        p, args = self.rng.choice(facts)
        if kind == "invented_predicate":
            bad = (f"{p}_now", args)
        elif kind == "wrong_entity" and args:
            i = self.rng.randrange(len(args))
            other = self.rng.choice(sorted(o for o in objects if o != args[i]))
            bad = (p, (*args[:i], other, *args[i + 1:]))
        elif kind == "half_pair" and add and remove:  # e.g. the item's new place without its old one
            return (add, set()) if self.rng.random() < 0.5 else (set(), remove)
        elif kind == "half_pair" and len(facts) > 1:
            return add and set(sorted(add)[: len(add) // 2]), remove and set(sorted(remove)[: len(remove) // 2])
        else:  # extra_location (and the fallbacks): the item is also somewhere else of the same kind
            binary = sorted(a for a in add if len(a[1]) == 2) or [(p, args)]
            p, args = self.rng.choice(binary)
            same = sorted(o for o, t in objects.items() if t == objects.get(args[-1]) and o != args[-1])
            if not same:
                return add, set()
            return add | {(p, (*args[:-1], self.rng.choice(same)))}, remove
        return (add - {(p, args)}) | {bad} if (p, args) in add else add, \
            (remove - {(p, args)}) | ({bad} if (p, args) in remove else set())


def _facts(atoms_: Atoms) -> list[dict]:
    return [{"predicate": p, "args": list(a)} for p, a in sorted(atoms_)]


def steps(run: Path) -> list[Path]:
    return sorted(p for p in run.iterdir() if p.is_dir() and (p / "problem.pddl").is_file())


class Reference:
    """Retrieval recall against ground-truth plans.

    The reference plan of a goal is planned on the full true state for the true goal (no pruning),
    with the steps it reaches the goal without dropped; the facts it needs are the initial facts its
    positive preconditions read. Planned once per goal and shared by all variants.
    """

    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout
        self.needed: dict[str, Atoms | None] = {}

    def recall(self, step: Path, domain: Domain, truth: Problem, true_init: Atoms, shown: Atoms,
               init: Atoms | None) -> dict:
        """The fraction of needed facts in what the LLM was shown and in the planner's :init."""
        key = str(step)
        if key not in self.needed:
            assert truth.goal is not None
            state = State(domain, truth.objects, true_init)
            res = solve(Task(domain, truth.objects, set(true_init), truth.goal), "fd", self.timeout)
            self.needed[key] = needed_facts(state, res.plan, truth.goal) if res.solved else None
        needed = self.needed[key]
        if not needed:  # no reference plan, or the goal holds already
            return {"needed_facts": None if needed is None else 0}
        return {"needed_facts": len(needed), "recall_shown": len(needed & shown) / len(needed),
                "recall_init": len(needed & init) / len(needed) if init is not None else None}


def evaluate(run: Path, variant: str, llm: Counting, oracle: Oracle | None, console: Console,
             max_rounds: int = 3, depth: int = 1, reference: Reference | None = None,
             limit: int | None = None, rows: list[dict] | None = None,
             on_step: Callable[[], object] | None = None, mine_invariants: bool = False) -> list[dict]:
    """Run one variant over one run; a row per step, appended to `rows` (with retrieval recall on goals if
    `reference` is given); `on_step` is called after each. `mine_invariants`: accept every invariant
    `kgplan invariants --suggest` proposes once the initial problem is loaded."""
    retriever, verify = VARIANTS[variant]
    domain = Domain.load(run / "domain.pddl")
    rows = [] if rows is None else rows
    with tempfile.TemporaryDirectory() as tmp:
        g = SqliteGraph(Path(tmp) / "agent.db")
        g.init(domain)
        start = Problem.parse((run / "problem.pddl").read_text())
        g.load_problem(start)
        if mine_invariants:
            g.accept_invariants(g.suggest_invariants().suggested)
        prev: Atoms = {(a.predicate, a.args) for a in start.init}
        discrepancy: Atoms = set()
        for step in track(steps(run)[:limit], description=f"{run.name} {variant}", console=console):
            truth = Problem.parse((step / "problem.pddl").read_text(), str(step))
            true_init: Atoms = {(a.predicate, a.args) for a in truth.init}
            is_goal = (step / "goal.txt").is_file()
            text = (step / ("goal.txt" if is_goal else "state_change.txt")).read_text().strip()
            calls_before, t0 = len(llm.counted), time.perf_counter()
            out = Outcome(text)
            if oracle:
                oracle.new_step(_truth(true_init, prev, truth, is_goal))
            retrieval = _retrieve(retriever, llm, g, text, depth, out)
            row = {"step": step.name, "kind": "goal" if is_goal else "state_change", "text": text,
                   "corruption": None, "after_goal": bool(rows) and rows[-1]["kind"] == "goal"}
            if is_goal:
                _, out = write_goal(llm, g, text, retrieval, max_rounds=max_rounds, out=out)
                scored, init = _score_plan(g, out, domain, truth, true_init)
                row |= scored
                if reference is not None:
                    shown = {(f.predicate, f.args) for f in retrieval.facts}
                    row |= reference.recall(step, domain, truth, true_init, shown, init)
            else:
                update(llm, g, text, retrieval, verify=verify, max_rounds=max_rounds, out=out)
                now = {(f.predicate, f.args) for f in g.facts()}
                new_disc = now ^ true_init
                row |= {"success": new_disc <= discrepancy, "strict": not new_disc, "error": out.error,
                        "retries": len(out.rounds), "discrepancies": len(new_disc)}
                row["corruption"] = corruption = oracle.delivered if oracle else None
                if corruption and oracle:
                    applied = out.change.delta if out.change else None
                    row |= {"caught": bool(out.rounds), "recovered": applied is not None and (
                        {(f.predicate, f.args) for f in applied.add} == oracle.truth["add"]
                        and {(f.predicate, f.args) for f in applied.remove} == oracle.truth["remove"])}
                discrepancy = new_disc
            row |= {"prompt_tokens": sum(llm.counted[calls_before:]),
                    "schema_tokens": sum(llm.schema_counted[calls_before:]), "llm_calls": len(out.calls),
                    "llm_latency_s": sum(c.latency_s for c in out.calls), "seconds": time.perf_counter() - t0}
            rows.append(row)
            if on_step:
                on_step()
            prev = true_init
        g.close()
    return rows


def _retrieve(retriever: str, llm: LLM, g: SqliteGraph, text: str, depth: int, out: Outcome) -> Retrieval:
    if retriever == "select":
        return select_entities(llm, g, text, depth, out)
    if retriever == "search":
        from agent.retrieval import search_retrieve  # loads torch: only when asked for

        return search_retrieve(llm, g, text, depth=depth, out=out)
    return full_graph(g)


def _truth(true_init: Atoms, prev: Atoms, truth: Problem, is_goal: bool) -> dict:
    if is_goal:
        assert truth.goal is not None
        entities = sorted({a for x in atoms(truth.goal) for a in x.args})
        return {"goal": to_pddl(truth.goal), "entities": entities, "objects": truth.objects,
                "relations": _among(true_init, entities)}
    add, remove = true_init - prev, prev - true_init
    entities = sorted({a for _, args in add | remove for a in args})
    return {"add": add, "remove": remove, "objects": truth.objects, "entities": entities,
            "relations": _among(prev, entities)}  # as the graph holds them: before the change


def _among(state: Atoms, entities: list[str]) -> Atoms:
    """The binary facts of `state` between two of `entities`."""
    names = set(entities)
    return {(p, args) for p, args in state if len(args) == 2 and set(args) <= names}


def _score_plan(g: SqliteGraph, out: Outcome, domain: Domain, truth: Problem,
                true_init: Atoms) -> tuple[dict, Atoms | None]:
    """The plan's score from the true state, and the planner's :init (None when no planner ran)."""
    if out.goal is None or out.error:
        return {"success": False, "error": out.error, "retries": len(out.rounds), "planner_s": 0.0}, None
    report = plan(g, out.goal)
    init = report.task.facts if report.task else None
    if not report.solved:
        return {"success": False, "error": f"planner: {report.status} {report.message}", "planner_s": report.seconds,
                "retries": len(out.rounds)}, init
    failure = simulate(State(domain, truth.objects, true_init), [Step.parse(s) for s in report.plan], truth.goal)
    return {"success": failure is None, "error": str(failure) if failure else None, "planner_s": report.seconds,
            "plan_length": len(report.plan), "retries": len(out.rounds)}, init


def summarise(rows: list[dict]) -> dict:
    changes = [r for r in rows if r["kind"] == "state_change"]
    goals = [r for r in rows if r["kind"] == "goal"]

    def rate(xs: list[dict], key: str = "success") -> float:
        return sum(bool(r[key]) for r in xs) / len(xs) if xs else 0.0

    recovery = {k: {"n": len(xs), "caught": rate(xs, "caught"), "recovered": rate(xs, "recovered")}
                for k in CORRUPTIONS if (xs := [r for r in changes if r.get("corruption") == k])}
    recall = {}
    for key in ("recall_shown", "recall_init"):
        if xs := [r[key] for r in goals if r.get(key) is not None]:
            recall |= {f"min_{key}": min(xs), f"mean_{key}": statistics.mean(xs)}
    return recall | {"recovery_rate": recovery, "corrupted": sum(bool(r.get("corruption")) for r in changes),
            "state_success_rate": rate(changes), "state_strict_rate": rate(changes, "strict"),
            # the state after a goal holds the simulator's execution of it, which no sentence describes
            "state_success_rate_not_after_goal": rate([r for r in changes if not r.get("after_goal")]),
            "plan_success_rate": rate(goals), "state_changes": len(changes), "goals": len(goals),
            "prompt_tokens_per_change": statistics.mean(r["prompt_tokens"] for r in changes) if changes else 0,
            "prompt_tokens_per_plan": statistics.mean(r["prompt_tokens"] for r in goals) if goals else 0,
            "schema_tokens_per_change": statistics.mean(r["schema_tokens"] for r in changes) if changes else 0,
            "schema_tokens_per_plan": statistics.mean(r["schema_tokens"] for r in goals) if goals else 0,
            "llm_latency_s_mean": statistics.mean(r["llm_latency_s"] for r in rows) if rows else 0,
            "planner_s_mean": statistics.mean(r["planner_s"] for r in goals) if goals else 0}


def write(path: Path, results: dict[str, dict[str, list[dict]]], replies: list[str], record: Path | None) -> dict:
    """Write the results so far (and the replies, for --record); after every step, so a stopped run keeps them."""
    summary = {v: summarise([r for rows in runs.values() for r in rows]) for v, runs in results.items()}
    top = next(iter(summary.values()))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"state_success_rate": top["state_success_rate"],
                               "plan_success_rate": top["plan_success_rate"], "variants": summary,
                               "steps": results}, indent=1))
    tmp.replace(path)
    if record:
        record.write_text(json.dumps(replies))
    return summary


def plot(results: dict[str, dict[str, list[dict]]], path: Path) -> None:
    """Cumulative success over time per variant, state changes and plans, like the paper's figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, kind, title in ((axes[0], "state_change", "state changes"), (axes[1], "goal", "plans")):
        for variant, runs in results.items():
            xs = [r for rows in runs.values() for r in rows if r["kind"] == kind]
            cum = [sum(r["success"] for r in xs[: i + 1]) / (i + 1) for i in range(len(xs))]
            ax.plot(range(1, len(cum) + 1), cum, label=variant)
        ax.set(title=f"cumulative success: {title}", xlabel="step", ylabel="success rate", ylim=(0, 1.05))
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kgplan bench l3mp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+", type=Path, help="runs (folders with domain.pddl) or folders of runs")
    ap.add_argument("--variant", default="R+V", help=f"comma-separated, of {', '.join(VARIANTS)}, or 'all'")
    ap.add_argument("--llm", default="openai", choices=["openai", "oracle"],
                    help="openai: the endpoint from KGPLAN_LLM_* and OPENAI_API_KEY; oracle: the ground truth")
    ap.add_argument("--corrupt", type=float, default=0.0,
                    help="with --llm oracle: fraction of state changes whose first answer is corrupted")
    ap.add_argument("--llm-replay", type=Path, help="replay the replies recorded with --record (JSON list)")
    ap.add_argument("--record", type=Path, help="write every LLM reply here, to replay the run exactly")
    ap.add_argument("--no-recall", action="store_true",
                    help="skip retrieval recall (it plans every goal once more on the full true state)")
    ap.add_argument("--limit", type=int, help="only the first N steps of each run (for slow local models)")
    ap.add_argument("--max-rounds", type=int, default=3, help="replies per sentence (re-prompts + 1)")
    ap.add_argument("--mine-invariants", action="store_true",
                    help="accept the mined invariants (`kgplan invariants --suggest`) of each run's initial state")
    ap.add_argument("--json", type=Path, default=Path("results/l3mp.json"))
    ap.add_argument("--plot", type=Path, default=Path("results/l3mp.png"))
    args = ap.parse_args(argv)
    variants = list(VARIANTS) if args.variant == "all" else args.variant.split(",")
    if bad := [v for v in variants if v not in VARIANTS]:
        ap.error(f"unknown variant(s) {bad}: choose from {', '.join(VARIANTS)}")
    runs = [d for root in args.datasets for d in ([root] if (root / "domain.pddl").is_file() else
                                                 sorted(p for p in root.iterdir() if (p / "domain.pddl").is_file()))]
    console = bench_console()
    oracle = Oracle(args.corrupt) if args.llm == "oracle" and not args.llm_replay else None
    inner: LLM = (ScriptedLLM(json.loads(args.llm_replay.read_text())) if args.llm_replay
                  else oracle or OpenAIClient(LLMConfig.from_env()))
    llm = Counting(inner)
    reference = None if args.no_recall else Reference()
    results: dict[str, dict[str, list[dict]]] = {v: {} for v in variants}
    for v in variants:
        for run in runs:
            rows = results[v][run.name] = []
            evaluate(run, v, llm, oracle, console, args.max_rounds, reference=reference, limit=args.limit, rows=rows,
                     on_step=lambda: write(args.json, results, llm.replies, args.record),
                     mine_invariants=args.mine_invariants)
    summary = write(args.json, results, llm.replies, args.record)
    t = Table("variant", "state success (not after a goal)", "strict", "plan success", "prompt tok/change (+schema)",
              "prompt tok/plan (+schema)", "recall shown (min)", "recall :init (min)", "LLM s/step", "planner s",
              title=f"L3M+P harness, LLM: {args.llm_replay or args.llm}")
    for v, s in summary.items():
        t.add_row(v, f"{s['state_success_rate']:.1%} ({s['state_success_rate_not_after_goal']:.1%})",
                  f"{s['state_strict_rate']:.1%}",
                  f"{s['plan_success_rate']:.1%}",
                  f"{s['prompt_tokens_per_change']:.0f} (+{s['schema_tokens_per_change']:.0f})",
                  f"{s['prompt_tokens_per_plan']:.0f} (+{s['schema_tokens_per_plan']:.0f})",
                  *(f"{s[f'mean_{k}']:.1%} ({s[f'min_{k}']:.1%})" if f"mean_{k}" in s else "-"
                    for k in ("recall_shown", "recall_init")),
                  f"{s['llm_latency_s_mean']:.2f}", f"{s['planner_s_mean']:.2f}")
    console.print(t)
    console.print("recall: of the initial facts a reference plan (full true state, true goal, redundant steps "
                  "dropped) reads, the share in the facts shown to the LLM and in the planner's :init; mean (min) "
                  "over goals that need a plan")
    for v, s in summary.items():
        if s["recovery_rate"]:
            console.print(f"{v}: {s['corrupted']} corrupted first answers; per kind: refused by verification or "
                          "the schema / recovered (the true delta applied after re-prompting): " + ", ".join(
                              f"{k} (n={r['n']}) {r['caught']:.0%} / {r['recovered']:.0%}"
                              for k, r in s["recovery_rate"].items()))
    plot(results, args.plot)
    console.print(f"results written to {args.json} and {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
