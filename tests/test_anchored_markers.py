"""Anchored markers: the Plan agent says where, the engine places the markers."""

import pytest

from stark_lsp.markers.anchors import MarkerRequest, parse_anchored, place_markers, resolve
from stark_lsp.markers.syntax import MarkerError, parse_markers, strip_markers

PY = "def f(x):\n    a = x + 1\n    b = a * 2\n    return b\n\n\ndef g(y):\n    a = y + 1\n    return a\n"


def one(text):
    [r] = parse_anchored(text)
    return r


@pytest.mark.parametrize("line, want", [
    ("MARKER blk lines 2-3: do it", MarkerRequest("blk", "do it", "span", 2, 3)),
    ("- **MARKER** `blk` lines 2–3: do it", MarkerRequest("blk", "do it", "span", 2, 3)),
    ("1. **MARKER blk** (lines 2 to 3): do it", MarkerRequest("blk", "do it", "span", 2, 3)),
    ("### Marker blk — line 2: do it", MarkerRequest("blk", "do it", "span", 2, 2)),
    ("MARKER: blk after line 4: add g", MarkerRequest("blk", "add g", "after", 4, 4)),
    ("MARKER blk before line 1: add an import", MarkerRequest("blk", "add an import", "before", 1, 1)),
    ("MARKER blk at `b = a * 2`: use a shift", MarkerRequest("blk", "use a shift", "span", None, None, "b = a * 2")),
    ("MARKER blk from `a = x + 1` to `return b`: fuse", MarkerRequest("blk", "fuse", "span", None, None, "a = x + 1", "return b")),
    ("MARKER blk before `def g(y):`: a helper", MarkerRequest("blk", "a helper", "before", None, None, "def g(y):")),
    ("MARKER blk at ``x = `a` + 1``: with a backtick", MarkerRequest("blk", "with a backtick", "span", None, None, "x = `a` + 1")),
    ("MARKER blk lines 7-9 `def g(y):` .. `return a`: both", MarkerRequest("blk", "both", "span", 7, 9, "def g(y):", "return a")),
    ("MARKER blk at ` 8 | a = y + 1`: copied with its number", MarkerRequest("blk", "copied with its number", "span", None, None, "a = y + 1")),
])
def test_marker_line_forms(line, want):
    assert one(line) == want


def test_a_colon_inside_an_anchor_is_not_the_instruction_colon():
    r = one("MARKER g at `def g(y):`: rename")
    assert (r.anchor, r.instruction) == ("def g(y):", "rename")


def test_block_form_with_keys():
    text = "MARKER blk\nlines: 2-3\ninstruction: fold the two steps\n\nSUMMARY: x"
    assert one(text) == MarkerRequest("blk", "fold the two steps", "span", 2, 3)


def test_marker_lines_inside_code_fences_are_ignored():
    text = "```\nMARKER fake lines 1-1: no\n```\nMARKER real lines 2-2: yes"
    assert [r.id for r in parse_anchored(text)] == ["real"]


def test_place_markers_python_indentation_and_empty_spans():
    reqs = parse_anchored("MARKER a lines 2-3: fold\nMARKER tail after line 4: new code\nMARKER top before line 1: import")
    marked = place_markers(PY, reqs, "python")
    assert strip_markers(marked) == PY
    ms = {m.id: m for m in parse_markers(marked)}
    assert ms["a"].span == "    a = x + 1\n    b = a * 2\n"
    assert ms["tail"].span == "" and ms["top"].span == ""
    assert "    # @stark begin a: fold\n" in marked and marked.startswith("# @stark begin top: import\n")


def test_ambiguous_anchors_use_the_line_number_or_fail():
    with pytest.raises(MarkerError, match="the anchor `a =` is on lines 2, 8"):
        resolve(PY, one("MARKER m at `a = `: x"))
    assert resolve(PY, one("MARKER m line 7 `a = `: x")) == (8, 8)  # the one nearest line 7
    assert resolve(PY, one("MARKER m from `def g` to `return`: x")) == (7, 9)  # the end anchor after the start


def test_crlf_and_no_final_newline_round_trip():
    src = PY.replace("\n", "\r\n").rstrip("\r\n")
    marked = place_markers(src, parse_anchored("MARKER last lines 9-9: x\nMARKER first line 1: y"), "python")
    assert strip_markers(marked) == src and "\r\n# @stark end last" not in marked.replace("    # @stark end last", "")


@pytest.mark.parametrize("text, fragment", [
    ("MARKER a lines 3-2: x", "run backwards"),
    ("MARKER a lines 0-1: x", "line 0 is outside the source"),
    ("MARKER a lines 2-3: x\nMARKER b at `b = a * 2`: y", "markers 'a' (lines 2-3) and 'b' (lines 3-3) overlap"),
    ("MARKER a lines 2-3: x\nMARKER b after line 2: y", "overlap"),
    ("MARKER a lines 2-3: x\nMARKER a lines 8-8: y", "'a' is used twice"),
    ("MARKER a at `nothing like this`: x", "no line contains the anchor"),
])
def test_bad_placements_say_exactly_what_is_wrong(text, fragment):
    with pytest.raises(MarkerError, match=None) as e:
        place_markers(PY, parse_anchored(text), "python")
    assert fragment in str(e.value)


def test_adjacent_markers_and_an_insertion_right_before_a_span_are_fine():
    marked = place_markers(PY, parse_anchored("MARKER a lines 2-2: x\nMARKER b lines 3-3: y\nMARKER c before line 2: z"),
                           "python")
    assert [m.id for m in parse_markers(marked)] == ["c", "a", "b"] and strip_markers(marked) == PY
