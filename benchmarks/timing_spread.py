"""How precise the judge's clock is at a call of 10 us, 0.1 ms and 0.4 ms, and what a forger gains there.

    python benchmarks/timing_spread.py [--repeat 5] [--json FILE]

For each size, an elementwise task (``y = 2a + b``, n floats, sized for the GPU
at hand) is evaluated ``--repeat`` times with an honest candidate, then with
a forger: the same work, but it pulls every lever a candidate process has on
the judge's clock (each reply carries a time of a sixth of the call, and the
empty calls the judge times beside every timed batch are made dearer, so that
more would be subtracted). The table gives, per size: the truth (the call
timed in this process, trusted, with CUDA events around each call after a
synchronization, as KernelBench times: median of 200), the judge's figure for
the honest candidate and its spread over the evaluations, the bound, and the
forger's figure against the honest one (the gain a forger buys; 1.00x is
none). On a GPU machine only (a CPU run prints the same table for the
interpreter's path, with the host clock as the truth). Figures go to
docs/benchmarks.md by hand.
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
import time

import torch
import torch.nn as nn

proc = sys.modules["stark_lsp.evaluate.candidate.process"].CandidateProcess
_batch, _calib = proc._batch, proc.op_calib


def _claims(self, msg, call, calibration=False):  # a sixth of the call in every reply (the judge reads none)
    reply = _batch(self, msg, call, calibration)
    for c in reply.get("calls") or []:
        c["ms"] = 0.001
    return reply


def _slow_calib(self, msg):  # the empty calls beside each timed batch made dearer: more to subtract
    reply = _calib(self, msg)
    time.sleep(0.0005 * len(msg.get("calls") or []))
    return reply


proc._batch, proc.op_calib = _claims, _slow_calib


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.add(b, a, alpha=2)
'''


def truth_ms(n: int, gpu: bool, reps: int = 200) -> float:
    """The call timed in this (trusted) process: per call, a synchronization, then events around it."""
    import time

    import torch

    dev = "cuda" if gpu else "cpu"
    xs = []
    for i in range(reps + 10):
        a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
        if gpu:
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.add(b, a, alpha=2)
            e.record()
            torch.cuda.synchronize()
            ms = s.elapsed_time(e)
        else:
            t0 = time.perf_counter()
            torch.add(b, a, alpha=2)
            ms = (time.perf_counter() - t0) * 1e3
        if i >= 10:
            xs.append(ms)
    return statistics.median(xs)


def evaluate(ev: Evaluator, task, source: str, opts: EvalOptions, repeat: int) -> list[dict]:
    rows = []
    for _ in range(repeat):
        r = ev.evaluate(task, source, opts)
        t = r.runtime.candidate if r.runtime else None
        rows.append({"status": r.status.value, "message": r.message[:200], "flags": r.flags,
                     "median_ms": t.median_ms if t else None, "judged_ms": t.judged_ms if t else None,
                     "bound_ms": t.bound_ms if t else None, "source": t.source if t else "",
                     "noise": t.noise if t else None, "chain": t.chain if t else "", "batches": t.batches if t else 0, "calls": t.reps if t else 0,
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
                results[name] = {"honest": honest, "forged": forged, "truth_ms": truth_ms(n, gpu)}
                print(f"{name}: honest {[round(r['median_ms'] or 0, 5) for r in honest]} "
                      f"forged {[round(r['median_ms'] or 0, 5) for r in forged]}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'size':6s} {'truth ms':>9s} {'judge ms':>9s} {'spread':>7s} {'bound ms':>9s} {'forged ms':>10s} "
          f"{'gain':>6s}")
    for name in sizes:
        h = [r for r in results[name]["honest"] if r["median_ms"]]
        f = [r for r in results[name]["forged"] if r["median_ms"]]
        if not h or not f:
            print(f"{name:6s} no figures: {results[name]['honest'][0]['message']}")
            continue
        hm = statistics.median(r["median_ms"] for r in h)
        spread = (max(r["median_ms"] for r in h) - min(r["median_ms"] for r in h)) / hm
        fm = statistics.median(r["median_ms"] for r in f)
        results[name]["summary"] = {"truth_ms": results[name]["truth_ms"], "honest_ms": hm, "spread": spread,
                                    "forged_ms": fm, "gain": hm / fm,
                                    "bound_ms": statistics.median(r["bound_ms"] for r in h)}
        sm = results[name]["summary"]
        print(f"{name:6s} {sm['truth_ms']:9.5f} {hm:9.5f} {100 * spread:6.1f}% {sm['bound_ms']:9.5f} {fm:10.5f} "
              f"{hm / fm:5.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
