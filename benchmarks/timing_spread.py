"""How precise the judge's timing is at a call of 10 us, 0.1 ms and 1 ms, and what a forged claim gains there.

    python benchmarks/timing_spread.py [--repeat 5] [--json FILE]

For each size, an elementwise task (``y = 2a + b``, n floats, sized for the GPU
at hand) is evaluated ``--repeat`` times with an honest candidate, then with
a forger: the same work, but the candidate process reports every call at a
sixth of its time (it patches the event timer in its own process, as a
hostile candidate can). Per size the table gives the honest median (and its
spread over the evaluations), the judge's own figure and bound, which figure
was used, and the forger's reported figure against the honest one: the gain
a forged claim buys. On a GPU machine only (a CPU run prints the same table
for the interpreter's path). Figures go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stark_lsp.evaluate.evaluator import Evaluator, gpu_present  # noqa: E402
from stark_lsp.evaluate.options import EvalOptions  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

# floats per input for about 10 us, 0.1 ms and 0.4 ms of memory traffic per call on an H200 (3 x 4 bytes a
# float at ~3.5 TB/s; each call's own launch and synchronization add about 0.1 ms, which the figures include);
# far smaller on the CPU
SIZES_GPU = {"10us": 1 << 21, "0.1ms": 28 << 20, "1ms": 112 << 20}
SIZES_CPU = {"10us": 1 << 10, "0.1ms": 1 << 14, "1ms": 1 << 17}

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a * 2 + b


def get_inputs():
    return [torch.randn({n}), torch.randn({n})]


def get_init_inputs():
    return []
'''
HONEST = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.add(b, a, alpha=2)
'''
FORGER = '''import sys

import torch
import torch.nn as nn

proc = sys.modules["stark_lsp.evaluate.candidate.process"]
_real_elapsed, _real_perf = proc._elapsed, proc._perf
proc._elapsed = lambda s, e: _real_elapsed(s, e) / 6.0  # every call claimed at a sixth of its time (GPU)
proc._perf = lambda: _real_perf() / 6.0  # (CPU: the host clock it reads)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.add(b, a, alpha=2)
'''


def evaluate(ev: Evaluator, task, source: str, opts: EvalOptions, repeat: int) -> list[dict]:
    rows = []
    for _ in range(repeat):
        r = ev.evaluate(task, source, opts)
        t = r.runtime.candidate if r.runtime else None
        rows.append({"status": r.status.value, "message": r.message[:200], "flags": r.flags,
                     "median_ms": t.median_ms if t else None, "judged_ms": t.judged_ms if t else None,
                     "bound_ms": t.bound_ms if t else None, "source": t.source if t else "",
                     "noise": t.noise if t else None, "batches": t.batches if t else 0, "calls": t.reps if t else 0,
                     "reference_ms": r.runtime.reference.median_ms if r.runtime else None})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    gpu = gpu_present()
    sizes = SIZES_GPU if gpu else SIZES_CPU
    out_dir = ROOT / "out"
    out_dir.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="spread-", dir=out_dir))  # readable by the sandbox's uid
    os.chmod(work, 0o755)
    results: dict = {"gpu": gpu, "sizes": sizes}
    try:
        with tempfile.TemporaryDirectory() as cache, Evaluator(cache_dir=Path(cache)) as ev:
            print(f"device: {ev.hardware()}", flush=True)
            opts = EvalOptions()
            for name, n in sizes.items():
                path = work / f"axpy_{name}.py"
                path.write_text(TASK.format(n=n))
                task = load_task(path)
                ev.evaluate(task, HONEST, opts)  # the reference's timing and the first compile, off the record
                honest = evaluate(ev, task, HONEST, opts, args.repeat)
                forged = evaluate(ev, task, FORGER, opts, args.repeat)
                results[name] = {"honest": honest, "forged": forged}
                print(f"{name}: honest {[round(r['median_ms'] or 0, 5) for r in honest]} "
                      f"forged {[round(r['median_ms'] or 0, 5) for r in forged]}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'size':6s} {'honest ms':>10s} {'spread':>7s} {'judged ms':>10s} {'bound ms':>9s} {'used':>8s} "
          f"{'forged ms':>10s} {'gain':>6s} {'forger used':>11s}")
    for name in sizes:
        h = [r for r in results[name]["honest"] if r["median_ms"]]
        f = [r for r in results[name]["forged"] if r["median_ms"]]
        if not h or not f:
            print(f"{name:6s} no figures: {results[name]['honest'][0]['message']}")
            continue
        hm = statistics.median(r["median_ms"] for r in h)
        spread = (max(r["median_ms"] for r in h) - min(r["median_ms"] for r in h)) / hm
        fm = statistics.median(r["median_ms"] for r in f)
        used = max(set(r["source"] for r in h), key=lambda s: sum(r["source"] == s for r in h))
        fused = max(set(r["source"] for r in f), key=lambda s: sum(r["source"] == s for r in f))
        results[name]["summary"] = {"honest_ms": hm, "spread": spread, "forged_ms": fm, "gain": hm / fm,
                                    "judged_ms": statistics.median(r["judged_ms"] for r in h),
                                    "bound_ms": statistics.median(r["bound_ms"] for r in h)}
        s = results[name]["summary"]
        print(f"{name:6s} {hm:10.5f} {100 * spread:6.1f}% {s['judged_ms']:10.5f} {s['bound_ms']:9.5f} {used:>8s} "
              f"{fm:10.5f} {hm / fm:5.2f}x {fused:>11s}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
