"""Parsing LLM answers: fenced blocks, plans, code blocks, whole files, debug."""

import pytest

from stark_lsp.agents.base import AgentError
from stark_lsp.agents.llm.parse import code_blocks, parse_code, parse_debug, parse_plan, summary_of
from stark_lsp.markers.syntax import insert_marker

SRC = "int a = 1;\nint b = 2;\nint c = 3;\n"
MARKED = insert_marker(insert_marker(SRC, 1, 1, "x", "make a 10", "cuda"), 5, 5, "y", "make c 30", "cuda")


def test_code_blocks_info_and_unclosed():
    text = "hi\n```cuda\nA\n```\ntext\n~~~replace y\nB\n~~~\n```python\nC"
    bs = code_blocks(text)
    assert [(b.info, b.body, b.closed) for b in bs] == [("cuda", "A\n", True), ("replace y", "B\n", True), ("python", "C\n", False)]


def test_summary_line_variants():
    assert summary_of("```\nSUMMARY: inside\n```\n**Summary:** bigger blocks") == "bigger blocks"
    assert summary_of("no summary") is None


def test_parse_plan_ok_and_newline_forgiven():
    text = f"Plan:\n```cuda\n{MARKED.rstrip()}\n```\nSUMMARY: set both"
    marked, summary = parse_plan(text, "stop", SRC)
    assert marked == MARKED and summary == "set both"
    marked, summary = parse_plan(f"```\n{MARKED}```", "stop", SRC)
    assert summary == "make a 10; make c 30"


@pytest.mark.parametrize("text, reason, fragment", [
    ("", "stop", "was empty"),
    ("   \n", "stop", "was empty"),
    ("```cuda\nint a", "length", "cut off at the token limit"),
    ("I think you should use bigger blocks.", "stop", "no fenced code block"),
    ("```cuda\n" + SRC, "stop", "not closed"),
    ("```cuda\n" + SRC + "```", "stop", "no '@stark begin"),
    ("```cuda\n" + MARKED.replace("int b = 2;", "int b = 5;") + "```", "stop", "changed code outside the markers: original line 2"),
    ("```cuda\n// @stark begin x: y\nint a = 1;\nint b = 2;\nint c = 3;\n```", "stop", "line 1: marker 'x' is never ended"),
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


def test_parse_code_whole_file():
    new = "int a = 10;\nint b = 2;\nint c = 30;\n"
    assert parse_code(f"```cuda\n{new}```", "stop", MARKED) == {"x": "int a = 10;\n", "y": "int c = 30;\n"}
    with pytest.raises(AgentError, match="changed code outside the markers: line 4 is outside"):
        parse_code("```cuda\nint a = 10;\nint b = 9;\nint c = 30;\n```", "stop", MARKED)


def test_parse_debug():
    src, summary = parse_debug("```cuda\nint a = 0;\n```\nSUMMARY: zero", "stop", "int a = 1;\n")
    assert (src, summary) == ("int a = 0;\n", "zero")
    with pytest.raises(AgentError, match="unchanged"):
        parse_debug("```\nint a = 1;\n```", "stop", "int a = 1;\n")
    with pytest.raises(AgentError, match="no fenced code block"):
        parse_debug("sorry, I cannot help", "stop", "int a = 1;\n")
