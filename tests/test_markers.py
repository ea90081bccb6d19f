"""Grounded markers: parsing, stripping, inserting, plans and whole-file answers."""

import pytest

from stark_lsp.markers.syntax import (
    Marker,
    MarkerError,
    apply_replacements,
    check_plan,
    has_markers,
    insert_marker,
    parse_markers,
    replacements_from_full_source,
    strip_markers,
)

CUDA = """\
#define BLOCK 128
__global__ void k(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] *= 2.0f;
    }
}
"""

PY = """\
import triton

@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)
"""


# -- parse ---------------------------------------------------------------------


def test_parse_cuda_marker():
    src = "a\n  // @stark begin m1: set BLOCK to 256 (was 128)\nb\nc\n  // @stark end m1\nd\n"
    [m] = parse_markers(src)
    assert m == Marker("m1", "set BLOCK to 256 (was 128)", 2, 5, "b\nc\n")


def test_parse_python_marker_and_whitespace_tolerance():
    src = "x = 1\n\t#   @STARK   Begin  a.b-c_1 :   do it  \ny = 2\n#@stark end a.b-c_1   \n"
    [m] = parse_markers(src)
    assert (m.id, m.instruction, m.begin_line, m.end_line, m.span) == ("a.b-c_1", "do it", 2, 4, "y = 2\n")


def test_parse_several_and_empty_span():
    src = "# @stark begin a: one\n# @stark end a\nz\n# @stark begin b: two\nw\n# @stark end b\n"
    a, b = parse_markers(src)
    assert a.span == "" and (a.begin_line, a.end_line) == (1, 2)
    assert b.span == "w\n" and (b.begin_line, b.end_line) == (4, 6)


def test_no_markers():
    assert parse_markers(CUDA) == []
    assert strip_markers(CUDA) == CUDA
    assert not has_markers(CUDA)


@pytest.mark.parametrize(
    "src, fragment",
    [
        ("a\n// @stark begin x: i\nb\n", "line 2: marker 'x' is never ended"),
        ("a\n// @stark end x\n", "line 2: '@stark end x' without a matching begin"),
        ("// @stark begin x: i\n// @stark begin y: j\n// @stark end y\n// @stark end x\n", "line 2: marker 'y' begins inside marker 'x'"),
        ("// @stark begin x: i\n// @stark end x\n// @stark begin x: j\n// @stark end x\n", "line 3: duplicate marker id 'x' (first used on line 1)"),
        ("// @stark begin x: i\n// @stark end y\n", "line 2: '@stark end y' closes marker 'x' begun on line 1"),
        ("q\n// @stark begin x i\n// @stark end x\n", "line 2: malformed marker"),
        ("// @stark begin x:   \n// @stark end x\n", "line 1: marker 'x' has no instruction"),
        ("// @stark begin b@d: i\n// @stark end b@d\n", "line 1: malformed marker"),
        ("# @stark finish x\n", "line 1: malformed marker"),
        ("# @stark\n", "line 1: malformed marker"),
    ],
)
def test_parse_errors_name_the_line(src, fragment):
    with pytest.raises(MarkerError) as e:
        parse_markers(src)
    assert fragment in str(e.value)


def test_words_that_only_look_like_markers_are_code():
    src = "// @starkly not a marker\nx = '@stark begin'\n// stark-nvcc-flags: -O3\n"
    assert parse_markers(src) == []


# -- strip / apply ---------------------------------------------------------------


def test_strip_keeps_spans_verbatim():
    src = "a\n    // @stark begin m: go\n    b  \n\n    // @stark end m\nc"
    assert strip_markers(src) == "a\n    b  \n\nc"


def test_apply_replacements_with_indent_and_missing_newline():
    marked = "a\n  // @stark begin m: go\n  b\n  // @stark end m\nc\n"
    assert apply_replacements(marked, {"m": "  B1\n  B2"}) == "a\n  B1\n  B2\nc\n"
    assert apply_replacements(marked, {"m": ""}) == "a\nc\n"


def test_apply_replacements_errors():
    marked = "# @stark begin a: x\n1\n# @stark end a\n# @stark begin b: y\n# @stark end b\n"
    with pytest.raises(MarkerError, match="no replacement for marker id\\(s\\) b"):
        apply_replacements(marked, {"a": "2\n"})
    with pytest.raises(MarkerError, match="unknown marker id\\(s\\) zz"):
        apply_replacements(marked, {"a": "2\n", "b": "", "zz": "3"})
    assert apply_replacements(marked, {"a": "2\n", "b": "3\n"}) == "2\n3\n"


def test_crlf_round_trip_and_replacement_newlines():
    src = "a\r\nb\r\nc\r\n"
    marked = insert_marker(src, 2, 2, "m", "change b", "cuda")
    assert marked == "a\r\n// @stark begin m: change b\r\nb\r\n// @stark end m\r\nc\r\n"
    assert parse_markers(marked)[0].span == "b\r\n"
    assert strip_markers(marked) == src
    assert apply_replacements(marked, {"m": "x\ny\n"}) == "a\r\nx\r\ny\r\nc\r\n"


# -- insert ----------------------------------------------------------------------


@pytest.mark.parametrize("source, language", [(CUDA, "cuda"), (PY, "python")])
def test_insert_round_trips_every_range(source, language):
    n = source.count("\n")
    for start in range(1, n + 2):
        for end in range(start - 1, n + 1):
            marked = insert_marker(source, start, end, "m", "do something", language)
            [m] = parse_markers(marked)
            assert strip_markers(marked) == source
            check_plan(source, marked)
            assert m.span == "".join(source.splitlines(keepends=True)[start - 1:end])
            assert apply_replacements(marked, {"m": m.span}) == source


def test_insert_keeps_indentation_and_comment_style():
    marked = insert_marker(CUDA, 5, 5, "b1", "double x", "cuda")
    assert "        // @stark begin b1: double x\n        x[i] *= 2.0f;\n        // @stark end b1\n" in marked
    marked = insert_marker(PY, 5, 6, "p", "use pid", "python")
    assert "    # @stark begin p: use pid\n    pid" in marked
    assert "    # @stark end p\n    tl.store" in marked


def test_insert_without_final_newline_round_trips():
    src = "a\nb"
    for s, e in [(2, 2), (1, 2), (3, 2), (2, 1), (1, 0)]:
        marked = insert_marker(src, s, e, "m", "x", "python")
        assert strip_markers(marked) == src, (s, e, marked)
    assert apply_replacements(insert_marker(src, 2, 2, "m", "x", "python"), {"m": "B"}) == "a\nB"


def test_insert_into_empty_source():
    marked = insert_marker("", 1, 0, "m", "write it", "python")
    assert strip_markers(marked) == ""
    assert apply_replacements(marked, {"m": "x = 1"}) == "x = 1\n"


def test_insert_second_marker_and_overlap():
    one = insert_marker(CUDA, 1, 1, "a", "x", "cuda")
    two = insert_marker(one, 5, 5, "b", "y", "cuda")
    assert [m.id for m in parse_markers(two)] == ["a", "b"]
    with pytest.raises(MarkerError, match="overlap marker 'a'"):
        insert_marker(one, 2, 3, "c", "z", "cuda")
    with pytest.raises(MarkerError, match="already used"):
        insert_marker(one, 5, 5, "a", "z", "cuda")


@pytest.mark.parametrize(
    "args, fragment",
    [
        ((0, 1, "m", "x", "cuda"), "not a range"),
        ((3, 99, "m", "x", "cuda"), "not a range"),
        ((99, 98, "m", "x", "cuda"), "outside the source"),
        ((1, 1, "bad id", "x", "cuda"), "bad marker id"),
        ((1, 1, "m", "two\nlines", "cuda"), "one non-empty line"),
        ((1, 1, "m", "  ", "cuda"), "one non-empty line"),
        ((1, 1, "m", "x", "fortran"), "unknown language"),
    ],
)
def test_insert_errors(args, fragment):
    with pytest.raises(MarkerError, match=fragment):
        insert_marker(CUDA, *args)


# -- check_plan ------------------------------------------------------------------


def test_check_plan_accepts_and_rejects():
    marked = insert_marker(CUDA, 1, 1, "m", "set BLOCK to 256 (was 128)", "cuda")
    check_plan(CUDA, marked)
    with pytest.raises(MarkerError, match="no '@stark begin"):
        check_plan(CUDA, CUDA)
    sneaky = marked.replace("x[i] *= 2.0f;", "x[i] *= 3.0f;")
    with pytest.raises(MarkerError, match=r"original line 5 .*2\.0f.* became .*3\.0f"):
        check_plan(CUDA, sneaky)
    with pytest.raises(MarkerError, match="line endings or the final newline"):
        check_plan(CUDA, marked.rstrip("\n"))


# -- replacements_from_full_source -----------------------------------------------


def test_full_source_recovers_each_span():
    marked = insert_marker(insert_marker(CUDA, 1, 1, "a", "x", "cuda"), 7, 7, "b", "y", "cuda")
    new = CUDA.replace("#define BLOCK 128", "#define BLOCK 256").replace("x[i] *= 2.0f;", "x[i] *= 2.0f;\n        x[i] += 1.0f;")
    reps = replacements_from_full_source(marked, new)
    assert reps == {"a": "#define BLOCK 256\n", "b": "        x[i] *= 2.0f;\n        x[i] += 1.0f;\n"}
    assert apply_replacements(marked, reps) == new


def test_full_source_unchanged_and_deleted_spans():
    marked = insert_marker(CUDA, 3, 3, "a", "x", "cuda")
    assert replacements_from_full_source(marked, CUDA) == {"a": "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"}
    gone = CUDA.replace("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n", "")
    assert replacements_from_full_source(marked, gone) == {"a": ""}


def test_full_source_fills_empty_span_and_forgives_final_newline_and_crlf():
    marked = insert_marker(PY, 5, 4, "e", "add a comment", "python")
    new = PY.replace("    pid = ", "    # hello\n    pid = ")
    assert replacements_from_full_source(marked, new.rstrip("\n")) == {"e": "    # hello\n"}
    assert replacements_from_full_source(marked, new.replace("\n", "\r\n")) == {"e": "    # hello\n"}


def test_full_source_names_first_changed_outside_line():
    marked = insert_marker(CUDA, 1, 1, "a", "x", "cuda")  # CUDA line 5 is marked line 7
    new = CUDA.replace("x[i] *= 2.0f;", "x[i] *= 9.0f;")
    with pytest.raises(MarkerError, match=r"line 7 is outside the markers and was changed: '        x\[i\] \*= 2.0f;'"):
        replacements_from_full_source(marked, new)
    with pytest.raises(MarkerError, match="added outside the markers"):
        replacements_from_full_source(marked, CUDA.replace("    if (i < n) {", "    // new\n    if (i < n) {"))


def test_full_source_needs_markers():
    with pytest.raises(MarkerError, match="no markers"):
        replacements_from_full_source(CUDA, CUDA)
