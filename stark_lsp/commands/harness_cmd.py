"""``stark harness KERNEL [--kernel NAME] [-o FILE]``: write the harness template of a CUDA or Triton kernel.

The same template the editor's "Create <name>.harness.py" quick fix writes
(``tasks/harness_template.py``): inputs shaped from the launcher's or entry
function's parameters, ``run()`` calling it, and a ``reference()`` for the
user to write. Never over an existing file. A KernelBench file needs none
(its ``Model`` is the reference).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from stark_lsp import exit_codes
from stark_lsp.commands import hints, refusal

NAME = "harness"
HELP = "write the harness template of a CUDA or Triton kernel file (the editor's 'Create harness')"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", help="the .cu or Triton .py kernel file")
    p.add_argument("--kernel", dest="name", metavar="NAME",
                   help="the __global__ or @triton.jit kernel to aim at (default: the file's first launcher or entry)")
    p.add_argument("-o", "--out", help="the file to write (default: KERNEL's name with .harness.py, beside it)")


def run(args: argparse.Namespace) -> int:
    from stark_lsp.tasks.harness_template import render_harness
    from stark_lsp.tasks.spec import default_harness_path, is_kernelbench_reference, is_triton_source

    path = Path(args.kernel)
    text = refusal.read_source_or_refuse(str(path), "kernel")
    if path.suffix in (".cu", ".cuh"):
        language = "cuda"
    elif path.suffix == ".py" and is_kernelbench_reference(text):
        raise refusal.Refusal(f"{path.name} is a KernelBench file: its Model is the reference, it needs no harness "
                              f"({hints.stark('eval', args.kernel)} times it)")
    elif path.suffix == ".py" and is_triton_source(text):
        language = "triton"
    else:
        raise refusal.Refusal(f"{path.name}: expected a CUDA file (.cu) or a Python file with @triton.jit kernels")
    names = require_kernel(path.name, text, language, args.name)
    target = refusal.output_file(args.out, example=default_harness_path(path).name) if args.out else default_harness_path(path)
    try:
        harness = render_harness(language, path.name, text, args.name)
    except ValueError as e:
        raise refusal.Refusal(f"{path.name}: no harness template: {e}") from None
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise refusal.Refusal(f"{target} already exists: not overwritten") from None
    except OSError as e:
        raise refusal.Refusal(f"cannot write {target}: {e.strerror or e}") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(harness)
    beside = Path(target).resolve() == default_harness_path(path).resolve()  # else eval needs --harness to find it
    then = hints.stark("eval", args.kernel, *(() if beside else ("--harness", str(target))))
    print(f"wrote {target}{aimed_at(path.name, text, language, names, args.name)}: write reference() in it, "
          f"then {then}", file=sys.stderr)
    return exit_codes.OK


def aimed_at(file_name: str, text: str, language: str, names: list[str], name: str | None) -> str:
    """Which entry a file of several kernels got its harness for, unasked (no --kernel): it picked the
    first silently, and a user who meant another found out from the template's text."""
    from stark_lsp.tasks.harness_template import cuda_launcher, triton_entry

    if name is not None or len(names) < 2:
        return ""
    entry = (cuda_launcher if language == "cuda" else triton_entry)(text, None)
    what = "launcher" if language == "cuda" else "entry"
    first = f"{entry[0]}, the first {what} of {file_name}" if entry else f"the first {what} of {file_name}"
    return f" for {first} (its kernels: {', '.join(names)}; --kernel NAME aims at another)"


def require_kernel(file_name: str, text: str, language: str, name: str | None) -> list[str]:
    """A file with no kernel has nothing to write a harness for; ``--kernel NAME`` must name one of its kernels."""
    from stark_lsp.tasks.kernels import find_kernels

    names = [k.name for k in find_kernels(text, language)]
    if not names:
        what = "__global__" if language == "cuda" else "@triton.jit"
        raise refusal.Refusal(f"{file_name}: no {what} kernel in it: nothing to write a harness for")
    if name is not None and name not in names:
        raise refusal.Refusal(f"--kernel {name}: no such kernel in {file_name} (its kernels: {', '.join(names)})")
    return names
