"""Argument types shared by the commands: argparse refuses a bad value with exit 2."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer >= 1 (budgets, trials, repetitions)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def add_sandbox_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run candidates without the sandbox (no network/PID/filesystem isolation); needed to run "
                        "candidates written by an LLM on a machine where no sandbox can be made (see "
                        "docs/EVALUATOR.md)")


def positive_float(text: str) -> float:
    """A number > 0 (seconds)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return x
