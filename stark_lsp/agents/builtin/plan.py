"""The built-in Plan agent: one tunable, one new value, one grounded marker.

Options are the candidate values of every tunable (within a factor of 16 of
the current value), minus those that would repeat a configuration in the
context window (the node itself, its children, the leaderboard, the root) or
a value a child already set. Each option is scored by the rules of thumb in
``priors``, by the direction that did better in the context, against values
that failed, plus a little seeded noise; with probability ``explore`` a
uniformly random option is taken instead. Deterministic under ``ctx.seed``.
"""

from __future__ import annotations

import random
import re

from stark_lsp.agents.base import AgentContext, AgentError, PlanResult
from stark_lsp.agents.builtin.history import (
    config_of,
    failed_values,
    frozen,
    log_value,
    preferred_direction,
    read_history,
    speedup_in,
)
from stark_lsp.agents.builtin.instructions import format_instruction
from stark_lsp.agents.builtin.priors import prior
from stark_lsp.agents.builtin.tunable import Tunable, Value, format_value
from stark_lsp.agents.builtin.tunables import find_tunables
from stark_lsp.markers.syntax import insert_marker, parse_markers

MAX_LOG_STEP = 4.0  # at most x16 or /16 in one move


def config_keys(tunables: list[Tunable]) -> list[str]:
    return list(config_of(tunables).keys())


def marker_id(t: Tunable, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", t.name).strip("_") or "tune"
    mid, k = base, 2
    while mid in taken:
        mid, k = f"{base}_{k}", k + 1
    return mid


def _near(t: Tunable, v: Value) -> bool:
    a, b = log_value(t.value), log_value(v)
    return a is None or b is None or abs(a - b) <= MAX_LOG_STEP


class BuiltinPlanner:
    def __init__(self, explore: float = 0.25, noise: float = 0.15):
        self.explore = explore
        self.noise = noise

    def options(self, ctx: AgentContext) -> list[tuple[float, Tunable, Value]]:
        lang = ctx.task.language
        tunables = find_tunables(ctx.node_source, lang)
        keys = config_keys(tunables)
        node_cfg = config_of(tunables)
        hist = read_history(ctx.items, lang, node_cfg)
        tried = hist.configs() | {frozen(node_cfg)}
        pairs = hist.child_pairs()
        node_speed = speedup_in(ctx.node_summary)
        blocks = [t.value for t in tunables if t.kind == "block_const" and isinstance(t.value, int) and "GROUP" not in t.name.upper()]
        largest = max(blocks) if blocks else None
        out = []
        for key, t in zip(keys, tunables):
            direction = preferred_direction(hist, key, t.value, node_speed)
            bad = [log_value(v) for v in failed_values(hist, key)]
            here = prior(t, t.value, largest)
            cur = log_value(t.value)
            for v in t.candidates:
                if not _near(t, v):
                    continue
                cfg = dict(node_cfg)
                cfg[key] = v
                if frozen(cfg) in tried or (t.name, format_value(v)) in pairs:
                    continue
                score = prior(t, v, largest) - here
                lv = log_value(v)
                if cur is not None and lv is not None and lv != cur:
                    sign = 1.0 if lv > cur else -1.0
                    score += 0.5 * direction * sign
                    for b in bad:  # at or beyond a value that failed, in the same direction
                        if b is not None and (b - cur) * sign > 0 and (lv - b) * sign >= 0:
                            score -= 2.0
                out.append((score, t, v))
        return out

    def plan(self, ctx: AgentContext) -> PlanResult:
        options = self.options(ctx)
        if not options:
            raise AgentError("the built-in team has nothing left to try on this node: every tunable value it knows was tried")
        rng = random.Random(ctx.seed)
        if rng.random() < self.explore:
            _, t, v = options[rng.randrange(len(options))]
        else:
            noisy = [(s + rng.gauss(0.0, self.noise), i) for i, (s, _, _) in enumerate(options)]
            _, i = max(noisy)
            _, t, v = options[i]
        return self.mark(ctx, t, v)

    def mark(self, ctx: AgentContext, t: Tunable, v: Value) -> PlanResult:
        instruction = format_instruction(t, v)
        taken = {m.id for m in parse_markers(ctx.node_source)}
        mid = marker_id(t, taken)
        if t.site is None:  # an nvcc flag line to add at the top
            marked = insert_marker(ctx.node_source, 1, 0, mid, instruction, ctx.task.language)
        else:
            marked = insert_marker(ctx.node_source, t.site.line, t.site.line, mid, instruction, ctx.task.language)
        return PlanResult(marked_source=marked, summary=instruction)


