"""Seconds from candidate source to verified timing, per path, with a warm worker.

    python benchmarks/eval_latency.py [--n 5] [--repeat 10] [--no-inline] [--json FILE]

* CUDA fast path: nvcc -> shared library -> ctypes, each candidate a new source
  (a different block size), so every one is a real compile.
* Triton: each candidate a new kernel source, so every one is a real JIT.
* load_inline (KernelBench ModelNew with inline CUDA): one new extension.
* Repeat spread: the same candidate evaluated again and again; the spread of
  its median runtime across evaluations (max-min over median).

The reference's timing is measured once per worker and reused (same process),
as the search does. Prints a table; figures go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stark_lsp.evaluate.evaluator import Evaluator  # noqa: E402
from stark_lsp.evaluate.options import EvalOptions  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

TASKS = ROOT / "benchmarks" / "tasks"


def cuda_variants(n: int) -> list[str]:
    src = (TASKS / "axpy.cu").read_text()
    sizes = [64, 128, 256, 512, 1024, 96, 192, 384, 768, 160]
    return [src.replace("#define THREADS 256", f"#define THREADS {sizes[i % len(sizes)]}") + f"\n// variant {uuid.uuid4().hex}\n"
            for i in range(n)]


def triton_variants(n: int) -> list[str]:
    src = (TASKS / "axpy_triton.py").read_text()
    out = []
    for i in range(n):
        block = [256, 512, 1024, 2048, 4096][i % 5]
        s = src.replace("BLOCK=1024", f"BLOCK={block}").replace("cdiv(n, 1024)", f"cdiv(n, {block})")
        s = s.replace("    mask = offs < n\n", f"    mask = offs < n  # variant {uuid.uuid4().hex}\n")
        out.append(s)
    return out


def run(ev: Evaluator, task, sources: list[str], opts: EvalOptions) -> list[dict]:
    rows = []
    for s in sources:
        t0 = time.perf_counter()
        r = ev.evaluate(task, s, opts)
        wall = time.perf_counter() - t0
        rows.append({"status": r.status.value, "seconds": wall,
                     "compile_s": r.compile.seconds if r.compile else None,
                     "median_ms": r.runtime.candidate.median_ms if r.runtime else None,
                     "message": r.message})
        print(f"  {r.status.value:8s} {wall:6.2f} s  compile {rows[-1]['compile_s'] or 0:5.2f} s  "
              f"median {rows[-1]['median_ms'] or 0:.4f} ms  {r.message[:80]}", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5, help="candidates per path")
    ap.add_argument("--repeat", type=int, default=10, help="evaluations of one candidate for the spread")
    ap.add_argument("--no-inline", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    opts = EvalOptions()  # the defaults: 5 trials, 100 timed repetitions
    results: dict = {}
    with tempfile.TemporaryDirectory() as cache, Evaluator(cache_dir=Path(cache)) as ev:
        t0 = time.perf_counter()
        hw = ev.hardware()
        results["hardware"] = hw
        results["worker_start_s"] = time.perf_counter() - t0
        print(f"device: {hw}; worker ready in {results['worker_start_s']:.1f} s", flush=True)
        cuda_task, triton_task = load_task(TASKS / "axpy.cu"), load_task(TASKS / "axpy_triton.py")
        # warm: the reference timings and the first Triton JIT of the process
        ev.evaluate(cuda_task, cuda_task.root_source(), opts)
        ev.evaluate(triton_task, triton_task.root_source(), opts)
        print("CUDA fast path (new source each):", flush=True)
        results["cuda"] = run(ev, cuda_task, cuda_variants(args.n), opts)
        print("Triton (new kernel each):", flush=True)
        results["triton"] = run(ev, triton_task, triton_variants(args.n), opts)
        if not args.no_inline:
            print("load_inline (one new extension):", flush=True)
            kb = load_task(ROOT / "samples" / "kernelbench" / "relu.py")
            src = (ROOT / "samples" / "kernelbench" / "relu_inline_new.py").read_text()
            src = src.replace("stark_sample_relu_inline", f"stark_bench_{uuid.uuid4().hex[:8]}")
            ev.evaluate(kb, kb.root_source(), opts)  # reference timing first
            results["load_inline"] = run(ev, kb, [src], opts)
        for key, path in (("repeat", TASKS / "axpy_triton.py"), ("repeat_softmax", ROOT / "samples" / "triton" / "softmax.py")):
            task = load_task(path)
            print(f"Repeat spread (same candidate x{args.repeat}): {path.name}", flush=True)
            results[key] = run(ev, task, [task.root_source()] * args.repeat, opts)
    print()
    print(f"{'path':14s} {'n':>3s} {'median s':>9s} {'min s':>7s} {'max s':>7s}")
    for key in ("cuda", "triton", "load_inline"):
        rows = [r for r in results.get(key, []) if r["status"] == "ok"]
        if rows:
            secs = [r["seconds"] for r in rows]
            print(f"{key:14s} {len(rows):3d} {statistics.median(secs):9.2f} {min(secs):7.2f} {max(secs):7.2f}")
            results[f"{key}_median_s"] = statistics.median(secs)
    for key in ("repeat", "repeat_softmax"):
        meds = [r["median_ms"] for r in results[key] if r["median_ms"]]
        if meds:
            spread = (max(meds) - min(meds)) / statistics.median(meds)
            results[f"{key}_spread"] = spread
            print(f"{key}: spread of one kernel's median over {len(meds)} evaluations: {100 * spread:.2f}% "
                  f"(median {statistics.median(meds):.4f} ms, stdev {100 * statistics.pstdev(meds) / statistics.fmean(meds):.2f}%)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
