"""How long things take, said to a person: a duration, and the time a search has left at its pace.

``duration`` is the one way the CLI, the bench and the editor write a span of
time (``42.0s``, ``3m10s``, ``1h05m``). ``time_left`` estimates what a search
has left from the attempts this run has finished and the time they took
(the evaluations of the user's kernel and of the baselines, before the first
attempt, are not in it), capped by what ``--wall-time`` leaves; None until two
attempts have finished, when a rate means little.
"""

from __future__ import annotations

MIN_FINISHED = 2  # attempts finished in this run before a time left is estimated


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{seconds:.1f}s"
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def time_left(finished: int, left: int, elapsed_s: float, wall_left_s: float | None = None) -> float | None:
    """Seconds left for ``left`` more attempts at the pace of the ``finished`` ones (in ``elapsed_s``);
    0 when none is left; at most ``wall_left_s``."""
    if left <= 0:
        return 0.0
    if finished < MIN_FINISHED or elapsed_s <= 0:
        return 0.0 if wall_left_s is not None and wall_left_s <= 0 else None
    est = left * elapsed_s / finished
    return max(0.0, min(est, wall_left_s)) if wall_left_s is not None else est


def time_left_text(seconds: float | None) -> str:
    """``about 3m10s left`` ('' when not known yet)."""
    if seconds is None:
        return ""
    return "finishing" if seconds < 1 else f"about {duration(seconds)} left"
