"""What the context window says was tried, and how it went.

Reads the window's history (``AgentContext.window.history``, ``context_window.Window``): full
sources give whole configurations (the values of every tunable), unified diffs give the values on
their ``+`` lines, and summaries give ``set X to V`` phrases, a status and a speedup.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterable

from stark_lsp.agents.builtin.instructions import find_set_instructions
from stark_lsp.agents.builtin.tunable import Tunable, Value, format_value
from stark_lsp.agents.builtin.tunables import find_tunables
from stark_lsp.context_window import WindowEntry

_SPEEDUP = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*[x×](?!\w)")  # "2.50x" and speedups.py's "2.50× eager"
_FAILED = re.compile(r"\b(compile_error|runtime_error|crashed|timeout|incorrect|cheat|failed|error|agent_error)\b", re.I)


_PREFIX = re.compile(r"^\s*#\d+\s+\w+:\s*")


def status_part(summary: str) -> str:
    """The outcome in a summary: ``#3 plan: ok, 2.50x, 0.6 ms: what`` gives
    ``ok, 2.50x, 0.6 ms``; a summary without the ``#id kind:`` prefix gives
    its text up to the first colon."""
    return _PREFIX.sub("", summary or "").split(":")[0]


def is_diff(code: str) -> bool:
    head = code.lstrip()[:400]
    return head.startswith(("--- ", "diff ", "@@")) or "\n@@ " in head


def config_of(tunables: list[Tunable]) -> dict[str, Value]:
    """Values by a key unique within one source: name, or name#k for repeats."""
    out: dict[str, Value] = {}
    seen: dict[str, int] = {}
    for t in tunables:
        k = seen.get(t.name, 0)
        seen[t.name] = k + 1
        out[t.name if k == 0 else f"{t.name}#{k}"] = t.value
    return out


def frozen(config: dict[str, Value]) -> tuple:
    return tuple(sorted((k, format_value(v)) for k, v in config.items()))


@dataclass
class Observation:
    role: str
    values: dict[str, Value]  # known values by config key (full source) or name (diff)
    speedup: float | None
    failed: bool
    full: bool


@dataclass
class History:
    observations: list[Observation] = field(default_factory=list)
    root: dict[str, Value] | None = None
    root_source: str | None = None

    def configs(self) -> set[tuple]:
        return {frozen(o.values) for o in self.observations if o.full}

    def child_pairs(self) -> set[tuple[str, str]]:
        return {(k.split("#")[0], format_value(v)) for o in self.observations if o.role == "child" for k, v in o.values.items() if not o.full}


def read_history(history: Iterable[WindowEntry], language: str) -> History:
    h = History()
    for it in history:
        failed = bool(_FAILED.search(status_part(it.summary)))
        speed = speedup_in(it.summary)
        if it.code and not is_diff(it.code):
            values = config_of(find_tunables(it.code, language))
            full = True
            if it.section == "root":
                h.root, h.root_source = values, it.code
        else:
            values = {}
            if it.code:
                added = "\n".join(l[1:] for l in it.code.splitlines() if l.startswith("+") and not l.startswith("+++"))
                for t in find_tunables(added, language, fragment=True):
                    values.setdefault(t.name, t.value)
            for s in find_set_instructions(it.summary or ""):
                values.setdefault(s.name, s.value)
            full = False
        if values:
            h.observations.append(Observation(it.section, values, speed, failed, full))
    return h


def log_value(v: Value) -> float | None:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, tuple):
        return math.log2(max(1, math.prod(v)))
    if isinstance(v, int) and v > 0:
        return math.log2(v)
    return None


def speedup_in(summary: str) -> float | None:
    head = status_part(summary)
    if _FAILED.search(head):
        return None
    m = _SPEEDUP.search(head)
    return float(m.group(1)) if m else None


def preferred_direction(h: History, name: str, current: Value, node_speedup: float | None = None) -> float:
    """+1 if larger values of ``name`` did better than the node, -1 if smaller
    did, 0 if unknown. Failures count against their direction."""
    cur = log_value(current)
    if cur is None:
        return 0.0
    score = 0.0
    best: tuple[float, float] | None = None  # speedup, log value
    for o in h.observations:
        v = o.values.get(name)
        lv = log_value(v) if v is not None else None
        if lv is None or lv == cur:
            continue
        sign = 1.0 if lv > cur else -1.0
        if o.failed:
            score -= 0.5 * sign
        elif o.speedup is not None and (best is None or o.speedup > best[0]):
            best = (o.speedup, lv)
    if best is not None:
        toward = 1.0 if best[1] > cur else -1.0
        beats_node = node_speedup is None or best[0] > node_speedup
        score += toward if beats_node else -0.5 * toward
    return max(-1.0, min(1.0, score))


def failed_values(h: History, name: str) -> list[Value]:
    return [o.values[name] for o in h.observations if o.failed and name in o.values]


NOISE_BAND = 0.02  # a move that changed its parent's figure by less than this is inside a GPU timing's noise
FLAT_AFTER = 2  # children that moved one tunable inside the noise, and none beyond it: stop preferring it


def flat_tunables(h: History, node_speedup: float | None, band: float = NOISE_BAND) -> set[str]:
    """Tunables whose moves from this node changed nothing the timing can tell: at least ``FLAT_AFTER``
    children set that tunable alone, each judged within ``band`` of the node's figure, and none beyond it
    (a failure is not a measurement: it counts neither way). The Plan agent stops spending the budget on
    them while other moves are left (docs/AGENTS.md)."""
    if not node_speedup:
        return set()
    inside: dict[str, int] = {}
    beyond: set[str] = set()
    for o in h.observations:
        if o.role != "child" or o.full or o.failed or o.speedup is None or len(o.values) != 1:
            continue
        [name] = o.values
        if abs(o.speedup / node_speedup - 1.0) < band:
            inside[name] = inside.get(name, 0) + 1
        else:
            beyond.add(name)
    return {name for name, k in inside.items() if k >= FLAT_AFTER and name not in beyond}

