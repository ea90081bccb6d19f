import io

from stark_lsp.search.engine import Progress
from stark_lsp.search.node import PLAN_CODE, ROOT, Node
from stark_lsp.search.progress import ProgressPrinter, format_progress
from stark_lsp.search.render import node_dict, table, tree


def prog(attempt, done=False, best=None, message=""):
    return Progress("t", attempt, 30, best, 3 if best else None, 1, attempt - 1, 2, done, message)


def test_progress_line_leads_with_the_speedup_against_the_users_kernel():
    p = Progress("t", 4, 30, 0.006, 3, 1, 3, 2, False, "", root_speedup=0.002)
    assert "best 3.00x yours, 0.006x eager (#3)" in format_progress(p)


def test_table_has_both_speedups():
    rows = table(nodes(), best_id=2).splitlines()
    assert "x yours" in rows[0] and "x eager" in rows[0]
    assert rows[2].split()[5:7] == ["2.00x", "2.00x"]  # 2.0 ms -> 1.0 ms; 2.0x the reference


def test_progress_line_has_attempts_best_and_failures():
    assert format_progress(prog(4, best=1.5, message="hi")) == (
        "attempt 4/30  best 1.50x (#3)  correct 3  failed 1  running 2  | hi")
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
