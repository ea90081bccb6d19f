"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, no CDN),
built from the JSON document alone."""

from __future__ import annotations

from html import escape
from typing import Any

from stark_lsp.speedups import CPU_NOTE, ratio_text

from . import fmt, metrics, svg
from .metrics import FAST_P, fast_key
from .record import RunRecord
from .table import ceilings_line

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 10px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child, td.l { text-align: left; }
th { background: #f4f4f4; }
.warn { background: #fff3cd; padding: 6px 10px; border-radius: 4px; }
.muted { color: #777; }
.grid { display: flex; flex-wrap: wrap; gap: 8px; }
code { background: #f4f4f4; padding: 0 3px; }
"""


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def policy_rows(summary: dict[str, dict[str, Any]]) -> list[list[str]]:
    return [[p, str(s["runs"]), str(s["errors"]), fmt.pct(s["success_rate"]), *[fmt.pct(s[fast_key(q)]) for q in FAST_P],
             ratio_text(s["geomean_speedup"]), ratio_text(s["geomean_speedup_vs_compiled"]),
             fmt.num(s["median_best_attempt"]), fmt.num(s["candidates_per_min"], ".1f"), fmt.duration(s["wall_s"]),
             fmt.tokens(s["prompt_tokens"]), fmt.tokens(s["completion_tokens"]), fmt.llm_time(s.get("llm_seconds")),
             f"${s['cost_usd']:.2f}"]
            for p, s in summary.items()]


def task_rows(tasks: dict[str, dict[str, dict[str, Any]]]) -> list[list[str]]:
    rows = []
    for t, per in tasks.items():
        for p, s in per.items():
            fl = s.get("floor") or {}
            rows.append([t, p, f"{s['successes']}/{s['runs']}", ratio_text(s["median_speedup"]),
                         ratio_text(s["median_speedup_vs_compiled"]), ratio_text(s["root_speedup"]),
                         fmt.num(s["median_best_attempt"]), fmt.ms(s["best_ms"]), fmt.ms(s["reference_ms"]),
                         fmt.ms(s["compiled_ms"]), fmt.ms(fl.get("memory_floor_ms")), fmt.ms(fl.get("compute_floor_ms")),
                         fl.get("bound", "-"), ratio_text(s["floor_gap"])])
    return rows


def render_html(doc: dict[str, Any]) -> str:
    cfg = doc["config"]
    policies = list(cfg["policies"])
    summary = doc["summary"]
    records = [RunRecord.from_dict(r) for r in doc.get("runs", [])]
    task_names = [t["name"] for t in doc["tasks"] if t["name"] in summary["tasks"]]
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>stark bench</title><style>{CSS}</style></head><body>",
           "<h1>stark bench</h1>",
           f"<p>{escape(str(len(doc['tasks'])))} tasks &times; {escape(', '.join(policies))} &times; "
           f"{cfg['repeat']} repeat(s), budget {cfg['budget']}, seeds {cfg['seed']}..{cfg['seed'] + cfg['repeat'] - 1}, "
           f"team <code>{escape(str(cfg['llm']))}</code>{' (' + escape(str(cfg.get('model'))) + ')' if cfg.get('model') else ''}. "
           f"Device: {escape(str(doc.get('hardware', '?')))}. Started {escape(str(doc.get('started', '')))}.</p>"]
    if not doc.get("complete"):
        out.append(f"<p class='warn'>Incomplete: {len(records)} of {doc.get('planned_runs', '?')} runs so far.</p>")
    if records and not any(r.is_gpu for r in records):
        out.append(f"<p class='warn'>CPU run (Triton interpreter / eager PyTorch on the CPU): every × figure "
                   f"comes from the {escape(CPU_NOTE)}.</p>")
    out.append("<h2>By policy</h2>")
    out.append(_table(["policy", "runs", "errors", "success", *[f"fast{q:g}" for q in FAST_P], "geomean × eager",
                       "geomean × compile", "best@ (median)", "cand/min", "wall", "prompt tok", "completion tok", "llm time", "cost"],
                      policy_rows(summary["policies"])))
    out.append("<p class='muted'>success: the search made a correct kernel; fast<i>p</i>: correct and more than "
               "<i>p</i> times faster than eager PyTorch (each task and repeat counted once); geomeans over the runs "
               "with a correct kernel; best@: the attempt that made the best kernel.</p>")
    values = {(t, p): summary["tasks"][t].get(p, {}).get("median_speedup") for t in task_names for p in policies}
    out.append(svg.bar_chart(task_names, policies, values, title="best speedup over eager, per task (median of repeats)"))
    out.append(svg.line_chart(summary["curves"], title="best speedup so far against attempts (geomean over tasks)"))
    out.append("<h2>By task</h2>")
    out.append(_table(["task", "policy", "ok", "best × eager", "best × compile", "yours × eager", "best@", "best ms",
                       "eager ms", "compile ms", "memory floor ms", "compute floor ms", "bound", "ms ÷ floor"],
                      task_rows(summary["tasks"])))
    out.append(f"<p class='muted'>{escape(ceilings_line(summary.get('ceilings')))}. ms ÷ floor: the best kernel's time "
               "over the larger of the two floors (1.00× = at the hardware limit). yours × eager: the task's own kernel "
               "against eager PyTorch (for a KernelBench task, the reference itself: 1× by construction).</p>")
    out.append("<div class='grid'>")
    for t in task_names:
        mine = [r for r in records if r.task == t]
        curves = {p: metrics.curve([r for r in mine if r.policy == p], int(cfg["budget"])) for p in policies}
        out.append(svg.line_chart(curves, title=t, width=340, height=220))
    out.append("</div>")
    notes = [r for r in records if r.error or r.note]
    if notes:
        out.append("<h2>Errors and notes</h2>")
        out.append(_table(["task", "policy", "repeat", "outcome", "error / note"],
                          [[r.task, r.policy, str(r.repeat), r.outcome, (r.error or r.note)[:300]] for r in notes]))
    skipped = [s for s in doc.get("skipped", []) if not s.get("quiet")]
    if skipped:
        out.append("<h2>Skipped files</h2>")
        out.append(_table(["file", "reason"], [[s["path"], s["reason"]] for s in skipped]))
    out.append("</body></html>")
    return "\n".join(out)
