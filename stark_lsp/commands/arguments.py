"""Argument types shared by the commands: argparse refuses a bad value with exit 2."""

from __future__ import annotations

import argparse


def int_at_least(text: str, low: int) -> int:
    """An integer of at least ``low``, else argparse's one-line refusal (exit 2)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < low:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}" if low == 1 else f"must be {low} or more, got {n}")
    return n


def positive_int(text: str) -> int:
    """An integer >= 1 (budgets, trials, repetitions)."""
    return int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An integer >= 0 (counts where 0 means none: --leaderboard, --profile-top, --retries)."""
    return int_at_least(text, 0)


def add_sandbox_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run candidates without the sandbox (no network/PID/filesystem isolation); needed to run "
                        "candidates written by an LLM on a machine where no sandbox can be made (see "
                        "docs/EVALUATOR.md)")


def add_screen_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-screen", action="store_true",
                   help="time every candidate in full (default: while the top candidates will be re-timed at the "
                        "end, the others are screened: timed to 4 %% within 0.5 s; see docs/EVALUATOR.md)")


def tolerance(text: str) -> float:
    """A tolerance: a finite number >= 0."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (x >= 0 and x != float("inf")):
        raise argparse.ArgumentTypeError(f"must be 0 or more (and finite), got {text}")
    return x


def url(text: str) -> str:
    """An http(s) URL with a host (an endpoint's --base-url)."""
    from urllib.parse import urlparse

    u = urlparse(text)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL such as http://localhost:8000/v1, "
                                         f"got {text!r}")
    return text


def positive_float(text: str) -> float:
    """A number > 0 (seconds)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return x
