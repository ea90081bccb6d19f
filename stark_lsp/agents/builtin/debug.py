"""The built-in Debug agent: repairs a failed candidate by moving one tunable.

From the failed node's summary and diagnostics it recognizes:

* too many resources for the launch / register pressure: fewer threads per
  block (CUDA) or fewer warps (Triton);
* shared memory over the limit: fewer pipeline stages, else a smaller block
  or tile;
* wrong results, timeouts, crashes and runtime errors: the tunable that moved
  furthest from the root (the window history's "root") goes back to the root's
  value.

Each kind of failure gives an ordered list of moves; the first whose repaired
source is not in ``ctx.seen`` (the tree) is taken. Compile errors it does not
recognize, failures with nothing to revert or shrink, and a failure whose
every move gives a source the tree already holds raise NothingNew
(``NOTHING_NEW``): it would say the same of that node every time, so the search
never chooses the node again (a level-2 run spent 15 of its 17 attempts
asking again, docs/benchmarks.md, session 10).
"""

from __future__ import annotations

import re
import shlex

from stark_lsp.agents.base import AgentContext, DebugResult, NothingNew
from stark_lsp.agents.builtin.history import config_of, is_diff, log_value, status_part
from stark_lsp.agents.builtin.instructions import format_instruction
from stark_lsp.agents.builtin.tunable import Tunable, Value
from stark_lsp.agents.builtin.tunables import find_tunables, set_value
from stark_lsp.source_digest import NOTHING_NEW, source_digest

RESOURCES = re.compile(
    r"too many resources requested|out of resources?:? ?registers|launch ?out ?of ?resources|"
    r"register (?:pressure|spill)|too many registers|cudaErrorLaunchOutOfResources", re.I)
SHARED = re.compile(
    r"uses too much shared data|out of resources?:? ?shared memory|shared memory.{0,40}(?:exceed|too much|limit|out of)|"
    r"too much shared|entry function .* uses too much shared", re.I)
COMPILE = re.compile(r"\bcompile_error\b|\berror:|compilation", re.I)
REVERTIBLE = re.compile(
    r"\b(incorrect|timeout|timed out|crashed|runtime_error|mismatch|illegal memory|misaligned|nan|allclose|hang)\b", re.I)


def _root_source(ctx: AgentContext) -> str | None:
    for it in ctx.window.history:
        if it.section == "root" and it.code and not is_diff(it.code):
            return it.code
    return None


Move = tuple[Tunable, Value]


class BuiltinDebugger:
    def debug(self, ctx: AgentContext) -> DebugResult:
        lang = ctx.task.language
        text = f"{ctx.node_summary}\n{ctx.node_diagnostics}"
        tunables = find_tunables(ctx.node_source, lang)
        if RESOURCES.search(text):
            return self._shrink(ctx, self._fewer_threads(tunables), "too many resources for the launch")
        if SHARED.search(text):
            return self._shrink(ctx, self._less_shared(tunables), "shared memory over the limit")
        head = status_part(ctx.node_summary)
        if COMPILE.search(head) and not REVERTIBLE.search(head):
            first = next((l.strip() for l in ctx.node_diagnostics.splitlines() if l.strip()), ctx.node_summary)
            raise NothingNew(f"{NOTHING_NEW}: the built-in team cannot repair this compile error: {first[:300]}")
        return self._revert(ctx, tunables)

    # -- moves ---------------------------------------------------------------
    def _shrink(self, ctx: AgentContext, moves: list[Move], why: str) -> DebugResult:
        if not moves:
            raise NothingNew(f"{NOTHING_NEW}: the built-in team found no tunable to shrink for: {why}")
        return self._first_new(ctx, moves, why)

    @staticmethod
    def _smaller(t: Tunable, key=None) -> list[Value]:
        """Values below the current one, the gentlest step down first."""
        cur = log_value(t.value)
        smaller = [v for v in t.candidates if isinstance(v, (int, tuple)) and not isinstance(v, bool)
                   and log_value(v) is not None and cur is not None and log_value(v) < cur]
        return sorted(smaller, key=key or log_value, reverse=True)

    def _fewer_threads(self, tunables: list[Tunable]) -> list[Move]:
        moves: list[Move] = []
        for kinds in (("num_warps",), ("define", "const", "launch_block", "dim3"), ("block_const",)):
            pool = [t for t in tunables if t.kind in kinds and (t.role in ("threads", "warps", "block"))]
            pool.sort(key=lambda t: -(t.threads(t.value) or log_value(t.value) or 0))
            for t in pool:
                moves += [(t, v) for v in self._smaller(t, key=lambda x, t=t: (t.threads(x) or 0, log_value(x)))]
        return moves

    def _less_shared(self, tunables: list[Tunable]) -> list[Move]:
        moves: list[Move] = []
        for t in tunables:
            if t.kind == "num_stages" and isinstance(t.value, int) and t.value > 1:
                moves += [(t, v) for v in range(t.value - 1, 0, -1)]
        pool = [t for t in tunables if t.kind in ("block_const", "define", "const") and t.role in ("block", "threads", "factor")]
        pool.sort(key=lambda t: -(log_value(t.value) or 0))
        for t in pool:
            moves += [(t, v) for v in self._smaller(t)]
        return moves

    def _revert(self, ctx: AgentContext, tunables: list[Tunable]) -> DebugResult:
        root = _root_source(ctx)
        if root is None:  # the failing node is your kernel itself (the window leaves the root out), or no root
            # is in the context: there is nothing to revert to, now or on the next attempt (free: NothingNew)
            raise NothingNew(f"{NOTHING_NEW}: the built-in team repairs a candidate by reverting its changes towards "
                             f"your kernel, and this failure is your kernel's own: fix it ("
                             f"{shlex.join(['stark', 'eval', str(ctx.task.path)])} shows the error), or give an LLM "
                             f"team (--llm openai)")
        lang = ctx.task.language
        root_cfg = config_of(find_tunables(root, lang))
        node_cfg = config_of(tunables)
        moves: list[tuple[float, int, Tunable, Value]] = []
        for i, ((key, value), t) in enumerate(zip(node_cfg.items(), tunables)):
            if key not in root_cfg or root_cfg[key] == value:
                continue
            a, b = log_value(value), log_value(root_cfg[key])
            dist = abs(a - b) if a is not None and b is not None else 1.0
            moves.append((dist, i, t, root_cfg[key]))
        if not moves:
            reason = ctx.node_summary.strip() or "the failure"
            raise NothingNew(f"{NOTHING_NEW}: the built-in team cannot repair {reason[:200]!r}: no tunable differs from "
                             f"the root")
        moves.sort(key=lambda m: (-m[0], m[1]))  # furthest from the root first; the earliest on a tie
        why = "back to the root's value after: " + (status_part(ctx.node_summary).strip() or "a failure")
        return self._first_new(ctx, [(t, v) for _, _, t, v in moves], why)

    def _first_new(self, ctx: AgentContext, moves: list[Move], why: str) -> DebugResult:
        """The first move whose repaired source is not already in the tree."""
        for t, v in moves:
            result = self._result(ctx, t, v, why)
            if source_digest(result.source) not in ctx.seen:
                return result
        raise NothingNew(f"{NOTHING_NEW}: all {len(moves)} repair(s) of the built-in team for {why!r} give a "
                         f"source already in the tree")

    @staticmethod
    def _result(ctx: AgentContext, t: Tunable, v: Value, why: str) -> DebugResult:
        source = set_value(ctx.node_source, t, v)
        return DebugResult(source=source, summary=f"{format_instruction(t, v)}: {why}")
