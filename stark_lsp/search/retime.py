"""Re-timing the leaders before a search reports its best.

One evaluation's speedup is one noisy measurement, and the best of thirty noisy
measurements is biased upwards. So when the search ends, its top ``top``
correct candidates and the root are evaluated again ``rounds`` times, in turn
(candidate 1, candidate 2, ..., root; then again). Each evaluation gives the
candidate's speedup against eager (the evaluator times the reference once per
task and settings). The reported figure is the median over the rounds, with its
range; against the user's kernel, the candidate's median over the root's median
of the same rounds (the root's own medians are stored on the root), with the
range of the per-round ratios. Stored on each node as
``Node.retimed`` (``Retimed.to_dict()``); ``TreeStore.best`` then prefers the
highest re-timed median.

Pure: the engine runs the evaluations; this module picks options and
summarizes results.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, replace

from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.speedups import CPU_NOTE, ratio_text, speedup_text


# a candidate during the search is screened: timed until its figure is known to SCREEN_NOISE (the relative
# standard error of its median) or SCREEN_BUDGET_S of timed batches, over at least SCREEN_REPS calls (or
# ``timing.MIN_TIME_S``): enough to rank it and race it, as the leaders are re-timed in full when the search
# ends. Timing holds the GPU alone, so this is what several searches on one GPU wait for (docs/benchmarks.md)
SCREEN_BUDGET_S = 0.5
SCREEN_NOISE = 0.04
SCREEN_REPS = 30


def screen_options(options: EvalOptions) -> EvalOptions:
    """A search's candidate's settings: timed to rank (``SCREEN_*``), never more than the search asked for;
    the baselines' settings as they were (``EvalOptions.pinned_baselines`` first, or the baselines follow)."""
    return replace(options, time_budget_s=min(options.time_budget_s, SCREEN_BUDGET_S),
                   noise_target=max(options.noise_target, SCREEN_NOISE), reps=min(options.reps, SCREEN_REPS))


def retime_options(options: EvalOptions) -> EvalOptions:
    """Timing-heavy settings: one correctness trial (the candidate was checked already), twice the
    timed repetitions and time budget, and no racing (every figure in full)."""
    return replace(options, trials=1, race_ms=None, reps=max(2 * options.reps, 100), time_budget_s=2 * options.time_budget_s,
                   cpu_reps=max(options.cpu_reps, 3), compile_baseline=options.compile_baseline)


@dataclass
class Retimed:
    rounds: int  # evaluations that went into the figures
    speedup: float  # median of eager time / candidate time, each pair from one evaluation
    speedup_low: float
    speedup_high: float
    runtime_ms: float  # median candidate time
    vs_root: float | None = None  # speedup / the root's median against eager, the root timed in the same rounds
    vs_root_low: float | None = None  # the range of the per-round ratios (this round's figure / the root's)
    vs_root_high: float | None = None
    speedup_vs_compiled: float | None = None  # median, when the evaluations timed torch.compile
    cpu: bool = False  # CPU timings (Triton interpreter): not GPU figures

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Retimed":
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})

    def text(self) -> str:
        """``2.31× eager (2.25–2.40 over 3 rounds), 1.80× your kernel``."""
        head = speedup_text(self.speedup, "eager")
        # the range as bare numbers: every N× the product prints is followed by its baseline
        spread = f" ({ratio_text(self.speedup_low, sign='')}–{ratio_text(self.speedup_high, sign='')}" \
                 f" over {self.rounds} rounds)"
        out = head + spread
        if self.vs_root is not None:
            out += ", " + speedup_text(self.vs_root, "yours")
        return out + (f" ({CPU_NOTE})" if self.cpu else "")  # once, for every figure of the line


def _ok(r: EvalResult | None) -> bool:
    return r is not None and r.status is Status.OK and r.runtime is not None


def summarize(candidate: list[EvalResult], root: list[EvalResult | None],
              root_is_eager: bool = False) -> Retimed | None:
    """The figures of one candidate from its re-timing rounds (``root[i]``: the root's evaluation of
    round i, or None); None when no round timed it. ``root_is_eager``: the root is the KernelBench
    reference itself, so "× your kernel" is "× eager", round by round (no root evaluation is needed:
    dividing by the reference timed against itself would only add its noise, and the two figures of
    one node would disagree)."""
    rounds = [(c, r) for c, r in zip(candidate, root + [None] * len(candidate)) if _ok(c)]
    if not rounds:
        return None
    speeds = [c.runtime.speedup for c, _ in rounds]
    # against the root of the same round, each through its own eager figure: on a GPU eager is one pinned
    # timing, so this is the root's time over the candidate's; on the CPU each evaluation times eager in turn
    # with itself (``judge.reference_in_turn``), so what the machine's load did between the two cancels
    vs_root = list(speeds) if root_is_eager else \
        [c.runtime.speedup / r.runtime.speedup for c, r in rounds if _ok(r) and r.runtime.speedup > 0]
    # "× your kernel" is the candidate's median over the root's median of the same rounds (the root's own
    # figures, :func:`summarize` of its rounds, are stored on the root): then every re-timed row's "× your
    # kernel" is its "× eager" over your kernel's, as the table prints them. The median of the per-round
    # ratios is another number (medians do not divide), and printed beside the two medians it contradicted
    # them; with an odd number of rounds the ratio of the medians lies within the per-round ratios' range
    root_speeds = [r.runtime.speedup for r in root if _ok(r) and r.runtime.speedup > 0]
    speedup = statistics.median(speeds)
    compiled = [c.runtime.speedup_vs_compiled for c, _ in rounds if c.runtime.speedup_vs_compiled]
    return Retimed(
        rounds=len(rounds),
        speedup=speedup, speedup_low=min(speeds), speedup_high=max(speeds),
        runtime_ms=statistics.median(c.runtime.candidate.median_ms for c, _ in rounds),
        vs_root=(speedup if root_is_eager else speedup / statistics.median(root_speeds)) if vs_root else None,
        vs_root_low=min(vs_root) if vs_root else None, vs_root_high=max(vs_root) if vs_root else None,
        speedup_vs_compiled=statistics.median(compiled) if compiled else None,
        cpu=not rounds[0][0].runtime.is_gpu,
    )
