"""Parsing LLM answers: fenced blocks, anchored plans, whole-file plans, code
blocks, whole files, debug answers."""

import pytest

from stark_lsp.agents.base import AgentError
from stark_lsp.agents.llm.parse import code_blocks, parse_code, parse_debug, parse_plan, summary_of
from stark_lsp.markers.syntax import apply_replacements, has_markers, insert_marker, parse_markers

SRC = "int a = 1;\nint b = 2;\nint c = 3;\n"
MARKED = insert_marker(insert_marker(SRC, 1, 1, "x", "make a 10", "cuda"), 5, 5, "y", "make c 30", "cuda")


def test_code_blocks_info_unclosed_and_heading():
    text = "hi\n```cuda\nA\n```\ntext\n~~~replace y\nB\n~~~\n```python\nC"
    bs = code_blocks(text)
    assert [(b.info, b.body, b.closed) for b in bs] == [("cuda", "A\n", True), ("replace y", "B\n", True), ("python", "C\n", False)]
    assert [b.before for b in bs] == ["hi", "text", "~~~"]


def test_summary_line_variants():
    assert summary_of("```\nSUMMARY: inside\n```\n**Summary:** bigger blocks") == "bigger blocks"
    assert summary_of("no summary") is None


def test_parse_plan_anchored_lines_and_anchors():
    text = "Two changes.\n\nMARKER x lines 1-1: make a 10\nMARKER y at `int c = 3;`: make c 30\nSUMMARY: set both"
    marked, summary = parse_plan(text, "stop", SRC)
    assert marked == MARKED and summary == "set both"
    marked, summary = parse_plan("MARKER x line 1: make a 10\nMARKER y line 3: make c 30", "stop", SRC)
    assert marked == MARKED and summary == "make a 10; make c 30"


def test_parse_plan_whole_file_is_still_accepted_and_numbers_are_dropped():
    text = f"Plan:\n```cuda\n{MARKED.rstrip()}\n```\nSUMMARY: set both"
    assert parse_plan(text, "stop", SRC) == (MARKED, "set both")
    numbered = "```cuda\n// @stark begin x: make a 10\n1 | int a = 1;\n// @stark end x\n2 | int b = 2;\n" \
               "// @stark begin y: make c 30\n3 | int c = 3;\n// @stark end y\n```"
    assert parse_plan(numbered, "stop", SRC)[0] == MARKED


@pytest.mark.parametrize("text, reason, fragment", [
    ("", "stop", "was empty"),
    ("   \n", "stop", "was empty"),
    ("MARKER x lines 1-1: make a", "length", "cut off at the token limit"),
    ("I think you should use bigger blocks.", "stop", "no MARKER line"),
    ("```cuda\n" + SRC + "```", "stop", "no MARKER line"),
    ("```cuda\n" + MARKED, "stop", "not closed"),
    ("```cuda\n" + MARKED.replace("int b = 2;", "int b = 5;") + "```", "stop", "changed code outside the markers: original line 2"),
    ("```cuda\n// @stark begin x: y\nint a = 1;\nint b = 2;\nint c = 3;\n```", "stop", "line 1: marker 'x' is never ended"),
    ("MARKER x lines 2-9: widen", "stop", "line 9 is outside the source (lines 1-3)"),
    ("MARKER x at `int d`: widen", "stop", "no line contains the anchor `int d`"),
    ("MARKER x at `int`: widen", "stop", "the anchor `int` is on lines 1, 2, 3"),
    ("MARKER x lines 1-2: a\nMARKER y lines 2-3: b", "stop", "overlap"),
    ("MARKER x lines 1-1: a\nMARKER x lines 3-3: b", "stop", "'x' is used twice"),
    ("MARKER x lines 1-1", "stop", "marker 'x' has no instruction"),
    ("MARKER x somewhere: do it", "stop", "no location"),
])
def test_parse_plan_failures_carry_the_raw_text(text, reason, fragment):
    with pytest.raises(AgentError) as e:
        parse_plan(text, reason, SRC)
    assert fragment in str(e.value)
    assert e.value.raw == text


def test_parse_code_blocks_and_errors():
    good = "```replace x\nint a = 10;\n```\n```cpp replace y\nint c = 30;\n```"
    assert parse_code(good, "stop", MARKED) == {"x": "int a = 10;\n", "y": "int c = 30;\n"}
    with pytest.raises(AgentError, match="no block for marker id\\(s\\) y"):
        parse_code("```replace x\nint a = 10;\n```", "stop", MARKED)
    with pytest.raises(AgentError, match="unknown marker id\\(s\\) z"):
        parse_code(good + "\n```replace z\nq\n```", "stop", MARKED)
    with pytest.raises(AgentError, match="block for y is not closed"):
        parse_code("```replace x\nint a = 10;\n```\n```replace y\nint c", "stop", MARKED)


def test_parse_code_blocks_under_headings():
    text = "### Marker `x`\n```cpp\nint a = 10;\n```\n\n### Marker `y`\n```cpp\nint c = 30;\n```\n"
    assert parse_code(text, "stop", MARKED) == {"x": "int a = 10;\n", "y": "int c = 30;\n"}


def test_parse_code_whole_file_with_and_without_the_markers_kept():
    new = "int a = 10;\nint b = 2;\nint c = 30;\n"
    assert parse_code(f"```cuda\n{new}```", "stop", MARKED) == {"x": "int a = 10;\n", "y": "int c = 30;\n"}
    kept = MARKED.replace("int a = 1;", "int a = 10;").replace("int c = 3;", "int c = 30;")
    reps = parse_code(f"Here it is:\n```cuda\n{kept}```", "stop", MARKED)
    assert reps == {"x": "int a = 10;\n", "y": "int c = 30;\n"}
    assert not has_markers(apply_replacements(MARKED, reps))
    with pytest.raises(AgentError, match="changed code outside the markers: line 4 is outside"):
        parse_code("```cuda\nint a = 10;\nint b = 9;\nint c = 30;\n```", "stop", MARKED)


def test_parse_code_drops_echoed_marker_lines_in_blocks():
    text = ("```replace x\n// @stark begin x: make a 10\nint a = 10;\n// @stark end x\n```\n"
            "```replace y\nint c = 30;\n```")
    reps = parse_code(text, "stop", MARKED)
    assert reps == {"x": "int a = 10;\n", "y": "int c = 30;\n"}
    with pytest.raises(AgentError, match="contains other '@stark' marker lines"):
        parse_code("```replace x\n// @stark begin y: other\nint a = 10;\n// @stark end y\n```\n```replace y\nq\n```",
                   "stop", MARKED)


def test_parse_debug():
    src, summary = parse_debug("```cuda\nint a = 0;\n```\nSUMMARY: zero", "stop", "int a = 1;\n")
    assert (src, summary) == ("int a = 0;\n", "zero")
    with pytest.raises(AgentError, match="unchanged"):
        parse_debug("```\nint a = 1;\n```", "stop", "int a = 1;\n")
    with pytest.raises(AgentError, match="no fenced code block"):
        parse_debug("sorry, I cannot help", "stop", "int a = 1;\n")
    with pytest.raises(AgentError, match="is a diff"):
        parse_debug("```diff\n--- a\n+++ b\n@@ -1 +1 @@\n-int a = 1;\n+int a = 0;\n```", "stop", "int a = 1;\n")
    # marker lines copied into a repaired file are dropped
    src, _ = parse_debug("```cuda\n// @stark begin x: q\nint a = 0;\n// @stark end x\n```", "stop", "int a = 1;\n")
    assert src == "int a = 0;\n"


def test_odd_text_never_crashes():
    for text in ["\ud800 lone surrogate", "\x1b[2J\x1b]0;title\x07", "```", "```replace\n```", "MARKER", "`" * 50]:
        for fn, arg in ((parse_plan, SRC), (parse_code, MARKED), (parse_debug, SRC)):
            try:
                fn(text, "stop", arg)
            except AgentError:
                pass
    assert [m.id for m in parse_markers(MARKED)] == ["x", "y"]
