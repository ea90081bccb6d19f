"""torch.compile's code written out as a ModelNew (the built-in team's first start), judged per task.

    python3 benchmarks/compiled_seed.py MODEL.py [MODEL.py ...] [--repeat N] [--json FILE]

For each KernelBench model, on a GPU: the root (the reference as ModelNew) evaluated with the
torch.compile baseline and ``compiled_code`` (what Inductor wrote for it), then the ModelNew that
``agents/builtin/inductor_seed.write_seed`` writes from it, evaluated by the same judge. Prints
per task the seed's verdict, its time, and its figure against eager and against torch.compile
(both from the one ratio function, ``stark_lsp.speedups``), or why no seed could be written.
With ``--graph``, each seed is judged a second time with its ``CUDA_GRAPH`` switch turned on (the
built-in team's move for launch-bound models: the forward captured once and replayed), as
``graph_*`` fields: its verdict (the judge's launch rule must pass it), time and figures.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stark_lsp.agents.builtin.inductor_seed import write_seed  # noqa: E402
from stark_lsp.agents.builtin.kb_ast import NotRecognized  # noqa: E402
from stark_lsp.agents.builtin.kb_lowering import modelnew_stub  # noqa: E402
from stark_lsp.evaluate.evaluator import Evaluator  # noqa: E402
from stark_lsp.evaluate.options import EvalOptions  # noqa: E402
from stark_lsp.speedups import ratio_text  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402


def seed_source(root: str, compiled: dict) -> str:
    span = modelnew_stub(root)
    assert span is not None
    lines = root.splitlines(keepends=True)
    return "".join(lines[:span[0] - 1]) + write_seed(compiled, root) + "".join(lines[span[1]:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--repeat", type=int, default=1, help="evaluate each seed this many times (its median)")
    ap.add_argument("--graph", action="store_true", help="also judge each seed with CUDA_GRAPH = True")
    args = ap.parse_args()
    rows = []
    opts = EvalOptions(compile_baseline=True)
    with tempfile.TemporaryDirectory() as cache, Evaluator(cache_dir=Path(cache)) as ev:
        print(f"device: {ev.hardware()}", flush=True)
        for m in args.models:
            task = load_task(m)
            root = task.root_source()
            t0 = time.perf_counter()
            r0 = ev.evaluate(task, root, EvalOptions(compile_baseline=True, compiled_code=True))
            row = {"task": Path(m).stem, "root": r0.status.value, "root_s": round(time.perf_counter() - t0, 1)}
            rt = r0.runtime
            if rt is not None:
                row["eager_ms"] = rt.reference.median_ms
                row["compiled_ms"] = rt.compiled_reference.median_ms if rt.compiled_reference else None
                row["root_ms"] = rt.candidate.median_ms  # the reference's own code, timed as a candidate
            code = r0.compiled_code or {}
            try:
                src = seed_source(root, code)
            except NotRecognized as e:
                row["seed"] = f"not written: {e}"
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            for i in range(args.repeat):  # the same source again: a fresh process, the same judge
                r = ev.evaluate(task, src + ("" if i == 0 else f"\n# again {i}\n"), opts)
                row["seed"] = r.status.value
                row["message"] = r.message[:200]
                if r.runtime is not None:
                    each = row.setdefault("each", [])  # the judge's own figure and ratios, per evaluation
                    each.append((r.runtime.candidate.median_ms, r.runtime.speedup, r.runtime.speedup_vs_compiled))
                    row.setdefault("load_s", []).append(round(r.phases.get("load", 0.0), 3))
                    row["seed_ms"], row["x_eager"] = statistics.median(e[0] for e in each), \
                        statistics.median(e[1] for e in each)
                    if all(e[2] for e in each):
                        row["x_compile"] = statistics.median(e[2] for e in each)
            if args.graph:
                graphed, n = re.subn(r"^CUDA_GRAPH = False$", "CUDA_GRAPH = True", src, flags=re.M)
                if n != 1:
                    row["graph"] = "no CUDA_GRAPH switch in the seed"
                else:
                    r = ev.evaluate(task, graphed, opts)
                    row["graph"], row["graph_message"] = r.status.value, r.message[:300]
                    if r.runtime is not None:
                        row["graph_ms"], row["graph_x_eager"] = r.runtime.candidate.median_ms, r.runtime.speedup
                        row["graph_x_compile"] = r.runtime.speedup_vs_compiled
            rows.append(row)
            print(json.dumps(row), flush=True)
    ok = [r for r in rows if r.get("x_compile")]
    print(f"\n{'task':48s} {'seed':10s} {'eager ms':>9s} {'compile ms':>10s} {'seed ms':>9s}  x eager  x compile")
    for r in rows:
        print(f"{r['task'][:48]:48s} {str(r.get('seed'))[:10]:10s} {r.get('eager_ms') or 0:9.4f} "
              f"{r.get('compiled_ms') or 0:10.4f} {r.get('seed_ms') or 0:9.4f}  "
              f"{ratio_text(r['x_eager']) if r.get('x_eager') else '-':>7s}  "
              f"{ratio_text(r['x_compile']) if r.get('x_compile') else '-':>9s}")
    if ok:
        g = statistics.geometric_mean([r["x_compile"] for r in ok])
        print(f"seeds judged ok: {len(ok)} of {len(rows)}; geomean against torch.compile {ratio_text(g)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
