"""Check the Nsight Compute path on a GPU machine, end to end:

    python -m stark_lsp.profile.check [--out DIR] [--timeout S] [--sandbox required] [TASK ...]

For each task (default: samples/triton/softmax.py and
samples/cuda/softmax_rows.cu) it profiles the root kernel exactly as the
search does (``NcuProfiler``: ncu around ``stark_lsp.profile.run_once``, CUDA
built by ``CudaBuilder``), prints the parsed KernelProfiles and the line the
Plan agent would see, and keeps ncu's raw CSV in DIR (default out/ncu) to
replace the hand-written samples in tests/data/ncu/. Exit 0 when every task
gave a profile. ``--sandbox required`` profiles as an LLM-written candidate
is profiled (in the sandbox, as ``nobody``, refused where neither can be had).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from stark_lsp.profile.ncu import NcuProfiler, find_ncu

DEFAULT = ["samples/triton/softmax.py", "samples/cuda/softmax_rows.cu"]


def main(argv: list[str] | None = None) -> int:
    from stark_lsp.evaluate.evaluator import gpu_present
    from stark_lsp.tasks.spec import load_task

    ap = argparse.ArgumentParser(prog="python -m stark_lsp.profile.check")
    ap.add_argument("tasks", nargs="*", default=DEFAULT)
    ap.add_argument("--out", default="out/ncu")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--launch-count", type=int, default=3)
    ap.add_argument("--sandbox", choices=("auto", "required", "off"), default="auto",
                    help="as for an LLM-written candidate: required (default auto: the user's own kernel)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    ncu = find_ncu()
    print(f"ncu: {ncu or 'NOT FOUND'}")
    if ncu:
        v = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
        print("    " + (v.stdout.strip().splitlines() or ["?"])[-1])
    print(f"GPU present: {gpu_present()}")
    profiler = NcuProfiler(ncu, cache_dir=out / "cache", timeout_s=args.timeout, launch_count=args.launch_count,
                           device="cuda", sandbox=args.sandbox)
    print(f"sandbox: {args.sandbox}")
    failures = 0
    for t in args.tasks:
        task = load_task(t)
        print(f"\n== {t} ({task.kind})")
        report = profiler.profile(task, task.root_source())
        raw = out / (Path(t).name + ".csv")
        raw.write_text(profiler.last_stdout)
        print(f"command: {report.command}")
        print(f"seconds: {report.seconds:.1f}   raw ncu output: {raw} ({len(profiler.last_stdout)} chars)")
        if not report.ok:
            failures += 1
            print(f"FAILED: profile unavailable: {report.reason}")
            if profiler.last_stderr:
                print("stderr tail:\n" + profiler.last_stderr[-3000:])
            continue
        for k in report.kernels:
            print(json.dumps(asdict(k), indent=2))
        print(f"Plan agent sees: {report.summary()}")
    print(f"\n{len(args.tasks) - failures}/{len(args.tasks)} profiled")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
