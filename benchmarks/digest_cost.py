"""What a timed call's digest costs (it is on the judge's clock for every timed request).

    python benchmarks/digest_cost.py [--reps 40]

Times ``digest.digest`` (new signs every call, as the evaluator uses it) and
``digest.bound`` on outputs of 2^20, 2^24 and 2^27 float32 elements and 2^24
halves, on the GPU when there is one (the CPU otherwise: not a GPU figure).
Prints the median milliseconds per call, device synchronized. Figures go to
docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from stark_lsp.evaluate.wire import digest as D  # noqa: E402


def median_ms(fn, reps: int, sync) -> float:
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args()
    gpu = torch.cuda.is_available()
    dev = torch.device("cuda" if gpu else "cpu")
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    print(f"device: {torch.cuda.get_device_name() if gpu else 'cpu (not a GPU figure)'}")
    cases = [("float32", 1 << 20), ("float32", 1 << 24), ("float16", 1 << 24)] + ([("float32", 1 << 27)] if gpu else [])
    for dtype, n in cases:
        x = torch.randn(n, device=dev).to(getattr(torch, dtype))
        seeds = iter(range(1, 1 << 30))
        d = median_ms(lambda: D.digest([x], next(seeds)), args.reps, sync)
        b = median_ms(lambda: D.bound([x], 1e-4, 1e-4), max(5, args.reps // 4), sync)
        print(f"  {dtype:8s} 2^{n.bit_length() - 1:<3d} digest {d:8.3f} ms   bound {b:8.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
