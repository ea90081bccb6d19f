"""Settings of one evaluation: trials, tolerances, timing budget, time limits."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass
class EvalOptions:
    trials: int = 5  # correctness trials, each on fresh inputs from its own seed
    seed: int | None = None  # None: fresh random seeds every evaluation (a candidate cannot know them);
    #                          a number makes the inputs reproducible (trial i: seed + i), for debugging only
    atol: float | None = None  # None: chosen by the output's dtype
    rtol: float | None = None
    warmup_ms: float = 50.0  # warm-up calls, discarded (also lets clocks ramp up after a compile)
    reps: int = 100  # the least number of timed calls (in at least 5 batches), unless ...
    # ... timing one candidate would overrun this budget (then at least 3 batches); the baselines and the
    # re-timing of a search's best get twice as long (on the H200 a noisy process ran to 3 s one time in four,
    # a figure it knew to about 3 % by half of that)
    time_budget_s: float = 1.5
    noise_target: float = 0.02  # timing stops once the figure is known to this (relative standard error of its median)
    # the figure to beat (the search's best so far, ms a call): a candidate clearly slower than it is timed only
    # until that is clear (``timing.outpaced``); None: every candidate timed in full (``stark eval``, the re-timing)
    race_ms: float | None = None
    # the baselines' timing (eager and torch.compile, once per task and these settings): None, twice the candidates'
    # budget at their reps and noise target. A search pins them (``pinned_baselines``) so that its screened
    # candidates and its re-timing divide by the same figures, timed once
    baseline_budget_s: float | None = None
    baseline_reps: int | None = None
    baseline_noise_target: float | None = None
    cpu_reps: int = 5  # timed calls on the CPU (Triton interpreter), one per batch
    compile_baseline: bool = False  # also time torch.compile of the reference
    # with the torch.compile baseline of a KernelBench model: the result carries what Inductor wrote for it
    # (``EvalResult.compiled_code``), the built-in team's starting point; a search asks it of its root only
    compiled_code: bool = False
    profile_launches: bool = True  # check that a custom kernel really launched
    compile_timeout_s: float = 300.0  # load_inline can take minutes
    load_timeout_s: float = 60.0  # importing the candidate and its first call (Triton JIT, autotuning)
    run_timeout_s: float = 120.0  # the evaluation in the judge (a load_inline build gets compile_timeout_s on top)
    # ``stark eval --timeout``: a hard cap on the whole evaluation, wall clock from ``Evaluator.evaluate``'s start,
    # the build, the sandbox's start and the baselines included; every phase's limit is cut to what is left
    cap_s: float | None = None
    review_speedup: float = 10.0  # speedups above this are flagged for review
    nvcc_flags: list[str] = field(default_factory=list)

    def for_baselines(self) -> "EvalOptions":
        """The settings the baselines are timed with: their own budget, reps and noise target, no race."""
        return replace(self, time_budget_s=self.baseline_budget_s or 2 * self.time_budget_s,
                       reps=self.baseline_reps or self.reps,
                       noise_target=self.baseline_noise_target or self.noise_target, race_ms=None,
                       baseline_budget_s=None, baseline_reps=None, baseline_noise_target=None)

    def pinned_baselines(self) -> "EvalOptions":
        """These settings with the baselines' fixed to what they are now, whatever the candidates'
        budget, reps and noise target become after (screening, re-timing)."""
        b = self.for_baselines()
        return replace(self, baseline_budget_s=b.time_budget_s, baseline_reps=b.reps,
                       baseline_noise_target=b.noise_target)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "EvalOptions":
        d = d or {}
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})
