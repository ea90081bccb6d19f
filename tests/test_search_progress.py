import io

from stark_lsp.search.engine import Progress
from stark_lsp.search.node import PLAN_CODE, ROOT, Node
from stark_lsp.search.progress import ProgressPrinter, format_progress
from stark_lsp.search.render import node_dict, table, tree


def prog(attempt, done=False, best=None, message=""):
    return Progress("t", attempt, 30, best, 3 if best else None, 1, attempt - 1, 2, done, message)


def test_progress_line_leads_with_the_speedup_against_the_users_kernel():
    p = Progress("t", 4, 30, 0.006, 3, 1, 3, 2, False, "", root_speedup=0.002, best_vs_yours=3.0)
    assert "best 3.00× your kernel, 0.0060× eager (#3)" in format_progress(p)
    # no ratio of its own (the user's kernel failed): none made up from the two eager figures
    p = Progress("t", 4, 30, 0.006, 3, 1, 3, 2, False, "", root_speedup=0.002)
    assert "your kernel" not in format_progress(p) and "best 0.0060× eager (#3)" in format_progress(p)
    p = Progress("t", 4, 30, 0.006, 3, 1, 3, 2, False, "", root_speedup=0.002, best_vs_yours=2.5, cpu=True)
    assert "best 2.50× your kernel, 0.0060× eager (CPU interpreter: for checking, not speed) (#3)" in format_progress(p)


def test_progress_line_never_shows_the_kernelbench_reference_as_a_result():
    p = Progress("t", 1, 30, 3.18, 1, 0, 1, 0, False, "", root_speedup=3.18, best_is_root=True,
                 best_is_reference=True, cpu=True)
    assert "best your kernel, the reference itself (1.00× eager) (#1)" in format_progress(p)
    assert "3.18" not in format_progress(p)


def test_table_has_both_speedups():
    rows = table(nodes(), best_id=2).splitlines()
    assert "× yours" in rows[0] and "× eager" in rows[0]
    assert rows[2].split()[5:7] == ["2.00×", "2.00×"]  # 2.0 ms -> 1.0 ms; 2.0x the reference


def test_progress_line_has_attempts_best_and_failures():
    assert format_progress(prog(4, best=1.5, message="hi")) == (
        "attempt 4/30  best 1.50× eager (#3)  correct 3  failed 1  running 2  | hi")
    assert "best -" in format_progress(prog(1))


def test_plain_lines_when_not_a_tty_and_repeats_dropped():
    out = io.StringIO()
    p = ProgressPrinter(out, tty=False)
    p(prog(1))
    p(prog(1))
    p(prog(2, done=True))
    assert out.getvalue().splitlines() == [format_progress(prog(1)), format_progress(prog(2, done=True))]


def test_one_rewritten_line_on_a_tty_ending_with_a_newline_when_done():
    out = io.StringIO()
    p = ProgressPrinter(out, tty=True)
    p(prog(1))
    p(prog(2, done=True))
    text = out.getvalue()
    assert text.count("\r") == 2 and text.count("\n") == 1 and text.endswith("\n")


def test_a_lasting_message_stays_above_the_live_line_on_a_tty():
    """A notice (an over-budget prompt, a re-timing that stopped) is printed on a line of its own, which the
    next update's carriage return cannot reach; a passing message rides the live line and is overwritten."""
    from dataclasses import replace

    out = io.StringIO()
    p = ProgressPrinter(out, tty=True)
    p(prog(1, message="waiting for the plan agent (3 s, 40 tokens)"))
    p(replace(prog(1, message="the prompt for the plan agent is ~900 tokens, over --context-tokens 500"), lasting=True))
    p(prog(2))
    kept = [line.split("\r\x1b[2K")[-1] for line in out.getvalue().split("\n")[:-1]]
    assert kept == ["the prompt for the plan agent is ~900 tokens, over --context-tokens 500"]
    assert out.getvalue().endswith("\r\x1b[2K" + format_progress(prog(2)))
    plain = io.StringIO()  # not a TTY: every line stays anyway, the notice on its progress line
    ProgressPrinter(plain, tty=False)(replace(prog(1, message="notice"), lasting=True))
    assert plain.getvalue() == format_progress(prog(1, message="notice")) + "\n"


def nodes():
    return [
        Node(1, "t", None, ROOT, "ok", speedup=1.0, runtime_ms=2.0, summary="the original kernel"),
        Node(2, "t", 1, PLAN_CODE, "ok", attempt=1, speedup=2.0, runtime_ms=1.0, summary="tile"),
        Node(3, "t", 2, PLAN_CODE, "compile_error", attempt=2, summary="vectorize", error="nvcc: bad"),
        Node(4, "t", 1, PLAN_CODE, "ok", attempt=3, speedup=2.0, duplicate_of=2, summary="tile again"),
    ]


def test_table_marks_the_best_and_shows_errors():
    rows = table(nodes(), best_id=2).splitlines()
    assert len(rows) == 5 and rows[2].startswith("   2*")
    assert "compile_error" in rows[3] and "vectorize [nvcc: bad]" in rows[3]
    assert "(duplicate of #2) tile again" in rows[4]


def test_tree_indents_by_depth():
    lines = tree(nodes(), best_id=2).splitlines()
    assert [len(l) - len(l.lstrip()) for l in lines] == [0, 2, 4, 2]
    assert "*best*" in lines[1]


def test_node_dict_leaves_sources_out_unless_asked():
    n = nodes()[1]
    n.source = "code"
    assert "source" not in node_dict(n)
    assert node_dict(n, with_source=True)["source"] == "code"


def test_a_kernelbench_reference_root_is_the_baseline_not_a_result():
    from stark_lsp.evaluate.result import EvalResult, Runtime, Status, Timing
    from stark_lsp.tasks.spec import KERNELBENCH_STUB

    t = Timing(1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 5)
    cpu = EvalResult(Status.OK, runtime=Runtime("cpu", False, t, t, 3.18))
    root = Node(1, "t", None, ROOT, "ok", speedup=3.18, runtime_ms=2.0, source="class Model: ..." + KERNELBENCH_STUB,
                result=cpu)
    child = Node(2, "t", 1, PLAN_CODE, "ok", attempt=1, speedup=0.004, runtime_ms=1.0, source="x", result=cpu)
    assert root.is_reference_itself and not child.is_reference_itself
    text = table([root, child], best_id=2) + tree([root, child], best_id=2) + root.outcome()
    assert "3.18" not in text and "the reference itself" in text
    assert "CPU interpreter: for checking, not speed" in table([root, child]).splitlines()[-1]
    # against your kernel, when your kernel is the reference: the candidate's own speedup over eager
    assert table([root, child]).splitlines()[2].split()[5:7] == ["0.0040×", "0.0040×"]


def test_a_failures_reason_is_never_cut():
    reason = "builtin: forward is not one supported op: " + "torch.special.zeta(x, y) " * 8
    n = Node(2, "t", 1, PLAN_CODE, "agent_error", attempt=1, error=reason)
    assert reason.strip() in " ".join(table([nodes()[0], n]).split())
