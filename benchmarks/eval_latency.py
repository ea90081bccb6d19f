"""Seconds from candidate source to verified timing, per path, with a warm worker.

    python benchmarks/eval_latency.py [--n 5] [--repeat 10] [--no-inline] [--only cuda,cuda_project] [--think S] [--json FILE]

* CUDA fast path: nvcc -> shared library -> ctypes, each candidate a new source
  (a different block size), so every one is a real compile.
* CUDA project (samples/project: two units, a shared header, compile_commands.json):
  each candidate a new source of the kernel's unit, so every one compiles that
  unit and links it with the other unit's object, built once; then the shared
  header changes, and the next candidate rebuilds both units ("header rebuild").
* Triton: each candidate a new kernel source, so every one is a real JIT.
* load_inline (KernelBench ModelNew with inline CUDA): one new extension.
* Repeat spread: the same candidate evaluated again and again; the spread of
  its median runtime across evaluations (max-min over median).
* Hung kernel (GPU): seconds from submitting a candidate whose Triton kernel
  never ends to its TIMEOUT verdict, then to the next verdict.
* Slow mix: candidates per minute on a task where every other candidate is
  far slower than the reference (they are cut after a few calls).
* Per evaluation: the runtime and which figure it is (the process's own,
  inside the judge's bound, or the judge's clock's), the judge's figure and
  its bound, the calls and batches timed; "rest=" is the seconds outside the
  judge's phases and nvcc (the evaluator's own messages, waiting for the
  zygote).

Every candidate runs in its own fresh sandboxed process (docs/EVALUATOR.md);
the reference's timing is measured once per judge and task, as in a search.
By default candidates are submitted back to back, so the next candidate
process's start is on the clock; ``--think S`` submits each one S seconds
after the previous verdict, as in a search where an agent writes the next
candidate meanwhile (the seconds shown are still from submission to verdict).
Prints a table; figures go to docs/benchmarks.md by hand.
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


def slow_variants(n: int) -> list[str]:
    """Correct axpy kernels that re-read x REPEAT times: far slower than the reference."""
    src = (TASKS / "axpy_triton.py").read_text()
    out = []
    for i in range(n):
        s = src.replace("def axpy_kernel(x_ptr, b_ptr, y_ptr, a, n, BLOCK: tl.constexpr):",
                        "def axpy_kernel(x_ptr, b_ptr, y_ptr, a, n, BLOCK: tl.constexpr, REPEAT: tl.constexpr = 400):")
        s = s.replace("    mask = offs < n\n", "    mask = offs < n\n    acc = tl.zeros([BLOCK], dtype=tl.float32)\n"
                      "    for _ in range(REPEAT):\n        acc += tl.load(x_ptr + offs, mask=mask, other=0.0, volatile=True)\n")
        s = s.replace("tl.load(b_ptr + offs, mask=mask), mask=mask)", "tl.load(b_ptr + offs, mask=mask) + acc * 0.0, mask=mask)")
        out.append(s + f"\n# variant {uuid.uuid4().hex}\n")
    return out


def project_variants(src: str, n: int) -> list[str]:
    """New sources of samples/project's kernel unit (a different unroll hint each)."""
    out = []
    for i in range(n):
        unroll = [1, 2, 4, 8, 16][i % 5]
        out.append(src.replace("#pragma unroll 1", f"#pragma unroll {unroll}")
                   + f"\n// variant {uuid.uuid4().hex}\n")
    return out


THINK_S = 0.0  # seconds between a verdict and the next submission (--think)


def run(ev: Evaluator, task, sources: list[str], opts: EvalOptions) -> list[dict]:
    rows = []
    for s in sources:
        time.sleep(THINK_S)
        t0 = time.perf_counter()
        r = ev.evaluate(task, s, opts)
        wall = time.perf_counter() - t0
        rt = r.runtime
        rows.append({"status": r.status.value, "seconds": wall,
                     "compile_s": r.compile.seconds if r.compile else None,
                     "median_ms": rt.candidate.median_ms if rt else None,
                     "reps": rt.candidate.reps if rt else None,
                     "judged_ms": rt.candidate.judged_ms if rt else None,
                     "bound_ms": rt.candidate.bound_ms if rt else None,
                     "source": rt.candidate.source if rt else "", "batches": rt.candidate.batches if rt else 0,
                     "phases": r.phases, "message": r.message})
        steps = " ".join(f"{k.replace(' ', '_')}={v:.3f}" for k, v in r.phases.items() if v >= 0.005)
        steps += f" rest={wall - sum(r.phases.values()) - (r.compile.seconds if r.compile and task.kind == 'cuda' else 0.0):.3f}"
        j, b = rows[-1]["judged_ms"], rows[-1]["bound_ms"]
        print(f"  {r.status.value:8s} {wall:6.2f} s  compile {rows[-1]['compile_s'] or 0:5.2f} s  "
              f"median {rows[-1]['median_ms'] or 0:.4f} ms ({rows[-1]['source']}; judge {j or 0:.4f} +- {b or 0:.4f} ms, "
              f"{rows[-1]['reps']} calls in {rows[-1]['batches']} batches)  [{steps}]  {r.message[:100]}", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5, help="candidates per path")
    ap.add_argument("--repeat", type=int, default=10, help="evaluations of one candidate for the spread")
    ap.add_argument("--no-inline", action="store_true")
    ap.add_argument("--only", help="comma-separated paths to measure (cuda, cuda_project, triton, load_inline, "
                                   "hang, slow_mix, repeat); default: all")
    ap.add_argument("--think", type=float, default=0.0,
                    help="seconds between a verdict and the next submission (an agent's turn); default 0")
    ap.add_argument("--json")
    args = ap.parse_args()
    global THINK_S
    THINK_S = max(0.0, args.think)
    opts = EvalOptions()  # the defaults: 5 trials, 100 timed repetitions
    results: dict = {"think_s": THINK_S}
    only = set(args.only.split(",")) if args.only else None

    def want(path: str) -> bool:
        return only is None or path in only

    with tempfile.TemporaryDirectory() as cache, Evaluator(cache_dir=Path(cache)) as ev:
        t0 = time.perf_counter()
        hw = ev.hardware()
        results["hardware"] = hw
        results["worker_start_s"] = time.perf_counter() - t0
        print(f"device: {hw}; worker ready in {results['worker_start_s']:.1f} s", flush=True)
        cuda_task, triton_task = load_task(TASKS / "axpy.cu"), load_task(TASKS / "axpy_triton.py")
        # each path starts as a search does: the user's kernel first (the reference's timing,
        # the first Triton JIT of the process), then the candidates
        if want("cuda"):
            ev.evaluate(cuda_task, cuda_task.root_source(), opts)
            print("CUDA fast path (new source each):", flush=True)
            results["cuda"] = run(ev, cuda_task, cuda_variants(args.n), opts)
        if want("cuda_project"):
            with tempfile.TemporaryDirectory() as proj:
                import shutil

                shutil.copytree(ROOT / "samples" / "project", Path(proj) / "project")
                ptask = load_task(Path(proj) / "project" / "src" / "l2norm.cu")
                print("CUDA project, first build (both units) and reference timing:", flush=True)
                results["cuda_project_first"] = run(ev, ptask, [ptask.root_source()], opts)
                print("CUDA project (two units; new kernel-unit source each):", flush=True)
                results["cuda_project"] = run(ev, ptask, project_variants(ptask.root_source(), args.n), opts)
                header = Path(proj) / "project" / "include" / "rownorm.cuh"
                header.write_text(header.read_text() + "\n// changed header\n")
                print("CUDA project after a header change (both units rebuilt):", flush=True)
                results["cuda_project_header"] = run(ev, ptask, project_variants(ptask.root_source(), 1), opts)
        if want("triton") or want("slow_mix"):
            ev.evaluate(triton_task, triton_task.root_source(), opts)
        if want("triton"):
            print("Triton (new kernel each):", flush=True)
            results["triton"] = run(ev, triton_task, triton_variants(args.n), opts)
        if want("load_inline") and not args.no_inline:
            print("load_inline (one new extension):", flush=True)
            kb = load_task(ROOT / "samples" / "kernelbench" / "relu.py")
            src = (ROOT / "samples" / "kernelbench" / "relu_inline_new.py").read_text()
            src = src.replace("stark_sample_relu_inline", f"stark_bench_{uuid.uuid4().hex[:8]}")
            ev.evaluate(kb, kb.root_source(), opts)  # reference timing first
            results["load_inline"] = run(ev, kb, [src], opts)
        if want("hang") and ev.hardware_info().get("is_gpu"):
            print("Hung kernel (a Triton kernel that never ends):", flush=True)
            big = load_task(ROOT / "tests" / "data" / "evaluator" / "gpu_big_task.py")
            ev.evaluate(big, big.root_source(), opts)
            hang = (ROOT / "tests" / "data" / "attacks" / "gpu_hang_kernel.py").read_text()
            results["hang"] = run(ev, big, [hang], opts)
            results["after_hang"] = run(ev, big, [(ROOT / "tests" / "data" / "evaluator" / "good_big.py").read_text()], opts)
        if want("slow_mix"):
            print("Slow mix (every other candidate far slower than the reference):", flush=True)
            mix = [s for pair in zip(triton_variants(args.n), slow_variants(args.n)) for s in pair]
            t0 = time.perf_counter()
            results["slow_mix"] = run(ev, triton_task, mix, opts)
            results["slow_mix_per_minute"] = len(mix) / ((time.perf_counter() - t0) / 60.0)
        for key, path in (("repeat", TASKS / "axpy_triton.py"), ("repeat_softmax", ROOT / "samples" / "triton" / "softmax.py")):
            if not want("repeat"):
                break
            task = load_task(path)
            print(f"Repeat spread (same candidate x{args.repeat}): {path.name}", flush=True)
            results[key] = run(ev, task, [task.root_source()] * args.repeat, opts)
    print()
    print(f"{'path':20s} {'n':>3s} {'median s':>9s} {'min s':>7s} {'max s':>7s} {'compile s':>9s}")
    for key in ("cuda", "cuda_project_first", "cuda_project", "cuda_project_header", "triton", "load_inline"):
        # without a GPU a CUDA candidate is built and not run: its row is the build alone
        rows = [r for r in results.get(key, []) if r["status"] in ("ok", "not_run")]
        if rows:
            secs = [r["seconds"] for r in rows]
            comp = [r["compile_s"] for r in rows if r.get("compile_s") is not None]
            print(f"{key:20s} {len(rows):3d} {statistics.median(secs):9.2f} {min(secs):7.2f} {max(secs):7.2f} "
                  f"{statistics.median(comp) if comp else float('nan'):9.2f}")
            results[f"{key}_median_s"] = statistics.median(secs)
    if results.get("hang"):
        h, a = results["hang"][0], results.get("after_hang", [{}])[0]
        print(f"hung kernel: {h['status']} after {h['seconds']:.1f} s ({h['message']}); next verdict {a.get('status')} "
              f"in {a.get('seconds', 0):.1f} s")
    if results.get("slow_mix"):
        cut = [r for r in results["slow_mix"] if r.get("reps") is not None and r["reps"] <= 3]
        print(f"slow mix: {results['slow_mix_per_minute']:.1f} candidates per minute; {len(cut)} of "
              f"{len(results['slow_mix'])} cut after a few calls")
    for key in ("repeat", "repeat_softmax"):
        meds = [r["median_ms"] for r in results.get(key, []) if r["median_ms"]]
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
