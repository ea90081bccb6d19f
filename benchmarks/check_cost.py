"""What the judge's check of one timed call costs, step by step, in the judge's own process.

    python benchmarks/check_cost.py [--calls 200] [--profile 15] [TASK ...]

After a candidate's timing, the judge checks every timed call (``judge/batches.py``,
``Checker.check``): it draws the call's inputs again from their seed, applies the device
chain's perturbation with the committed digest before it, runs the reference, and adds the
output's digest and bound to one deferred read (``digest.Deferred``). This script runs those
steps for ``--calls`` calls of each task, with no candidate and no sandbox, and prints the
milliseconds a call each step took (the device synchronized after each, so a step's GPU work is
its own), then the whole loop as the judge runs it (no synchronization between calls), and, with
``--profile N``, the loop's N costliest functions under cProfile. Then what a call read back in
full adds (``Checker._compare_fetched``): the comparison, its digest again, its hash. On a CPU the perturbation is
left out (the device chain runs on a GPU only). Default tasks: the turnaround's Triton axpy and
the Triton softmax sample. Figures go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from stark_lsp.evaluate.harness import as_outputs, clone_inputs, load_reference  # noqa: E402
from stark_lsp.evaluate.judge.compare import compare_outputs, tolerance_for  # noqa: E402
from stark_lsp.evaluate.wire import device_chain as DC  # noqa: E402
from stark_lsp.evaluate.wire import digest as D  # noqa: E402
from stark_lsp.evaluate.wire import output_hash as OH  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

DEFAULT_TASKS = [ROOT / "benchmarks" / "tasks" / "axpy_triton.py", ROOT / "samples" / "triton" / "softmax.py"]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Steps:
    """The judge's per-call steps on one task (as ``RanBatch.inputs`` and ``Checker.check`` take them)."""

    def __init__(self, path: Path, device: torch.device):
        self.ref = load_reference(load_task(path), device)
        self.device = device
        self.fn = self.ref.reference_fn(1)
        out = self.outputs(self.ref.inputs(1))
        self.chain = DC.usable(self.ref.inputs(1), out, device)
        self.rows = torch.zeros((1, 4 * len(out)), dtype=torch.float64, device=device)
        self.tols = [tolerance_for(getattr(o, "dtype", None), self.ref.atol, self.ref.rtol) for o in out]

    def outputs(self, xs: list) -> list:
        with torch.no_grad():
            return [o.detach() if isinstance(o, torch.Tensor) else o for o in as_outputs(self.fn(*clone_inputs(xs)))]

    def draw(self, seed: int) -> list:
        return [x.contiguous() if isinstance(x, torch.Tensor) else x for x in self.ref.inputs(seed)]

    def perturb(self, xs: list) -> None:
        if self.chain:
            DC.perturb_inputs(xs, self.rows, 0, 12345)

    def one(self, seed: int, deferred: D.Deferred) -> None:
        xs = self.draw(seed)
        self.perturb(xs)
        deferred.add(self.outputs(xs), seed, self.tols)


def per_step(s: Steps, calls: int) -> dict[str, float]:
    """Milliseconds a call for each step, the device synchronized after each (medians)."""
    times: dict[str, list[float]] = {"draw": [], "perturb": [], "reference": [], "digest and bound": []}
    for i in range(calls):
        t = time.perf_counter()
        xs = s.draw(100 + i)
        _sync(s.device)
        t1 = time.perf_counter()
        s.perturb(xs)
        _sync(s.device)
        t2 = time.perf_counter()
        out = s.outputs(xs)
        _sync(s.device)
        t3 = time.perf_counter()
        d = D.Deferred()
        d.add(out, i + 1, s.tols)
        d.resolve()
        t4 = time.perf_counter()
        for k, a, b in (("draw", t, t1), ("perturb", t1, t2), ("reference", t2, t3), ("digest and bound", t3, t4)):
            times[k].append(1e3 * (b - a))
    return {k: statistics.median(v) for k, v in times.items()}


def read_back(s: Steps, calls: int) -> dict[str, float]:
    """Milliseconds for a call read back in full (``Checker._compare_fetched``): the element-by-element
    comparison, its digest again and its hash, on a copy of the reference's output (medians)."""
    times: dict[str, list[float]] = {"compare": [], "digest again": [], "hash": []}
    ref = s.outputs(s.draw(7))
    cand = [o.clone() if isinstance(o, torch.Tensor) else o for o in ref]
    scheme = OH.scheme_for(s.device)
    for i in range(calls):
        _sync(s.device)
        t = time.perf_counter()
        assert compare_outputs(ref, cand, s.ref.atol, s.ref.rtol).passed
        t1 = time.perf_counter()
        D.digest(cand, i + 1)
        t2 = time.perf_counter()
        OH.commit_one(cand, scheme)
        t3 = time.perf_counter()
        for k, a, b in (("compare", t, t1), ("digest again", t1, t2), ("hash", t2, t3)):
            times[k].append(1e3 * (b - a))
    return {k: statistics.median(v) for k, v in times.items()}


def loop(s: Steps, calls: int) -> float:
    """Milliseconds a call for the whole check as the judge runs it: no synchronization until the end."""
    _sync(s.device)
    t = time.perf_counter()
    d = D.Deferred()
    for i in range(calls):
        s.one(1000 + i, d)
    d.resolve()
    return 1e3 * (time.perf_counter() - t) / calls


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="*", type=Path, help="task files (default: the Triton axpy and softmax)")
    ap.add_argument("--calls", type=int, default=200, help="calls a task (default 200)")
    ap.add_argument("--profile", type=int, default=0, help="print the loop's N costliest functions (cProfile)")
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device: {torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'}; torch {torch.__version__}")
    for path in args.tasks or DEFAULT_TASKS:
        s = Steps(path, device)
        loop(s, 20)  # every kernel's first use (Triton's JIT in the judge) off the figures
        steps = per_step(s, args.calls)
        whole = loop(s, args.calls)
        read_back(s, 3)
        back = read_back(s, max(3, args.calls // 10))
        line = ", ".join(f"{k} {v:.3f}" for k, v in steps.items())
        print(f"{path.name}: the check of one call {whole:.3f} ms (as the judge runs it); by step, synchronized: {line}"
              f" (ms; device chain: {'yes' if s.chain else 'no'}); a call read back: "
              + ", ".join(f"{k} {v:.3f}" for k, v in back.items()) + " ms", flush=True)
        if args.profile > 0:
            prof = cProfile.Profile()
            prof.enable()
            loop(s, args.calls)
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.profile)
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-6000:], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
