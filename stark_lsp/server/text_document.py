"""Incremental changes applied in time proportional to the change, not the file.

pygls applies an incremental change by splitting the whole document into
lines and writing every line back out (a Python loop: about 7 ms per
keystroke in a 20,000-line file). ``FastTextDocument`` keeps the offsets of
the line starts, turns the change's range into two string offsets and
splices the text; the offsets after the change move by its length.

Lines end with ``\\n`` or ``\\r\\n`` (as editors send them). A document with
other line breaks that pygls counts (a lone ``\\r``, ``\\x0b``, ``\\x0c``,
``\\x1c``-``\\x1e``, ``\\x85``, U+2028, U+2029) is left to pygls's own code, so
positions mean the same thing either way. ``use_fast_documents`` makes a
pygls ``Workspace`` create these documents.
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument

_OTHER_BREAKS = re.compile("\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_NEWLINE = re.compile("\n")


def _starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


class FastTextDocument(TextDocument):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._line_starts: list[int] | None = None
        self._plain: bool | None = None  # no line breaks but \n and \r\n

    def _plain_breaks(self, text: str) -> bool:
        if self._plain is None:
            self._plain = _OTHER_BREAKS.search(self._source or "") is None
        if self._plain and _OTHER_BREAKS.search(text):
            self._plain = False
        return self._plain

    def _offset(self, starts: list[int], source: str, pos: types.Position) -> int:
        if pos.line >= len(starts):
            return len(source)
        begin = starts[pos.line]
        end = starts[pos.line + 1] - 1 if pos.line + 1 < len(starts) else len(source)
        line = source[begin:end]
        if line.endswith("\r"):
            line = line[:-1]
        if pos.character == 0:
            return begin
        if line.isascii():
            return begin + min(pos.character, len(line))
        server = self._position_codec.position_from_client_units([line], types.Position(line=0, character=pos.character))
        return begin + min(server.character, len(line))

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        source = self._source if self._source is not None else self.source
        if not self._plain_breaks(change.text):
            self._line_starts = None
            return super()._apply_incremental_change(change)
        starts = self._line_starts if self._line_starts is not None else _starts(source)
        start = self._offset(starts, source, change.range.start)
        end = max(start, self._offset(starts, source, change.range.end))
        text = change.text
        self._source = source[:start] + text + source[end:]
        # the line starts: those inside the replaced span go, the new text's come in, the rest move
        first = change.range.start.line + 1  # starts at or before ``start`` are unchanged
        while first < len(starts) and starts[first] <= start:
            first += 1
        last = first
        while last < len(starts) and starts[last] <= end:
            last += 1
        delta = len(text) - (end - start)
        added = [start + m.end() for m in _NEWLINE.finditer(text)]
        self._line_starts = starts[:first] + added + [s + delta for s in starts[last:]]

    def _apply_full_change(self, change: Any) -> None:
        super()._apply_full_change(change)
        self._line_starts = None
        self._plain = None


def use_fast_documents(workspace: Any) -> None:
    """Make ``workspace`` (a pygls ``Workspace``) create ``FastTextDocument``s."""

    def create(doc_uri: str, source: str | None = None, version: int | None = None,
               language_id: str | None = None) -> TextDocument:
        return FastTextDocument(doc_uri, source=source, version=version, language_id=language_id,
                                sync_kind=workspace._sync_kind, position_codec=workspace._position_codec)

    workspace._create_text_document = create
