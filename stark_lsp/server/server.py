"""The STARK-LSP language server: one pygls ``LanguageServer`` and its wiring.

Every LSP method is registered here and nowhere else; each handler is a few
lines that translate LSP into a call to a feature module and back:

==============================  ===============================================
textDocument/didOpen, didChange open_documents.py (documents.py: kernels),
  didSave, didClose             diagnostics.py, carried_diagnostics.py
textDocument/codeAction         code_actions.py
textDocument/hover              hover.py
workspace/executeCommand        optimize_jobs.py (optimize, continueSearch, stop),
                                helper_search.py (optimizeHelperUser),
                                apply_candidate.py, implement_marker.py,
                                create_harness.py, file_events.py (renameHarness),
                                configuration.py (stark.setApiKey), stark.whyNot (here)
workspace/didDeleteFiles,       file_events.py
  didRenameFiles
stark/tree, stark/node          tree_json.py
stark/treeChanged, stark/       tree_notices.py
  searches
window/workDoneProgress/cancel  progress.py (through pygls's token futures)
initialize, workspace/          configuration.py (settings.py: parsing), stores.py (roots)
  configuration
==============================  ===============================================

Each feature keeps its own state, in an object the server holds one of:

==================  ==========================  ======================================================
``ls.config``       configuration.py            settings, API key, the workspace/configuration pull
``ls.documents``    open_documents.py           open documents (``DocState``), big-file analysis debounce
``ls.stores``       stores.py                   workspace roots, which store a file uses, store watchers
``ls.cache``        tree_cache.py               the trees the documents show
``ls.jobs``         optimize_state.py           running searches
``ls.moves``        file_moves.py               trees waiting after a rename, orphaned harnesses
``ls.open_files``   open_files_watch.py         open tabs' files, removed outside the editor
``ls.carried``      carried_diagnostics.py      diagnostics a kernel puts on its harness and headers
``ls.notices``      tree_notices.py             stark/treeChanged and stark/searches, debounced
==================  ==========================  ======================================================

Hover and code actions keep no state: each gathers what it shows from the
``Host`` (``hover.hover_for``, ``code_actions.action_context``), and the
search running for a document is ``ls.jobs.for_document``.

``StarkServer`` is wiring: it answers the features' ``Host`` protocol
(host.py) by delegating to these, and ties them together where one event
concerns several (``task_resolved``, ``refresh_tree``, ``publish``). All of
it is touched only on the event loop. Blocking work (the search, the store,
the disk, the analysis of a big file) runs in threads; a search's updates
reach the loop in batches (``optimize_state.Inbox``), so requests never wait
behind its bookkeeping.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from stark_lsp.server import commands as cmd
from stark_lsp.server import file_events
from stark_lsp.server.apply_candidate import apply_candidate
from stark_lsp.server.backend import Backend, load_backend
from stark_lsp.server.carried_diagnostics import CarriedDiagnostics
from stark_lsp.server.code_actions import action_context, build_code_actions
from stark_lsp.server.configuration import Configuration
from stark_lsp.server.create_harness import create_harness, show_harness
from stark_lsp.server.diagnostics import build_diagnostics
from stark_lsp.server.documents import DocState
from stark_lsp.server.file_moves import FileMoves
from stark_lsp.server.helper_search import optimize_helper_user as optimize_user
from stark_lsp.server.hover import hover_for
from stark_lsp.server.implement_marker import implement_marker
from stark_lsp.server.open_documents import OpenDocuments
from stark_lsp.server.open_files_watch import OpenFilesWatch
from stark_lsp.server.optimize_jobs import start_optimize, stop_optimize
from stark_lsp.server.optimize_state import Job, OptimizeJobs
from stark_lsp.server.progress import progress_text
from stark_lsp.server.settings import Secret, Settings
from stark_lsp.server.stdio import serve_stdio
from stark_lsp.server.stores import Stores
from stark_lsp.server.text_document import use_fast_documents
from stark_lsp.server.tree_cache import TreeCache
from stark_lsp.server.tree_json import node_detail
from stark_lsp.server.tree_notices import TreeNotices
from stark_lsp.server.wire import Plain, converter as wire_converter

log = logging.getLogger(__name__)

SWITCH_INTERVAL_S = 0.001  # the event loop gets the GIL back quickly from a busy search or analysis thread


class StarkServer(LanguageServer):
    """Wiring: each feature keeps its own state (the module docstring's second table); the server
    holds one of each, answers the ``Host`` protocol the features call through, and ties them
    together where one event concerns several (a task resolved, a tree read again, a document
    published). What a hover or a code action shows is gathered by its feature (``hover_for``,
    ``action_context``) from the ``Host``; the server keeps no per-feature state."""

    def __init__(self, backend: Backend | None = None) -> None:
        super().__init__("stark-lsp", "0.1.0", text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         converter_factory=wire_converter)
        self.backend = backend or load_backend()
        self.config = Configuration(self)
        self.documents = OpenDocuments(self)
        self.stores = Stores()
        self.cache = TreeCache()
        self.jobs = OptimizeJobs()
        self.moves = FileMoves()
        self.open_files = OpenFilesWatch(self)
        self.carried = CarriedDiagnostics(lambda p: self.text_document_publish_diagnostics(p))
        self.notices = TreeNotices(self)

    # -- the Host protocol, answered by the features -----------------------------------
    @property
    def settings(self) -> Settings:
        return self.config.settings

    @property
    def api_key(self) -> Secret:
        return self.config.api_key

    @property
    def docs(self) -> dict[str, DocState]:
        return self.documents.docs

    async def settings_ready(self) -> None:
        await self.config.ready()

    async def ready(self, state: DocState) -> None:
        await self.documents.ready(state)

    async def resolve(self, state: DocState) -> None:
        await self.documents.resolve(state)

    def store_path_for(self, path: Path) -> Path:
        return self.stores.path_for(path)

    def tree_changed(self, task_id: str | None, force: bool = False) -> None:
        self.notices.tree_changed(task_id, force)

    def searches_changed(self) -> None:
        self.notices.searches_changed()

    def document_text(self, uri: str) -> str:
        return self.workspace.get_text_document(uri).source

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

    # -- a document's task, known anew -------------------------------------------------
    async def task_resolved(self, state: DocState) -> None:
        """After ``OpenDocuments`` read a document's task from disk: every feature that depends on it."""
        self.carried.harness(state)
        self.watch(state)
        if self.moves.waiting(state.path) and state.task is not None:
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

    def watch(self, state: DocState) -> None:
        self.open_files.start(state)  # the open documents' kernels and harnesses, removed outside the editor
        if state.store_path is not None:
            self.stores.watch(state.store_path, self.store_changed)

    def watch_job(self, job: Job) -> asyncio.Task:
        return asyncio.get_running_loop().create_task(file_events.watch_job(self, job))

    # -- trees and diagnostics: each ties several features together (the store through the backend, the
    # running searches, the cache, the notices; the documents, the cache and the carried diagnostics),
    # and the features call them through ``Host``: they stay with the wiring, holding no state of their own
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

    def publish(self, uri: str) -> None:
        state = self.docs.get(uri)
        if state is None or state.stale:
            return  # a big file being typed in: its analysis publishes
        doc = self.workspace.get_text_document(uri)
        lines = self.documents.lines_of(state, doc.source, doc.version)
        tree = self.cache.get(state.task_id)
        diags = build_diagnostics(doc.source, state.kernels, state.language, tree,
                                  state.shown_problem, state.checked_root, lines)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=doc.version)
        )
        self.carried.other_files(state, doc.source, tree)

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        serve_stdio(self, stdin, stdout)

    # -- shutdown ----------------------------------------------------------------------
    async def stop_everything(self) -> None:
        self.jobs.stop_all()
        self.open_files.stop()
        self.stores.stop()
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
        ls.config.initialize(params.initialization_options)
        use_fast_documents(ls.workspace)
        folders = params.workspace_folders or []
        roots = [to_fs_path(f.uri) for f in folders] or [to_fs_path(params.root_uri) if params.root_uri else params.root_path]
        ls.stores.set_roots(roots)

    @ls.feature(types.INITIALIZED)
    def initialized(ls: StarkServer, params: types.InitializedParams) -> None:
        ls.config.start_pull()

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: StarkServer, params: types.DidChangeConfigurationParams) -> None:
        ls.config.changed(params.settings)

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: StarkServer, params: types.DidOpenTextDocumentParams) -> None:
        d = params.text_document
        state = ls.documents.track(d.uri, d.language_id, d.text, d.version)
        if state is not None:
            ls.publish(d.uri)
            await ls.documents.resolve(state)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: StarkServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.documents.changed(params.text_document.uri, list(params.content_changes), params.text_document.version)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: StarkServer, params: types.DidSaveTextDocumentParams) -> None:
        # the saved file may be a kernel, or the harness of one (a kernel's task reads it)
        saved = to_fs_path(params.text_document.uri)
        saved_path = Path(saved).resolve() if saved else None
        for state in list(ls.docs.values()):
            harness = state.task.harness if state.task else (state.problem.harness_path if state.problem else None)
            if state.uri == params.text_document.uri or state.task is None or \
                    (harness is not None and saved_path == Path(harness).resolve()):
                await ls.documents.resolve(state)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: StarkServer, params: types.DidCloseTextDocumentParams) -> None:
        if ls.documents.close(params.text_document.uri) is not None:
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
        await ls.documents.resolved(state)
        return build_code_actions(action_context(ls, state, params.range, params.context.diagnostics)) or None

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: StarkServer, params: types.HoverParams) -> types.Hover | None:
        state = ls.docs.get(params.text_document.uri)
        if state is not None:
            await ls.documents.resolved(state)
        md = hover_for(ls, state, params.position.line) if state is not None else None
        if md is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md))

    @ls.command(cmd.OPTIMIZE)
    async def optimize(ls: StarkServer, uri: str, kernel: str) -> dict[str, Any]:
        return await start_optimize(ls, uri, kernel)

    @ls.command(cmd.OPTIMIZE_HELPER_USER)
    async def optimize_helper_user(ls: StarkServer, helper_uri: str, user_uri: str, kernel: str) -> dict[str, Any]:
        return await optimize_user(ls, helper_uri, user_uri, kernel)

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
        return {"set": ls.config.set_api_key(key)}

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
        await ls.documents.ready(state)
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
