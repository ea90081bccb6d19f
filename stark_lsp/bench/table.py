"""The text tables ``stark bench`` prints: one row per policy, then one per task and policy."""

from __future__ import annotations

from typing import Any

from . import fmt
from .metrics import FAST_P, fast_key


def render(rows: list[list[str]], header: list[str], right: set[int]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def policy_table(summary: dict[str, dict[str, Any]]) -> str:
    header = ["policy", "runs", "attempted", "success"] + [f"fast{p:g}" for p in FAST_P] + [
        "fast1 x compile", "geomean x eager", "x compile", "attempted x eager", "best@", "cand/min", "wall", "tokens"]
    rows = []
    for policy, s in summary.items():
        rows.append([
            policy, str(s["runs"]) + (f" ({s['errors']} err)" if s["errors"] else ""),
            fmt.pct(s.get("attempted_rate")), fmt.pct(s["success_rate"]),
            *[fmt.pct(s[fast_key(p)]) for p in FAST_P], fmt.pct(s.get("fast_1_vs_compiled")),
            fmt.speedup(s["geomean_speedup"]), fmt.speedup(s["geomean_speedup_vs_compiled"]),
            fmt.speedup(s.get("geomean_attempted")),
            fmt.num(s["median_best_attempt"]), fmt.num(s["candidates_per_min"], ".1f"), fmt.duration(s["wall_s"]),
            fmt.tokens(s["prompt_tokens"] + s["completion_tokens"]),
        ])
    return render(rows, header, right=set(range(1, len(header))))


def task_table(tasks: dict[str, dict[str, dict[str, Any]]]) -> str:
    header = ["task", "policy", "ok", "best x eager", "x compile", "root x", "best@", "best ms", "eager ms",
              "floor", "x floor"]
    rows = []
    for task, per_policy in tasks.items():
        for policy, s in per_policy.items():
            rows.append([
                task, policy, f"{s['successes']}/{s['runs']}", fmt.speedup(s["median_speedup"]),
                fmt.speedup(s["median_speedup_vs_compiled"]), fmt.speedup(s["root_speedup"]),
                fmt.num(s["median_best_attempt"]), fmt.ms(s["best_ms"]), fmt.ms(s["reference_ms"]),
                fmt.floor_text(s["floor"]), fmt.num(s["floor_gap"], ".2f"),
            ])
    return render(rows, header, right=set(range(2, len(header))))


def ceilings_line(ceilings: dict[str, Any] | None) -> str:
    if not ceilings:
        return "hardware floors: not reported (CPU, or an evaluator without floors)"
    peaks = ", ".join(f"{v:.0f} TFLOP/s {k}" for k, v in ceilings.get("peak_tflops", {}).items() if v)
    bw = ceilings.get("bandwidth_gbs")
    return f"ceilings measured in this run: copy {bw:.0f} GB/s" + (f"; matrix product {peaks}" if peaks else "") if bw else \
        f"ceilings measured in this run: {peaks or '-'}"
