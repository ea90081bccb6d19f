"""What torch.compile (Inductor) writes for KernelBench models, and where the seed written from it differs.

    python3 benchmarks/inductor_capture.py OUT_DIR MODEL.py [MODEL.py ...] [--time] [--calls N]

Per model, on a GPU: the product's own capture (``evaluate/candidate/compiled_capture.py``, as the
torch.compile baseline's process runs it) writes Inductor's output code (``NAME.0.py``, the test
fixtures under ``tests/data/inductor/`` come from here) and ``NAME.json`` (the graph's inputs, each
Triton kernel's chosen configuration, the seed ``agents/builtin/inductor_seed.write_seed`` writes,
and whether it matches the model).

With ``--time``, the eager model, torch.compile's callable and the seed's ``ModelNew`` are timed
in this one process, in turns (no judge, no sandbox: a study of where the seed's time goes, not
a figure of the product's), milliseconds a call:

* ``synced``: each call followed by a synchronization, as the judge's timed batches run them
  (the host's launch cost is on this clock);
* ``queued``: CUDA events around N calls issued back to back (the host's cost hidden where the
  GPU is the slower);
* ``host``: the host's time to issue one call (no synchronization);
* ``kernels``: the GPU's kernel time a call (the profiler's device time, summed).

A seed that loses on ``synced`` but not on ``kernels`` loses in its launches, not its kernels.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from stark_lsp.agents.builtin.inductor_seed import write_seed  # noqa: E402
from stark_lsp.evaluate.candidate.compiled_capture import CompiledCapture  # noqa: E402


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"kb_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _close(a, b) -> bool:
    a = a[0] if isinstance(a, (tuple, list)) else a
    b = b[0] if isinstance(b, (tuple, list)) else b
    return bool(torch.allclose(a.float(), b.float(), atol=1e-2, rtol=1e-2))


def _flags() -> dict[str, object]:
    return {"cudnn.benchmark": torch.backends.cudnn.benchmark, "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cudnn.deterministic": torch.backends.cudnn.deterministic}


def _time(fn, inputs, calls: int) -> dict[str, float]:
    sync = torch.cuda.synchronize
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*inputs)
            sync()
        synced = (time.perf_counter() - t0) * 1e3 / calls
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*inputs)
        host = (time.perf_counter() - t0) * 1e3 / calls
        end.record()
        sync()
        queued = start.elapsed_time(end) / calls
        from torch.profiler import ProfilerActivity, profile

        n = max(3, min(calls, 20))
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                fn(*inputs)
            sync()
        kernels = sum(e.self_device_time_total for e in prof.key_averages()) / 1e3 / n
    return {"synced": synced, "queued": queued, "host": host, "kernels": kernels}


def capture(path: Path, out: Path, timed: bool, calls: int, rounds: int) -> dict:
    kb = load(path)
    torch.manual_seed(0)
    model = kb.Model(*kb.get_init_inputs()).cuda().eval()
    torch.manual_seed(1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in kb.get_inputs()]
    torch._dynamo.reset()
    flags = _flags()
    cap = CompiledCapture(model)
    t0 = time.perf_counter()
    with torch.no_grad():
        got = cap.first(*inputs)
        want = model(*inputs)
    info: dict = {"compile_s": round(time.perf_counter() - t0, 2), "compiled_matches": _close(got, want)}
    if _flags() != flags:  # a global setting torch.compile changed for the whole process
        info["flags_changed"] = {k: (v, _flags()[k]) for k, v in flags.items() if _flags()[k] != v}
    exported = cap.export()
    if "error" in exported:
        info["error"] = exported["error"]
        return info
    (out / f"{path.stem}.0.py").write_text(exported["code"])
    info.update(inputs=exported["inputs"], configs=exported["configs"])
    try:
        seed = write_seed(exported, path.read_text())
    except Exception as e:  # noqa: BLE001 - a study tool: the reason is the finding
        info["seed_error"] = f"{type(e).__name__}: {e}"
        return info
    seed_file = out / f"{path.stem}.seed.py"  # Triton reads a kernel's source from its file
    seed_file.write_text(path.read_text() + "\n\n" + seed)
    torch.manual_seed(0)
    new = load(seed_file).ModelNew(*kb.get_init_inputs()).cuda().eval()
    new.load_state_dict(model.state_dict())
    with torch.no_grad():
        info["seed_matches"] = _close(new(*inputs), want)
    if timed:
        fns = {"eager": model, "compiled": cap.compiled, "seed": new}
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in fns}
        for _ in range(rounds):
            for k, fn in fns.items():
                runs[k].append(_time(fn, inputs, calls))
        info["times_ms"] = {k: {m: round(statistics.median(r[m] for r in rs), 4) for m in rs[0]}
                            for k, rs in runs.items()}
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--time", action="store_true", help="time eager, torch.compile and the seed in turns")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for p in args.models:
        path = Path(p)
        try:
            summary[path.stem] = capture(path, out, args.time, args.calls, args.rounds)
        except Exception as e:  # noqa: BLE001 - a study tool: say what failed and go on
            summary[path.stem] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]}
        row = summary[path.stem]
        (out / f"{path.stem}.json").write_text(json.dumps(row, indent=1, default=str))
        print(path.stem, json.dumps({k: v for k, v in row.items() if k not in ("configs", "trace", "inputs")},
                                    default=str)[:900], flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
