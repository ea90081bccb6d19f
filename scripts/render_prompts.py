"""Render one prompt of each LLM agent into docs/AGENTS.md, so the document
shows exactly what the agents are sent.

    python scripts/render_prompts.py           # rewrite the section of docs/AGENTS.md
    python scripts/render_prompts.py --check   # exit 1 when the section is out of date

The tree is the example of tests/llm_trees.py on samples/mistuned/row_sum.cu
(timings of an H200-class GPU); the code prompt carries out the plan of
tests/data/transcripts/plan/cuda_right.md. tests/test_docs_prompts.py runs
the check.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

BEGIN = "<!-- rendered-prompts:begin (scripts/render_prompts.py writes this section) -->"
END = "<!-- rendered-prompts:end -->"
DOC = ROOT / "docs" / "AGENTS.md"


def prompts_section() -> str:
    from llm_trees import HARDWARE, sample_task, sample_tree

    from stark_lsp.agents.llm import prompts
    from stark_lsp.agents.llm.parse import parse_plan
    from stark_lsp.search.context import build_context
    from stark_lsp.search.node import PLAN_CODE, RUNNING, Node

    task = sample_task("cuda")
    nodes = sample_tree(task) + [Node(id=6, task_id="t", parent_id=2, kind=PLAN_CODE, status=RUNNING, attempt=5,
                                      summary="load four floats at a time with float4")]
    common = dict(hardware_info=HARDWARE, attempt=6, attempt_node_id=7)
    plan_ctx = build_context("plan", task, nodes, 2, **common)
    answer = (ROOT / "tests" / "data" / "transcripts" / "plan" / "cuda_right.md").read_text()
    marked, summary = parse_plan(answer, "stop", nodes[1].source, task.language)
    code_ctx = build_context("code", task, nodes, 2, plan=(marked, summary), **common)
    debug_ctx = build_context("debug", task, nodes, 3, **common)
    shown = [
        ("Plan", "the Plan agent on node #2 (attempt 6; attempt #6 is in flight)", prompts.plan_messages(plan_ctx)),
        ("Code", "the Code agent carrying out the plan of tests/data/transcripts/plan/cuda_right.md on node #2",
         prompts.code_messages(code_ctx, marked)),
        ("Debug", "the Debug agent on node #3, which did not compile", prompts.debug_messages(debug_ctx)),
    ]
    parts = [BEGIN, ""]
    for name, what, messages in shown:
        text = prompts.render_messages(messages)
        parts += [f"### {name} prompt", "", f"{what}:", "", "`````text", text, "`````", ""]
    parts.append(END)
    return "\n".join(parts)


def updated(doc: str) -> str:
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOC}: no rendered-prompts section (add the BEGIN and END comment lines)")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + prompts_section() + tail


def main(argv: list[str]) -> int:
    doc = DOC.read_text()
    new = updated(doc)
    if "--check" in argv:
        if new != doc:
            print(f"{DOC.relative_to(ROOT)} is out of date: run python scripts/render_prompts.py", file=sys.stderr)
            return 1
        return 0
    if new != doc:
        DOC.write_text(new)
        print(f"wrote the rendered prompts into {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
