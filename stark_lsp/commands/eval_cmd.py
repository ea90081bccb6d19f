"""``stark eval TASK [CANDIDATE]``: compile, verify and time one candidate.

Exit codes: 0 the candidate is correct and timed (with ``--compile-only``: it
compiles); 1 it failed, or it could not be run here (``not_run``: a CUDA
candidate on a machine without a GPU is compiled, never reported as a success);
2 bad input (``commands/refusal.py``); 5 the evaluator could not start.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from stark_lsp import exit_codes
from stark_lsp.commands import hints, refusal
from stark_lsp.commands.arguments import (
    add_sandbox_argument,
    positive_float,
    positive_int,
    tolerance,
)
from stark_lsp.evaluate.protocol import is_gpu

NAME = "eval"
HELP = "compile, verify and time a candidate kernel against a task's reference"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="the task: a KernelBench .py, a .cu kernel, or a Triton .py (harness found beside it)")
    p.add_argument("candidate", nargs="?", help="the candidate source (default: the task's own kernel)")
    p.add_argument("--harness", help="the harness file (default: <kernel>.harness.py beside the kernel)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--compile-only", action="store_true",
                   help="only compile (CUDA: nvcc; Python: parse) and run nothing: exit 0 when it compiles")
    p.add_argument("--trials", type=positive_int, default=5,
                   help="correctness trials, each with fresh inputs (default 5); they must fit the evaluation's time "
                        "limit (--timeout, else 120 s for the candidate): when it passes during the trials, the "
                        "evaluation is cut and times out, saying how many ran")
    p.add_argument("--seed", type=int, help="make the trials' inputs reproducible (trial i uses SEED+i); by default "
                                           "every evaluation draws fresh random seeds, which a candidate cannot know")
    p.add_argument("--atol", type=tolerance, help="absolute tolerance (default: by dtype)")
    p.add_argument("--rtol", type=tolerance, help="relative tolerance (default: by dtype)")
    p.add_argument("--reps", type=positive_int, default=100, help="timed repetitions (default 100)")
    p.add_argument("--budget", type=positive_float, default=3.0, help="timing budget per function, seconds (default 3)")
    p.add_argument("--compile-baseline", action="store_true", help="also time torch.compile of the reference")
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"],
                   help="auto: the GPU when there is one, else the CPU (Triton interpreter); cuda needs a GPU")
    p.add_argument("--timeout", type=positive_float,
                   help="a hard cap, in seconds, on the whole evaluation: the build, the sandbox's start, the "
                        "baselines and the candidate (default: each phase's own limit, 120 s for the candidate)")
    p.add_argument("--cache-dir", help="where builds and candidates are cached (default: $STARK_CACHE_DIR, else "
                                       "~/.cache/stark-lsp)")
    add_sandbox_argument(p)


# the expensive part, separate so tests can swap it ----------------------------
def evaluator_from_args(args: argparse.Namespace, warm_for: Any = None) -> Any:
    from stark_lsp.evaluate.evaluator import Evaluator

    return Evaluator(device=args.device, cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                     sandbox="off" if getattr(args, "unsafe_no_sandbox", False) else "auto", warm_for=warm_for)


def refuse_other_language(task: Any, candidate: str) -> None:
    """A candidate in the other language than the task's, by its name: a .cu file given for a Triton or
    KernelBench task was judged as Python ('COMPILE_ERROR - SyntaxError: invalid decimal literal', exit 1);
    a .py file for a CUDA task as CUDA. A name with neither suffix (a pipe) is judged as given."""
    suffix = Path(candidate).suffix.lower()
    cuda_file, py_file = suffix in (".cu", ".cuh"), suffix == ".py"
    if task.kind == "cuda" and py_file:
        raise refusal.Refusal(f"candidate {candidate} is a Python file, and {task.path.name} is a CUDA task: "
                              f"give a .cu candidate")
    if task.kind != "cuda" and cuda_file:
        raise refusal.Refusal(f"candidate {candidate} is a CUDA file, and {task.path.name} is a "
                              f"{ {'kernelbench': 'KernelBench'}.get(task.kind, 'Triton')} task: "
                              f"give a .py candidate")


def run(args: argparse.Namespace) -> int:
    from stark_lsp.bench.checks import check_task
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.render import render_result
    from stark_lsp.speedups import of_reference_itself
    from stark_lsp.tasks.spec import without_kernelbench_stub

    task = refusal.load_task_or_refuse(args.task, args.harness)
    if args.candidate is not None and Path(args.candidate).resolve() == Path(task.path).resolve():
        args.candidate = None  # the task file given as its own candidate: the same as none (a KernelBench
        # file has no ModelNew to judge; its Model is timed against itself)
    if args.candidate is not None:
        refuse_other_language(task, args.candidate)
    source = task.root_source() if args.candidate is None else refusal.read_candidate(args.candidate)
    shown = args.candidate or args.task  # the name the user gave: every message uses it
    problems = check_task(task, kernel_source=None if args.candidate is None else source,
                          kernel_name=None if args.candidate is None else Path(args.candidate).name)
    if problems:
        raise refusal.Refusal("; ".join(problems))
    refusal.require_gpu_for_device(args.device)
    refusal.require_evaluator_modules(task)
    refusal.require_writable_cache(args.cache_dir)
    opts = EvalOptions(trials=args.trials, seed=args.seed, atol=args.atol, rtol=args.rtol, reps=args.reps,
                       time_budget_s=args.budget, compile_baseline=args.compile_baseline,
                       **({"run_timeout_s": args.timeout, "cap_s": args.timeout} if args.timeout else {}))
    ev = evaluator_from_args(args, warm_for=None if args.compile_only else task)
    try:
        if args.compile_only:
            result = compile_only(ev, task, source, opts, shown)
        else:
            result = ev.evaluate(task, source, opts)
        hardware, on_gpu = ev.hardware(), is_gpu(ev)
    finally:
        ev.close(wait=False)  # the verdict is in: the judge clears its sandbox away after this returns
    if refusal.needs_gpu(task) and not on_gpu:  # nvcc compiled it; nothing here runs it
        hardware = "none: no NVIDIA GPU here (nvcc compiles; nothing runs)"
    result = with_user_file_name(result, Path(shown).name)
    # a KernelBench file without ModelNew, evaluated alone: the reference timed against itself
    itself = args.candidate is None and without_kernelbench_stub(source) is not None
    if itself and result.runtime is not None:  # one figure for the text and --json: 1 by construction, as the
        result.runtime.speedup = of_reference_itself(result.runtime.speedup)  # search stores it (the rest is noise)
    if args.json:
        d = result.to_dict()
        d["hardware"] = hardware
        d["candidate"] = str(shown)
        d["reference_itself"] = itself  # then runtime.speedup is 1 by construction (the two times differ by noise)
        print(json.dumps(d, indent=2))
    else:
        print(render_result(result, str(shown), hardware, reference_itself=itself))
    return verdict(args, task, result)


def verdict(args: argparse.Namespace, task: Any, result: Any) -> int:
    """The exit code, and on stderr the one line that explains a non-success nobody would guess."""
    from stark_lsp.evaluate.result import Status

    if result.status is Status.NOT_RUN:
        if args.compile_only:
            return exit_codes.OK
        if task.kind == "cuda":
            why = refusal.GPU_NEEDED
        else:
            why = "needs an NVIDIA GPU (it builds CUDA with load_inline): nothing was run here"
        again = hints.stark("eval", args.task, *([args.candidate] if args.candidate else []), "--compile-only",
                            args=args, flags=("harness",))
        print(f"stark eval: not run: {Path(args.candidate or args.task).name} {why}; "
              f"{again} checks compilation alone", file=sys.stderr)
        return exit_codes.FAILED
    if result.status is Status.TIMEOUT and refusal.runs_on_cpu(args.device) and not os.environ.get("STARK_SMALL"):
        print(f"stark eval: timed out{f' after {args.timeout:g} s' if args.timeout else ''}: {refusal.SMALL_HINT}",
              file=sys.stderr)
    if result.status is Status.TASK_ERROR:  # bad input, as README's table says: the user's task, not a candidate
        print(f"stark eval: the task itself is broken: {result.message.removeprefix('task error: ')}", file=sys.stderr)
        return exit_codes.USAGE
    return exit_codes.OK if result.ok else exit_codes.FAILED


def compile_only(ev: Any, task: Any, source: str, opts: Any, shown: str) -> Any:
    """Compile without running anything: nvcc for CUDA; a parse for Python (Python compiles as it runs)."""
    from stark_lsp.evaluate.result import CompileReport, Diagnostic, EvalResult, Status

    if task.kind == "cuda":
        from stark_lsp.evaluate.evaluator import EvaluatorUnavailable
        from stark_lsp.evaluate.sandbox.policy import SandboxRefused

        try:
            art = ev.builder().build(source, opts.nvcc_flags, timeout_s=opts.compile_timeout_s, task=task)
        except SandboxRefused as e:
            raise EvaluatorUnavailable(str(e)) from e
        if not art.report.ok:
            msg = next((d.message for d in art.report.diagnostics if d.severity == "error"), "compile failed")
            return EvalResult(Status.COMPILE_ERROR, msg, compile=art.report)
        return EvalResult(Status.NOT_RUN, "compiled; not run (--compile-only)", compile=art.report,
                          resources=art.resources)
    try:
        compile(source, Path(shown).name, "exec")
    except SyntaxError as e:
        diag = Diagnostic(f"SyntaxError: {e.msg}", line=e.lineno, column=e.offset, file=Path(shown).name)
        return EvalResult(Status.COMPILE_ERROR, f"SyntaxError: {e.msg} (line {e.lineno})",
                          compile=CompileReport(ok=False, log=str(e), diagnostics=[diag]))
    return EvalResult(Status.NOT_RUN, "parsed; not run (--compile-only: Python kernels compile when they run)",
                      compile=CompileReport(ok=True))


# the evaluator writes a candidate to a hashed file (cache/candidates/c<hash>.py) and
# nvcc compiles it as kernel.cu: messages name those; the user knows their own file
_HASHED = re.compile(r"(?:[\w.~+-]*/)*c[0-9a-f]{20}\.(?:py|cu)\b")
_NVCC_SOURCE = re.compile(r"\bkernel\.cu\b")


def with_user_file_name(result: Any, name: str) -> Any:
    """``result`` with the evaluator's temporary file names replaced by ``name``."""
    from stark_lsp.evaluate.result import EvalResult

    def fix(value: Any, nvcc: bool) -> Any:
        if isinstance(value, str):
            value = _HASHED.sub(name, value)
            return _NVCC_SOURCE.sub(name, value) if nvcc and name.endswith((".cu", ".cuh")) else value
        if isinstance(value, list):
            return [fix(v, nvcc) for v in value]
        if isinstance(value, dict):  # the compiler's command line stays as it ran
            return {k: v if k == "command" else fix(v, nvcc or k == "compile") for k, v in value.items()}
        return value

    return EvalResult.from_dict(fix(result.to_dict(), False))
