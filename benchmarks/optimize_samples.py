"""The search with the built-in team on the mistuned samples: does it find speedups?

    python benchmarks/optimize_samples.py [--budget 30] [--policy stark] [--json FILE] [SAMPLE ...]

For each sample: the user's kernel (root) time, the best kernel's time, the
speedup over the root and over the eager reference, the attempt that found the
best, candidates evaluated per minute, and duplicates. One evaluator (one warm
worker on the GPU) serves every search, as in the editor.
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

from stark_lsp.agents.team import make_team  # noqa: E402
from stark_lsp.evaluate.evaluator import Evaluator  # noqa: E402
from stark_lsp.search.engine import Search, SearchConfig  # noqa: E402
from stark_lsp.search.tree_store import TreeStore  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

DEFAULT = ["samples/mistuned/swish_add.py", "samples/mistuned/row_softmax.py",
           "samples/mistuned/bias_relu2d.cu", "samples/mistuned/row_sum.cu"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("samples", nargs="*", default=DEFAULT)
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--policy", default="stark")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Evaluator(cache_dir=Path(tmp) / "cache") as ev:
        print(f"device: {ev.hardware()}", flush=True)
        store = TreeStore.open(Path(tmp) / "tree.sqlite")
        for s in args.samples:
            task = load_task(ROOT / s)
            cfg = SearchConfig(budget=args.budget, policy=args.policy, seed=args.seed, concurrency=args.concurrency)
            t0 = time.perf_counter()
            best = Search(task, store, ev, make_team("builtin"), cfg).run()
            wall = time.perf_counter() - t0
            nodes = [n for n in store.nodes(task.task_id()) if n.status != "abandoned"]
            root = next(n for n in nodes if n.parent_id is None)
            evaluated = [n for n in nodes if n.result is not None and not n.duplicate_of]
            row = {
                "sample": s, "wall_s": wall, "attempts": max((n.attempt for n in nodes), default=0),
                "evaluated": len(evaluated), "duplicates": sum(1 for n in nodes if n.duplicate_of),
                "correct": sum(1 for n in nodes if n.correct), "root_ms": root.runtime_ms,
                "best_ms": best.runtime_ms if best else None, "best_attempt": best.attempt if best else None,
                "best_vs_eager": best.speedup if best else None, "best_summary": best.summary if best else "",
                "candidates_per_min": 60.0 * len(evaluated) / wall if wall else 0.0,
            }
            row["best_vs_root"] = (root.runtime_ms / row["best_ms"]) if row["best_ms"] and root.runtime_ms else None
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    print(f"{'sample':34s} {'root ms':>8s} {'best ms':>8s} {'x root':>7s} {'x eager':>8s} {'best@':>5s} {'cand/min':>8s} {'dups':>4s}")
    for r in rows:
        f = lambda v, spec: format(v, spec) if v is not None else "-"  # noqa: E731
        print(f"{r['sample']:34s} {f(r['root_ms'], '8.4f')} {f(r['best_ms'], '8.4f')} {f(r['best_vs_root'], '7.2f')} "
              f"{f(r['best_vs_eager'], '8.2f')} {f(r['best_attempt'], '5d')} {r['candidates_per_min']:8.1f} {r['duplicates']:4d}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
