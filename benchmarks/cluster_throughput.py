"""Candidates per minute with 1 evaluation actor and with N, on a Ray cluster.

    python benchmarks/cluster_throughput.py [--cluster auto] [--actors N] [--budget 24] [--json FILE] [TASK]

The same search (task, built-in team, budget, seed) runs twice: with one
actor, then with N (default: one per GPU in the cluster; with no GPU, 2 CPU
actors under the Triton interpreter). Each run gets its own cache directory
(cold compiles both times), its actors are warm before the clock starts, and
the search runs with concurrency N+1 so that every actor stays busy while the
agents work. Prints evaluations per minute for each and the ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ray  # noqa: E402

from stark_lsp.agents.team import make_team  # noqa: E402
from stark_lsp.cluster import connect  # noqa: E402
from stark_lsp.cluster.ray_evaluator import RayEvaluator  # noqa: E402
from stark_lsp.search.engine import Search, SearchConfig  # noqa: E402
from stark_lsp.search.tree_store import TreeStore  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402


def run_once(task, actors: int, args, tmp: Path) -> dict:
    ev = RayEvaluator(args.cluster, device=args.device, cpu_actors=actors, max_actors=actors,
                      cache_dir=tmp / f"cache-{actors}")
    try:
        ready = ev.actors.wait_ready(timeout=600)
        if len(ready) < actors:
            raise SystemExit(f"only {len(ready)} of {actors} actors became ready: {ev.actors.error()}")
        hardware = ev.hardware()
        store = TreeStore.open(tmp / f"tree-{actors}.sqlite")
        cfg = SearchConfig(budget=args.budget, seed=args.seed, concurrency=actors + 1)
        t0 = time.perf_counter()
        Search(task, store, ev, make_team("builtin"), cfg).run()
        seconds = time.perf_counter() - t0
        nodes = store.nodes(task.task_id())
        store.close()
    finally:
        ev.close()
    return {
        "actors": actors,
        "hardware": hardware,
        "seconds": round(seconds, 2),
        "evaluations": ev.evaluations,
        "per_minute": round(60 * ev.evaluations / seconds, 2),
        "duplicates": sum(1 for n in nodes if n.duplicate_of is not None),
        "retried": ev.retried,
        "replaced": ev.actors.replaced,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task", nargs="?", default=str(ROOT / "samples" / "triton" / "softmax.py"))
    ap.add_argument("--cluster", default="auto", help="auto (RAY_ADDRESS, else local) or ray://HOST:PORT")
    ap.add_argument("--actors", type=int, help="N (default: the cluster's GPUs, or 2 CPU actors)")
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    task = load_task(args.task)
    connect.attach(args.cluster)  # one cluster for both runs
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        n = args.actors or (gpus if gpus and args.device != "cpu" else 2)
        print(f"task {task.path.name}, budget {args.budget}, cluster GPUs {gpus}, N = {n}", flush=True)
        rows = []
        with tempfile.TemporaryDirectory(prefix="stark-cluster-bench-") as tmp:
            for k in dict.fromkeys([1, n]):
                row = run_once(task, k, args, Path(tmp))
                rows.append(row)
                print(f"{k:>3} actor(s): {row['evaluations']:>4} evaluations in {row['seconds']:>8.1f} s = "
                      f"{row['per_minute']:>7.1f} candidates/min  ({row['hardware']})", flush=True)
    finally:
        connect.detach()
    if len(rows) == 2:
        print(f"speed-up with {n} actors: {rows[1]['per_minute'] / rows[0]['per_minute']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
