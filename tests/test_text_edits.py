"""Minimal line edits: stark_lsp/server/text_edits.py."""

import random

import pytest
from lsprotocol import types

from stark_lsp.server.text_edits import apply_text_edits, document_edit, line_edits, offset_at

OLD = "def f(x):\n    y = x + 1\n    return y\n\n\ndef g():\n    pass\n"


def test_one_changed_line_is_one_small_edit():
    new = OLD.replace("x + 1", "x + 2")
    edits = line_edits(OLD, new)
    assert len(edits) == 1
    e = edits[0]
    assert (e.range.start.line, e.range.start.character) == (1, 0)
    assert (e.range.end.line, e.range.end.character) == (2, 0)
    assert e.new_text == "    y = x + 2\n"
    assert apply_text_edits(OLD, edits) == new


def test_identical_texts_need_no_edit():
    assert line_edits(OLD, OLD) == []


def test_pure_insertion_and_deletion():
    ins = OLD.replace("    return y\n", "    y *= 2\n    return y\n")
    (e,) = line_edits(OLD, ins)
    assert e.range.start == e.range.end and e.new_text == "    y *= 2\n"
    (d,) = line_edits(ins, OLD)
    assert d.new_text == "" and d.range.end.line - d.range.start.line == 1


@pytest.mark.parametrize(
    "old,new",
    [
        ("a\nb", "a\nc"),  # no final newline, last line changed
        ("a\nb", "a\nb\nc"),  # append after a last line without newline
        ("a\nb\n", "a\nb"),  # drop the final newline
        ("", "x\n"),
        ("x\n", ""),
        ("a\r\nb\r\n", "a\r\nB\r\n"),  # CRLF kept
        ("é😀\nb", "é😀\nc😀"),  # UTF-16 columns at the end of the text
    ],
)
def test_edge_cases_round_trip(old, new):
    assert apply_text_edits(old, line_edits(old, new)) == new


def test_random_round_trips():
    rng = random.Random(7)
    pool = ["a\n", "b\n", "c\n", "  x = 1\n", "\n", "😀\n", "end"]
    for _ in range(300):
        old = "".join(rng.choice(pool[:-1]) for _ in range(rng.randint(0, 8))) + rng.choice(["", "end"])
        new = "".join(rng.choice(pool[:-1]) for _ in range(rng.randint(0, 8))) + rng.choice(["", "end"])
        edits = line_edits(old, new)
        assert apply_text_edits(old, edits) == new, (old, new)
        # in document order and not overlapping
        offs = [(offset_at(old, e.range.start), offset_at(old, e.range.end)) for e in edits]
        assert all(s <= e for s, e in offs)
        assert all(offs[k][1] <= offs[k + 1][0] for k in range(len(offs) - 1))


def test_offset_at_counts_utf16_units():
    text = "a😀b\nc"
    assert offset_at(text, types.Position(line=0, character=3)) == 2  # after the emoji
    assert offset_at(text, types.Position(line=1, character=0)) == 4  # code points
    assert offset_at(text, types.Position(line=9, character=0)) == len(text)


def test_document_edit_is_versioned():
    we = document_edit("file:///a.py", 4, OLD, OLD.replace("pass", "return 1"))
    (tde,) = we.document_changes
    assert tde.text_document.version == 4 and tde.text_document.uri == "file:///a.py"
    assert len(tde.edits) == 1 and tde.edits[0].new_text == "    return 1\n"
