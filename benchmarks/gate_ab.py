"""What holding the GPU's gate over a candidate's first call costs and saves, on the same candidates.

    python3 benchmarks/gate_ab.py TREES [--tasks 6] [--per-task 10] [--jobs 6] [--rounds 2] [--json FILE]

TREES is a bench's trees folder (``benchmarks/results/kb-level2/trees``): the candidates are the sources its
searches judged correct, ``--per-task`` of each of the first ``--tasks`` tasks (the KernelBench files of
the same names under ``benchmarks/kernelbench``). One evaluator with ``--jobs`` judges evaluates them all
at once, in two modes, in alternating rounds (shared, none, none, shared, ...) so that neither always
meets a warmer or a cooler machine:

* ``shared`` (the default since session 25): a candidate's load and first call hold the gate shared, and
  its Triton compiles let go of it (docs/EVALUATOR.md);
* ``none`` (before): the load and the first call hold nothing (``STARK_EVAL_CANDIDATE_GATE=none``).

Each round has its own cache folder (every compile is real, no verdict is reused); the baselines are
timed once, before the first round, and shared (``STARK_EVAL_BASELINE_CACHE``). Prints, per mode:
evaluations a minute (wall clock from the first submission to the last verdict), the judges' waits at
the gate and the first call per evaluation, and the candidates' timed windows whose figure moved (the
median call over 1.1x the fastest: other work on the GPU beside a timing) from the evaluator's trace.
Figures only; nothing here judges them.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from device_trace import windows  # noqa: E402

from stark_lsp.evaluate.evaluator import Evaluator  # noqa: E402
from stark_lsp.evaluate.options import EvalOptions  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

KB = ROOT / "benchmarks" / "kernelbench"


def candidates(trees: Path, tasks: int, per_task: int) -> list[tuple[Path, list[str]]]:
    """(task file, its correct candidates' sources) for the first ``tasks`` tasks with a file here."""
    got = []
    for folder in sorted(p for p in trees.iterdir() if p.is_dir()):
        files = [p for p in KB.glob(f"level*/{folder.name}.py")]
        dbs = sorted(folder.glob("*/tree.sqlite"))
        if not files or not dbs:
            continue
        con = sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True)
        try:
            sources = [s for (s,) in con.execute(
                "SELECT source FROM nodes WHERE status = 'ok' AND source IS NOT NULL ORDER BY id")]
        finally:
            con.close()
        unique = list(dict.fromkeys(sources))[:per_task]
        if unique:
            got.append((files[0], unique))
        if len(got) == tasks:
            break
    return got


def one_round(mode: str, work: list[tuple[Path, list[str]]], jobs: int, folder: Path) -> dict:
    os.environ["STARK_EVAL_CANDIDATE_GATE"] = mode
    trace = folder / "trace.jsonl"
    os.environ["STARK_EVAL_TRACE"] = str(trace)
    specs = {path: load_task(path) for path, _ in work}
    items = [(specs[path], src) for path, sources in work for src in sources]
    items = [items[i] for i in sorted(range(len(items)), key=lambda i: (i % 7, i))]  # tasks interleaved
    with Evaluator(workers=jobs, cache_dir=folder / "cache") as ev:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(lambda it: ev.evaluate(it[0], it[1], EvalOptions()), items))
        wall = time.perf_counter() - t0
    os.environ.pop("STARK_EVAL_TRACE", None)
    rows = []
    for line in trace.read_text().splitlines() if trace.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    timed = [w for w in windows(rows) if w["role"] == "candidate"]
    waits = [r.phases.get("waiting for the GPU", 0.0) for r in results]
    firsts = [r.phases["first call"] for r in results if "first call" in r.phases]
    return {"mode": mode, "evaluations": len(results), "wall_s": round(wall, 2),
            "per_min": round(60 * len(results) / wall, 2),
            "statuses": {s: sum(1 for r in results if r.status.value == s) for s in {r.status.value for r in results}},
            "waiting_s_mean": round(statistics.mean(waits), 3) if waits else None,
            "first_call_s_median": round(statistics.median(firsts), 3) if firsts else None,
            "first_call_s_mean": round(statistics.mean(firsts), 3) if firsts else None,
            "windows": len(timed), "moved": sum(w["moved"] for w in timed), "spread": sum(w["spread"] for w in timed)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", type=Path)
    ap.add_argument("--tasks", type=int, default=6)
    ap.add_argument("--per-task", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of each mode (default 2)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    work = candidates(args.trees, args.tasks, args.per_task)
    if not work:
        print(f"no correct candidates of a known task under {args.trees}", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="gate-ab-"))
    os.environ["STARK_EVAL_BASELINE_CACHE"] = str(base / "baselines")
    print(f"{sum(len(s) for _, s in work)} candidates of {len(work)} tasks, {args.jobs} judges; in {base}", flush=True)
    # the baselines, once for every round: each task's first candidate alone, not counted
    one_round("shared", [(p, s[:1]) for p, s in work], args.jobs, base / "warm")
    order = []
    for i in range(args.rounds):
        order += ["shared", "none"] if i % 2 == 0 else ["none", "shared"]
    rounds = []
    for i, mode in enumerate(order):
        r = one_round(mode, work, args.jobs, base / f"round{i}-{mode}")
        print(json.dumps(r), flush=True)
        rounds.append(r)
    print("\n| mode | rounds | evaluations a minute | waiting for the GPU, mean s | first call, median s | "
          "timed windows moved |")
    print("| --- | --- | --- | --- | --- | --- |")
    for mode in ("shared", "none"):
        rs = [r for r in rounds if r["mode"] == mode]
        moved, total = sum(r["moved"] for r in rs), sum(r["windows"] for r in rs)
        print(f"| {mode} | {len(rs)} | {', '.join(str(r['per_min']) for r in rs)} | "
              f"{', '.join(str(r['waiting_s_mean']) for r in rs)} | "
              f"{', '.join(str(r['first_call_s_median']) for r in rs)} | "
              f"{moved}/{total} ({100 * moved / max(1, total):.1f} %) |")
    if args.json:
        args.json.write_text(json.dumps({"work": [[str(p), len(s)] for p, s in work], "rounds": rounds}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
