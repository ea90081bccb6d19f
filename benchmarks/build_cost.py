"""Where a CUDA candidate's build goes: nvcc alone, nvcc in the sandbox, and the builder's whole path.

    python3 benchmarks/build_cost.py [--n 5] [--source benchmarks/tasks/axpy.cu] [--json FILE]

Each step builds ``--n`` fresh variants of one source (a comment changes, so nothing is cached),
seconds a build (median, min-max):

* ``nvcc``: the builder's own one-unit command (``CudaBuilder.command``), run as it is;
* ``nvcc, sandboxed``: the same command in the sandbox the builder uses (``Sandbox.wrap``);
* ``builder``: ``CudaBuilder.build`` (the sandboxed nvcc, the depfile's headers hashed, the entry
  adopted into the cache and loaded back);
* ``nvcc -time``: nvcc's own phases of one build (cudafe++, cicc, ptxas, the host compile...).

The difference between the first two is the sandbox's start; between the last two, the builder's
bookkeeping. Runs where nvcc is (no GPU needed).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stark_lsp.evaluate.cuda_build import (SHIM, CudaBuilder, _compiler_env, build_root, for_the_sandbox,  # noqa: E402
                                           nvcc_path)
from stark_lsp.evaluate.sandbox.policy import make_layout, probe  # noqa: E402


def variant(src: str) -> str:
    return src + f"\n// variant {uuid.uuid4().hex}\n"


def _summary(xs: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(xs), 3), "min": round(min(xs), 3), "max": round(max(xs), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--source", default=str(ROOT / "benchmarks" / "tasks" / "axpy.cu"))
    ap.add_argument("--json")
    args = ap.parse_args()
    nvcc = nvcc_path()
    if nvcc is None:
        print("nvcc not found", file=sys.stderr)
        return 2
    src = Path(args.source).read_text()
    sb = probe()
    print(f"sandbox: {sb.backend if sb.available else 'none'}", flush=True)
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as cache:
        builder = CudaBuilder(Path(cache), sandbox=sb if sb.available else None)

        def one(wrapped: bool, extra: list[str] = ()) -> float:
            tmp = Path(tempfile.mkdtemp(dir=build_root()))
            (tmp / "kernel.cu").write_text(variant(src) + SHIM)
            cmd = [*builder.command(nvcc, Path("kernel.cu"), Path("lib.so"), ["-O3", "-std=c++17"], "kernel.d"),
                   *extra]
            if wrapped and sb.available:
                layout = sb.effective(make_layout(writable=[str(tmp)], cwd=tmp, gpu=False))
                for_the_sandbox(tmp, layout.drop_to)
                cmd = sb.wrap(cmd, layout)
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env=_compiler_env())
            dt = time.perf_counter() - t0
            if proc.returncode != 0:
                raise SystemExit(f"build failed: {proc.stderr[-2000:]}")
            if extra:
                with open(tmp / "time.csv") as f:
                    rows = list(csv.reader(f))
                for r in rows[1:]:
                    if len(r) >= 8:
                        phase = r[1].strip()
                        out.setdefault("phases_ms", {})[phase] = round(
                            out.get("phases_ms", {}).get(phase, 0.0) + float(r[6]), 1)
            return dt

        one(False)  # the page cache warm for every step
        steps = {"nvcc": lambda: one(False), "nvcc, sandboxed": lambda: one(True)}

        def built() -> float:
            t0 = time.perf_counter()
            art = builder.build(variant(src))
            if art.library is None:
                raise SystemExit(f"build failed: {art.report.log[-2000:]}")
            return time.perf_counter() - t0

        steps["builder"] = built
        times: dict[str, list[float]] = {k: [] for k in steps}
        for _ in range(args.n):  # in turns, so that a slow spell of the machine is shared
            for k, f in steps.items():
                times[k].append(f())
        for k, xs in times.items():
            out[k] = _summary(xs)
            print(f"{k:>16}: {out[k]['median']:.3f} s ({out[k]['min']:.3f}-{out[k]['max']:.3f})", flush=True)
        one(False, ["--time", "time.csv"])
        print("nvcc -time (ms): " + ", ".join(f"{k} {v}" for k, v in out.get("phases_ms", {}).items()), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
