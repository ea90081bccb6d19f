"""The prompts of the three LLM agents and the answer formats they ask for.

Every user message has the same frame: the task card, the hardware card, the
agent's window of the search tree (fitted to what is left of the context
budget), then the agent's own part, in which the selected source appears
once:

* Plan: this attempt (number, the other attempts in flight, an exploration
  hint), the selected node, and its source with line numbers (on the
  KernelBench root, a note that ``ModelNew`` is only the reference's stub:
  the kernels and their imports come first). The answer is
  ``MARKER <id> <where>: <instruction>`` lines and a SUMMARY line; the
  engine places the markers (``markers.anchors``).
* Code: the plan, the parent (the selected node) and the marked source. The
  answer is one ``replace <id>`` block per marker.
* Debug: the failing node, its error (once), the diff from its parent, and
  the failing source. The answer is the repaired file and a SUMMARY line.

The Code agent's system message ends with a short example of a complete
candidate in the task's backend (``examples.py``); the Plan agent's too,
where it leaves at least half of the context budget to the rest. The Debug
agent has none: the failing source it repairs already has the format.
"""

from __future__ import annotations

from stark_lsp.agents.base import AgentContext
from stark_lsp.context_budget import estimate_tokens, fit_window
from stark_lsp.tasks.spec import without_kernelbench_stub

from .examples import example_for

DEFAULT_CONTEXT_TOKENS = 12000

COMMON = (
    "You are part of STARK, a team of agents that makes GPU kernels faster. A trusted evaluator compiles each "
    "candidate, checks it against the reference on fresh random inputs within the tolerance, times it (median "
    "per call) and refuses cheats: results cached between calls, skipped work, writes to the inputs, other "
    "streams, or PyTorch calls doing the work the kernel must do. The task card says what to compute and how "
    "it is judged; the hardware card says what it runs on."
)

PLAN_SYSTEM = COMMON + """

You are the Plan agent. Choose ONE concrete optimization of the selected candidate that should make it faster
on this hardware, and say exactly where the Code agent must change the code. Do not write the code and do not
copy the file. Answer with one line per place to change, then one summary line:

MARKER <id> lines <first>-<last>: <instruction>
SUMMARY: <what the plan does and why it should be faster>

* Line numbers are those of the numbered listing of the selected source (the numbers are not part of the file).
* Instead of numbers you may quote one line of the source exactly, without its number, as an anchor:
  MARKER <id> at `<text of the line>`: <instruction>
  MARKER <id> from `<text of the first line>` to `<text of the last line>`: <instruction>
* To add code without replacing any: MARKER <id> after line <n>: <instruction> (or: before line <n>).
* <id>: letters, digits, _ . - and unique. Markers must not overlap. Mark every line that must change (a
  constant, a launch, a signature) and no more. Each instruction is one precise line the Code agent can carry
  out alone: names, values, what to compute.

Example:
MARKER blk lines 12-12: set BLOCK_SIZE to 1024 (was 128) so one program covers a whole row
MARKER body lines 20-31: replace the three passes over the row with one online-softmax pass (running max, rescaled sum)
SUMMARY: one-pass online softmax with 1024-wide blocks: each row is read once instead of three times"""

CODE_SYSTEM = COMMON + """

You are the Code agent. Implement the plan: rewrite ONLY the lines inside each marker, following its
instruction; every line outside the markers stays as it is. Answer with one fenced block per marker whose info
string is `replace <id>`, holding the new lines of that span, without the `@stark` marker comment lines:

```replace blk
<the new lines that replace the span of marker blk>
```

Give a block for every marker (repeat a span unchanged if it needs no change). The result must compile, stay
correct within the tolerance and keep the calling convention of the task card."""

DEBUG_SYSTEM = COMMON + """

You are the Debug agent. The selected candidate failed: the error says why, and the diff shows how it differs
from its parent. Repair it with the smallest change that keeps its optimization where possible. Answer with the
full repaired source in ONE fenced code block, then one line:
SUMMARY: <what was wrong and what you changed>"""

ALREADY_IN_TREE = (
    "That answer gives a source identical to a candidate the evaluator has already judged in this search, "
    "so it would teach the search nothing. Carry out the same instructions in a different way (another "
    "tiling, vector width, loop structure or launch configuration) and answer in the same format."
)

FORMATS = {
    "plan": "MARKER <id> lines <first>-<last>: <instruction> lines (or anchors in backticks), then SUMMARY: <one line>",
    "code": "one ```replace <id> block per marker, holding only the new lines of that span",
    "debug": "the full repaired source in ONE fenced code block, then SUMMARY: <one line>",
}


KERNELBENCH_STUB_NOTE = (
    "This is the KernelBench reference with the stub `class ModelNew(Model): pass` at its end: ModelNew only "
    "inherits the reference, so no kernel exists yet. Plan the kernels first: mark where to add their imports "
    "and the kernels themselves (after the imports), then a ModelNew whose forward launches them. ModelNew must "
    "define its own kernels; it keeps Model's constructor arguments."
)


def with_example(system: str, ctx: AgentContext) -> str:
    """``system`` followed by the example of the task's backend (``examples.example_for``)."""
    example = example_for(ctx.task.kind)
    return f"{system}\n\n{example}" if example else system


def fix_request(agent: str, error: str) -> str:
    """The follow-up turn after an answer that could not be used."""
    return (f"Your answer could not be used: {error}\n"
            f"Answer again, the whole answer, in the required format: {FORMATS[agent]}.")


def fence_for(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text``."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def numbered(source: str) -> str:
    lines = source.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line.rstrip(chr(13))}" for i, line in enumerate(lines, 1))


def _lang(ctx: AgentContext) -> str:
    return "cuda" if ctx.task.language == "cuda" else "python"


def _cards(ctx: AgentContext) -> str:
    task = ctx.task_card or f"## Task card\nTask: {ctx.task.name} ({ctx.task.kind})\n"
    hw = ctx.hardware_card or f"## Hardware card\n{ctx.hardware or 'unknown'}\n"
    return task.rstrip() + "\n\n" + hw.rstrip() + "\n"


def _assemble(agent: str, system: str, ctx: AgentContext, head: str, tail: str) -> list[dict[str, str]]:
    """System and user message, the window's entries (``AgentContext.window``) fitted to what the rest
    leaves of the budget."""
    budget = ctx.context_tokens or DEFAULT_CONTEXT_TOKENS
    fixed = estimate_tokens(system) + estimate_tokens(head) + estimate_tokens(tail) + 40
    room = max(0, budget - fixed)
    entries = ctx.window.entries
    window = fit_window(agent, entries, room) if entries else ""
    if window:
        middle = f"\n## Search so far\n{window}"
    else:
        middle = "\n## Search so far\nNothing else in the tree is relevant yet.\n"
    if room == 0 and entries:
        middle = "\n## Search so far\n(Left out: the task card and the source alone fill the context budget.)\n"
    user = head + middle + tail
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def plan_messages(ctx: AgentContext) -> list[dict[str, str]]:
    src = ctx.node_source
    listing = numbered(src)
    fence = fence_for(listing)
    others = "; ".join(ctx.in_flight) if ctx.in_flight else "none"
    attempt = [f"\n## This attempt\nAttempt {ctx.attempt or 1}. Other attempts in flight now (propose something "
               f"different from them): {others}."]
    if ctx.hint:
        attempt.append(f"Exploration hint for this attempt (follow it only if nothing better fits): {ctx.hint}.")
    node = ctx.node_line or f"#{ctx.node_id}: {ctx.node_summary}"
    prof = f"\nProfile: {ctx.node_profile}" if ctx.node_profile else ""
    stub = f"\n{KERNELBENCH_STUB_NOTE}" if without_kernelbench_stub(src) is not None else ""
    tail = ("\n".join(attempt) + "\n"
            + f"\n## Selected node\n{node}{prof}{stub}\n"
            + f"Source of #{ctx.node_id}, numbered (the numbers are not part of the file):\n"
            + f"{fence}{_lang(ctx)}\n{listing}\n{fence}\n"
            + "\nPropose one optimization: MARKER lines, then SUMMARY.")
    head = _cards(ctx)
    system = with_example(PLAN_SYSTEM, ctx)
    budget = ctx.context_tokens or DEFAULT_CONTEXT_TOKENS
    if estimate_tokens(system) + estimate_tokens(head) + estimate_tokens(tail) > budget // 2:
        system = PLAN_SYSTEM  # the example only where it leaves the window room
    return _assemble("plan", system, ctx, head, tail)


def code_messages(ctx: AgentContext, marked_source: str) -> list[dict[str, str]]:
    from stark_lsp.markers.syntax import MarkerError, parse_markers

    try:
        ids = [m.id for m in parse_markers(marked_source)]
    except MarkerError:
        ids = []
    fence = fence_for(marked_source)
    plan = ctx.plan_summary or "; ".join(ids)
    parent = ctx.node_line or f"#{ctx.node_id}: {ctx.node_summary}"
    prof = f"\nProfile: {ctx.node_profile}" if ctx.node_profile else ""
    tail = (f"\n## The plan\n{plan}\n"
            + f"Parent of your candidate: {parent}{prof}\n"
            + f"\n## Marked source of #{ctx.node_id}\n{fence}{_lang(ctx)}\n{marked_source.rstrip()}\n{fence}\n"
            + f"\nWrite one `replace <id>` block for each marker: {', '.join(ids) or 'every marker'}.")
    return _assemble("code", with_example(CODE_SYSTEM, ctx), ctx, _cards(ctx), tail)


def debug_messages(ctx: AgentContext) -> list[dict[str, str]]:
    src = ctx.node_source
    fence = fence_for(src)
    node = ctx.node_line or f"#{ctx.node_id}: {ctx.node_summary}"
    parts = [f"\n## The failure\n{node}", f"Error:\n{ctx.node_diagnostics.strip() or '(the evaluator gave no message)'}"]
    if ctx.parent_line:
        parts.append(f"Parent: {ctx.parent_line}")
        if ctx.parent_diff.strip():
            dfence = fence_for(ctx.parent_diff)
            parts.append(f"How the failing source differs from its parent:\n{dfence}diff\n{ctx.parent_diff.rstrip()}\n{dfence}")
    tail = ("\n".join(parts) + "\n"
            + f"\n## Failing source of #{ctx.node_id}\n{fence}{_lang(ctx)}\n{src.rstrip()}\n{fence}\n"
            + "\nRepair it: the full source in one fenced block, then SUMMARY.")
    return _assemble("debug", DEBUG_SYSTEM, ctx, _cards(ctx), tail)


def render_messages(messages: list[dict[str, str]]) -> str:
    """The prompt as stored in an Exchange."""
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
