"""Inline SVG charts for the HTML report: grouped bars and lines on a log axis.

Pure string building, no dependencies; values are speedups (positive), drawn
on a log scale with a line at 1×.
"""

from __future__ import annotations

import math
from html import escape

from stark_lsp.speedups import SIGN, ratio_text

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
_NICE = (1, 2, 5)


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks covering [lo, hi] (both > 0), 1 always included."""
    lo, hi = min(lo, 1.0), max(hi, 1.0)
    ticks = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in _NICE:
            v = m * 10.0 ** e
            if lo / 1.0001 <= v <= hi * 1.0001:
                ticks.append(v)
    if len(ticks) > 9:  # keep powers of ten only
        ticks = [t for t in ticks if abs(math.log10(t) - round(math.log10(t))) < 1e-9]
    return ticks


def _range(values: list[float]) -> tuple[float, float]:
    xs = [v for v in values if v and v > 0 and math.isfinite(v)] or [1.0]
    lo, hi = min(min(xs), 1.0), max(max(xs), 1.0)
    if hi / lo < 2.0:
        lo, hi = lo / 1.5, hi * 1.5
    return lo / 1.15, hi * 1.15


def tick_label(v: float) -> str:
    """``0.001×``, ``1×``, ``100×``: a power of ten in fixed point, never exponent notation."""
    if v >= 1:
        return f"{v:.0f}{SIGN}"
    return f"{v:.{max(0, -math.floor(math.log10(v) + 1e-9))}f}{SIGN}"


class _Axis:
    def __init__(self, lo: float, hi: float, top: float, bottom: float):
        self.lo, self.hi, self.top, self.bottom = math.log10(lo), math.log10(hi), top, bottom

    def y(self, v: float) -> float:
        f = (math.log10(v) - self.lo) / (self.hi - self.lo)
        return self.bottom - f * (self.bottom - self.top)


def _y_axis(axis: _Axis, left: float, right: float, ticks: list[float]) -> list[str]:
    parts = []
    for t in ticks:
        y = axis.y(t)
        stroke = "#555" if abs(t - 1.0) < 1e-12 else "#ddd"
        parts.append(f'<line x1="{left:.1f}" x2="{right:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{stroke}"/>')
        parts.append(f'<text x="{left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{tick_label(t)}</text>')
    return parts


def legend(names: list[str], x: float, y: float) -> list[str]:
    parts = []
    for i, n in enumerate(names):
        parts.append(f'<rect x="{x + i * 110:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{color(i)}"/>')
        parts.append(f'<text x="{x + i * 110 + 14:.1f}" y="{y:.1f}" font-size="12">{escape(n)}</text>')
    return parts


def bar_chart(groups: list[str], series: list[str], values: dict[tuple[str, str], float | None],
              title: str = "", height: int = 300) -> str:
    """One cluster per group (task), one bar per series (policy); a missing value draws a small x."""
    left, right_pad, top, bottom_pad = 56, 90, 40, 110  # room for the slanted task names
    bar_w = 12
    cluster = bar_w * len(series) + 14
    width = max(left + 8 * len(title) + right_pad, 110 * len(series) + left, left + right_pad + cluster * len(groups))
    bottom = height - bottom_pad
    lo, hi = _range([v for v in values.values() if v])
    axis = _Axis(lo, hi, top, bottom)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">',
             f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>']
    parts += legend(series, left, 32)
    parts += _y_axis(axis, left, width - right_pad, log_ticks(lo, hi))
    base = axis.y(1.0)
    for gi, g in enumerate(groups):
        x0 = left + gi * cluster + 7
        for si, s in enumerate(series):
            x = x0 + si * bar_w
            v = values.get((g, s))
            if v is None or v <= 0:
                parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{base - 2:.1f}" text-anchor="middle" font-size="10" '
                             f'fill="{color(si)}">x<title>{escape(g)} / {escape(s)}: no correct kernel</title></text>')
                continue
            y = axis.y(v)
            parts.append(f'<rect x="{x:.1f}" y="{min(y, base):.1f}" width="{bar_w - 2}" height="{abs(base - y):.1f}" '
                         f'fill="{color(si)}"><title>{escape(g)} / {escape(s)}: {ratio_text(v)} eager</title></rect>')
        cx = x0 + bar_w * len(series) / 2
        parts.append(f'<text transform="translate({cx:.1f},{bottom + 8}) rotate(40)" font-size="11">{escape(g)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def line_chart(series: dict[str, list[float | None]], title: str = "", x_label: str = "attempt",
               width: int = 560, height: int = 280) -> str:
    """One line per series over x = 0..n-1; None values break nothing (the point is skipped)."""
    left, right_pad, top, bottom_pad = 56, 16, 40, 36
    bottom = height - bottom_pad
    n = max((len(v) for v in series.values()), default=1)
    lo, hi = _range([v for vs in series.values() for v in vs if v])
    axis = _Axis(lo, hi, top, bottom)

    def x(i: int) -> float:
        return left + (width - left - right_pad) * (i / max(1, n - 1))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">',
             f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>']
    parts += legend(list(series), left, 32)
    parts += _y_axis(axis, left, width - right_pad, log_ticks(lo, hi))
    step = max(1, math.ceil(n / 10))
    for i in range(0, n, step):
        parts.append(f'<text x="{x(i):.1f}" y="{bottom + 14}" text-anchor="middle" font-size="11">{i}</text>')
    parts.append(f'<text x="{(left + width) / 2:.1f}" y="{height - 4}" text-anchor="middle" font-size="11">{escape(x_label)}</text>')
    for si, (name, vs) in enumerate(series.items()):
        pts = [(x(i), axis.y(v), v, i) for i, v in enumerate(vs) if v is not None and v > 0]
        if not pts:
            continue
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in pts)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{color(si)}" stroke-width="2"/>')
        for px, py, v, i in pts:
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{color(si)}">'
                         f'<title>{escape(name)} after {i}: {ratio_text(v)} eager</title></circle>')
    parts.append("</svg>")
    return "\n".join(parts)
