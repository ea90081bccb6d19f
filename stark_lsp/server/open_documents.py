"""The open kernel documents (uri -> ``DocState``) and the work that keeps each one known.

* Kernels are found again after each change: at once in a small file; in a
  big one (``INLINE_CHARS`` and more) once typing pauses ``ANALYSIS_DELAY_S``,
  in a thread, with the known kernels mapped through the edits meanwhile.
* The task (harness, task id) is read from disk on open and save, in a
  thread (``resolve``); then the host does what a newly known task calls for
  (``host.task_resolved``: the harness's diagnostics, the store's watcher,
  a tree waiting after a rename, the tree, the diagnostics, the judges' warm-up).
* Commands wait for both (``ready``); hovers and code actions only for the
  task (``resolved``).

What one document is (``DocState``) and the pure steps are ``documents.py``'s.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from stark_lsp.server.diagnostics import same_text
from stark_lsp.server.documents import (INLINE_CHARS, DocState, document_language, line_edit, resolve_task,
                                        update_kernels)
from stark_lsp.server.text_edits import split_lines

ANALYSIS_DELAY_S = 0.15  # a big file is analysed once typing pauses this long


class OpenDocuments:
    def __init__(self, host: Any) -> None:
        # the host: its workspace (the texts), say(), jobs, store_path_for(), publish() and task_resolved()
        self.host = host
        self.docs: dict[str, DocState] = {}

    def track(self, uri: str, language_id: str | None, text: str, version: int) -> DocState | None:
        """The document's state, created on first sight; kernels found again now."""
        state = self.docs.get(uri)
        if state is None:
            lang = document_language(uri, language_id, text)
            if lang is None:
                return None
            fs = to_fs_path(uri)
            path = Path(fs).resolve() if fs else None
            state = DocState(uri, path, lang, store_path=self.host.store_path_for(path) if path else None)
            self.docs[uri] = state
        self.analysed(state, update_kernels(state, text, version))
        return state

    def close(self, uri: str) -> DocState | None:
        """didClose: forgotten, its analysis cancelled; the state it had, if it was a kernel document."""
        state = self.docs.pop(uri, None)
        if state is not None and state.analysis is not None:
            state.analysis.cancel()
        return state

    def analysed(self, state: DocState, gone: list[str]) -> None:
        host = self.host
        if state.too_big:
            host.say(f"{state.path.name if state.path else state.uri} is too large for STARK to look for kernels in",
                     types.MessageType.Warning)
        job = host.jobs.running(state.task_id)
        if job is not None and job.kernel in gone and job.kernel not in state.warned_missing:
            state.warned_missing.add(job.kernel)
            host.say(
                f"{job.kernel} is no longer in the document; its search goes on with the saved file "
                f"(stop it from the progress notification or with “Stop optimizing”)",
                types.MessageType.Warning,
            )

    def changed(self, uri: str, changes: list[Any], version: int) -> None:
        """didChange: small files are analysed now; big ones after a pause, in a
        thread, with the known kernels moved by the edits meanwhile."""
        state = self.docs.get(uri)
        doc = self.host.workspace.get_text_document(uri)
        if state is None:
            state = self.track(uri, doc.language_id, doc.source, version)  # a Python file that just got @triton.jit
            if state is not None:
                self.host.publish(uri)
                asyncio.get_running_loop().create_task(self.resolve(state))
            return
        if len(doc.source) < INLINE_CHARS:
            self.analysed(state, update_kernels(state, doc.source, version))
            self.host.publish(uri)
            return
        for change in changes:
            edit = line_edit(change)
            if edit is None:  # the whole text: line numbers say nothing any more
                state.kernels, state.edits = [], []
            elif edit.delta:
                state.edits.append(edit)
        state.stale = True
        if state.analysis is not None:
            state.analysis.cancel()
        state.analysis = asyncio.get_running_loop().call_later(ANALYSIS_DELAY_S, self._analyse, uri)

    def _analyse(self, uri: str) -> None:
        state = self.docs.get(uri)
        if state is None:
            return
        state.analysis = asyncio.get_running_loop().create_task(self._analyse_big(state))

    async def _analyse_big(self, state: DocState) -> None:
        workspace = self.host.workspace
        doc = workspace.get_text_document(state.uri)
        text, version = doc.source, doc.version
        probe = DocState(state.uri, state.path, state.language, kernels=list(state.kernels))
        gone = await asyncio.to_thread(update_kernels, probe, text, version)
        if self.docs.get(state.uri) is not state or workspace.get_text_document(state.uri).version != version:
            return  # edited meanwhile: the next pause analyses again
        state.kernels, state.version, state.stale, state.too_big = probe.kernels, version, False, probe.too_big
        state.edits = []  # the kernels are those of this very text now: no edit is left to map them through
        state.analysis = None
        self.analysed(state, gone)
        self.host.publish(state.uri)

    async def settle(self, state: DocState) -> None:
        """Commands see the kernels of the current text: a due analysis runs now."""
        if not state.stale:
            return
        if isinstance(state.analysis, asyncio.TimerHandle):
            state.analysis.cancel()
            state.analysis = None
        if isinstance(state.analysis, asyncio.Task):
            await asyncio.wait([state.analysis], timeout=30)
        if state.stale:
            await self._analyse_big(state)

    async def resolve(self, state: DocState) -> None:
        """Re-read the task (harness) and the tree from disk, then republish.
        Commands wait for it (``ready``), so they never see a half-known file."""
        state.resolving = asyncio.get_running_loop().create_task(self._resolve(state))
        await state.resolving

    async def resolved(self, state: DocState) -> None:
        """Wait for a resolve in flight (after an open or a save): answers then
        describe the file as saved, not as it was (the analysis of a big file
        being typed in is not waited for: the kernels are mapped through the edits)."""
        task = state.resolving
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=30)

    async def ready(self, state: DocState) -> None:
        task = state.resolving
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=30)
        await self.settle(state)

    async def _resolve(self, state: DocState) -> None:
        if state.path is None:
            state.problem = None
            return
        resolved = await asyncio.to_thread(resolve_task, state.path)
        old_task = state.task_id
        state.task, state.problem, state.harness_unfilled = resolved.task, resolved.problem, resolved.unfilled
        state.harness_digest = resolved.harness_digest
        state.run_error = None
        if state.checked_root is not None and \
                not same_text(self.host.document_text(state.uri), state.checked_root.source):
            state.checked_root = None
        if state.task_id != old_task:
            state.checked_root = None
        await self.host.task_resolved(state)

    @staticmethod
    def lines_of(state: DocState, text: str, version: int) -> list[str]:
        """The document's lines, split once per version (for its diagnostics)."""
        if state.lines is None or state.lines[0] != version:
            state.lines = (version, split_lines(text))
        return state.lines[1]
