"""FastTextDocument applies incremental changes as pygls's TextDocument does
(differential test on random edits, UTF-16 positions included)."""

from __future__ import annotations

import random

from lsprotocol import types
from pygls.workspace import TextDocument

from stark_lsp.server.text_document import FastTextDocument
from tests.server_fixtures import CUDA_KERNEL, TRITON_KERNEL

PIECES = ["", "x", "é", "😀", "\n", "\r\n", "    ", "tl.store(", "\n\n", "ab\ncd", "😀\n😀"]


def utf16_position(text: str, offset: int) -> types.Position:
    before = text[:offset]
    line = before.count("\n")
    col_text = before[before.rfind("\n") + 1:]
    if col_text.endswith("\r"):
        col_text = col_text[:-1]
    return types.Position(line=line, character=len(col_text.encode("utf-16-le")) // 2)


def test_random_incremental_edits_match_pygls():
    rng = random.Random(7)
    for start_text in (TRITON_KERNEL, CUDA_KERNEL.replace("\n", "\r\n"), "", "😀 é\n" * 5):
        ours = FastTextDocument("file:///a.py", source=start_text, version=0,
                                sync_kind=types.TextDocumentSyncKind.Incremental)
        theirs = TextDocument("file:///a.py", source=start_text, version=0,
                              sync_kind=types.TextDocumentSyncKind.Incremental)
        for _ in range(400):
            text = ours.source
            # a range on character boundaries that do not split a \r\n or a surrogate pair
            cuts = [i for i in range(len(text) + 1) if not (0 < i < len(text) and text[i - 1] == "\r" and text[i] == "\n")]
            a, b = sorted(rng.sample(cuts, 2)) if len(cuts) > 1 else (0, 0)
            if rng.random() < 0.5:
                b = a
            new = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 3)))
            change = types.TextDocumentContentChangePartial(
                range=types.Range(start=utf16_position(text, a), end=utf16_position(text, b)), text=new)
            ours.apply_change(change)
            theirs.apply_change(change)
            assert ours.source == theirs.source == text[:a] + new + text[b:]


def test_other_line_breaks_fall_back_to_pygls():
    doc = FastTextDocument("file:///a.py", source="a\rb\nc", version=0, sync_kind=types.TextDocumentSyncKind.Incremental)
    ref = TextDocument("file:///a.py", source="a\rb\nc", version=0, sync_kind=types.TextDocumentSyncKind.Incremental)
    change = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=1, character=0), end=types.Position(line=1, character=1)), text="B")
    doc.apply_change(change)
    ref.apply_change(change)
    assert doc.source == ref.source == "a\rB\nc"
