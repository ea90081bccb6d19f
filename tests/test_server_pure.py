"""The server's pure pieces, without LSP: trees, hover tables, diagnostics,
code actions, apply plans, settings, markers, progress text."""

from __future__ import annotations

from types import SimpleNamespace

from lsprotocol import types

from stark_lsp.server.apply_candidate import plan_apply
from stark_lsp.server.code_actions import MarkerSpan, build_code_actions
from stark_lsp.server.diagnostics import TaskProblem, build_diagnostics, changed_kernels
from stark_lsp.server.hover import hover_markdown
from stark_lsp.server.implement_marker import marker_spans, only_marker, splice_marker
from stark_lsp.server.progress import final_text, progress_text
from stark_lsp.server.settings import Secret, Settings, api_key_from, parse_settings
from stark_lsp.server.text_edits import apply_text_edits
from stark_lsp.server.tree_cache import TreeCache
from stark_lsp.tasks.kernels import find_kernels
from tests.server_fixtures import TRITON_KERNEL, failed_node, line_of, make_tree, ok_node

ROOT = TRITON_KERNEL
FAST = ROOT.replace("BLOCK=128", "BLOCK=1024")  # only the launcher changes
FASTER = ROOT.replace("    mask = offs < n\n", "    mask = offs < n  # hinted\n")  # the kernel changes
KLINE = line_of(ROOT, "def add_relu_kernel")
KERNELS = find_kernels(ROOT, "triton")


def tree_nodes():
    return (
        ok_node(1, None, ROOT, 1.1, kind="root", attempt=0, summary="the original kernel"),
        ok_node(2, 1, FAST, 1.6, summary="bigger | blocks"),
        failed_node(3, 1, ROOT + "oops", lines=(3,)),
        ok_node(4, 2, FASTER, 2.41, kind="debug", attempt=3, summary="hint"),
        ok_node(5, 1, ROOT.replace("BLOCK=128", "BLOCK=64"), 0.9, attempt=4),
    )


def tree():
    return make_tree(*tree_nodes())


# -- trees -------------------------------------------------------------------------------


def test_tree_view_best_and_counts():
    t = tree()
    assert t.root.id == 1 and t.best.id == 4 and t.best_candidate.id == 4
    assert t.finished == 4 and t.correct == 3
    assert [n.id for n in t.ranked_candidates()] == [4, 2, 5]
    j = t.to_json()
    assert j["best"] == 4 and j["baseline_ms"] == t.root.runtime_ms
    assert set(j["nodes"][0]) >= {"id", "parent", "kind", "status", "speedup", "runtime_ms", "summary", "source"}


def test_root_best_means_no_candidate():
    t = make_tree(ok_node(1, None, ROOT, 2.0, kind="root"), ok_node(2, 1, FAST, 1.5))
    assert t.best.id == 1 and t.best_candidate is None


def test_tree_cache_reports_changes_only():
    cache = TreeCache()
    n1 = ok_node(1, None, ROOT, 1.0, kind="root")
    assert cache.put_node("t", n1) is True
    assert cache.put_node("t", n1) is False
    assert cache.replace("t", [n1, ok_node(2, 1, FAST, 1.5)]) is True
    assert cache.get("t").best.id == 2 and cache.get(None) is None


# -- hover ------------------------------------------------------------------------------


def test_hover_table():
    md = hover_markdown("add_relu_kernel", tree())
    lines = md.split("\n")
    assert lines[0] == "**add_relu_kernel**, STARK-LSP"
    assert "4 attempts, 3 correct; best #4: **2.19× faster than yours** (0.3817 ms)" in md
    assert "| # | agent | plan | status | runtime | speedup | vs yours |" in lines
    assert "| baseline | your kernel | the original kernel | ok | 0.8364 ms | 1.10× | 1.00× |" in lines
    assert "| 1 (#2) | plan + code | bigger \\| blocks | ok | 0.575 ms | 1.60× | 1.45× |" in lines
    assert "| 3 (#4) ★ | debug | hint | ok | 0.3817 ms | 2.41× | 2.19× |" in lines
    assert "| 1 (#3) | plan + code | boom | compile error | – | – | – |" in lines
    assert "harness reference (0.92 ms)" in md and "CPU" not in md


def test_hover_states():
    assert "Not optimized yet" in hover_markdown("k", None)
    md = hover_markdown("k", None, running="attempt 1/3", problem="no harness")
    assert "⚠ no harness" in md and "Optimizing: attempt 1/3" in md and "Not optimized" not in md
    cpu = make_tree(ok_node(1, None, ROOT, 1.0, kind="root", gpu=False))
    assert "Triton interpreter" in hover_markdown("k", cpu)
    assert "no candidate beats your kernel yet" in hover_markdown("k", cpu)


def test_hover_shows_the_nsight_figures_of_your_kernel_and_the_best():
    from stark_lsp.profile.report import KernelProfile, ProfileReport

    def profiled(node, dram):
        k = KernelProfile(kernel="add_relu_kernel", dram_pct=dram, sm_pct=12.0, duration_ms=0.5)
        node.profile = ProfileReport(ok=True, kernels=[k]).to_dict()
        return node

    nodes = list(tree_nodes())
    profiled(nodes[0], 14.0)
    profiled(nodes[3], 81.0)
    md = hover_markdown("k", make_tree(*nodes))
    mine = next(l for l in md.split("\n") if l.startswith("- your kernel: ncu:"))
    best = next(l for l in md.split("\n") if l.startswith("- best #4: ncu:"))
    assert "dram 14%" in mine and "dram 81%" in best
    nodes[3].profile = ProfileReport.unavailable("ncu not found").to_dict()  # no figures, no line
    assert "best #4: ncu" not in hover_markdown("k", make_tree(*nodes))
    assert "ncu" not in hover_markdown("k", tree())


def test_hover_long_trees_are_trimmed():
    nodes = [ok_node(1, None, ROOT, 1.0, kind="root")] + [ok_node(i, 1, ROOT + str(i), 1 + i / 100, attempt=i) for i in range(2, 60)]
    md = hover_markdown("k", make_tree(*nodes))
    rows = [l for l in md.split("\n") if l.startswith("| ") and "(#" in l]
    assert len(rows) <= 25 and "(#59) ★" in md and "more in the tree view" in md


# -- diagnostics --------------------------------------------------------------------------


def test_best_speedup_information_on_the_changed_kernel():
    (d,) = build_diagnostics(ROOT, KERNELS, "triton", tree(), None)
    assert d.severity == types.DiagnosticSeverity.Information and d.code == "best-speedup"
    assert d.range.start.line == KLINE and d.range.start.character == len("def ")
    assert d.range.end.character == len("def add_relu_kernel")
    assert d.message.startswith(
        "2.19× faster than your kernel: 0.3817 ms vs 0.8364 ms, 4 attempts, 3 correct (2.41× the reference)")
    assert d.data == {"kernel": "add_relu_kernel", "node": 4}


def test_cpu_interpreter_and_failed_root_wording():
    cpu = make_tree(ok_node(1, None, ROOT, 2.9e-05, kind="root", gpu=False), ok_node(2, 1, FASTER, 1.0e-04, gpu=False))
    (d,) = build_diagnostics(ROOT, KERNELS, "triton", cpu, None)
    assert d.message.startswith("3.45× faster than your kernel") and "(0.0001× the reference)" in d.message
    assert "CPU interpreter timing" in d.message
    assert "| baseline | your kernel |  | ok | 3.172e+04 ms | 2.9e-05× | 1.00× |" in hover_markdown("k", cpu)
    no_root = make_tree(failed_node(1, None, ROOT, kind="root"), ok_node(2, 1, FASTER, 1.5))
    ds = build_diagnostics(ROOT, KERNELS, "triton", no_root, None)
    assert ds[0].message.startswith("1.50× the reference: 0.6133 ms vs 0.92 ms, 1 attempts, 1 correct")
    assert titles(build_code_actions("u", KERNELS, [], no_root, None, None))[1] == "Apply best candidate (1.50× the reference)"


def test_changed_kernels():
    assert changed_kernels(ROOT, FASTER, "triton") == {"add_relu_kernel"}
    assert changed_kernels(ROOT, FAST, "triton") == set()  # only the launcher changed


def test_root_failure_on_compiler_lines_or_on_names():
    t = make_tree(failed_node(1, None, ROOT, lines=(9, 10), kind="root", error="nvcc failed"))
    ds = build_diagnostics(ROOT, KERNELS, "triton", t, None)
    assert [d.range.start.line for d in ds] == [8, 9]
    assert all(d.severity == types.DiagnosticSeverity.Warning and "compile error" in d.message for d in ds)
    assert ds[0].range.start.character == 4  # after the indentation
    # the document changed since: the lines may be wrong, so on the kernel name
    (d,) = build_diagnostics(ROOT + "\n# edited\n", KERNELS, "triton", t, None)
    assert d.range.start.line == KLINE and "nvcc failed" in d.message


def test_missing_harness_error_on_every_kernel():
    two = ROOT + "\n\n@triton.jit\ndef second(x):\n    pass\n"
    ks = find_kernels(two, "triton")
    ds = build_diagnostics(two, ks, "triton", None, TaskProblem("no harness", missing_harness=True))
    assert [(d.code, d.severity, d.data["kernel"]) for d in ds] == [
        ("missing-harness", types.DiagnosticSeverity.Error, "add_relu_kernel"),
        ("missing-harness", types.DiagnosticSeverity.Error, "second"),
    ]


def test_name_range_counts_utf16():
    text = "# é😀\n@triton.jit\ndef k(x):  # 😀\n    pass\n"
    (k,) = find_kernels(text, "triton")
    (d,) = build_diagnostics(text, [k], "triton", None, TaskProblem("x"))
    assert (d.range.start.character, d.range.end.character) == (4, 5)


# -- code actions ----------------------------------------------------------------------------


def titles(actions):
    return [a.title for a in actions]


def test_code_actions_for_an_optimized_kernel():
    acts = build_code_actions("u", KERNELS, [], tree(), None, None)
    assert titles(acts) == ["Optimize kernel add_relu_kernel", "Apply best candidate (2.19×)", "Apply candidate #2 (1.45×)"]
    assert acts[1].command.command == "stark.applyBest" and acts[1].command.arguments == ["u", "add_relu_kernel"]
    assert acts[2].command.arguments == ["u", "add_relu_kernel", 2]  # #5 (0.90×) is slower than the root: not offered


def test_code_actions_while_running_and_for_markers():
    m = MarkerSpan("st", "do it", 3, 5)
    acts = build_code_actions("u", KERNELS, [m], None, None, "add_relu_kernel")
    assert titles(acts) == ["Stop optimizing add_relu_kernel", "Implement with the Code agent (marker st)"]
    assert acts[1].command.arguments == ["u", "st"]
    assert build_code_actions("u", [], [], tree(), None, None) == []


def test_quick_fix_for_a_missing_harness():
    diag = types.Diagnostic(range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)),
                            message="m", source="stark", code="missing-harness")
    (a,) = build_code_actions("u", KERNELS, [], tree(), TaskProblem("m", True), None, [diag], "x.harness.py")
    assert a.title == "Create x.harness.py for add_relu_kernel" and a.kind == types.CodeActionKind.QuickFix
    assert a.diagnostics == [diag] and a.command.command == "stark.createHarness"


# -- apply plans -------------------------------------------------------------------------------


def test_apply_best_onto_the_root_text():
    plan = plan_apply("file:///a.py", 3, ROOT, tree(), None)
    assert plan.node.id == 4 and not plan.refused
    (change,) = plan.edit.document_changes
    assert change.text_document.version == 3 and len(change.edits) == 1
    assert apply_text_edits(ROOT, change.edits) == FASTER


def test_apply_refusals():
    t = tree()
    assert plan_apply("u", 1, ROOT + "x", t, None).refused  # the document changed
    assert "already in the document" in plan_apply("u", 1, FASTER, t, 4).message
    assert "not a verified candidate" in plan_apply("u", 1, ROOT, t, 3).message
    assert "not in this kernel's tree" in plan_apply("u", 1, ROOT, t, 99).message
    assert plan_apply("u", 1, ROOT, None, None).refused
    assert "no candidate beats" in plan_apply("u", 1, ROOT, make_tree(ok_node(1, None, ROOT, 1.0, kind="root")), None).message


def test_apply_a_marker_candidate_onto_its_marked_document():
    marked = ROOT.replace("    pid =", "    # @stark begin a: x\n    pid =").replace("    offs =", "    # @stark end a\n    offs =")
    t = make_tree(ok_node(1, None, ROOT, 1.0, kind="root"), ok_node(2, 1, FASTER, 1.5, plan=marked))
    plan = plan_apply("u", None, marked, t, 2)
    assert not plan.refused and apply_text_edits(marked, plan.edit.document_changes[0].edits) == FASTER


# -- markers -----------------------------------------------------------------------------------


MARKED2 = (
    "def f():\n"
    "    # @stark begin a: first\n    x = 1\n    # @stark end a\n"
    "    # @stark begin b: second\n    y = 2\n    # @stark end b\n"
    "    return x + y\n"
)


def test_marker_spans_and_broken_markers():
    spans, err = marker_spans(MARKED2)
    assert err is None and [(m.id, m.first_line, m.last_line) for m in spans] == [("a", 1, 3), ("b", 4, 6)]
    spans, err = marker_spans("# @stark begin a: x\n")
    assert spans == [] and "never ended" in err


def test_only_marker_and_splice_keep_the_other_markers():
    one, m = only_marker(MARKED2, "b")
    assert "@stark begin a" not in one and "    x = 1\n" in one and m.id == "b" and m.instruction == "second"
    out = splice_marker(MARKED2, "b", "    y = 3\n")
    assert out == (
        "def f():\n    # @stark begin a: first\n    x = 1\n    # @stark end a\n    y = 3\n    return x + y\n"
    )


# -- settings and progress -------------------------------------------------------------------------


def test_settings_parse_camel_case_and_report_problems():
    s, problems = parse_settings({
        "llm": "openai", "baseUrl": "http://localhost:8000/v1", "models": {"plan": "big", "code": "", "x": "y"},
        "budget": 4, "policy": "greedy", "evaluation": {"device": "cuda:1", "workers": 2}, "apiKey": "sk-secret",
        "concurrency": 0,
    })
    assert (s.llm, s.base_url, s.budget, s.policy, s.device, s.workers) == ("openai", "http://localhost:8000/v1", 4, "greedy", "cuda:1", 2)
    assert s.models == {"plan": "big"} and s.model_for("code") is None
    assert problems == ["stark.concurrency must be an integer >= 1, not 0"]
    assert "sk-secret" not in repr(s)
    s2, problems = parse_settings({"stark": {"llm": "gpt"}}, s)
    assert s2.llm == "openai" and "stark.llm must be one of" in problems[0]
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings({"profileTop": 3})[0].profile_top == 3
    assert parse_settings({"profileTop": -1})[1] == ["stark.profileTop must be an integer >= 0, not -1"]


def test_api_key_is_a_secret():
    key = api_key_from({"apiKey": "sk-abcdefghijklmnopqrstuvwxyz"})
    assert key.get() == "sk-abcdefghijklmnopqrstuvwxyz"
    assert "sk-" not in repr(key) and "sk-" not in str(key) and "sk-" not in f"{key}"
    assert not api_key_from({}) and not Secret("")


def test_progress_text():
    p = SimpleNamespace(attempt=2, budget=4, best_speedup=1.5, best_node_id=3, correct=1, failures=1, running=1)
    assert progress_text(p) == ("attempt 2/4, best 1.50× (#3), 1 correct, 1 failed, 1 running", 50)
    p.best_speedup = None
    assert "no correct candidate yet" in progress_text(p)[0]
    assert final_text(p, "cancelled") == "cancelled: 2 attempts, no correct candidate"


def test_a_kernelbench_candidate_applies_onto_the_reference_file():
    from stark_lsp.tasks.spec import KERNELBENCH_STUB

    reference = "class Model:\n    pass\n\n\ndef get_inputs():\n    return []\n"
    root_src = reference.rstrip() + KERNELBENCH_STUB
    best = reference.rstrip() + "\n\n\nclass ModelNew(Model):\n    def forward(self, x):\n        return x\n"
    t = make_tree(ok_node(1, None, root_src, 1.0, kind="root"), ok_node(2, 1, best, 1.5))
    plan = plan_apply("file:///m.py", 3, reference, t, None)
    assert plan.edit is not None and not plan.refused, plan.message
    edited = apply_text_edits(reference, plan.edit.document_changes[0].edits)
    assert edited == best
    assert plan_apply("file:///m.py", 3, reference + "x = 1\n", t, None).refused
