"""Minimal text edits: turn "old text -> new text" into a few LSP TextEdits.

Applying a candidate must not replace the whole file: a line diff keeps the
cursor, folds and marks of untouched lines and gives the user an undo step per
change. Each TextEdit replaces whole lines, so columns are always 0 except at
the end of a file without a final newline (there the column is counted in
UTF-16 code units, as LSP requires by default).

Pure: lsprotocol data classes only, no server.
"""

from __future__ import annotations

import difflib

from lsprotocol import types

from stark_lsp.lines import split_lines  # noqa: F401  (re-exported)


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def _line_start(lines: list[str], i: int) -> types.Position:
    """The position where line ``i`` starts; past the last line: the end of the text."""
    if i < len(lines):
        return types.Position(line=i, character=0)
    if lines and not lines[-1].endswith("\n"):
        return types.Position(line=len(lines) - 1, character=utf16_len(lines[-1]))
    return types.Position(line=len(lines), character=0)


def line_edits(old: str, new: str) -> list[types.TextEdit]:
    """TextEdits (non-overlapping, in document order) that turn ``old`` into ``new``."""
    a, b = split_lines(old), split_lines(new)
    edits: list[types.TextEdit] = []
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            types.TextEdit(
                range=types.Range(start=_line_start(a, i1), end=_line_start(a, i2)),
                new_text="".join(b[j1:j2]),
            )
        )
    return edits


def offset_at(text: str, position: types.Position) -> int:
    """The string index of an LSP position (UTF-16 columns) in ``text``."""
    lines = split_lines(text)
    if position.line >= len(lines):
        return len(text)
    start = sum(len(l) for l in lines[: position.line])
    line = lines[position.line]
    units = 0
    for k, ch in enumerate(line):
        if units >= position.character or ch == "\n":
            return start + k
        units += utf16_len(ch)
    return start + len(line)


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply non-overlapping edits, as an editor would (all positions refer to ``text``)."""
    spans = sorted(
        ((offset_at(text, e.range.start), offset_at(text, e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


def document_edit(uri: str, version: int | None, old: str, new: str) -> types.WorkspaceEdit:
    """A WorkspaceEdit for one document; versioned when the version is known."""
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                edits=line_edits(old, new),
            )
        ]
    )
