"""The text tables ``stark bench`` prints: one row per policy, then one per task and policy."""

from __future__ import annotations

from typing import Any

from stark_lsp.speedups import CPU_NOTE, ratio_text

from . import fmt
from .metrics import FAST_P, fast_key


def text_table(rows: list[list[str]], header: list[str], right: set[int]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def cpu_note(cpu: bool) -> str:
    """The line under a table whose ratios come from CPU timings."""
    return f"\n× figures ({CPU_NOTE}; eager PyTorch on the CPU)" if cpu else ""


def policy_table(summary: dict[str, dict[str, Any]], cpu: bool = False) -> str:
    """``attempted``: the share of runs where the team offered a candidate (bench/record.py);
    ``geomean attempted × eager``: the geomean over those runs only."""
    header = ["policy", "runs", "attempted", "success"] + [f"fast{p:g}" for p in FAST_P] + [
        "fast1 × compile", "geomean × eager", "geomean × compile", "geomean attempted × eager",
        "best@", "cand/min", "wall", "tokens", "llm time"]
    rows = []
    for policy, s in summary.items():
        rows.append([
            policy, str(s["runs"]) + (f" ({s['errors']} err)" if s["errors"] else ""),
            fmt.pct(s.get("attempted_rate")), fmt.pct(s["success_rate"]),
            *[fmt.pct(s[fast_key(p)]) for p in FAST_P], fmt.pct(s.get("fast_1_vs_compiled")),
            ratio_text(s["geomean_speedup"]), ratio_text(s["geomean_speedup_vs_compiled"]),
            ratio_text(s.get("geomean_attempted")),
            fmt.num(s["median_best_attempt"]), fmt.num(s["candidates_per_min"], ".1f"), fmt.duration(s["wall_s"]),
            fmt.tokens(s["prompt_tokens"] + s["completion_tokens"]), fmt.llm_time(s.get("llm_seconds")),
        ])
    return text_table(rows, header, right=set(range(1, len(header)))) + seed_lines(summary) + cpu_note(cpu)


def seed_lines(summary: dict[str, dict[str, Any]]) -> str:
    """Per policy, the runs whose team started from torch.compile's code: that start against
    torch.compile, and what the search added on top of it (its best against that start)."""
    lines = [f"\n{policy}: {s['seeded']} of {s['runs']} runs started from torch.compile's code, which ran "
             f"{ratio_text(s.get('geomean_seed_vs_compiled'))} torch.compile (geomean); the search's best is "
             f"{ratio_text(s.get('geomean_gain_over_seed'))} that start"
             for policy, s in summary.items() if s.get("seeded")]
    return "".join(lines)


def task_table(tasks: dict[str, dict[str, dict[str, Any]]], cpu: bool = False) -> str:
    """``yours × eager``: the user's kernel (the root) against eager; for a KernelBench
    task it is the reference itself, 1× by construction."""
    header = ["task", "policy", "ok", "best × eager", "best × compile", "yours × eager", "best@", "best ms",
              "eager ms", "floor", "ms ÷ floor"]
    rows = []
    for task, per_policy in tasks.items():
        for policy, s in per_policy.items():
            rows.append([
                task, policy, f"{s['successes']}/{s['runs']}", ratio_text(s["median_speedup"]),
                ratio_text(s["median_speedup_vs_compiled"]), ratio_text(s["root_speedup"]),
                fmt.num(s["median_best_attempt"]), fmt.ms(s["best_ms"]), fmt.ms(s["reference_ms"]),
                fmt.floor_cell(s["floor"]), ratio_text(s["floor_gap"]),
            ])
    return text_table(rows, header, right=set(range(2, len(header)))) + cpu_note(cpu)


def ceilings_line(ceilings: dict[str, Any] | None) -> str:
    if not ceilings:
        return "hardware floors: not reported (CPU, or an evaluator without floors)"
    peaks = ", ".join(f"{v:.0f} TFLOP/s {k}" for k, v in ceilings.get("peak_tflops", {}).items() if v)
    bw = ceilings.get("bandwidth_gbs")
    return f"ceilings measured in this run: copy {bw:.0f} GB/s" + (f"; matrix product {peaks}" if peaks else "") if bw else \
        f"ceilings measured in this run: {peaks or '-'}"
