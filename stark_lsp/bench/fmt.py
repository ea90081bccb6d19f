"""Number formats shared by the text table and the HTML report.

Speedups are not formatted here: every table column of ratios uses
``stark_lsp.speedups.ratio_text`` under a heading that names the baseline.
"""

from __future__ import annotations

from typing import Any

from stark_lsp.search.pace import duration  # noqa: F401 - the bench's tables and lines write durations so
from stark_lsp.search.usage import count_text


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def num(x: Any, spec: str = "g") -> str:
    return "-" if x is None else format(x, spec)


def tokens(n: int) -> str:
    """``12.3k``: as ``stark show`` writes a count (``search/usage.py``)."""
    return count_text(n)


def floor_cell(floor: dict[str, Any] | None) -> str:
    """``0.52 ms (memory)``, or ``-``."""
    if not floor or not floor.get("floor_ms"):
        return "-"
    return f"{floor['floor_ms']:.3g} ms ({floor.get('bound', '?')})"


def llm_time(seconds: float | None) -> str:
    """The LLM's wall time (``duration``), ``-`` where none was measured (the built-in team)."""
    return duration(seconds) if seconds else "-"
