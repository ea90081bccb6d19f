"""The prompts of the three LLM agents and the output formats they ask for."""

from __future__ import annotations

from stark_lsp.agents.base import AgentContext

FENCE = "```"

COMMON = (
    "You are part of STARK, a team of agents that makes GPU kernels faster. A trusted evaluator "
    "compiles each candidate, checks it against the reference on several random inputs and times it. "
    "Candidates must stay correct, must not cache results, skip work, use other streams or fall back "
    "to PyTorch for the work of the kernel."
)

PLAN_SYSTEM = COMMON + """
You are the Plan agent. Propose ONE concrete optimization of the selected kernel and ground it in the code
with markers. A marker is a begin comment line and an end comment line around the lines to change:
  C/CUDA:  // @stark begin <id>: <instruction>   ...lines...   // @stark end <id>
  Python:  # @stark begin <id>: <instruction>    ...lines...   # @stark end <id>
Ids use letters, digits, _ . -; each instruction is one precise line for the Code agent. A marker may wrap no
lines (begin directly followed by end) to ask for new code at that place. Markers may not nest.
Rules: copy the source EXACTLY and only add marker lines; do not change any other line.
Answer with the full marked source in ONE fenced code block, then one line:
SUMMARY: <one line saying what the plan does>"""

CODE_SYSTEM = COMMON + """
You are the Code agent. Implement each marker's instruction by rewriting ONLY the lines inside that marker.
Answer with one fenced block per marker, the block's info string being `replace <id>`, for example:
```replace blk
<the new lines that replace the span of marker blk, without the marker comments>
```
Give a block for every marker. Do not repeat code outside the markers."""

DEBUG_SYSTEM = COMMON + """
You are the Debug agent. The selected candidate failed; the diagnostics say why. Repair it with the smallest
change that keeps the optimization when possible. Answer with the full repaired source in ONE fenced code
block, then one line:
SUMMARY: <one line saying what was wrong and what you changed>"""


ALREADY_IN_TREE = (
    "That answer gives a source identical to a candidate the evaluator has already judged in this search, "
    "so it would teach the search nothing. Carry out the same instructions in a different way (another "
    "tiling, vector width, loop structure or launch configuration) and answer in the same format."
)


def _header(ctx: AgentContext) -> str:
    lang = "CUDA C++" if ctx.task.language == "cuda" else "Python (Triton or PyTorch)"
    return (
        f"Task: {ctx.task.name} ({ctx.task.kind}; candidates are {lang} files)\n"
        f"Hardware: {ctx.hardware or 'unknown'}\n"
    )


def _context(ctx: AgentContext) -> str:
    return f"\n## Context\n{ctx.rendered.strip()}\n" if ctx.rendered.strip() else ""


def plan_messages(ctx: AgentContext) -> list[dict[str, str]]:
    user = (
        _header(ctx)
        + _context(ctx)
        + f"\n## Selected node #{ctx.node_id}: {ctx.node_summary}\n{FENCE}\n{ctx.node_source}\n{FENCE}\n"
        + "\nMark the lines to change and write the instructions."
    )
    return [{"role": "system", "content": PLAN_SYSTEM}, {"role": "user", "content": user}]


def code_messages(ctx: AgentContext, marked_source: str) -> list[dict[str, str]]:
    user = (
        _header(ctx)
        + _context(ctx)
        + f"\n## Marked source of node #{ctx.node_id}\n{FENCE}\n{marked_source}\n{FENCE}\n"
        + "\nImplement every marker."
    )
    return [{"role": "system", "content": CODE_SYSTEM}, {"role": "user", "content": user}]


def debug_messages(ctx: AgentContext) -> list[dict[str, str]]:
    user = (
        _header(ctx)
        + _context(ctx)
        + f"\n## Failed node #{ctx.node_id}: {ctx.node_summary}\n"
        + f"Diagnostics:\n{ctx.node_diagnostics.strip() or '(none)'}\n"
        + f"{FENCE}\n{ctx.node_source}\n{FENCE}\n"
        + "\nRepair it."
    )
    return [{"role": "system", "content": DEBUG_SYSTEM}, {"role": "user", "content": user}]


def render_messages(messages: list[dict[str, str]]) -> str:
    """The prompt as stored in an Exchange."""
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
