"""What a bench runs: the configuration and the schedule of runs (pure).

Every task runs under every policy with the same budget; repeat ``r`` uses
seed ``seed + r`` for every policy, so policies differ only in their rule.
Runs are ordered task by task, repeat by repeat, policy by policy, so a run cut
short has compared the policies on the tasks it finished.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from stark_lsp.tasks.spec import TaskSpec

DEFAULT_POLICIES = ("stark", "sampling", "reflexion", "greedy")


@dataclass
class BenchConfig:
    policies: list[str] = field(default_factory=lambda: list(DEFAULT_POLICIES))
    budget: int = 30
    repeat: int = 1
    seed: int = 0
    llm: str = "builtin"
    model: str | None = None
    base_url: str | None = None
    device: str = "auto"
    small: bool = False  # STARK_SMALL=1: the harnesses' small shapes
    concurrency: int = 2
    workers: int = 1
    jobs: int = 1  # tasks searched at once per GPU (their timing takes turns: the GPU lock)
    wall_time_s: float | None = None  # per run
    compile_baseline: bool = True  # also time torch.compile of the reference (GPU)
    trials: int = 5  # correctness trials per evaluation
    retime_top: int = 3  # each search re-times its top K candidates (search/retime.py; 0: off) ...
    retime_rounds: int = 3  # ... this many rounds, in turn with the root
    screen: bool = True  # candidates timed briefly (search/retime.py screen_options) when the leaders are re-timed
    context_tokens: int = 12000  # the token budget of one LLM prompt
    token_budget: int | None = None  # per run: the LLM team's tokens after which no attempt starts (None: none)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunKey:
    task: int  # index into the task list
    policy: str
    repeat: int
    seed: int

    def label(self, task_names: list[str]) -> str:
        return f"{task_names[self.task]} / {self.policy} / r{self.repeat}"


def parse_policies(text: str, known: tuple[str, ...]) -> list[str]:
    """``"stark,greedy"`` -> ``["stark", "greedy"]``; unknown names raise ValueError."""
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise ValueError("no policy given")
    bad = [p for p in names if p not in known]
    if bad:
        raise ValueError(f"unknown polic{'y' if len(bad) == 1 else 'ies'} {', '.join(bad)}: choose from {', '.join(known)}")
    return list(dict.fromkeys(names))


def schedule(tasks: list[TaskSpec], config: BenchConfig) -> list[RunKey]:
    return [
        RunKey(i, policy, r, config.seed + r)
        for i in range(len(tasks))
        for r in range(config.repeat)
        for policy in config.policies
    ]
