"""The same eager model, timed by the judge as the eager baseline and as a candidate: how far apart.

    python3 benchmarks/root_vs_reference.py [TASK.py ...] [--rounds 4] [--jobs 1] [--json FILE]

A KernelBench search's root is the task's own ``Model`` (``class ModelNew(Model): pass``), judged as a
candidate; its figure should equal the eager baseline's. Over 37 level-2 runs (docs/benchmarks.md,
session 25) it was a median 2.4 % slower, and in the H100's trace of session 26 the root's raw time a call
(the judge's clock around its batches, nothing subtracted) was up to 4 % above the reference's in three of
five tasks. ``process_bias.py`` found no cause inside one process (kept outputs, a profiler run before).
This runs the whole judge: each round is a fresh evaluator with the baseline cache off, which times the
reference in its own process and then the root as a candidate, then the root again (the baseline kept in
memory: a candidate timed later, away from the baseline's start). ``--jobs`` tasks at once: 1 for an
idle GPU, 6 for a bench's contention. Per task and round: the root's speedup against eager (1.0 is
fair), and from the evaluator's trace (``STARK_EVAL_TRACE``) each timed window's raw time a call and
what was subtracted from it. Figures only; nothing here judges them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stark_lsp.evaluate.evaluator import Evaluator  # noqa: E402
from stark_lsp.evaluate.options import EvalOptions  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

DEFAULT = ["1_Conv2D_ReLU_BiasAdd", "12_Gemm_Multiply_LeakyReLU", "19_ConvTranspose2d_GELU_GroupNorm",
           "45_Gemm_Sigmoid_LogSumExp", "46_Conv2d_Subtract_Tanh_Subtract_AvgPool", "54_Conv2d_Multiply_LeakyReLU_GELU"]


def raw_windows(trace: Path) -> list[dict]:
    """Each timed window of the trace: its role and pid, the median raw time a call (the batch's wall over
    its calls) and the median subtracted a call (the calibration's share, or the empty twin where less)."""
    out = []
    for line in trace.read_text().splitlines() if trace.exists() else []:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if "batches" not in r or not r["batches"]:
            continue
        sub = r["subtracted"]
        raw = [w / k for k, w, _, _ in r["batches"] if k]
        taken = [min(sub["fixed_ms"] + k * sub["per_call_ms"], p if p is not None else float("inf")) / k
                 for k, w, p, _ in r["batches"] if k]
        out.append({"role": r["role"], "pid": r.get("pid"), "t": r.get("t"), "calls": r["batches"][0][0],
                    "raw_ms": statistics.median(raw), "subtracted_ms": statistics.median(taken)})
    return out


def one_round(tasks: list[Path], jobs: int, folder: Path) -> list[dict]:
    trace = folder / "trace.jsonl"
    os.environ["STARK_EVAL_TRACE"] = str(trace)
    os.environ["STARK_EVAL_BASELINE_CACHE"] = ""  # the reference timed again, in a process of its own
    specs = [load_task(p) for p in tasks]

    def both(spec):
        root = spec.root_source()
        first = ev.evaluate(spec, root, EvalOptions())
        again = ev.evaluate(spec, root, EvalOptions())
        return spec, first, again

    with Evaluator(workers=jobs, cache_dir=folder / "cache") as ev, ThreadPoolExecutor(max_workers=jobs) as pool:
        got = list(pool.map(both, specs))
    os.environ.pop("STARK_EVAL_TRACE", None)
    rows = []
    for spec, first, again in got:
        rows.append({"task": spec.path.stem,
                     "statuses": [first.status.value, again.status.value],
                     "root_x_eager": [r.runtime.speedup if r.runtime else None for r in (first, again)],
                     "reference_ms": first.runtime.reference.median_ms if first.runtime else None,
                     "root_ms": [r.runtime.candidate.median_ms if r.runtime else None for r in (first, again)]})
    return rows + [{"windows": raw_windows(trace)}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    tasks = [Path(t) for t in args.tasks] or [ROOT / "benchmarks" / "kernelbench" / "level2" / f"{n}.py"
                                              for n in DEFAULT]
    rounds = []
    for i in range(args.rounds):
        with tempfile.TemporaryDirectory() as d:
            rounds.append(one_round(tasks, args.jobs, Path(d)))
        print(f"round {i + 1}:")
        for row in rounds[-1][:-1]:
            xs = " ".join("-" if x is None else f"{x:.3f}" for x in row["root_x_eager"])
            print(f"  {row['task']:50s} root x eager {xs}  ({row['statuses']})")
        for w in rounds[-1][-1]["windows"]:
            print(f"    {w['role']:9s} pid {w['pid']} {w['calls']:3d} calls/batch  raw {w['raw_ms']:.4f} ms/call  "
                  f"subtracted {w['subtracted_ms']:.4f}")
    firsts = [r["root_x_eager"][0] for rd in rounds for r in rd[:-1] if r["root_x_eager"][0]]
    agains = [r["root_x_eager"][1] for rd in rounds for r in rd[:-1] if r["root_x_eager"][1]]
    if firsts:
        print(f"root x eager, median: right after the baseline {statistics.median(firsts):.3f}"
              + (f", again later {statistics.median(agains):.3f}" if agains else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
