"""Diagnostics a kernel's document puts on other files: its harness, the project's headers.

An unfilled harness gets "write reference() here" on the harness itself; a
header whose errors stop the kernel from building, and a harness line where
the task's own code failed, get those errors. Each such file remembers the
kernel document that put them there, so they are cleared when that document
no longer has them (and never by another document's publish).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from lsprotocol import types
from pygls.uris import from_fs_path

from stark_lsp.server.diagnostics import (CODE_RUN_FAILED, SOURCE, broken_task_diagnostic, other_file_failures,
                                          task_error_place)
from stark_lsp.server.documents import DocState


class CarriedDiagnostics:
    def __init__(self, publish: Callable[[types.PublishDiagnosticsParams], None]) -> None:
        self._publish = publish
        self._harness: dict[str, str] = {}  # harness uri -> kernel uri whose "fill in" it carries
        self._other_files: dict[str, str] = {}  # header uri -> kernel uri whose build errors it carries

    def _clear(self, uri: str) -> None:
        self._publish(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def harness(self, state: DocState) -> None:
        """"Write the reference here" on the unfilled harness itself."""
        harness = state.problem.harness_path if state.problem and state.problem.harness_path else None
        huri = from_fs_path(harness) if harness else None
        for old, owner in list(self._harness.items()):
            if owner == state.uri and old != huri:
                self._harness.pop(old)
                self._clear(old)
        if huri is None:
            return
        diags = [
            types.Diagnostic(
                range=types.Range(start=types.Position(line=u.line, character=u.column),
                                  end=types.Position(line=u.line, character=10_000)),
                message=f"write {u.function}() here: STARK checks every candidate against the harness, so no search "
                        f"starts while it raises NotImplementedError",
                severity=types.DiagnosticSeverity.Error, source=SOURCE, code="unfilled-harness")
            for u in state.harness_unfilled
        ]
        if diags or huri in self._harness:
            self._publish(types.PublishDiagnosticsParams(uri=huri, diagnostics=diags))
        if diags:
            self._harness[huri] = state.uri
        else:
            self._harness.pop(huri, None)

    def other_files(self, state: DocState, text: str, tree: Any) -> None:
        """Errors in the project's headers that stop the user's kernel from building, on those headers
        (``tree``: the document's cached search tree, or None)."""
        root = state.checked_root or (tree.root if tree is not None else None)
        by_file = other_file_failures(text, root, state.path.name if state.path else "the kernel")
        shown = {from_fs_path(f): d for f, d in by_file.items()}
        broken = state.run_error if state.run_error is not None and state.run_error.code == CODE_RUN_FAILED else None
        place = task_error_place(broken.message) if broken is not None else None
        harness = state.task.harness if state.task is not None else None
        if place is not None and harness is not None and Path(harness).name == place[0]:
            huri = from_fs_path(str(harness))
            shown[huri] = [*shown.get(huri, []), broken_task_diagnostic(place[1], broken.message)]
        owned = self._other_files
        for old, owner in list(owned.items()):
            if owner == state.uri and old not in shown:
                owned.pop(old)
                self._clear(old)
        for huri, diags in shown.items():
            if huri is None or huri == state.uri:
                continue
            owned[huri] = state.uri
            self._publish(types.PublishDiagnosticsParams(uri=huri, diagnostics=diags))
