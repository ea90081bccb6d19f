import pytest

from fakes import fake_source, make_fake_task, verdict
from stark_lsp.evaluate.result import CompileReport, Diagnostic, EvalResult, Status
from stark_lsp.search.context import build_context, estimate_tokens
from stark_lsp.search.history_window import window
from stark_lsp.search.node import PLAN_CODE, ROOT, RUNNING, Node, outcome_fields


def node(id, parent, speed=1.0, status="ok", kind=None, summary=""):
    src = fake_source(speed, status if status in ("ok", "compile_error", "incorrect") else "ok")
    r = verdict(src) if status in ("ok", "compile_error", "incorrect") else None
    st, sp, rt, err = outcome_fields(r) if r else (status, None, None, "")
    return Node(id=id, task_id="t", parent_id=parent, kind=kind or (ROOT if parent is None else PLAN_CODE),
                status=st, source=src, result=r, speedup=sp, runtime_ms=rt, error=err,
                summary=summary or f"summary of {id}")


@pytest.fixture
def task(tmp_path):
    return make_fake_task(tmp_path)


def tree():
    #        1
    #     2     3
    #   4  5   6  7(running)
    #  8
    return [node(1, None), node(2, 1, 1.2), node(3, 1, 2.0), node(4, 2, 1.5), node(5, 2, status="compile_error"),
            node(6, 3, 2.5), node(7, 3, status=RUNNING), node(8, 4, 3.0)]


def ids(pairs):
    return {(role, n.id) for role, n in pairs}


def text(ctx):
    """The window's history as text: each entry in full."""
    return "\n".join(e.full for e in ctx.window.history)


def used(ctx, task):
    """What the history's budget counts: the task's line, then each entry in full."""
    return estimate_tokens(f"Task: {task.name} ({task.kind}, {task.language})\n") + sum(
        estimate_tokens(e.full) for e in ctx.window.history)


def test_plan_window_is_children_and_leaderboard():
    got = ids(window("plan", tree(), 2, leaderboard_size=2))
    assert got == {("child", 4), ("child", 5), ("leader", 8), ("leader", 6)}


def test_code_window_is_children_and_cousins():
    assert ids(window("code", tree(), 4)) == {("child", 8)}  # parent 2's other child 5 has no children
    assert ids(window("code", tree(), 2)) == {("child", 4), ("child", 5), ("cousin", 6)}  # 7 is in flight


def test_debug_window_is_siblings():
    assert ids(window("debug", tree(), 5)) == {("sibling", 4)}
    assert ids(window("debug", tree(), 1)) == set()


def test_unknown_agent():
    with pytest.raises(ValueError):
        window("review", tree(), 1)


def test_node_and_root_in_full_others_as_diffs(task):
    ctx = build_context("plan", task, tree(), 4, token_budget=100_000)
    roles = {i.node_id: i.section for i in ctx.window.history}
    assert roles[4] == "node" and roles[1] == "root"
    by = {i.node_id: i for i in ctx.window.history}
    assert by[4].code == fake_source(1.5) and by[1].code == fake_source(1.0)
    assert by[8].code.startswith("--- #4\n+++ #8")
    assert "-SPEED = 1.5" in by[8].code and "+SPEED = 3.0" in by[8].code
    assert ctx.node_source == fake_source(1.5) and ctx.node_id == 4
    assert "3.00× eager" in by[8].summary and "summary of 8" in by[8].summary
    assert "```diff" in text(ctx) and "```python" in text(ctx)


def test_profile_line_from_resources_and_a_replaceable_profiler(task):
    ctx = build_context("plan", task, tree(), 3, token_budget=100_000)
    assert ctx.window.history[0].profile == "entry_kernel: 32 regs, 1024 B smem, spills 0 st / 0 ld"
    assert "Profile: entry_kernel: 32 regs" in text(ctx)
    ctx = build_context("plan", task, tree(), 3, token_budget=100_000, profiler=lambda n: f"ncu #{n.id}")
    assert [i.profile for i in ctx.window.history[:2]] == ["ncu #3", "ncu #1"]


def test_diagnostics_for_a_failed_node_are_trimmed(task):
    nodes = tree()
    many = [Diagnostic(f"error number {k}", line=k) for k in range(1, 101)]
    nodes[4].result = EvalResult(Status.COMPILE_ERROR, "build failed", compile=CompileReport(ok=False, diagnostics=many))
    ctx = build_context("debug", task, nodes, 5, token_budget=100_000)
    item = ctx.window.history[0]
    assert item.diagnostics.startswith("build failed\nline 1: error: error number 1\n")
    assert "more lines" in item.diagnostics and "error number 100" not in item.diagnostics
    assert "error number 50" in ctx.node_diagnostics  # the Debug agent gets a longer excerpt
    ok_ctx = build_context("plan", task, nodes, 4, token_budget=100_000)
    assert ok_ctx.node_diagnostics == ""


def test_budget_keeps_node_and_root_then_best_first(task):
    nodes = tree()
    full = build_context("plan", task, nodes, 2, token_budget=100_000)
    assert {i.node_id for i in full.window.history} == {2, 1, 4, 5, 8, 6, 3}
    tiny = build_context("plan", task, nodes, 2, token_budget=10)
    assert [i.node_id for i in tiny.window.history] == [2, 1]
    # room for exactly two extra entries: the best ones (8: 3.0x, then 6: 2.5x) win
    base = used(tiny, task)
    per_item = max(estimate_tokens(e.full) for e in full.window.history[2:])
    mid = build_context("plan", task, nodes, 2, token_budget=base + 2 * per_item)
    assert [i.node_id for i in mid.window.history] == [2, 1, 8, 6]
    assert used(mid, task) <= base + 2 * per_item


def test_context_carries_seed_and_hardware(task):
    ctx = build_context("code", task, tree(), 1, hardware="Fake GPU", seed=42)
    assert ctx.seed == 42 and ctx.hardware == "Fake GPU"
    assert [i.section for i in ctx.window.history][:1] == ["node"] and all(i.section != "root" for i in ctx.window.history)
