"""The built-in Plan agent: one tunable, one new value, one grounded marker.

Options are the candidate values of every tunable (within a factor of 16 of
the current value), minus those that would repeat a configuration in the
context window (the node itself, its children, the leaderboard, the root) or
a value a child already set. Each option is scored by the rules of thumb in
``priors``, by the direction that did better in the context, against values
that failed, against tunables whose moves from this node stayed inside the
timing's noise (on a GPU: ``history.flat_tunables``), plus a little seeded noise; with probability ``explore`` a
uniformly random option is taken instead. Deterministic under ``ctx.seed``.

With ``ctx.seen`` (digests of every source in the tree) it carries out each
option the way the built-in Code agent will and skips those whose source the
tree already holds, taking the next-best option; with none left it raises
``NothingNew(NOTHING_NEW)`` so the policy moves on to another node.
"""

from __future__ import annotations

import random
import re

from stark_lsp.agents.base import AgentContext, AgentError, NothingNew, PlanResult
from stark_lsp.agents.builtin.code import BuiltinCoder
from stark_lsp.agents.builtin.history import (
    config_of,
    failed_values,
    flat_tunables,
    frozen,
    log_value,
    preferred_direction,
    read_history,
    speedup_in,
)
from stark_lsp.agents.builtin.instructions import format_instruction
from stark_lsp.agents.builtin.kb_lowering import plan_lowering, wants_lowering
from stark_lsp.agents.builtin.priors import prior
from stark_lsp.agents.builtin.tunable import Tunable, Value, format_value
from stark_lsp.agents.builtin.tunables import find_tunables
from stark_lsp.markers.syntax import MarkerError, apply_replacements, insert_marker, parse_markers
from stark_lsp.source_digest import NOTHING_NEW, source_digest

MAX_LOG_STEP = 4.0  # at most x16 or /16 in one move
FLAT_PENALTY = 3.0  # a tunable whose moves from this node stayed inside the noise (history.flat_tunables)


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


INTERPRETER_IGNORES = ("num_warps", "num_stages", "switch")  # no effect off the GPU (launch keywords, cuDNN's)


def interpreted(ctx: AgentContext) -> bool:
    """The candidates run through Triton's interpreter on the CPU (the evaluator says so in its hardware)."""
    h = (ctx.hardware or "").lower()
    return "interpreter" in h or h.startswith("cpu")


class BuiltinPlanner:
    def __init__(self, explore: float = 0.25, noise: float = 0.15):
        self.explore = explore
        self.noise = noise

    def options(self, ctx: AgentContext) -> list[tuple[float, Tunable, Value]]:
        lang = ctx.task.language
        tunables = find_tunables(ctx.node_source, lang)
        if interpreted(ctx):  # Triton's interpreter ignores these: a change would be measured as noise
            tunables = [t for t in tunables if t.kind not in INTERPRETER_IGNORES]
        keys = config_keys(tunables)
        node_cfg = config_of(tunables)
        hist = read_history(ctx.window.history, lang)
        tried = hist.configs() | {frozen(node_cfg)}
        pairs = hist.child_pairs()
        node_speed = speedup_in(ctx.node_summary)
        # on a GPU, moves of a tunable that twice changed nothing the timing can tell come after the others (the
        # interpreter's figures are noise through and through: nothing to tell apart there)
        flat = set() if interpreted(ctx) else flat_tunables(hist, node_speed)
        blocks = [t.value for t in tunables if t.kind == "block_const" and isinstance(t.value, int) and "GROUP" not in t.name.upper()]
        largest = max(blocks) if blocks else None
        out = []
        for key, t in zip(keys, tunables):
            # a direction read from moves inside the noise is the noise's
            direction = 0.0 if t.name in flat else preferred_direction(hist, key, t.value, node_speed)
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
                score = prior(t, v, largest) - here - (FLAT_PENALTY if t.name in flat else 0.0)
                lv = log_value(v)
                if cur is not None and lv is not None and lv != cur:
                    sign = 1.0 if lv > cur else -1.0
                    score += 0.5 * direction * sign
                    for b in bad:  # at or beyond a value that failed, in the same direction
                        if b is not None and (b - cur) * sign > 0 and (lv - b) * sign >= 0:
                            score -= 2.0
                out.append((score, t, v))
        return out

    def ranked(self, ctx: AgentContext) -> list[tuple[Tunable, Value]]:
        """Every option, best first: the seeded choice (a random option with
        probability ``explore``, else the best noisy score), then the rest by
        noisy score. With nothing seen, the first is what ``plan`` returns."""
        options = self.options(ctx)
        if not options:
            return []
        rng = random.Random(ctx.seed)
        first: int | None = None
        if rng.random() < self.explore:
            first = rng.randrange(len(options))
            order = sorted(range(len(options)), key=lambda i: -options[i][0])
        else:
            noisy = [(s + rng.gauss(0.0, self.noise), i) for i, (s, _, _) in enumerate(options)]
            order = [i for _, i in sorted(noisy, reverse=True)]
        if first is not None:
            order = [first] + [i for i in order if i != first]
        return [(options[i][1], options[i][2]) for i in order]

    def plan(self, ctx: AgentContext) -> PlanResult:
        if wants_lowering(ctx):
            return plan_lowering(ctx, lambda marked: self.implemented(ctx, marked))
        ranked = self.ranked(ctx)
        if not ranked:
            raise NothingNew(f"{NOTHING_NEW} (the built-in team has nothing left to try: every tunable value it "
                             f"knows was tried)")
        if not ctx.seen:
            return self.mark(ctx, *ranked[0])
        skipped = 0
        for t, v in ranked:
            result = self.mark(ctx, t, v)
            source = self.implemented(ctx, result.marked_source)
            if source is not None and source_digest(source) not in ctx.seen:
                return result
            skipped += 1
        raise NothingNew(f"{NOTHING_NEW}: all {skipped} option(s) of the built-in team give a source already in the tree")

    @staticmethod
    def implemented(ctx: AgentContext, marked_source: str) -> str | None:
        """The source the built-in Code agent would make of this plan (it is
        deterministic), or None if it would refuse."""
        try:
            code = BuiltinCoder().code(ctx, marked_source)
            return apply_replacements(marked_source, code.replacements)
        except (AgentError, MarkerError):
            return None

    def mark(self, ctx: AgentContext, t: Tunable, v: Value) -> PlanResult:
        instruction = format_instruction(t, v)
        taken = {m.id for m in parse_markers(ctx.node_source)}
        mid = marker_id(t, taken)
        if t.site is None:  # an nvcc flag line to add at the top
            marked = insert_marker(ctx.node_source, 1, 0, mid, instruction, ctx.task.language)
        else:
            marked = insert_marker(ctx.node_source, t.site.line, t.site.line, mid, instruction, ctx.task.language)
        return PlanResult(marked_source=marked, summary=instruction)


