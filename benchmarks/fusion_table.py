"""The built-in team's fused kernels against eager PyTorch and torch.compile (issue 22's fusion table).

    python3 benchmarks/fusion_table.py [MODEL ...] [--small] [--json FILE]

MODEL names a KernelBench file of benchmarks/kernelbench (``level1/19_ReLU`` or ``19_ReLU``; level 1
is looked up first) or a path to a KernelBench-format file; the default is a set of elementwise, reduction and norm models of both levels.
For each, the fused ``ModelNew`` the team writes as its first fused candidate (``fusion.render``, the
same text a search judges) is loaded beside the model, checked against its output, and timed with
``triton.testing.do_bench`` (median, L2 flushed before each call) beside eager PyTorch and
``torch.compile`` of the model. It is timed twice: as written, and with its vector sizes' alignment
hint off (``_stark_align`` returning 1, the kernels as they were before the hint), to measure what
the hint gains; a model with a library convolution is timed a third time with its ``CHANNELS_LAST``
switch on (the convolutions' weights channels-last, the elementwise kernels after them following). This is a study tool in one process, not the judge: the judge's figures are in
docs/benchmarks.md's search runs. ``--small`` runs the samples of samples/kernelbench at their small
sizes (STARK_SMALL=1) on the CPU in the Triton interpreter, to check the tool itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
KB = ROOT / "benchmarks" / "kernelbench"

DEFAULT = ["19_ReLU", "26_GELU_", "88_MinGPTNewGelu", "23_Softmax", "40_LayerNorm", "36_RMSNorm_", "47_Sum_reduction_over_a_dimension",
           "33_BatchNorm", "94_MSELoss", "level2/4_Conv2d_Mish_Mish", "level2/1_Conv2D_ReLU_BiasAdd",
           "level2/88_Gemm_GroupNorm_Swish_Multiply_Swish", "level2/37_Matmul_Swish_Sum_GroupNorm",
           "level2/3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU"]
SMALL = [str(ROOT / "samples" / "kernelbench" / f"{n}.py") for n in ("relu", "gelu", "layernorm", "sum_dim")]
SWITCH_OFF, SWITCH_ON = "\nCHANNELS_LAST = False\n", "\nCHANNELS_LAST = True\n"
UNALIGNED = "def _stark_align(*sizes):\n    return 1\n\n\ndef _stark_align_as_written(*sizes):"


def model_path(name: str) -> Path:
    if name.endswith(".py") and Path(name).is_file():
        return Path(name)
    for cand in ([KB / f"{name}.py"] if "/" in name else [KB / "level1" / f"{name}.py", KB / "level2" / f"{name}.py"]):
        if cand.is_file():
            return cand
    raise SystemExit(f"fusion_table: no KernelBench file named {name} under {KB}")


def candidate(root: str) -> str:
    """The root with its ``class ModelNew(Model): pass`` replaced by the team's fused ModelNew."""
    from stark_lsp.agents.builtin import fusion
    from stark_lsp.agents.builtin.kb_lowering import modelnew_stub

    lo, hi = modelnew_stub(root)
    lines = root.splitlines(keepends=True)
    return "".join(lines[: lo - 1]) + fusion.render(root) + "".join(lines[hi:])


def rel_error(out, ref) -> float:
    """The largest difference over the reference's largest magnitude (at least 1): an output near zero
    everywhere (a GroupNorm's mean) is judged by its absolute error, not by a ratio of tiny norms."""
    import torch

    outs = out if isinstance(out, (tuple, list)) else [out]
    refs = ref if isinstance(ref, (tuple, list)) else [ref]
    worst = 0.0
    for o, r in zip(outs, refs):
        if not isinstance(r, torch.Tensor):
            continue
        if o.shape != r.shape or o.dtype != r.dtype:
            return float("inf")
        o, r = o.double(), r.double()
        worst = max(worst, ((o - r).abs().max() / r.abs().max().clamp_min(1.0)).item())
    return worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--small", action="store_true", help="shrunk sizes on the CPU (Triton interpreter)")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile column")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.small:
        os.environ["STARK_SMALL"] = "1"
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton.testing
    from matmul_table import load  # a module from its own file (Triton reads a kernel's source there)

    from stark_lsp.speedups import speedup_text
    from stark_lsp.tasks.spec import load_task

    device = "cuda" if torch.cuda.is_available() and not args.small else "cpu"
    if device == "cuda":
        def time_ms(f):
            return triton.testing.do_bench(f, warmup=25, rep=200, return_mode="median")
    else:
        def time_ms(f):
            import time
            t0 = time.perf_counter()
            f()
            return (time.perf_counter() - t0) * 1e3
    rows = []
    for name in args.models or (SMALL if args.small else DEFAULT):
        path = model_path(name)
        stem = path.stem
        row: dict = {"model": f"{path.parent.name}/{stem}"}
        rows.append(row)
        try:
            root = load_task(path).root_source()
            cand = candidate(root)
            assert "def _stark_align(*sizes):" in cand, "the fused text has no _stark_align"
            ref_mod = load(root, f"ref_{stem}")
            aligned = load(cand, f"fused_{stem}")
            unaligned = load(cand.replace("def _stark_align(*sizes):", UNALIGNED, 1), f"unaligned_{stem}")
            variants = [("fused", aligned), ("unaligned", unaligned)]
            if SWITCH_OFF in cand:
                variants.append(("channels_last", load(cand.replace(SWITCH_OFF, SWITCH_ON, 1), f"cl_{stem}")))
            torch.manual_seed(0)
            init = ref_mod.get_init_inputs()
            model = ref_mod.Model(*init).to(device).eval()
            news = {}
            for key, mod in variants:
                torch.manual_seed(0)
                new = mod.ModelNew(*init).to(device).eval()
                new.load_state_dict(model.state_dict())
                news[key] = new
            torch.manual_seed(1)
            inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in ref_mod.get_inputs()]
            with torch.no_grad():
                ref = model(*inputs)
                for key, new in news.items():
                    row[f"{key}_rel_error"] = err = rel_error(new(*inputs), ref)
                    if not err <= 1e-4:
                        raise AssertionError(f"{key} output differs from the model's (rel. error {err:.1e})")
                row["eager_ms"] = time_ms(lambda: model(*inputs))
                if not args.no_compile and not args.small:
                    compiled = torch.compile(model)
                    compiled(*inputs)
                    row["compile_ms"] = time_ms(lambda: compiled(*inputs))
                for key, new in news.items():
                    row[f"{key}_ms"] = time_ms(lambda: new(*inputs))
        except Exception as e:  # noqa: BLE001  one model's failure is a row, not the end of the table
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        cpu = device == "cpu"
        if "fused_ms" in row:
            row["vs_eager"] = row["eager_ms"] / row["fused_ms"]
            row["vs_compile"] = row["compile_ms"] / row["fused_ms"] if "compile_ms" in row else None
            row["hint_gain"] = row["unaligned_ms"] / row["fused_ms"]
            if "channels_last_ms" in row:
                row["channels_last_gain"] = row["fused_ms"] / row["channels_last_ms"]
            comp = f"{row['compile_ms']:.4f} ms" if "compile_ms" in row else "-"
            print(f"{row['model']}: eager {row['eager_ms']:.4f} ms, compile {comp}, fused {row['fused_ms']:.4f} ms "
                  f"({speedup_text(row['vs_eager'], 'eager', cpu=cpu)}, "
                  f"{speedup_text(row['vs_compile'], 'compiled', cpu=cpu)}), without the hint "
                  f"{row['unaligned_ms']:.4f} ms"
                  + (f", CHANNELS_LAST on {row['channels_last_ms']:.4f} ms" if "channels_last_ms" in row else ""),
                  flush=True)
        else:
            print(f"{row['model']}: {row.get('error')}", flush=True)
    print("\n| model | eager ms | torch.compile ms | fused ms | × eager | × torch.compile | fused without the hint ms |"
          " the hint's gain | CHANNELS_LAST on ms | its gain |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "fused_ms" not in r:
            print(f"| {r['model']} | {r.get('error', '-')} | | | | | | | | |")
            continue
        comp = f"{r['compile_ms']:.4f}" if "compile_ms" in r else "-"
        vsc = f"{r['vs_compile']:.2f}×" if r.get("vs_compile") else "-"
        print(f"| {r['model']} | {r['eager_ms']:.4f} | {comp} | {r['fused_ms']:.4f} | {r['vs_eager']:.2f}× | {vsc} | "
              f"{r['unaligned_ms']:.4f} | {r['hint_gain']:.2f}× | "
              + (f"{r['channels_last_ms']:.4f} | {r['channels_last_gain']:.2f}× |" if "channels_last_ms" in r else "- | - |"))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
