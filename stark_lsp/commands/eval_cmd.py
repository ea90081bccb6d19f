"""``stark eval TASK [CANDIDATE]``: compile, verify and time one candidate."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

NAME = "eval"
HELP = "compile, verify and time a candidate kernel against a task's reference"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="the task: a KernelBench .py, a .cu kernel, or a Triton .py (harness found beside it)")
    p.add_argument("candidate", nargs="?", help="the candidate source (default: the task's own kernel)")
    p.add_argument("--harness", help="the harness file (default: <kernel>.harness.py beside the kernel)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--trials", type=int, default=5, help="correctness trials, each with fresh inputs (default 5)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--atol", type=float, help="absolute tolerance (default: by dtype)")
    p.add_argument("--rtol", type=float, help="relative tolerance (default: by dtype)")
    p.add_argument("--reps", type=int, default=100, help="timed repetitions (default 100)")
    p.add_argument("--budget", type=float, default=3.0, help="timing budget per function, seconds (default 3)")
    p.add_argument("--compile-baseline", action="store_true", help="also time torch.compile of the reference")
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a candidate may run before it is killed")
    p.add_argument("--cache-dir", help="where builds are cached (default ~/.cache/stark-lsp)")


def run(args: argparse.Namespace) -> int:
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.render import render_result
    from stark_lsp.tasks.spec import TaskError, load_task

    try:
        task = load_task(args.task, args.harness)
    except TaskError as e:
        print(f"stark eval: {e}", file=sys.stderr)
        return 2
    cand_path = Path(args.candidate) if args.candidate else task.path
    if not cand_path.exists():
        print(f"stark eval: {cand_path}: no such file", file=sys.stderr)
        return 2
    source = task.root_source() if args.candidate is None else cand_path.read_text()
    opts = EvalOptions(trials=args.trials, seed=args.seed, atol=args.atol, rtol=args.rtol, reps=args.reps,
                       time_budget_s=args.budget, compile_baseline=args.compile_baseline, run_timeout_s=args.timeout)
    with Evaluator(device=args.device, cache_dir=Path(args.cache_dir) if args.cache_dir else None) as ev:
        result = ev.evaluate(task, source, opts)
        hardware = ev.hardware()
    if args.json:
        d = result.to_dict()
        d["hardware"] = hardware
        d["candidate"] = str(cand_path)
        print(json.dumps(d, indent=2))
    else:
        print(render_result(result, str(cand_path), hardware))
    return 0 if not result.status.failed else 1
