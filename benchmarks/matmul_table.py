"""The built-in team's matmul against cuBLAS (issue 22's matmul table).

    python3 benchmarks/matmul_table.py [--dtypes fp16,bf16,fp32] [--small] [--json FILE]

For each dtype and shape, a KernelBench model ``torch.matmul(A, B)`` (and ``A @ B.t()`` and ``A.t() @ B`` at one
shape; the first once got the GEMV kernel) is written out by the built-in team exactly as a search would start
it (``kb_lowering.implement_lowering`` at each of its starting points, ``kb_matmul.STARTS``), checked
against the model's own output, and timed with ``triton.testing.do_bench`` (median, fresh L2 each
call) beside ``torch.matmul`` (cuBLAS; fp32 in IEEE, TF32 off, as the team's fp32 kernel). The row
gives cuBLAS's and the team's best start, in ms and TFLOP/s, and the ratio: the fraction of cuBLAS
the search's best matmul can reach before any other move. This is a study tool, not the judge: the
judge's figures are in docs/benchmarks.md's search runs. ``--small`` runs tiny shapes (the Triton
interpreter on a CPU), to check the tool itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stark_lsp.agents.builtin.kb_forward import analyse  # noqa: E402
from stark_lsp.agents.builtin.kb_lowering import (MARKER_ID, implement_lowering, instruction_for,  # noqa: E402
                                                  modelnew_stub)
from stark_lsp.agents.builtin.kb_matmul import STARTS  # noqa: E402
from stark_lsp.markers.syntax import insert_marker  # noqa: E402

SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (256, 256, 131072)]  # M, N, K
SMALL = [(32, 48, 64), (16, 16, 256)]
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
TOL = {"fp16": 1e-2, "bf16": 2e-2, "fp32": 1e-3}  # relative to the output's norm, in float64 against the model's


def task_source(m: int, n: int, k: int, dtype: str, transposed: str) -> str:
    """``transposed``: "" (A @ B), "B" (A @ B.t()) or "A" (A.t() @ B)."""
    a_shape, b_shape, product = {"": ((m, k), (k, n), "torch.matmul(A, B)"),
                                 "B": ((m, k), (n, k), "torch.matmul(A, B.t())"),
                                 "A": ((k, m), (k, n), "torch.matmul(A.t(), B)")}[transposed]
    return f'''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return {product}


def get_inputs():
    return [torch.randn({a_shape[0]}, {a_shape[1]}, dtype=torch.{dtype}), torch.randn({b_shape[0]}, {b_shape[1]}, dtype=torch.{dtype})]


def get_init_inputs():
    return []


class ModelNew(Model):
    pass
'''


def candidate(source: str, start: dict[str, int]) -> str:
    """The source a search's first attempt at this start would judge."""
    lo, hi = modelnew_stub(source)
    marked = insert_marker(source, lo, hi, MARKER_ID, instruction_for(analyse(source).describe(), start), "python")
    code = implement_lowering(marked, instruction_for(analyse(source).describe(), start))
    lines = source.splitlines(keepends=True)
    return "".join(lines[: lo - 1]) + code + "".join(lines[hi:])


def load(source: str, name: str) -> types.ModuleType:
    path = Path(f"/tmp/stark_matmul_table/{name}.py")  # Triton reads a kernel's source from its file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    exec(compile(source, str(path), "exec"), mod.__dict__)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", default="fp16,bf16,fp32")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--starts", type=int, default=len(STARTS), help="how many of the team's starts to time")
    ap.add_argument("--extra", default="", help="more starts to time, 'M,N,K,GROUP,stages,warps;...' (BLOCK_* sizes)")
    ap.add_argument("--json")
    args = ap.parse_args()
    starts = list(STARTS[: args.starts]) + [
        dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_SIZE_M", "num_stages", "num_warps"), map(int, e.split(","))))
        for e in args.extra.split(";") if e.strip()]
    import torch
    import triton.testing

    torch.backends.cuda.matmul.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() and not args.small else "cpu"
    shapes = SMALL if args.small else SHAPES
    cases = [(s, "") for s in shapes] + [(shapes[1], "B"), (shapes[1], "A")]
    rows = []
    for dname in args.dtypes.split(","):
        dtype = getattr(torch, DTYPES[dname])
        for (m, n, k), transposed in cases:
            src = task_source(m, n, k, DTYPES[dname], transposed)
            ref_mod = load(src, f"ref_{dname}_{m}_{n}_{k}_{transposed}")
            torch.manual_seed(0)
            inputs = [x.to(device) for x in ref_mod.get_inputs()]
            model = ref_mod.Model().to(device)
            ref = model(*inputs).double()
            time = (lambda f: triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")) \
                if device == "cuda" else (lambda f: statistics.median(_cpu_times(f)))
            lib_ms = time(lambda: model(*inputs))
            best: tuple[float, int] | None = None
            notes = []
            for i, start in enumerate(starts):
                try:
                    mod = load(candidate(src, start), f"cand_{dname}_{m}_{n}_{k}_{transposed}_{i}")
                    new = mod.ModelNew().to(device)
                    out = new(*inputs)
                    err = ((out.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
                    if out.dtype != ref_mod.Model()(*inputs).dtype or out.shape != ref.shape or not err <= TOL[dname]:
                        notes.append(f"start {i} wrong (rel. error {err:.1e})")
                        continue
                    ms = time(lambda: new(*inputs))
                except Exception as e:  # noqa: BLE001  a start that does not fit this shape: said, not fatal
                    notes.append(f"start {i}: {type(e).__name__}: {str(e).splitlines()[0][:80]}")
                    continue
                if best is None or ms < best[0]:
                    best = (ms, i)
            flop = 2.0 * m * n * k
            row = {"dtype": dname, "M": m, "N": n, "K": k, "B": {"": "B", "B": "B.t()", "A": "A.t()"}[transposed],
                   "cublas_ms": round(lib_ms, 4), "cublas_tflops": round(flop / lib_ms / 1e9, 1),
                   "team_ms": round(best[0], 4) if best else None,
                   "team_tflops": round(flop / best[0] / 1e9, 1) if best else None,
                   "team_vs_cublas": round(lib_ms / best[0], 3) if best else None,
                   "best_start": starts[best[1]] if best else None, "notes": notes}
            rows.append(row)
            print(f"{dname} {m}x{n}x{k} {row['B']}: cuBLAS {lib_ms:.3f} ms ({row['cublas_tflops']} TFLOP/s), team "
                  + (f"{best[0]:.3f} ms ({row['team_tflops']} TFLOP/s), {row['team_vs_cublas']}x cuBLAS at start "
                     f"{best[1]} {starts[best[1]] or 'defaults'}" if best else "none correct")
                  + (f"; {'; '.join(notes)}" if notes else ""), flush=True)
    print("\n| dtype | M×N×K | cuBLAS ms (TFLOP/s) | team ms (TFLOP/s) | × cuBLAS |\n| --- | --- | --- | --- | --- |")
    for r in rows:
        team = "none correct" if r["team_ms"] is None else f"{r['team_ms']} ({r['team_tflops']})"
        print(f"| {r['dtype']} | {r['M']}×{r['N']}×{r['K']}{' (' + r['B'] + ')' if r['B'] != 'B' else ''} | "
              f"{r['cublas_ms']} ({r['cublas_tflops']}) | {team} | {'-' if r['team_vs_cublas'] is None else r['team_vs_cublas']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def _cpu_times(f) -> list[float]:
    import time

    out = []
    for _ in range(3):
        t0 = time.perf_counter()
        f()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


if __name__ == "__main__":
    sys.exit(main())
