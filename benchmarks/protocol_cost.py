"""What one call of the judge's protocol costs, step by step, in a plain process (no candidate, no sandbox).

    python benchmarks/protocol_cost.py [TASK] [--n 200]

Times, over n calls: drawing the task's inputs, a device synchronization, a CUDA event pair, the output's
digest (wire/digest.py; and the same signed sum by torch's path, which a GPU takes only without Triton),
the chain's hash, and the whole per-call loop as a batch runs it, with the call
doing nothing. This is the cost every timed call carries on the judge's clock: the smaller and steadier
it is, the finer the judge resolves a short call.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from stark_lsp.evaluate.harness import as_outputs, load_reference  # noqa: E402
from stark_lsp.evaluate.wire.chain import next_seed  # noqa: E402
from stark_lsp.evaluate.wire import device_chain as DC  # noqa: E402
from stark_lsp.evaluate.wire import signed_sum as S  # noqa: E402
from stark_lsp.evaluate.wire.digest import digest  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402


def timed(fn, n: int) -> tuple[float, float]:
    xs = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        xs.append((time.perf_counter() - t0) * 1e3)
    xs.sort()
    return statistics.median(xs), xs[int(0.9 * (len(xs) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", nargs="?", default=str(ROOT / "benchmarks" / "tasks" / "axpy_triton.py"))
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ref = load_reference(load_task(Path(args.task)), dev)
    fn = ref.reference_fn(1)
    x = ref.inputs(1)
    with torch.no_grad():
        out = [o for o in as_outputs(fn(*x))]
    sync = (lambda: torch.cuda.synchronize()) if dev.type == "cuda" else (lambda: None)
    rows = {
        "draw": lambda i: ref.inputs(i + 10),
        "draw+sync": lambda i: (ref.inputs(i + 10), sync()),
        "sync": lambda i: sync(),
        "digest (syncs)": lambda i: digest(out, i + 1),
        "digest, torch's path": lambda i: (sum(float(S._torch_sum(o.reshape(-1), S.key(i, 0, 0))) for o in out
                                              if isinstance(o, torch.Tensor))),
        "chain hash": lambda i: next_seed(i, [[1.0, 0.0, 0.0, 0.0]]),
    }
    if dev.type == "cuda":
        def events(i):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            b.record()
            b.synchronize()
            a.elapsed_time(b)
        rows["event pair"] = events

    def loop(i):
        inputs = ref.inputs(next_seed(i, 7))
        sync()
        digest(out, i + 1)
        del inputs
    rows["whole empty call"] = loop

    def real(i):
        inputs = ref.inputs(next_seed(i, 7))
        with torch.no_grad():
            o = as_outputs(fn(*inputs))
        sync()
        digest(o, i + 1)
    rows["whole reference call"] = real
    if dev.type == "cuda":  # the device chain: per call, the perturbation and the digest on the GPU, no sync
        xs = [t.contiguous() if isinstance(t, torch.Tensor) else t for t in x]
        dig = torch.zeros((args.n + 30, 4 * max(1, len(out))), dtype=torch.float64, device=dev)

        def device_call(i):
            DC.perturb_inputs(xs, dig, i - 1, 7)
            DC.digest_into(out, dig, i, i + 1)
        rows["device chain, one call (no sync)"] = device_call
        rows["device chain, one call + sync"] = lambda i: (device_call(i), sync())
    for _ in range(20):
        loop(0)
    print(f"task {Path(args.task).name} on {dev}: inputs {[tuple(t.shape) for t in x if hasattr(t, 'shape')]}")
    for name, f in rows.items():
        med, p90 = timed(f, args.n)
        print(f"  {name:22s} median {med:8.4f} ms   p90 {p90:8.4f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
