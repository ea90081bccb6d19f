"""Why the same eager model times slower as a candidate than as the eager baseline (docs/benchmarks.md,
session 25: a median 2.4 % over 37 level-2 roots): three suspects, each timed alone in one process.

    python3 benchmarks/process_bias.py [TASK.py ...] [--calls 200] [--rounds 5]

For each KernelBench task (default: four level-2 models of different sizes), one process builds the
task's ``Model`` on the GPU and times its forward with CUDA events (median of ``--calls`` calls, after a
warm-up), in rounds, in this order within each round:

* ``plain``: the forward alone, its output freed after each call (as a process that keeps nothing);
* ``kept``: each output kept alive until the round ends (a candidate's batch keeps its outputs for the
  judge's checks: every call writes to new memory rather than to the block the last call freed);
* ``after profiler``: ``plain`` again, once ``torch.profiler`` with CUDA activity has run one call in this
  process (the launch check does that in a candidate's process, never in a baseline's); from the first
  such round on, every later ``plain`` is after it too, so ``plain`` is reported before and after.

Prints per task the medians and their ratios to ``plain`` before the profiler. A ratio near 1.02-1.04
names the suspect. Then, in the same process, ``torch.compile`` of the model and the search's seed
(``agents/builtin/inductor_seed.py``: torch.compile's code written out as plain Triton launches), so
that their ratio is the seed's own cost (its kernels launched through Triton's Python launcher rather
than Inductor's) with no difference of process in it (the searches' seeds ran a median 0.96x
torch.compile). The judge's protocol (round trips, read-backs between batches) is not in this: a
candidate's round trip was measured apart (it moved figures by a median 0.1 %). Figures only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stark_lsp.evaluate.harness import load_reference  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

DEFAULT = ["1_Conv2D_ReLU_BiasAdd", "12_Gemm_Multiply_LeakyReLU", "19_ConvTranspose2d_GELU_GroupNorm",
           "36_ConvTranspose2d_Min_Sum_GELU_Add"]


KEEP_BYTES = 8 << 30


def _nbytes(out) -> int:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return sum(o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor))


def timed(fn, inputs: list, calls: int, keep: bool) -> float:
    start = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    kept = []
    with torch.no_grad():
        for i in range(calls):
            start[i].record()
            out = fn(*inputs)
            end[i].record()
            if keep:  # at most KEEP_BYTES of outputs alive (the judge keeps what fits, too): the oldest goes
                kept.append(out)
                while len(kept) > 1 and sum(_nbytes(o) for o in kept) > KEEP_BYTES:
                    kept.pop(0)
            del out
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(start, end))


def profile_once(fn, inputs: list) -> None:
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]):
        fn(*inputs)
        torch.cuda.synchronize()


def seed_and_compiled(path: Path, model, inputs: list, calls: int, rounds: int) -> tuple[float, float | None]:
    """torch.compile of ``model`` and the seed written from its code, timed in turn (medians, ms)."""
    import importlib.util
    import tempfile

    from stark_lsp.agents.builtin.inductor_seed import write_seed
    from stark_lsp.agents.builtin.kb_lowering import modelnew_stub
    from stark_lsp.evaluate.candidate.compiled_capture import CompiledCapture

    cap = CompiledCapture(model)
    with torch.no_grad():
        cap.first(*inputs)
    exported = cap.export()
    seed_model = None
    if "error" not in exported:
        root = load_task(path).root_source()
        first, last = modelnew_stub(root)  # the seed replaces the root's ModelNew stub, as the team's code does
        lines = root.splitlines()
        text = "\n".join(lines[:first - 1] + [write_seed(exported, root)] + lines[last:]) + "\n"
        where = Path(tempfile.mkdtemp()) / f"seed_{path.stem}.py"
        where.write_text(text)
        spec = importlib.util.spec_from_file_location(where.stem, where)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[where.stem] = mod
        spec.loader.exec_module(mod)
        ref = load_reference(load_task(path), torch.device("cuda"))
        with torch.device("cuda"):
            seed_model = mod.ModelNew(*ref.init_inputs()).cuda().eval()
        seed_model.load_state_dict(model.state_dict())
        timed(seed_model, inputs, 20, False)
    timed(cap.compiled, inputs, 20, False)
    got: dict[str, list[float]] = {"compiled": [], "seed": []}
    for _ in range(rounds):
        got["compiled"].append(timed(cap.compiled, inputs, calls, False))
        if seed_model is not None:
            got["seed"].append(timed(seed_model, inputs, calls, False))
    return statistics.median(got["compiled"]), statistics.median(got["seed"]) if got["seed"] else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("process_bias.py: needs a GPU", file=sys.stderr)
        return 2
    paths = [Path(t) for t in args.tasks] or [ROOT / "benchmarks" / "kernelbench" / "level2" / f"{n}.py"
                                              for n in DEFAULT]
    print("| task | plain, ms | kept / plain | plain after the profiler / plain | kept after / plain | "
          "torch.compile / plain | seed / torch.compile |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path in paths:
        ref = load_reference(load_task(path), torch.device("cuda"))
        fn = ref.reference_fn(0)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.module.get_inputs()]
        timed(fn, inputs, 20, False)  # warm-up: cuDNN's choice, the allocator's blocks
        got: dict[str, list[float]] = {"plain": [], "kept": [], "plain after": [], "kept after": []}
        for r in range(args.rounds):
            got["plain"].append(timed(fn, inputs, args.calls, False))
            got["kept"].append(timed(fn, inputs, args.calls, True))
        profile_once(fn, inputs)
        for r in range(args.rounds):
            got["plain after"].append(timed(fn, inputs, args.calls, False))
            got["kept after"].append(timed(fn, inputs, args.calls, True))
        m = {k: statistics.median(v) for k, v in got.items()}
        compiled, seed = seed_and_compiled(path, fn, inputs, args.calls, args.rounds)
        print(f"| `{path.stem}` | {m['plain']:.4f} | {m['kept'] / m['plain']:.3f} | "
              f"{m['plain after'] / m['plain']:.3f} | {m['kept after'] / m['plain']:.3f} | "
              f"{compiled / m['plain']:.3f} | {seed / compiled if seed else float('nan'):.3f} |", flush=True)
        del fn, inputs, ref
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
