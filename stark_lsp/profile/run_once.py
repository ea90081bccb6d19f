"""Run one candidate a few times, for a profiler to watch.

    python -m stark_lsp.profile.run_once JOB.json

JOB: ``{"task": TaskSpec dict, "candidate_file": path, "library": path or
null (CUDA: built by the caller), "calls": 3, "seed": 0, "device": "auto"}``.
The task's harness gives the reference's inputs and how to call the candidate,
exactly as in the evaluator (``stark_lsp.evaluate.candidate.load``). No checks, no
timing: the evaluator has judged this candidate already.

Stdout is left to the profiler (ncu prints its CSV there): whatever the
candidate prints goes to stderr. On failure the last line on stderr is
``profile unavailable: <reason>`` and the exit status is 3.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

FAILED = 3


def _fail(reason: str) -> int:
    sys.stderr.write(f"profile unavailable: {reason}\n")
    sys.stderr.flush()
    return FAILED


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        return _fail("usage: python -m stark_lsp.profile.run_once JOB.json")
    sys.stdout.flush()
    os.dup2(2, 1)  # the candidate's prints must not mix with the profiler's report
    try:
        job = json.loads(Path(args[0]).read_text())
    except (OSError, ValueError) as e:
        return _fail(f"cannot read the job: {e}")

    try:
        import torch

        from stark_lsp.evaluate.candidate.load import CandidateLoadError, load_candidate
        from stark_lsp.evaluate.harness import HarnessError, load_reference
        from stark_lsp.tasks.spec import TaskSpec
    except Exception as e:  # noqa: BLE001 - a broken environment is a reason, not a crash
        return _fail(f"cannot import torch / stark_lsp: {type(e).__name__}: {e}")

    device = job.get("device") or "auto"
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    seed = int(job.get("seed", 0))
    calls = max(1, int(job.get("calls", 3)))
    try:
        spec = TaskSpec.from_dict(job["task"])
        ref = load_reference(spec, dev)
        inputs = ref.inputs(seed)
        cand = load_candidate(ref, Path(job["candidate_file"]), job.get("library"), seed)
    except HarnessError as e:
        return _fail(f"task error: {e}")
    except CandidateLoadError as e:
        return _fail(f"the candidate does not load: {e}")
    except Exception as e:  # noqa: BLE001
        return _fail(f"{type(e).__name__}: {e}")
    from contextlib import nullcontext

    from stark_lsp.evaluate.judge.gpu_lock import GpuLock, gpu_key

    try:
        # ncu's replays must not overlap another process's timing on this GPU (gpu_lock.py)
        with (GpuLock(gpu_key(torch, dev)) if dev.type == "cuda" else nullcontext()), torch.no_grad():
            for _ in range(calls):
                cand(*inputs)
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)
    except Exception as e:  # noqa: BLE001
        first = next((ln for ln in str(e).splitlines() if ln.strip()), "")
        return _fail(f"the candidate raised {type(e).__name__}: {first[:300]}")
    sys.stderr.write(f"run_once: {calls} call(s) on {dev}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
