"""One text form for every speedup the product shows.

Every surface (CLI tables and progress, ``stark show`` / ``export`` / ``bench``,
hover, diagnostics, notifications, the tree webview through the server, and the
prompts the agents read) writes a speedup with :func:`speedup_text`, so a
number always says what it is measured against:

    >>> speedup_text(2.345, "yours")
    '2.35× your kernel'
    >>> speedup_text(0.000491, "eager", cpu=True)
    '0.00049× eager (CPU interpreter: for checking, not speed)'

Ratios are never printed as ``0.00×`` nor in exponent notation: three
significant digits up to 1000×, two significant digits below 0.1×, and
``<0.0001×`` / ``>1000×`` past the ends. Pure: no torch, no pygls.
"""

from __future__ import annotations

import math

# what a speedup is measured against -> the words after the ratio
BASELINES = {
    "yours": "your kernel",  # the user's kernel: the search's root
    "eager": "eager",  # the task's reference in eager PyTorch
    "compiled": "torch.compile",  # torch.compile of the reference
}
# said wherever a figure comes from the CPU (the Triton interpreter, eager PyTorch on the CPU): the CLI's
# tables, progress and ``stark eval``, the editor's labels, hover, progress title and notification, the README
CPU_NOTE = "CPU interpreter: for checking, not speed"
DEGENERATE_NOTE = "degenerate task: any constant passes"
SIGN = "×"


def vs_yours(speedup: float | None, runtime_ms: float | None, retimed_vs_root: float | None,
             root_ms: float | None, *, itself: bool, root_correct: bool, root_is_reference: bool,
             root_speedup: float | None = None, paired: bool = False, root_retimed: bool = False) -> float | None:
    """How many times faster than the user's kernel (the search's root) a node is: the one ratio behind
    every "× your kernel" (the CLI, ``stark show``, the editor, the agents' prompts).

    ``speedup``: the node's figure against eager as every surface shows it (re-timed first; None: not a
    correct node); ``runtime_ms`` and ``root_ms`` likewise. Where the search re-timed the node, its re-timed
    figure against the root: its median over the root's median of the same rounds, i.e. ``speedup`` over
    ``root_speedup`` when the root's re-timing is stored (``root_retimed``), so that a reader's division of
    the two printed "× eager" gives the printed "× your kernel" (``retimed_vs_root`` where it is not: a tree
    re-timed before the root's medians were kept); else the two runtimes; when the root is the KernelBench
    reference itself, the user's kernel *is* eager.
    ``paired``: both were timed on the CPU, where eager is timed in turn with each evaluation: the node's
    figure over the root's (``root_speedup``), each against its own eager, so that what the machine's load
    did between the two evaluations cancels, as the re-timing's rounds do (raw times, taken minutes apart
    under another load, read a 2× gain as 8×); on a GPU (one pinned eager) the same as the two runtimes."""
    if speedup is None or not root_correct:
        return None
    if itself:
        return 1.0
    if isinstance(retimed_vs_root, (int, float)) and retimed_vs_root > 0:
        if root_retimed and speedup > 0 and isinstance(root_speedup, (int, float)) and root_speedup > 0:
            return speedup / root_speedup  # the same as retimed_vs_root when re-timed in one run with the root
        return float(retimed_vs_root)
    if root_is_reference:
        return speedup
    if paired and speedup > 0 and isinstance(root_speedup, (int, float)) and root_speedup > 0:
        return speedup / root_speedup
    if runtime_ms and root_ms:
        return root_ms / runtime_ms
    return None


REFERENCE_ITSELF = 1.0  # "× eager" of the KernelBench reference timed against itself: 1 by construction


def of_reference_itself(speedup: float | None) -> float | None:
    """The "× eager" of the KernelBench reference wrapped as ``ModelNew`` and timed against itself (``stark
    eval`` of a KernelBench file alone, a KernelBench search's root): 1 by construction, whatever the two
    timings said (their ratio is timing noise, not a result); None where it was not timed. ``stark eval``'s
    text and ``--json`` give this one figure, as the search stores for such a root (``Search._evaluate``)."""
    return None if speedup is None else REFERENCE_ITSELF


def paired_eager_ms(ms: float | None, eager: float | None) -> float | None:
    """The eager time that goes with a figure: ``ms`` × its "× eager" (for one evaluation, the reference's
    time of that evaluation; for a re-timing, the medians'). On the CPU, where eager is timed in turn with
    each evaluation, it is printed beside the candidate's ms, so that each row's ms agree with its ratio."""
    if ms is None or eager is None or not ms > 0 or not eager > 0 or math.isinf(eager):
        return None
    return ms * eager


def vs_eager(speedup: float | None, retimed_speedup: float | None) -> float | None:
    """A node's "× eager": the re-timed median where there is one, else its evaluation's figure."""
    if speedup is not None and isinstance(retimed_speedup, (int, float)) and retimed_speedup > 0:
        return float(retimed_speedup)
    return speedup


def shown_ms(single_ms: float | None, retimed: dict | None) -> float | None:
    """A node's runtime next to its "× your kernel": the re-timed median candidate time where the search
    re-timed it (the figure :func:`vs_yours` and :func:`vs_eager` prefer), else its one evaluation's."""
    ms = retimed.get("runtime_ms") if isinstance(retimed, dict) else None
    if isinstance(ms, (int, float)) and ms > 0:
        return float(ms)
    return single_ms


def ratio_text(x: float | None, sign: str = SIGN) -> str:
    """``2.35×``, ``12.3×``, ``0.045×``, ``0.00049×``; ``-`` for a missing value."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x) or x > 1000:
        return f">1000{sign}"
    if x < 0.0001:
        return f"<0.0001{sign}"
    if x >= 100:
        return f"{x:.0f}{sign}"
    if x >= 10:
        return f"{x:.1f}{sign}"
    if x >= 0.1:
        return f"{x:.2f}{sign}"
    digits = 1 - math.floor(math.log10(x))  # two significant digits, fixed point
    return f"{x:.{digits}f}{sign}"


def speedup_text(x: float | None, against: str, *, cpu: bool = False, degenerate: bool = False,
                 sign: str = SIGN) -> str:
    """``2.35× your kernel``; ``against`` is a key of :data:`BASELINES`.

    ``cpu``: the figure comes from CPU timings (Triton interpreter or eager on
    the CPU), which say nothing about a GPU; the text says so. ``degenerate``:
    the task's outputs do not depend on its inputs (``EvalResult.degenerate``),
    so a constant passes and the figure means nothing; the text says so.
    """
    if against not in BASELINES:
        raise ValueError(f"unknown baseline {against!r}; expected one of {', '.join(BASELINES)}")
    if x is None:
        return "-"
    text = f"{ratio_text(x, sign)} {BASELINES[against]}"
    notes = [n for n, on in ((CPU_NOTE, cpu), (DEGENERATE_NOTE, degenerate)) if on]
    return f"{text} ({'; '.join(notes)})" if notes else text

