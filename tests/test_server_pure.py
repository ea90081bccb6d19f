"""The server's pure pieces, without LSP: trees, labels, hover tables,
diagnostics, code actions, apply plans, settings, markers, progress text,
harness checks, kernel shifting, and the package's import graph."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from lsprotocol import types

from stark_lsp.server.apply_candidate import plan_apply
from stark_lsp.server.code_actions import ActionContext, MarkerSpan, build_code_actions, marker_spans
from stark_lsp.server.diagnostics import MAX_DIAGNOSTICS, TaskProblem, build_diagnostics, changed_kernels
from stark_lsp.server.documents import line_before_edits, line_edit
from stark_lsp.server.harness_check import unfilled_functions
from stark_lsp.server.hover import hover_markdown
from stark_lsp.server.implement_marker import only_marker, splice_marker
from stark_lsp.server.labels import gain_text
from stark_lsp.server.progress import PHASE_ROOT, final_text, progress_text
from stark_lsp.server.settings import Secret, Settings, api_key_from, parse_settings
from stark_lsp.server.text_edits import apply_text_edits
from stark_lsp.server.tree_cache import TreeCache
from stark_lsp.server.tree_json import node_detail, tree_json
from stark_lsp.search.tree_view import outcome
from stark_lsp.tasks.kernels import find_kernels
from stark_lsp.tasks.spec import KERNELBENCH_STUB
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


def nothing_new(id, parent):
    n = failed_node(id, parent, "", status="compile_error")
    n.status, n.result, n.source = "agent_error", None, ""
    n.error = "plan agent: nothing new to try from this node (every tunable value is in the tree)"
    n.nothing_new = True
    return n


def kernelbench_tree():
    model = "import torch\n\n\nclass Model(torch.nn.Module):\n    pass\n\n\ndef get_inputs():\n    return []\n"
    root = ok_node(1, None, model.rstrip() + KERNELBENCH_STUB, 1.0, kind="root")
    return make_tree(root, ok_node(2, 1, model + "\nclass ModelNew(Model):\n    pass\n", 1.8))


# -- trees and labels --------------------------------------------------------------------


def test_tree_view_best_counts_and_gain_against_your_kernel():
    t = tree()
    assert t.root.id == 1 and t.best.id == 4 and t.best_candidate.id == 4
    assert t.finished == 4 and t.correct == 3 and t.failed == 1
    assert [n.id for n in t.ranked_candidates()] == [4, 2, 5]
    assert round(t.gain(t.get(4)), 2) == 2.19  # the two runtimes' ratio: 0.8364 ms / 0.3817 ms
    assert t.gain(t.root) == 1.0 and t.gain(t.get(3)) is None
    assert [outcome(t, n) for n in t.nodes] == ["root", "faster", "failed", "faster", "slower"]
    assert gain_text(t, t.get(4)) == "2.19× your kernel" and gain_text(t, t.root) == "baseline"


def test_a_kernelbench_reference_is_the_baseline_not_a_speedup():
    t = kernelbench_tree()
    assert t.baseline_is_reference and t.gain(t.get(2)) == 1.8
    assert gain_text(t, t.get(2)) == "1.80× eager"
    md = hover_markdown("Model", t)
    assert "| baseline | your Model (eager PyTorch, the reference) | ok |" in md and "× eager" in md
    assert "1.00×" not in md and "× your kernel" not in md


def test_cpu_timings_are_labelled_and_never_exponents():
    t = make_tree(ok_node(1, None, ROOT, 2.9e-05, kind="root", gpu=False), ok_node(2, 1, FASTER, 1.0e-04, gpu=False))
    assert gain_text(t, t.get(2)) == "3.45× your kernel (CPU interpreter: for checking, not speed)"
    md = hover_markdown("k", t)
    (d,) = build_diagnostics(ROOT, KERNELS, "triton", t, None)
    for text in (md, d.message, node_detail(t, 2)["eager_text"], node_detail(t, 2)["gain_text"]):
        assert "e-0" not in text and "0.00×" not in text
    assert "CPU interpreter: for checking, not speed" in md
    assert "CPU interpreter: for checking, not speed" in d.message


def test_nothing_new_is_not_a_failed_candidate_and_has_no_diff():
    t = make_tree(*tree_nodes(), nothing_new(6, 2))
    assert outcome(t, t.get(6)) == "nothing_new" and t.failed == 1
    detail = node_detail(t, 6)
    assert detail["diff"] == "(no candidate: the agent had nothing new to try from #2)"
    assert not detail["can_apply"] and detail["why_not"] == "no candidate was made"
    assert "-" not in detail["diff"].split("\n")[0][:1]
    assert "nothing new to try" in hover_markdown("k", t)


def test_tree_json_has_labels_and_no_sources():
    j = tree_json(tree())
    assert j["best"] == 4 and j["baseline"] == "your kernel" and j["best_text"] == "best 2.19× your kernel (#4)"
    node = j["nodes"][3]
    assert "source" not in node and "error" not in node and node["label"] == "2.19×"
    assert node["outcome"] == "faster" and j["nodes"][0]["label"] == "baseline"
    d = node_detail(tree(), 4)
    assert d["source"] == FASTER and d["can_apply"] and d["diff"].startswith("@@")
    assert d["gain_text"] == "2.19× your kernel" and d["eager_text"] == "2.41× eager"
    assert "+    mask = offs < n  # hinted" in d["diff"] and d["diff"].count("\n-") == 2  # against its parent #2
    assert node_detail(tree(), 1)["why_not"] == "this is your kernel"
    assert node_detail(tree(), 3)["why_not"] == "only verified candidates can be applied"


def test_tree_cache_reports_changes_only():
    cache = TreeCache()
    n1 = ok_node(1, None, ROOT, 1.0, kind="root")
    assert cache.put_nodes("t", [n1]) is True
    assert cache.put_nodes("t", [n1]) is False
    assert cache.put_nodes("t", [n1, ok_node(2, 1, FAST, 1.5)]) is True
    assert cache.replace("t", [n1, ok_node(2, 1, FAST, 1.5)]) is False
    assert cache.get("t").best.id == 2 and cache.get(None) is None


# -- hover ------------------------------------------------------------------------------


def test_hover_fits_without_scrolling_best_first():
    md = hover_markdown("add_relu_kernel", tree())
    lines = md.split("\n")
    assert lines[0] == "**add_relu_kernel** · STARK"
    assert "4 attempts, 3 correct · best #4: **2.19× your kernel** (0.3817 ms vs 0.8364 ms)" in md
    assert "| # | plan | status | time | × yours |" in lines
    rows = [l for l in lines if l.startswith("| ") and not l.startswith("| # |")]
    assert rows[0] == "| baseline | your kernel | ok | 0.8364 ms | - |"
    assert rows[1] == "| #4 ★ | hint | ok | 0.3817 ms | 2.19× |"  # the best right under the baseline
    assert rows[2] == "| #2 | bigger \\| blocks | ok | 0.575 ms | 1.45× |"
    assert "| #3 | boom | compile error | - | - |" in lines
    assert "the best is 2.41× eager" in md and "CPU" not in md


def test_hover_shows_five_candidates_then_points_to_the_tree():
    nodes = [ok_node(1, None, ROOT, 1.0, kind="root")] + [
        ok_node(i, 1, ROOT + str(i), 1 + i / 100, attempt=i) for i in range(2, 23)]
    md = hover_markdown("k", make_tree(*nodes))
    rows = [l for l in md.split("\n") if l.startswith("| #") and "★" in l or l.startswith("| #") and "|" in l[3:]]
    cands = [l for l in md.split("\n") if l.startswith("| #") and not l.startswith("| # |")]
    assert len(cands) == 5 and cands[0].startswith("| #22 ★") and rows
    assert "16 more: open the search tree." in md


def test_hover_states():
    assert "Not optimized yet" in hover_markdown("k", None)
    md = hover_markdown("k", None, running="attempt 1/3", problem="no harness")
    assert "⚠ no harness" in md and "Optimizing: attempt 1/3" in md and "Not optimized" not in md
    cpu = make_tree(ok_node(1, None, ROOT, 1.0, kind="root", gpu=False))
    assert "nothing beats your kernel yet" in hover_markdown("k", cpu)
    assert "No NVIDIA GPU" in hover_markdown("k", None, note="No NVIDIA GPU here")


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


# -- diagnostics --------------------------------------------------------------------------


def test_best_speedup_information_on_the_changed_kernel():
    (d,) = build_diagnostics(ROOT, KERNELS, "triton", tree(), None)
    assert d.severity == types.DiagnosticSeverity.Information and d.code == "best-speedup"
    assert d.range.start.line == KLINE and d.range.start.character == len("def ")
    assert d.range.end.character == len("def add_relu_kernel")
    assert d.message.startswith(
        "Best candidate #4: 2.19× your kernel (0.3817 ms vs 0.8364 ms); 4 attempts, 3 correct; 2.41× eager")
    assert d.data == {"kernel": "add_relu_kernel", "node": 4}


def test_after_apply_the_diagnostic_says_the_candidate_is_in_the_file():
    (d,) = build_diagnostics(FASTER, KERNELS, "triton", tree(), None)
    assert d.code == "applied" and d.message.startswith("Candidate #4 is in this file: 2.19× your original kernel")
    titles_ = [a.title for a in build_code_actions(ActionContext("u", FASTER, KERNELS, tree=tree()))]
    assert not any(t.startswith("Apply best candidate") for t in titles_)


def test_no_correct_root_wording():
    no_root = make_tree(failed_node(1, None, ROOT, kind="root"), ok_node(2, 1, FASTER, 1.5))
    ds = build_diagnostics(ROOT + "\n# edited\n", KERNELS, "triton", no_root, None)
    assert ds[0].message.startswith("Best candidate #2: 1.50× eager (your kernel failed); 1 attempts, 1 correct")
    acts = build_code_actions(ActionContext("u", ROOT, KERNELS, tree=no_root))
    assert titles(acts)[1] == "Apply best candidate: -"  # no figure against a kernel that failed


def test_changed_kernels():
    assert [k.name for k in changed_kernels(ROOT, FASTER, KERNELS)] == ["add_relu_kernel"]
    assert changed_kernels(ROOT, FAST, KERNELS) == []  # only the launcher changed
    two = ROOT + "\n\n@triton.jit\ndef second(x):\n    pass\n"
    ks = find_kernels(two, "triton")
    both = two.replace("    mask = offs < n\n", "    mask = offs < n  # a\n").replace("    pass\n", "    return\n")
    assert [k.name for k in changed_kernels(two, both, ks)] == ["add_relu_kernel", "second"]
    assert [k.name for k in changed_kernels(two, two.replace("    pass\n", "    return\n"), ks)] == ["second"]


def test_root_failure_on_compiler_lines_and_gone_once_the_file_is_edited():
    t = make_tree(failed_node(1, None, ROOT, lines=(9, 10), kind="root", error="nvcc failed"))
    ds = build_diagnostics(ROOT, KERNELS, "triton", t, None)
    assert [d.range.start.line for d in ds] == [8, 9]
    assert all(d.severity == types.DiagnosticSeverity.Warning and "compile error" in d.message for d in ds)
    assert all("no search was started" in d.message for d in ds)
    assert ds[0].range.start.character == 4  # after the indentation
    # the user edits the kernel: the error describes text that is not there any more
    assert build_diagnostics(ROOT + "\n# fixed\n", KERNELS, "triton", t, None) == []
    # without lines: on the kernel names
    (d,) = build_diagnostics(ROOT, KERNELS, "triton", make_tree(failed_node(1, None, ROOT, kind="root", error="bad")), None)
    assert d.range.start.line == KLINE and "bad" in d.message


def test_missing_harness_error_on_every_kernel_and_capped_with_a_summary():
    two = ROOT + "\n\n@triton.jit\ndef second(x):\n    pass\n"
    ks = find_kernels(two, "triton")
    ds = build_diagnostics(two, ks, "triton", None, TaskProblem("no harness", missing_harness=True))
    assert [(d.code, d.severity, d.data["kernel"]) for d in ds] == [
        ("missing-harness", types.DiagnosticSeverity.Error, "add_relu_kernel"),
        ("missing-harness", types.DiagnosticSeverity.Error, "second"),
    ]
    many = "".join(f"@triton.jit\ndef k{i}(x):\n    pass\n\n" for i in range(300))
    ds = build_diagnostics(many, find_kernels(many, "triton"), "triton", None, TaskProblem("no harness", True))
    assert len(ds) == MAX_DIAGNOSTICS
    assert ds[-1].code == "more" and f"and {300 - MAX_DIAGNOSTICS} more STARK diagnostics" in ds[-1].message


def test_unfilled_harness_and_needs_gpu_problems():
    (d,) = build_diagnostics(ROOT, KERNELS, "triton", None, TaskProblem("fill in reference()", code="unfilled-harness"))
    assert d.code == "unfilled-harness" and d.severity == types.DiagnosticSeverity.Error
    (d,) = build_diagnostics(ROOT, KERNELS, "triton", None, TaskProblem("needs a GPU", code="needs-gpu"))
    assert d.severity == types.DiagnosticSeverity.Information


def test_name_range_counts_utf16():
    text = "# é😀\n@triton.jit\ndef k(x):  # 😀\n    pass\n"
    (k,) = find_kernels(text, "triton")
    (d,) = build_diagnostics(text, [k], "triton", None, TaskProblem("x"))
    assert (d.range.start.character, d.range.end.character) == (4, 5)


# -- code actions ----------------------------------------------------------------------------


def titles(actions):
    return [a.title for a in actions]


def test_code_actions_for_an_optimized_kernel():
    acts = build_code_actions(ActionContext("u", ROOT, KERNELS, tree=tree()))
    assert titles(acts) == ["Optimize kernel add_relu_kernel", "Apply best candidate: 2.19× your kernel",
                            "Apply candidate #2: 1.45× your kernel"]
    assert acts[1].command.command == "stark.applyBest" and acts[1].command.arguments == ["u", "add_relu_kernel"]
    assert acts[2].command.arguments == ["u", "add_relu_kernel", 2]  # #5 (0.82×) is slower than the root: not offered


def test_continue_search_when_the_budget_is_spent():
    acts = build_code_actions(ActionContext("u", ROOT, KERNELS, tree=tree(), continue_by=30))
    assert titles(acts)[0] == "Continue search for add_relu_kernel (+30 attempts)"
    assert acts[0].command.command == "stark.continueSearch" and acts[0].command.arguments == ["u", "add_relu_kernel", 30]


def test_code_actions_while_running_and_for_markers():
    m = MarkerSpan("st", "do it", 3, 5)
    idle = build_code_actions(ActionContext("u", ROOT, KERNELS, [m]))
    assert titles(idle)[-1] == "Implement with the Code agent (marker st)" and idle[-1].command.arguments == ["u", "st"]
    # while a search runs, its tree is the search's: the marker's attempt is offered disabled, with why (issue 26)
    acts = build_code_actions(ActionContext("u", ROOT, KERNELS, [m], running_kernel="add_relu_kernel",
                                            disabled_support=True))
    assert titles(acts) == ["Stop optimizing add_relu_kernel", "Implement with the Code agent (marker st)"]
    assert acts[1].disabled is not None and "stop it first" in acts[1].disabled.reason and acts[1].command is None
    assert build_code_actions(ActionContext("u", ROOT, [], tree=tree())) == []


def test_quick_fixes_for_a_missing_or_unfilled_harness():
    diag = types.Diagnostic(range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)),
                            message="m", source="stark", code="missing-harness")
    a, opt = build_code_actions(ActionContext("u", ROOT, KERNELS, tree=tree(), problem=TaskProblem("m", True),
                                              diagnostics=[diag], harness_name="x.harness.py"))
    assert a.title == "Create x.harness.py for add_relu_kernel" and a.kind == types.CodeActionKind.QuickFix
    assert a.diagnostics == [diag] and a.command.command == "stark.createHarness"
    # beside the fix, "Optimize" disabled with the file to create (issue 25: never a silent missing action)
    assert opt.title == "Optimize kernel add_relu_kernel" and opt.command is None
    assert opt.disabled.reason.startswith("create x.harness.py first: the harness says what add_relu_kernel")
    renamed = build_code_actions(ActionContext("u", ROOT, KERNELS, problem=TaskProblem("m", True),
                                               harness_name="new.harness.py", orphan_harness="old.harness.py"))
    assert titles(renamed) == ["Rename old.harness.py to new.harness.py (the harness of the old name)",
                               "Create new.harness.py for add_relu_kernel", "Optimize kernel add_relu_kernel"]
    assert renamed[0].is_preferred and renamed[0].command.command == "stark.renameHarness"
    assert renamed[2].disabled.reason.startswith("rename old.harness.py to new.harness.py (the harness of the old "
                                                 "name), or create new.harness.py first")
    fill, wait = build_code_actions(ActionContext("u", ROOT, KERNELS, problem=TaskProblem("fill in reference() in "
                                                  "x.harness.py", code="unfilled-harness"), harness_name="x.harness.py"))
    assert fill.title == "Fill in x.harness.py" and fill.command.command == "stark.showHarness"
    assert wait.disabled.reason == "fill in reference() in x.harness.py"
    # a client that cannot show a disabled action has the fix alone: it says what to do
    (fix,) = build_code_actions(ActionContext("u", ROOT, KERNELS, problem=TaskProblem("m", True),
                                              harness_name="x.harness.py", disabled_support=False))
    assert fix.title == "Create x.harness.py for add_relu_kernel"


def test_a_helper_module_offers_its_users_searches_or_their_stop():
    from stark_lsp.server.code_actions import HelperUserTarget

    problem = TaskProblem("a helper module: ops/a.py uses it", code="helper")
    users = [HelperUserTarget("file:///p/ops/a.py", "ops/a.py", "a_kernel"),
             HelperUserTarget("file:///p/ops/b.py", "ops/b.py", "b_kernel", running="b_kernel")]
    acts = build_code_actions(ActionContext("file:///p/h.py", ROOT, KERNELS * 2, tree=tree(), problem=problem,
                                            helper_users=users))
    assert titles(acts) == ["Optimize kernel a_kernel (via ops/a.py, which uses this helper)",
                            "Stop optimizing b_kernel (in ops/b.py, which uses this helper)"]
    assert acts[0].command.command == "stark.optimizeHelperUser" and acts[0].disabled is None
    assert acts[0].command.arguments == ["file:///p/h.py", "file:///p/ops/a.py", "a_kernel"]
    assert acts[1].command.command == "stark.stop" and acts[1].command.arguments == ["file:///p/ops/b.py", "b_kernel"]
    # no user left to search (none has a kernel now): "Optimize" disabled, saying why
    (alone,) = build_code_actions(ActionContext("file:///p/h.py", ROOT, KERNELS, problem=problem))
    assert alone.disabled is not None and "ops/a.py uses it" in alone.disabled.reason


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
    assert s.models == {"plan": "big"}
    assert problems == ["stark.concurrency must be an integer >= 1, not 0"]
    assert "sk-secret" not in repr(s)
    s2, problems = parse_settings({"stark": {"llm": "gpt"}}, s)
    assert s2.llm == "openai" and "stark.llm must be one of" in problems[0]
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings({"profileTop": 3})[0].profile_top == 3
    assert parse_settings({"profileTop": -1})[1] == ["stark.profileTop must be an integer >= 0, not -1"]
    assert parse_settings({})[0].compile_baseline is True
    off = parse_settings({"compileBaseline": False})[0]
    assert off.compile_baseline is False
    from stark_lsp.server.backend import Backend

    assert Backend().search_config(off).compiled_seed is False  # no torch.compile timed, no start from its code
    assert Backend().search_config(Settings()).compiled_seed is True
    assert parse_settings({"compileBaseline": "no"})[1] == ["stark.compileBaseline must be true or false, not 'no'"]


def test_api_key_is_a_secret():
    key = api_key_from({"apiKey": "sk-abcdefghijklmnopqrstuvwxyz"})
    assert key.get() == "sk-abcdefghijklmnopqrstuvwxyz"
    assert "sk-" not in repr(key) and "sk-" not in str(key) and "sk-" not in f"{key}"
    assert not api_key_from({}) and not Secret("")
    # bound to the endpoint it was given for
    assert key.url is None and api_key_from({"apiKey": "k", "baseUrl": "http://a/v1"}).url == "http://a/v1"
    assert api_key_from({"stark": {"apiKey": "k", "baseUrl": "http://b/v1"}}).url == "http://b/v1"


def test_a_kernelbench_candidate_applies_onto_the_reference_file():
    reference = "class Model:\n    pass\n\n\ndef get_inputs():\n    return []\n"
    root_src = reference.rstrip() + KERNELBENCH_STUB
    best = reference.rstrip() + "\n\n\nclass ModelNew(Model):\n    def forward(self, x):\n        return x\n"
    t = make_tree(ok_node(1, None, root_src, 1.0, kind="root"), ok_node(2, 1, best, 1.5))
    plan = plan_apply("file:///m.py", 3, reference, t, None)
    assert plan.edit is not None and not plan.refused, plan.message
    edited = apply_text_edits(reference, plan.edit.document_changes[0].edits)
    assert edited == best
    assert plan_apply("file:///m.py", 3, reference + "x = 1\n", t, None).refused


# -- progress, harnesses, documents -----------------------------------------------------------------


def test_progress_text_phases_then_attempts():
    assert progress_text(None, None, None) == ("starting the evaluation worker", 0)
    p = SimpleNamespace(attempt=0, budget=4, correct=0, failures=0, running=0)
    assert progress_text(p, None, PHASE_ROOT)[0] == PHASE_ROOT
    p = SimpleNamespace(attempt=2, budget=4, correct=1, failures=1, running=1)
    assert progress_text(p, tree(), None) == ("attempt 2/4 · best 2.19× your kernel (#4) · 1 correct, 1 failed, 1 running", 50)
    assert progress_text(p, None, None)[0].startswith("attempt 2/4 · no correct candidate yet")
    assert progress_text(p, tree(), None, stopping=True)[0] == "stopping: waiting for 1 attempt in flight"
    waiting = SimpleNamespace(attempt=0, budget=4, correct=0, failures=0, running=1,
                              message="waiting for the plan agent (41 s, 310 tokens)")
    assert progress_text(waiting, None, None)[0].endswith("1 running · waiting for the plan agent (41 s, 310 tokens)")
    assert final_text(p, make_tree(ok_node(1, None, ROOT, 1.0, kind="root")), "cancelled") == \
        "cancelled: 2 attempts, no correct candidate yet"


def test_unfilled_harness_functions():
    text = ('def get_inputs():\n    return [1]\n\n\ndef reference(x):\n    """doc"""\n'
            '    raise NotImplementedError("write it")\n\n\ndef run(lib, x):\n    raise NotImplementedError\n')
    found = unfilled_functions(text)
    assert [(u.function, u.line) for u in found] == [("reference", 6), ("run", 10)]
    assert unfilled_functions("def reference(x):\n    return x\n") == []
    assert unfilled_functions("def reference(:\n") == []


def test_lines_map_back_through_edits_until_the_next_analysis():
    (k,) = find_kernels(ROOT, "triton")

    def change(line0, line1, new):
        rng = types.Range(start=types.Position(line=line0, character=0), end=types.Position(line=line1, character=0))
        return line_edit(types.TextDocumentContentChangePartial(range=rng, text=new))

    two_above = [change(0, 0, "# one\n# two\n")]
    assert line_before_edits(k.name_line + 2, two_above) == k.name_line
    assert line_before_edits(0, two_above) == 0 and line_before_edits(1, two_above) == 0  # inside: its first line
    edited = "# one\n# two\n" + ROOT
    assert find_kernels(edited, "triton")[0].name_line == k.name_line + 2
    # several edits, in order: a line inserted inside the kernel, two lines deleted above it
    edits = [change(k.end_line, k.end_line, "    pass\n"), change(1, 3, "")]
    assert line_before_edits(k.name_line - 2, edits) == k.name_line
    assert line_before_edits(k.end_line + 1 - 2, edits) == k.end_line  # the inserted line: still the kernel
    assert line_edit(types.TextDocumentContentChangeWholeDocument(text="x")) is None


def test_the_server_package_has_no_import_cycles():
    pkg = Path(__file__).resolve().parents[1] / "stark_lsp" / "server"
    graph = {}
    for f in pkg.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:
                continue
            deps |= {m.split(".")[2] for m in mods if m.startswith("stark_lsp.server.") and m.count(".") >= 2}
        graph[f.stem] = deps & {p.stem for p in pkg.glob("*.py")}
    seen, stack = set(), []

    def visit(n):
        assert n not in stack, f"import cycle: {' -> '.join(stack[stack.index(n):] + [n])}"
        if n in seen:
            return
        stack.append(n)
        for d in graph.get(n, ()):
            visit(d)
        stack.pop()
        seen.add(n)

    for n in graph:
        visit(n)
    assert "fake_backend" not in graph  # test doubles live in tests/


def test_a_backend_is_named_by_module_or_by_file():
    from stark_lsp.server.backend import load_backend

    repo = Path(__file__).resolve().parents[1]
    assert type(load_backend("tests.fake_backend:FakeBackend")).__name__ == "FakeBackend"
    assert type(load_backend(f"{repo / 'tests' / 'fake_backend.py'}:FakeBackend")).__name__ == "FakeBackend"


def test_build_errors_in_a_header_go_on_the_header_not_on_the_kernel():
    from stark_lsp.evaluate.result import CompileReport, Diagnostic, EvalResult, Status
    from stark_lsp.search.node import Node
    from stark_lsp.server.diagnostics import other_file_failures

    diags = [Diagnostic("identifier \"x\" is undefined", line=12, file="/proj/include/common.cuh"),
             Diagnostic("expected a \";\"", line=9, file="kernel.cu")]
    result = EvalResult(Status.COMPILE_ERROR, "nvcc failed", compile=CompileReport(ok=False, diagnostics=diags))
    t = make_tree(Node(id=1, task_id="t", parent_id=None, kind="root", status="compile_error", attempt=0, source=ROOT,
                       result=result, error="nvcc failed"))
    ds = build_diagnostics(ROOT, KERNELS, "triton", t, None)
    assert [d.range.start.line for d in ds] == [8]  # only the kernel's own line here
    by_file = other_file_failures(ROOT, t.root, "k.cu")
    (h,) = by_file["/proj/include/common.cuh"]
    assert h.range.start.line == 11 and "k.cu does not build" in h.message and "\"x\" is undefined" in h.message
    assert other_file_failures(ROOT + "\n# edited\n", t.root, "k.cu") == {}  # stale once the kernel changes


def test_an_action_that_cannot_be_taken_is_offered_disabled_with_why():
    """Never a silent missing action (issue 25): a file that is not a task yet says why on the action itself."""
    acts = build_code_actions(ActionContext("u", ROOT, KERNELS, problem=TaskProblem(
        "fix the syntax error on line 12 first: invalid syntax")))
    (a,) = acts
    assert a.title == "Optimize kernel add_relu_kernel" and a.command is None
    assert a.disabled is not None and a.disabled.reason.startswith("fix the syntax error on line 12")
    b, check = build_code_actions(ActionContext("u", ROOT, KERNELS, cannot_run="needs an NVIDIA GPU"))
    assert b.disabled.reason == "needs an NVIDIA GPU" and b.command is None
    assert check.title.startswith("Check that add_relu_kernel compiles") and check.disabled is None


def test_a_server_on_this_machine_needs_no_api_key_in_the_editor_either(monkeypatch):
    """As in the CLI: stark.llm 'openai' at a loopback stark.baseUrl makes a team without a key; elsewhere the
    refusal names the palette command a user can find."""
    from stark_lsp.server.backend import Backend, BackendUnavailable
    from stark_lsp.server.settings import Secret, Settings

    for k in ("STARK_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    team = Backend().make_team(Settings(llm="openai", base_url="http://127.0.0.1:8080/v1", model="m"), Secret())
    assert team is not None
    with pytest.raises(BackendUnavailable, match="STARK: Set API key"):
        Backend().make_team(Settings(llm="openai", base_url="https://api.example.com/v1", model="m"), Secret())


def test_the_place_a_broken_task_names_is_its_last_file_and_line():
    from stark_lsp.server.diagnostics import broken_task_diagnostic, task_error_place

    msg = ("task error: the reference raised TypeError: bad (k.harness.py, line 12: return ref(x, y)) "
           "(fix the task, then run again)")
    assert task_error_place(msg) == ("k.harness.py", 12)
    assert task_error_place("task error: get_inputs() must return a list") is None
    assert task_error_place("the reference raised X (a.py, line 3: def f) (b.harness.py, line 9)") == ("b.harness.py", 9)
    d = broken_task_diagnostic(12, "the reference raised TypeError: bad")
    assert d.range.start.line == 11 and d.code == "task-broken" and d.severity == types.DiagnosticSeverity.Error
    assert broken_task_diagnostic(0, "x").range.start.line == 0


def test_a_saved_syntax_error_or_a_file_gone_is_no_task_and_says_why(tmp_path):
    """Issue 25: a Triton file that does not parse is a "not a task" problem naming its line; a file removed
    outside the editor is one too, shown on no kernel (its diagnostics go) but on the disabled action."""
    from stark_lsp.server.documents import resolve_task
    from tests.server_fixtures import TRITON_HARNESS

    kernel = tmp_path / "add_relu.py"
    kernel.write_text(ROOT.replace("    out = torch.empty_like(x)\n", "    out = torch.empty_like(x\n"))
    (tmp_path / "add_relu.harness.py").write_text(TRITON_HARNESS)
    r = resolve_task(kernel)
    line = line_of(ROOT, "torch.empty_like(x)") + 1
    assert r.task is None and r.problem.kind == "not-a-task" and r.problem.blocks_search
    assert r.problem.message.startswith(f"fix the syntax error on line {line} first")
    kernel.write_text(ROOT)
    assert resolve_task(kernel).problem is None
    kernel.unlink()
    gone = resolve_task(kernel).problem
    assert gone.kind == "not-on-disk" and gone.blocks_search and "add_relu.py is not on disk" in gone.message
    assert build_diagnostics(ROOT, KERNELS, "triton", None, gone) == []
    (a,) = build_code_actions(ActionContext("u", ROOT, KERNELS, problem=gone))
    assert a.disabled is not None and a.disabled.reason.startswith("add_relu.py is not on disk")


def test_a_client_without_disabled_actions_gets_the_reason_in_an_enabled_one():
    """Neovim 0.7 announces no codeAction.disabledSupport: "STARK: cannot optimize here: <why>", whose
    command (stark.whyNot) shows the whole reason."""
    long = "fix the syntax error on line 12 first: " + "x" * 400
    (a,) = build_code_actions(ActionContext("u", ROOT, KERNELS, problem=TaskProblem(long), disabled_support=False))
    assert a.disabled is None and a.title.startswith("STARK: cannot optimize here: fix the syntax error on line 12")
    assert a.title.endswith("…") and len(a.title) == len("STARK: cannot optimize here: ") + 120
    assert a.command.command == "stark.whyNot" and a.command.arguments == ["u", "add_relu_kernel", long[:300]]
    b, check = build_code_actions(ActionContext("u", ROOT, KERNELS, cannot_run="needs an NVIDIA GPU",
                                                disabled_support=False))
    assert b.title == "STARK: cannot optimize here: needs an NVIDIA GPU" and b.command.command == "stark.whyNot"
    assert check.command.command == "stark.optimize"
