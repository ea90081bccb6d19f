"""The STARK-LSP language server: one pygls ``LanguageServer`` and its wiring.

Every LSP method is registered here and nowhere else; each handler is a few
lines that translate LSP into a call to a feature module and back:

==============================  ===============================================
textDocument/didOpen, didChange documents.py (kernels), diagnostics.py
  didSave, didClose
textDocument/codeAction         code_actions.py
textDocument/hover              hover.py
workspace/executeCommand        optimize_jobs.py (optimize, continueSearch, stop),
                                apply_candidate.py, implement_marker.py,
                                create_harness.py, file_events.py (renameHarness),
                                stark.setApiKey, stark.whyNot (here)
workspace/didDeleteFiles,       file_events.py
  didRenameFiles
stark/tree, stark/node          tree_json.py
stark/treeChanged, stark/       sent from here
  searches
window/workDoneProgress/cancel  progress.py (through pygls's token futures)
initialize, workspace/          settings.py
  configuration
==============================  ===============================================

State lives on the ``StarkServer`` object and is touched only on the event
loop. Blocking work (the search, the store, the disk, the analysis of a big
file) runs in threads; a search's updates reach the loop in batches
(``optimize_state.Inbox``), so requests never wait behind its bookkeeping.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from stark_lsp.server import commands as cmd
from stark_lsp.server import file_events
from stark_lsp.server.apply_candidate import apply_candidate
from stark_lsp.server.backend import Backend, load_backend
from stark_lsp.server.code_actions import ActionContext, build_code_actions
from stark_lsp.server.create_harness import create_harness, show_harness
from stark_lsp.server.diagnostics import (CODE_RUN_FAILED, SOURCE, broken_task_diagnostic, build_diagnostics,
                                          other_file_failures, same_text, task_error_place)
from stark_lsp.server.documents import (INLINE_CHARS, DocState, document_language, line_before_edits, line_edit,
                                        resolve_task, update_kernels)
from stark_lsp.server.hover import hover_markdown
from stark_lsp.server.implement_marker import implement_marker, marker_spans
from stark_lsp.server.optimize_jobs import searches_payload, start_optimize, stop_optimize
from stark_lsp.server.optimize_state import Job, OptimizeJobs
from stark_lsp.server.progress import progress_text
from stark_lsp.server.settings import Secret, Settings, api_key_from, parse_settings
from stark_lsp.server.stdio import serve_stdio
from stark_lsp.server.open_files_watch import OpenFilesWatch
from stark_lsp.server.store_watch import StoreWatcher
from stark_lsp.server.text_document import use_fast_documents
from stark_lsp.server.text_edits import split_lines
from stark_lsp.server.tree_cache import TreeCache
from stark_lsp.server.tree_json import node_detail
from stark_lsp.server.wire import Plain, converter as wire_converter
from stark_lsp.tasks.gpu_need import gpu_need
from stark_lsp.tasks.kernels import kernels_in_range
from stark_lsp.tasks.spec import default_harness_path

log = logging.getLogger(__name__)

STORE_DIR, STORE_FILE = ".stark", "tree.sqlite"
PUBLISH_DELAY_S = 0.1  # bursts of node updates become one publish
ANALYSIS_DELAY_S = 0.15  # a big file is analysed once typing pauses this long
SWITCH_INTERVAL_S = 0.001  # the event loop gets the GIL back quickly from a busy search or analysis thread
NO_GPU_NOTE = "No NVIDIA GPU here: nvcc can compile this kernel, but nothing can be run or timed."


class StarkServer(LanguageServer):
    def __init__(self, backend: Backend | None = None) -> None:
        super().__init__("stark-lsp", "0.1.0", text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         converter_factory=wire_converter)
        self.backend = backend or load_backend()
        self.settings = Settings()
        self.api_key = Secret()
        self.docs: dict[str, DocState] = {}
        self.cache = TreeCache()
        self.jobs = OptimizeJobs()
        self.carries: dict[Path, Any] = {}  # kernel path -> file_events.Carry: a tree waiting to move there
        self.orphans: dict[Path, Path] = {}  # kernel path -> a harness left under its old name
        self.watchers: dict[Path, StoreWatcher] = {}
        self.open_files = OpenFilesWatch(self)
        self.roots: list[Path] = []
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._searches_pending = False
        self._harness_diags: dict[str, str] = {}  # harness uri -> kernel uri whose "fill in" it carries
        self._other_file_diags: dict[str, str] = {}  # header uri -> kernel uri whose build errors it carries
        self._config_pull: asyncio.Task | None = None

    # -- talking to the user -------------------------------------------------------
    def say(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def fail(self, message: str, kind: types.MessageType = types.MessageType.Error) -> dict[str, Any]:
        self.say(message, kind)
        return {"error": message}

    async def ask(self, message: str, choices: list[str]) -> str | None:
        window = getattr(self.client_capabilities, "window", None)
        if window is None or window.show_message is None:
            return None
        try:
            pick = await self.window_show_message_request_async(types.ShowMessageRequestParams(
                type=types.MessageType.Warning, message=message,
                actions=[types.MessageActionItem(title=c) for c in choices]))
        except Exception as e:
            log.info("window/showMessageRequest: %s", e)
            return None
        return pick.title if pick is not None else None

    async def show_document(self, uri: str, line: int | None = None) -> bool:
        window = getattr(self.client_capabilities, "window", None)
        if window is None or window.show_document is None or not window.show_document.support:
            return False
        sel = None
        if line is not None:
            pos = types.Position(line=line, character=0)
            sel = types.Range(start=pos, end=pos)
        try:
            result = await self.window_show_document_async(
                types.ShowDocumentParams(uri=uri, take_focus=True, selection=sel))
        except Exception as e:
            log.info("window/showDocument: %s", e)
            return False
        return bool(result and result.success)

    async def apply_edit(self, edit: types.WorkspaceEdit, label: str) -> types.ApplyWorkspaceEditResult:
        return await self.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))

    # -- documents ---------------------------------------------------------------------
    def store_path_for(self, path: Path) -> Path:
        from stark_lsp.search.tree_store import find_workspace

        for root in self.roots:
            if path == root or root in path.parents:
                return root / STORE_DIR / STORE_FILE
        return find_workspace(path.parent) / STORE_DIR / STORE_FILE

    def document_text(self, uri: str) -> str:
        return self.workspace.get_text_document(uri).source

    def track(self, uri: str, language_id: str | None, text: str, version: int) -> DocState | None:
        """The document's state, created on first sight; kernels found again now."""
        state = self.docs.get(uri)
        if state is None:
            lang = document_language(uri, language_id, text)
            if lang is None:
                return None
            fs = to_fs_path(uri)
            path = Path(fs).resolve() if fs else None
            state = DocState(uri, path, lang, store_path=self.store_path_for(path) if path else None)
            self.docs[uri] = state
        self.analysed(state, update_kernels(state, text, version))
        return state

    def analysed(self, state: DocState, gone: list[str]) -> None:
        if state.too_big:
            self.say(f"{state.path.name if state.path else state.uri} is too large for STARK to look for kernels in",
                     types.MessageType.Warning)
        job = self.jobs.running(state.task_id)
        if job is not None and job.kernel in gone and job.kernel not in state.warned_missing:
            state.warned_missing.add(job.kernel)
            self.say(
                f"{job.kernel} is no longer in the document; its search goes on with the saved file "
                f"(stop it from the progress notification or with “Stop optimizing”)",
                types.MessageType.Warning,
            )

    def changed(self, uri: str, changes: list[Any], version: int) -> None:
        """didChange: small files are analysed now; big ones after a pause, in a
        thread, with the known kernels moved by the edits meanwhile."""
        state = self.docs.get(uri)
        doc = self.workspace.get_text_document(uri)
        if state is None:
            state = self.track(uri, doc.language_id, doc.source, version)  # a Python file that just got @triton.jit
            if state is not None:
                self.publish(uri)
                asyncio.get_running_loop().create_task(self.resolve(state))
            return
        if len(doc.source) < INLINE_CHARS:
            self.analysed(state, update_kernels(state, doc.source, version))
            self.publish(uri)
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
        doc = self.workspace.get_text_document(state.uri)
        text, version = doc.source, doc.version
        probe = DocState(state.uri, state.path, state.language, kernels=list(state.kernels))
        gone = await asyncio.to_thread(update_kernels, probe, text, version)
        if self.docs.get(state.uri) is not state or self.workspace.get_text_document(state.uri).version != version:
            return  # edited meanwhile: the next pause analyses again
        state.kernels, state.version, state.stale, state.too_big = probe.kernels, version, False, probe.too_big
        state.edits = []  # the kernels are those of this very text now: no edit is left to map them through
        state.analysis = None
        self.analysed(state, gone)
        self.publish(state.uri)

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
        if state.checked_root is not None and not same_text(self.document_text(state.uri), state.checked_root.source):
            state.checked_root = None
        if state.task_id != old_task:
            state.checked_root = None
        self.publish_harness(state)
        self.watch(state)
        if state.path in self.carries and state.task is not None:
            await file_events.complete_carries(self)
        await self.refresh_tree(state)
        self.publish(state.uri)
        if state.task is not None:  # the judges start while the file is read (evaluation.warmUp; GPU only)
            asyncio.get_running_loop().create_task(self._warm_up(state.task))

    async def _warm_up(self, task: Any) -> None:
        """``Backend.warm_up`` with the user's settings, not the defaults of a configuration still on its
        way (``warmUp: false`` or a cluster would otherwise start local judges for a file open at start)."""
        await self.settings_ready()
        await asyncio.get_running_loop().run_in_executor(None, self.backend.warm_up, self.settings, task)

    def publish_harness(self, state: DocState) -> None:
        """"Write the reference here" on the unfilled harness itself."""
        harness = state.problem.harness_path if state.problem and state.problem.harness_path else None
        huri = from_fs_path(harness) if harness else None
        for old, owner in list(self._harness_diags.items()):
            if owner == state.uri and old != huri:
                self._harness_diags.pop(old)
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=old, diagnostics=[]))
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
        if diags or huri in self._harness_diags:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=huri, diagnostics=diags))
        if diags:
            self._harness_diags[huri] = state.uri
        else:
            self._harness_diags.pop(huri, None)

    def watch(self, state: DocState) -> None:
        self.open_files.start(state)  # the open documents' kernels and harnesses, removed outside the editor
        if state.store_path is None:
            return
        directory = state.store_path.parent
        if directory not in self.watchers:
            w = self.watchers[directory] = StoreWatcher(directory, lambda d=directory: self.store_changed(d))
            w.start()

    def watch_job(self, job: Job) -> asyncio.Task:
        return asyncio.get_running_loop().create_task(file_events.watch_job(self, job))

    # -- trees ---------------------------------------------------------------------
    async def refresh_tree(self, state: DocState) -> None:
        task_id = state.task_id
        if task_id is None or state.store_path is None or not state.store_path.exists():
            return
        job = self.jobs.running(task_id)
        if job is not None and job.replay:
            return  # the search is about to replay the tree: the cache follows it
        store_path = state.store_path

        def read() -> tuple[list[Any], str | None]:
            store = self.backend.open_store(store_path)
            return store.nodes(task_id), store.harness_digest(task_id)

        try:
            nodes, digest = await asyncio.to_thread(read)
        except Exception as e:  # a broken or locked store: keep what we had
            log.warning("reading %s: %s", store_path, e)
            return
        self.cache.harness_digests[task_id] = digest
        if self.cache.replace(task_id, nodes):
            self.tree_changed(task_id)

    async def store_changed(self, directory: Path) -> None:
        """The store in ``directory`` was written (by us or by a terminal)."""
        seen = set()
        for state in list(self.docs.values()):
            if state.store_path is not None and state.store_path.parent == directory and state.task_id not in seen:
                seen.add(state.task_id)
                if self.jobs.running(state.task_id) is None:  # our own searches report through their inbox
                    await self.refresh_tree(state)

    def tree_changed(self, task_id: str | None, force: bool = False) -> None:
        """Republish diagnostics and send stark/treeChanged for every open
        document of this task, at most every PUBLISH_DELAY_S."""
        if task_id is None:
            return
        pending = self._pending.pop(task_id, None)
        if force:
            if pending is not None:
                pending.cancel()
            self._flush(task_id)
        elif pending is not None:
            self._pending[task_id] = pending
        else:
            loop = asyncio.get_running_loop()
            self._pending[task_id] = loop.call_later(PUBLISH_DELAY_S, self._flush, task_id)

    def _flush(self, task_id: str) -> None:
        self._pending.pop(task_id, None)
        job = self.jobs.running(task_id)
        for state in list(self.docs.values()):
            if state.task_id != task_id:
                continue
            self.publish(state.uri)
            kernel = job.kernel if job is not None else (state.kernels[0].name if state.kernels else "")
            self.protocol.notify(cmd.TREE_CHANGED, {"uri": state.uri, "kernel": kernel, "task_id": task_id})
        if job is not None:
            self.searches_changed()

    def searches_changed(self) -> None:
        """Send stark/searches (what runs), once per loop turn however often asked."""
        if self._searches_pending:
            return
        self._searches_pending = True
        asyncio.get_running_loop().call_soon(self._send_searches)

    def _send_searches(self) -> None:
        self._searches_pending = False
        self.protocol.notify(cmd.SEARCHES, searches_payload(self))

    def lines_of(self, state: DocState, text: str, version: int) -> list[str]:
        if state.lines is None or state.lines[0] != version:
            state.lines = (version, split_lines(text))
        return state.lines[1]

    def publish(self, uri: str) -> None:
        state = self.docs.get(uri)
        if state is None or state.stale:
            return  # a big file being typed in: its analysis publishes
        doc = self.workspace.get_text_document(uri)
        lines = self.lines_of(state, doc.source, doc.version)
        diags = build_diagnostics(doc.source, state.kernels, state.language, self.cache.get(state.task_id),
                                  state.shown_problem, state.checked_root, lines)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=doc.version)
        )
        self.publish_other_files(state, doc.source)

    def publish_other_files(self, state: DocState, text: str) -> None:
        """Errors in the project's headers that stop the user's kernel from building, on those headers."""
        tree = self.cache.get(state.task_id)
        root = state.checked_root or (tree.root if tree is not None else None)
        by_file = other_file_failures(text, root, state.path.name if state.path else "the kernel")
        shown = {from_fs_path(f): d for f, d in by_file.items()}
        broken = state.run_error if state.run_error is not None and state.run_error.code == CODE_RUN_FAILED else None
        place = task_error_place(broken.message) if broken is not None else None
        harness = state.task.harness if state.task is not None else None
        if place is not None and harness is not None and Path(harness).name == place[0]:
            huri = from_fs_path(str(harness))
            shown[huri] = [*shown.get(huri, []), broken_task_diagnostic(place[1], broken.message)]
        owned = self._other_file_diags
        for old, owner in list(owned.items()):
            if owner == state.uri and old not in shown:
                owned.pop(old)
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=old, diagnostics=[]))
        for huri, diags in shown.items():
            if huri is None or huri == state.uri:
                continue
            owned[huri] = state.uri
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=huri, diagnostics=diags))

    # -- settings ------------------------------------------------------------------------
    def apply_settings(self, options: Any) -> None:
        self.settings, problems = parse_settings(options, self.settings)
        for p in problems:
            self.say(f"STARK settings: {p}", types.MessageType.Warning)

    def start_pull(self) -> None:
        self._config_pull = asyncio.get_running_loop().create_task(self.pull_configuration())

    async def settings_ready(self) -> None:
        """Wait for a workspace/configuration answer in flight, so a command
        sent after a settings change runs with the new settings."""
        if self._config_pull is not None and not self._config_pull.done():
            await asyncio.wait([self._config_pull], timeout=5)

    async def pull_configuration(self) -> None:
        caps = self.client_capabilities.workspace
        if not (caps and caps.configuration):
            return
        try:
            result = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="stark")])
            )
        except Exception as e:
            log.info("workspace/configuration: %s", e)
            return
        if result and isinstance(result[0], dict):
            section = dict(result[0])
            section.pop("apiKey", None)  # may come from a workspace file: never a source of secrets
            self.apply_settings(section)

    # -- the features' views ----------------------------------------------------------
    def action_context(self, state: DocState, r: types.Range, diagnostics: list[types.Diagnostic]) -> ActionContext:
        kernels = kernels_in_range(state.kernels, line_before_edits(r.start.line, state.edits),
                                   line_before_edits(r.end.line, state.edits))
        text = self.document_text(state.uri)
        markers, _ = marker_spans(text) if kernels and "@stark" in text else ([], None)
        markers = [m for m in markers if m.first_line <= r.end.line and r.start.line <= m.last_line]
        job = self.job_of(state)
        problem = state.shown_problem
        harness = Path(problem.harness_path).name if problem and problem.harness_path else (
            default_harness_path(state.path).name if state.path else "the harness")
        tree = self.cache.get(state.task_id)
        continue_by = None
        stored = self.cache.harness_digests.get(state.task_id)
        if job is None and tree is not None and tree.root is not None and tree.finished >= self.settings.budget \
                and same_text(text, tree.root.source) and (stored is None or stored == state.harness_digest):
            continue_by = self.settings.budget
        orphan = self.orphans.get(state.path) if state.path else None
        cannot_run = ""
        if job is None and kernels and state.task is not None and gpu_need(state.task) \
                and not self.backend.gpu_available(self.settings):
            # offered disabled with why, not offered and refused again at each try
            cannot_run = ("needs an NVIDIA GPU: nothing can be run or timed here (nvcc still compiles it: "
                          "stark eval --compile-only)")
        return ActionContext(state.uri, text, kernels, markers, tree, problem, job.kernel if job else None,
                             list(diagnostics), harness, orphan.name if orphan else None, continue_by, cannot_run,
                             self.disabled_actions_shown())

    def disabled_actions_shown(self) -> bool:
        """Whether the client shows a code action's ``disabled.reason`` (``codeAction.disabledSupport``;
        VS Code announces it, Neovim 0.7 does not)."""
        text_document = getattr(self.client_capabilities, "text_document", None)
        code_action = getattr(text_document, "code_action", None) if text_document is not None else None
        return bool(getattr(code_action, "disabled_support", False))

    def job_of(self, state: DocState) -> Job | None:
        """The search running for this document: its task's, or, while the file is no task (a syntax error
        saved mid-search), the one started from it, so that it can still be seen and stopped."""
        return self.jobs.running(state.task_id) or (self.jobs.find(state.uri) if state.task is None else None)

    def hover_for(self, state: DocState, line: int) -> str | None:
        kernel = state.kernel_at(line_before_edits(line, state.edits))
        if kernel is None:
            return None
        job = self.job_of(state)
        tree = self.cache.get(state.task_id)
        running = progress_text(job.progress, tree, job.phase, job.cancel.is_set())[0] if job else None
        problem = state.shown_problem
        note = NO_GPU_NOTE if state.language == "cuda" and not self.backend.gpu_available(self.settings) else None
        return hover_markdown(kernel.name, tree, running, problem.message if problem else None, note)

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        serve_stdio(self, stdin, stdout)

    # -- shutdown ----------------------------------------------------------------------
    async def stop_everything(self) -> None:
        self.jobs.stop_all()
        self.open_files.stop()
        for w in self.watchers.values():
            w.stop()
        await self.jobs.wait_all(timeout=10)
        await asyncio.to_thread(self.backend.close)


def make_server(backend: Backend | None = None) -> StarkServer:
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    ls = StarkServer(backend)
    register(ls)
    return ls


def _args(params: Any) -> dict[str, Any]:
    return params if isinstance(params, dict) else (params._asdict() if hasattr(params, "_asdict") else {})


FILE_FILTERS = types.FileOperationRegistrationOptions(filters=[
    types.FileOperationFilter(pattern=types.FileOperationPattern(glob=file_events.WATCHED_GLOB,
                                                                 matches=types.FileOperationPatternKind.File)),
    types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*",
                                                                 matches=types.FileOperationPatternKind.Folder)),
])


def register(ls: StarkServer) -> None:
    """Wire every LSP method to its feature."""

    @ls.feature(types.INITIALIZE)
    def initialize(ls: StarkServer, params: types.InitializeParams) -> None:
        opts = params.initialization_options
        ls.apply_settings(opts)
        ls.api_key = api_key_from(opts) or ls.api_key
        use_fast_documents(ls.workspace)
        folders = params.workspace_folders or []
        roots = [to_fs_path(f.uri) for f in folders] or [to_fs_path(params.root_uri) if params.root_uri else params.root_path]
        ls.roots = [Path(r).resolve() for r in roots if r]

    @ls.feature(types.INITIALIZED)
    def initialized(ls: StarkServer, params: types.InitializedParams) -> None:
        ls.start_pull()

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: StarkServer, params: types.DidChangeConfigurationParams) -> None:
        if isinstance(params.settings, dict) and isinstance(params.settings.get("stark"), dict):
            section = dict(params.settings["stark"])
            section.pop("apiKey", None)
            ls.apply_settings(section)
        ls.start_pull()

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: StarkServer, params: types.DidOpenTextDocumentParams) -> None:
        d = params.text_document
        state = ls.track(d.uri, d.language_id, d.text, d.version)
        if state is not None:
            ls.publish(d.uri)
            await ls.resolve(state)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: StarkServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, list(params.content_changes), params.text_document.version)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: StarkServer, params: types.DidSaveTextDocumentParams) -> None:
        # the saved file may be a kernel, or the harness of one (a kernel's task reads it)
        saved = to_fs_path(params.text_document.uri)
        saved_path = Path(saved).resolve() if saved else None
        for state in list(ls.docs.values()):
            harness = state.task.harness if state.task else (state.problem.harness_path if state.problem else None)
            if state.uri == params.text_document.uri or state.task is None or \
                    (harness is not None and saved_path == Path(harness).resolve()):
                await ls.resolve(state)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: StarkServer, params: types.DidCloseTextDocumentParams) -> None:
        state = ls.docs.pop(params.text_document.uri, None)
        if state is not None:
            if state.analysis is not None:
                state.analysis.cancel()
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @ls.feature(types.WORKSPACE_DID_DELETE_FILES, FILE_FILTERS)
    async def did_delete(ls: StarkServer, params: types.DeleteFilesParams) -> None:
        await file_events.files_deleted(ls, [f.uri for f in params.files])

    @ls.feature(types.WORKSPACE_DID_RENAME_FILES, FILE_FILTERS)
    async def did_rename(ls: StarkServer, params: types.RenameFilesParams) -> None:
        await file_events.files_renamed(ls, [(f.old_uri, f.new_uri) for f in params.files])

    @ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite],
            resolve_provider=False,
        ),
    )
    async def code_action(ls: StarkServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        state = ls.docs.get(params.text_document.uri)
        if state is None:
            return None
        await ls.resolved(state)
        return build_code_actions(ls.action_context(state, params.range, params.context.diagnostics)) or None

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: StarkServer, params: types.HoverParams) -> types.Hover | None:
        state = ls.docs.get(params.text_document.uri)
        if state is not None:
            await ls.resolved(state)
        md = ls.hover_for(state, params.position.line) if state is not None else None
        if md is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md))

    @ls.command(cmd.OPTIMIZE)
    async def optimize(ls: StarkServer, uri: str, kernel: str) -> dict[str, Any]:
        return await start_optimize(ls, uri, kernel)

    @ls.command(cmd.CONTINUE)
    async def continue_search(ls: StarkServer, uri: str, kernel: str, *extra: Any) -> dict[str, Any]:
        n = extra[0] if extra and isinstance(extra[0], int) and extra[0] > 0 else ls.settings.budget
        return await start_optimize(ls, uri, kernel, n)

    @ls.command(cmd.STOP)
    def stop(ls: StarkServer, *args: Any) -> dict[str, Any]:  # uri, kernel; none: every search
        return stop_optimize(ls, args[0] if args else None, args[1] if len(args) > 1 else None)

    @ls.command(cmd.APPLY_BEST)
    async def apply_best(ls: StarkServer, uri: str, kernel: str) -> dict[str, Any]:
        return await apply_candidate(ls, uri, kernel, None)

    @ls.command(cmd.APPLY_CANDIDATE)
    async def apply_one(ls: StarkServer, uri: str, kernel: str, node_id: int) -> dict[str, Any]:
        return await apply_candidate(ls, uri, kernel, node_id)

    @ls.command(cmd.IMPLEMENT_MARKER)
    async def implement(ls: StarkServer, uri: str, marker_id: str) -> dict[str, Any]:
        return await implement_marker(ls, uri, marker_id)

    @ls.command(cmd.CREATE_HARNESS)
    async def harness(ls: StarkServer, uri: str, kernel: str) -> dict[str, Any]:
        return await create_harness(ls, uri, kernel)

    @ls.command(cmd.SHOW_HARNESS)
    async def open_harness(ls: StarkServer, uri: str) -> dict[str, Any]:
        return await show_harness(ls, uri)

    @ls.command(cmd.RENAME_HARNESS)
    async def rename_harness(ls: StarkServer, uri: str) -> dict[str, Any]:
        return await file_events.rename_harness(ls, uri)

    @ls.command(cmd.SET_API_KEY)
    def set_api_key(ls: StarkServer, key: str) -> dict[str, Any]:
        ls.api_key = Secret(key, ls.settings.base_url)
        return {"set": bool(ls.api_key)}

    @ls.command(cmd.WHY_NOT)
    def why_not(ls: StarkServer, uri: str, kernel: str, reason: str) -> dict[str, Any]:
        # "STARK: cannot optimize here: ..." for a client without disabled actions: it only says why
        ls.say(f"STARK cannot optimize {kernel} here: {reason}", types.MessageType.Warning)
        return {"reason": reason}

    @ls.feature(cmd.TREE_REQUEST)
    async def tree(ls: StarkServer, params: Any) -> dict[str, Any] | Plain:
        p = _args(params)
        uri, kernel = p.get("uri"), p.get("kernel")
        state = ls.docs.get(uri)
        if state is None:
            return {"uri": uri, "kernel": kernel, "error": "not an open kernel document", "nodes": []}
        await ls.ready(state)
        view = ls.cache.get(state.task_id)
        job = ls.jobs.running(state.task_id)
        out: dict[str, Any] = {"uri": uri, "kernel": kernel, "task_id": state.task_id, "running": job is not None,
                               "progress": progress_text(job.progress, view, job.phase, job.cancel.is_set())[0] if job else None,
                               "budget": job.budget if job else ls.settings.budget}
        out.update(ls.cache.json(state.task_id))
        return Plain(out)

    @ls.feature(cmd.NODE_REQUEST)
    async def node(ls: StarkServer, params: Any) -> dict[str, Any] | Plain:
        p = _args(params)
        state = ls.docs.get(p.get("uri"))
        view = ls.cache.get(state.task_id) if state is not None else None
        if view is None:
            return {"error": "no search tree for this document"}
        detail = await asyncio.to_thread(node_detail, view, int(p.get("id", -1)))
        return Plain(detail) if detail is not None else {"error": f"no node #{p.get('id')} in this tree"}

    @ls.feature(types.SHUTDOWN)
    async def shutdown(ls: StarkServer, params: Any) -> None:
        await ls.stop_everything()
