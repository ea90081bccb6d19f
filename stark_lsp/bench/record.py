"""What one run (a task under one policy with one seed) produced, read off its tree.

Pure: nodes in, a ``RunRecord`` out. Definitions (docs/BENCH.md):

* *best*: the fastest correct node the search made (an attempt, not the root,
  not a duplicate), by the rule of ``stark show`` (``tree_view.best_node``);
  ``success`` is that such a node exists. When the search re-timed its leaders
  (``Node.retimed``), the best is the one with the highest re-timed median, and
  its figures are the re-timed ones, as ``stark show`` prints them
  (``Node.eager``, ``speedups.shown_ms``; ``single_speedup`` keeps the search's
  own measurement).
* *attempted*: the team made at least one candidate that was evaluated; a run
  the team refused outright (e.g. a model the built-in team cannot write in
  Triton) is not attempted, and ``refused`` says why.
* *curve*: after each attempt k (0 = the root alone), the best speedup among the
  correct nodes so far, root included: what a user holds after k attempts.
* *evaluated*: candidates the evaluator judged (the root included, duplicates not).
* *reference_ms*: the eager time that goes with the best's figure (``best_ms`` × ``best_speedup``, the
  re-timing's where it re-timed the best), else the eager time of the first timed evaluation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from stark_lsp.agents.builtin.kb_lowering import is_compiled_seed
from stark_lsp.search import usage
from stark_lsp.search.node import ABANDONED, ROOT, Node
from stark_lsp.search.tree_view import best_node
from stark_lsp.speedups import paired_eager_ms, shown_ms

DONE = "done"  # the search ran to its budget (or wall time)
ERROR = "error"  # the search stopped on an error (the evaluator failed, ...)
CANCELLED = "cancelled"  # interrupted


@dataclass
class RunRecord:
    task: str  # display name
    task_key: str  # TaskSpec.task_id()
    kind: str
    policy: str
    repeat: int
    seed: int
    budget: int
    outcome: str = DONE
    error: str = ""
    note: str = ""  # e.g. why the torch.compile baseline is missing
    root_status: str | None = None
    root_speedup: float | None = None
    reference_ms: float | None = None
    compiled_ms: float | None = None  # torch.compile of the reference, when measured
    success: bool = False
    best_node: int | None = None
    best_attempt: int | None = None
    best_summary: str = ""
    best_speedup: float | None = None  # against eager
    best_speedup_vs_compiled: float | None = None
    best_ms: float | None = None
    attempts: int = 0  # finished attempts
    spent: int = 0  # attempts that spent the budget (Node.spends_budget)
    attempted: bool = False  # a candidate of the team was evaluated
    refused: str = ""  # why nothing was attempted (the agent's "nothing new" reason)
    retimed: dict[str, Any] | None = None  # the best's re-timing (search.retime.Retimed.to_dict())
    single_speedup: float | None = None  # the best's speedup from its one evaluation in the search
    evaluated: int = 0
    correct: int = 0  # correct attempts
    failed: int = 0  # failed attempts (agent errors included)
    duplicates: int = 0
    wall_s: float = 0.0
    candidates_per_min: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0
    llm_seconds: float = 0.0  # the LLM's wall time, all its requests (Usage.seconds); 0 for the built-in team
    device: str = ""
    gpu: int | None = None  # which GPU of the machine ran it (stark bench --gpus)
    is_gpu: bool = False
    degenerate: str = ""  # why the task cannot tell a right answer from a constant (EvalResult.degenerate)
    floor: dict[str, Any] | None = None  # the task's floor (Runtime.floor), when the evaluator reports one
    floor_gap: float | None = None  # best_ms / floor_ms: 1.0 is at the hardware limit
    curve: list[float | None] = field(default_factory=list)
    # the candidate written from torch.compile's code (agents/builtin/inductor_seed.py), when the team made one:
    # its own figure against torch.compile, and how many times faster the search's best is than it (both figures
    # from their evaluations in the search, screened alike; not the re-timing)
    seed_node: int | None = None
    seed_speedup_vs_compiled: float | None = None
    gain_over_seed: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunRecord":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def floor_dict(floor: Any) -> dict[str, Any] | None:
    """``Runtime.floor`` (a dataclass, a dict, or absent) as a plain dict with ``floor_ms``."""
    if floor is None:
        return None
    if isinstance(floor, dict):
        d = dict(floor)
    else:
        keys = ("bytes", "flops", "memory_floor_ms", "compute_floor_ms", "bandwidth_gbs", "peak_tflops", "dtype", "bound")
        d = {k: getattr(floor, k) for k in keys if hasattr(floor, k)}
    mem, comp = d.get("memory_floor_ms") or 0.0, d.get("compute_floor_ms") or 0.0
    d["floor_ms"] = max(mem, comp)
    return d


def _runtime(node: Node) -> Any:
    return node.result.runtime if node.result is not None else None


def best_curve(nodes: list[Node], budget: int) -> list[float | None]:
    """Best correct speedup after attempt k, for k = 0 (root) .. budget."""
    by_attempt: dict[int, float] = {}
    for n in nodes:
        if n.correct and n.speedup is not None:
            by_attempt[n.attempt] = max(by_attempt.get(n.attempt, 0.0), n.speedup)
    out: list[float | None] = []
    best: float | None = None
    for k in range(budget + 1):
        if k in by_attempt:
            best = by_attempt[k] if best is None else max(best, by_attempt[k])
        out.append(best)
    return out


def build_record(nodes: list[Node], *, task: str, task_key: str, kind: str, policy: str, repeat: int,
                 seed: int, budget: int, wall_s: float, outcome: str = DONE, error: str = "") -> RunRecord:
    live = [n for n in nodes if n.status != ABANDONED]
    root = next((n for n in live if n.kind == ROOT), None)
    attempts = [n for n in live if n.kind != ROOT]
    finished = [n for n in attempts if n.completed]
    own = [n for n in attempts if n.correct and n.speedup is not None and n.duplicate_of is None]
    best = best_node(own)  # the tree view's rule (TreeStore.best) over the team's own candidates
    evaluated = [n for n in live if n.evaluated and n.duplicate_of is None]
    rec = RunRecord(task=task, task_key=task_key, kind=kind, policy=policy, repeat=repeat, seed=seed, budget=budget,
                    outcome=outcome, error=error, wall_s=wall_s)
    rec.attempts = len(finished)
    rec.spent = sum(1 for n in finished if n.spends_budget)
    rec.attempted = any(n.evaluated and n.duplicate_of is None for n in attempts)
    if not rec.attempted:
        rec.refused = next((n.error for n in reversed(finished) if n.error), "")
    rec.evaluated = len(evaluated)
    rec.correct = sum(1 for n in finished if n.correct)
    rec.failed = sum(1 for n in finished if n.unsuccessful)
    rec.duplicates = sum(1 for n in finished if n.duplicate_of is not None)
    rec.candidates_per_min = 60.0 * len(evaluated) / wall_s if wall_s > 0 else None
    u = usage.total(nodes)  # abandoned nodes cost tokens too
    rec.prompt_tokens, rec.completion_tokens, rec.cost_usd, rec.llm_calls, rec.llm_seconds = (
        u.prompt_tokens, u.completion_tokens, u.cost_usd, u.calls, u.seconds)
    if root is not None:
        rec.root_status = root.status
        rec.root_speedup = root.speedup if root.correct else None
    timed = [rt for rt in (_runtime(n) for n in ([best] if best else []) + ([root] if root else []) + evaluated) if rt]
    if timed:
        rt = timed[0]
        rec.device, rec.is_gpu = rt.device, bool(rt.is_gpu)
        rec.degenerate = next((n.result.degenerate for n in [*evaluated, root] if n is not None and n.result
                               and n.result.degenerate), "")
        rec.reference_ms = rt.reference.median_ms if rt.reference else None
        compiled = next((r.compiled_reference for r in timed if r.compiled_reference is not None), None)
        rec.compiled_ms = compiled.median_ms if compiled else None
        rec.floor = floor_dict(next((getattr(r, "floor", None) for r in timed if getattr(r, "floor", None)), None))
    if best is not None:
        rt = _runtime(best)
        rec.success = True
        rec.best_node, rec.best_attempt, rec.best_summary = best.id, best.attempt, best.summary
        # the figures `stark show` prints for it: re-timed first (speedups.vs_eager / shown_ms)
        rec.best_speedup, rec.best_ms = best.eager, shown_ms(best.runtime_ms, best.retimed)
        rec.single_speedup = best.speedup
        if best.retimed:
            rec.retimed = dict(best.retimed)
            # eager's time that goes with the reported figure (best_ms x best_speedup: the re-timing's), not
            # the best's first evaluation's: on the CPU eager is timed in turn with each evaluation, under the
            # load of its moment (on a GPU, one pinned eager timing: the same figure)
            rec.reference_ms = paired_eager_ms(rec.best_ms, rec.best_speedup) or rec.reference_ms
        if best.retimed and best.retimed.get("speedup_vs_compiled"):
            rec.best_speedup_vs_compiled = best.retimed["speedup_vs_compiled"]
        elif best.retimed and rec.compiled_ms and rec.best_ms:
            rec.best_speedup_vs_compiled = rec.compiled_ms / rec.best_ms
        elif rt is not None and rt.speedup_vs_compiled is not None:
            rec.best_speedup_vs_compiled = rt.speedup_vs_compiled
        elif rec.compiled_ms and best.runtime_ms:
            rec.best_speedup_vs_compiled = rec.compiled_ms / best.runtime_ms
        if rec.floor and rec.floor["floor_ms"] > 0 and rec.best_ms:
            rec.floor_gap = rec.best_ms / rec.floor["floor_ms"]
    rec.curve = best_curve(live, budget)
    seed = next((n for n in own if n.parent_id == (root.id if root else None) and is_compiled_seed(n.summary or "")),
                None)
    if seed is not None:
        rec.seed_node = seed.id
        srt = _runtime(seed)
        rec.seed_speedup_vs_compiled = srt.speedup_vs_compiled if srt is not None else None
        if best is seed:
            rec.gain_over_seed = 1.0
        elif best is not None and best.runtime_ms and seed.runtime_ms:  # both from their evaluations in the search
            rec.gain_over_seed = seed.runtime_ms / best.runtime_ms
    return rec
