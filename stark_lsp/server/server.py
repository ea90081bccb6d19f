"""The STARK-LSP language server: one pygls ``LanguageServer`` and its wiring.

Every LSP method is registered here and nowhere else; each handler is a few
lines that translate LSP into a call to a feature module and back:

==============================  ===============================================
textDocument/didOpen, didChange documents.py (kernels), diagnostics.py
  didSave, didClose
textDocument/codeAction         code_actions.py
textDocument/hover              hover.py
workspace/executeCommand        optimize_jobs.py (stark.optimize, stark.stop),
                                apply_candidate.py, implement_marker.py,
                                create_harness.py, stark.setApiKey (here)
stark/tree (request)            trees.py
stark/treeChanged (sent)        ``StarkServer.tree_changed``
window/workDoneProgress/cancel  progress.py (through pygls's token futures)
initialize, workspace/          settings.py
  configuration
==============================  ===============================================

State lives on the ``StarkServer`` object and is touched only on the event
loop. Blocking work (the search, the store, the disk) runs in threads.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from stark_lsp.server import code_actions as ca
from stark_lsp.server.apply_candidate import apply_candidate
from stark_lsp.server.backend import Backend, load_backend
from stark_lsp.server.create_harness import create_harness
from stark_lsp.server.diagnostics import build_diagnostics
from stark_lsp.server.documents import DocState, document_language, resolve_task, update_kernels
from stark_lsp.server.hover import hover_markdown
from stark_lsp.server.implement_marker import implement_marker, marker_spans
from stark_lsp.server.optimize_jobs import OptimizeJobs, start_optimize, stop_optimize
from stark_lsp.server.settings import Secret, Settings, api_key_from, parse_settings
from stark_lsp.server.store_watch import StoreWatcher
from stark_lsp.server.tree_cache import TreeCache
from stark_lsp.tasks.kernels import kernels_in_range
from stark_lsp.tasks.spec import default_harness_path

log = logging.getLogger(__name__)

TREE_REQUEST = "stark/tree"
TREE_CHANGED = "stark/treeChanged"
STORE_DIR, STORE_FILE = ".stark", "tree.sqlite"
PUBLISH_DELAY_S = 0.1  # bursts of node updates become one publish


class StarkServer(LanguageServer):
    def __init__(self, backend: Backend | None = None) -> None:
        super().__init__("stark-lsp", "0.1.0", text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.backend = backend or load_backend()
        self.settings = Settings()
        self.api_key = Secret()
        self.docs: dict[str, DocState] = {}
        self.cache = TreeCache()
        self.jobs = OptimizeJobs()
        self.watchers: dict[Path, StoreWatcher] = {}
        self.roots: list[Path] = []
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._config_pull: asyncio.Task | None = None

    # -- talking to the user -------------------------------------------------------
    def say(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def fail(self, message: str, kind: types.MessageType = types.MessageType.Error) -> dict[str, Any]:
        self.say(message, kind)
        return {"error": message}

    # -- documents ---------------------------------------------------------------------
    def store_path_for(self, path: Path) -> Path:
        from stark_lsp.search.tree_store import find_workspace

        for root in self.roots:
            if path == root or root in path.parents:
                return root / STORE_DIR / STORE_FILE
        return find_workspace(path.parent) / STORE_DIR / STORE_FILE

    def track(self, uri: str, language_id: str | None, text: str) -> DocState | None:
        state = self.docs.get(uri)
        if state is None:
            lang = document_language(uri, language_id, text)
            if lang is None:
                return None
            fs = to_fs_path(uri)
            path = Path(fs).resolve() if fs else None
            state = DocState(uri, path, lang, store_path=self.store_path_for(path) if path else None)
            self.docs[uri] = state
        gone = update_kernels(state, text)
        job = self.jobs.running(state.task_id)
        if job is not None and job.kernel in gone and job.kernel not in state.warned_missing:
            state.warned_missing.add(job.kernel)
            self.say(
                f"{job.kernel} is no longer in the document; its search goes on with the saved file "
                f"(stop it from the progress notification or with “Stop optimizing”)",
                types.MessageType.Warning,
            )
        return state

    async def resolve(self, state: DocState) -> None:
        """Re-read the task (harness) and the tree from disk, then republish.
        Commands wait for it (``ready``), so they never see a half-known file."""
        state.resolving = asyncio.get_running_loop().create_task(self._resolve(state))
        await state.resolving

    async def ready(self, state: DocState) -> None:
        task = state.resolving
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=30)

    async def _resolve(self, state: DocState) -> None:
        if state.path is None:
            state.problem = None
            return
        state.task, state.problem = await asyncio.to_thread(resolve_task, state.path)
        self.watch(state)
        await self.refresh_tree(state)
        self.publish(state.uri)

    def watch(self, state: DocState) -> None:
        if state.store_path is None:
            return
        directory = state.store_path.parent
        if directory not in self.watchers:
            w = self.watchers[directory] = StoreWatcher(directory, lambda d=directory: self.store_changed(d))
            w.start()

    # -- trees ---------------------------------------------------------------------
    async def refresh_tree(self, state: DocState) -> None:
        task_id = state.task_id
        if task_id is None or state.store_path is None or not state.store_path.exists():
            return
        store_path = state.store_path

        def read() -> list[Any]:
            return self.backend.open_store(store_path).nodes(task_id)

        try:
            nodes = await asyncio.to_thread(read)
        except Exception as e:  # a broken or locked store: keep what we had
            log.warning("reading %s: %s", store_path, e)
            return
        if self.cache.replace(task_id, nodes):
            self.tree_changed(task_id)

    async def store_changed(self, directory: Path) -> None:
        """The store in ``directory`` was written (by us or by a terminal)."""
        seen = set()
        for state in list(self.docs.values()):
            if state.store_path is not None and state.store_path.parent == directory and state.task_id not in seen:
                seen.add(state.task_id)
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
        for state in list(self.docs.values()):
            if state.task_id != task_id:
                continue
            self.publish(state.uri)
            for k in state.kernels:
                self.protocol.notify(TREE_CHANGED, {"uri": state.uri, "kernel": k.name})

    def publish(self, uri: str) -> None:
        state = self.docs.get(uri)
        if state is None:
            return
        doc = self.workspace.get_text_document(uri)
        diags = build_diagnostics(doc.source, state.kernels, state.language, self.cache.get(state.task_id), state.problem)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=doc.version)
        )

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

    # -- shutdown ----------------------------------------------------------------------
    async def stop_everything(self) -> None:
        self.jobs.stop_all()
        for w in self.watchers.values():
            w.stop()
        await self.jobs.wait_all(timeout=10)
        await asyncio.to_thread(self.backend.close)


def make_server(backend: Backend | None = None) -> StarkServer:
    ls = StarkServer(backend)
    register(ls)
    return ls


def register(ls: StarkServer) -> None:
    """Wire every LSP method to its feature."""

    @ls.feature(types.INITIALIZE)
    def initialize(ls: StarkServer, params: types.InitializeParams) -> None:
        opts = params.initialization_options
        ls.apply_settings(opts)
        ls.api_key = api_key_from(opts) or ls.api_key
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
        state = ls.track(d.uri, d.language_id, d.text)
        if state is not None:
            ls.publish(d.uri)
            await ls.resolve(state)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: StarkServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        new = uri not in ls.docs
        state = ls.track(uri, doc.language_id, doc.source)
        if state is None:
            return
        ls.publish(uri)
        if new:  # a Python file that just got its first @triton.jit
            await ls.resolve(state)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: StarkServer, params: types.DidSaveTextDocumentParams) -> None:
        # the saved file may be a kernel, or the harness another kernel was missing
        for state in list(ls.docs.values()):
            if state.uri == params.text_document.uri or state.task is None:
                await ls.resolve(state)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: StarkServer, params: types.DidCloseTextDocumentParams) -> None:
        if ls.docs.pop(params.text_document.uri, None) is not None:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite],
            resolve_provider=False,
        ),
    )
    def code_action(ls: StarkServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        state = ls.docs.get(params.text_document.uri)
        if state is None:
            return None
        r = params.range
        kernels = kernels_in_range(state.kernels, r.start.line, r.end.line)
        text = ls.workspace.get_text_document(state.uri).source
        markers, _ = marker_spans(text) if "@stark" in text else ([], None)
        markers = [m for m in markers if m.first_line <= r.end.line and r.start.line <= m.last_line]
        job = ls.jobs.running(state.task_id)
        harness = Path(state.problem.harness_path).name if state.problem and state.problem.harness_path else (
            default_harness_path(state.path).name if state.path else "the harness")
        return ca.build_code_actions(
            state.uri, kernels, markers, ls.cache.get(state.task_id), state.problem,
            job.kernel if job else None, params.context.diagnostics, harness,
        ) or None

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: StarkServer, params: types.HoverParams) -> types.Hover | None:
        state = ls.docs.get(params.text_document.uri)
        if state is None:
            return None
        line = params.position.line
        kernel = next((k for k in state.kernels if k.contains_line(line)), None)
        if kernel is None:
            return None
        job = ls.jobs.running(state.task_id)
        md = hover_markdown(kernel.name, ls.cache.get(state.task_id), job.line() if job else None,
                            state.problem.message if state.problem else None)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md))

    @ls.command(ca.OPTIMIZE)
    async def optimize(ls: StarkServer, uri: str, kernel: str) -> dict[str, Any]:
        return await start_optimize(ls, uri, kernel)

    @ls.command(ca.STOP)
    def stop(ls: StarkServer, uri: str, kernel: str) -> dict[str, Any]:
        return stop_optimize(ls, uri, kernel)

    @ls.command(ca.APPLY_BEST)
    async def apply_best(ls: StarkServer, uri: str, kernel: str) -> dict[str, Any]:
        return await apply_candidate(ls, uri, kernel, None)

    @ls.command(ca.APPLY_CANDIDATE)
    async def apply_one(ls: StarkServer, uri: str, kernel: str, node_id: int) -> dict[str, Any]:
        return await apply_candidate(ls, uri, kernel, node_id)

    @ls.command(ca.IMPLEMENT_MARKER)
    async def implement(ls: StarkServer, uri: str, marker_id: str) -> dict[str, Any]:
        return await implement_marker(ls, uri, marker_id)

    @ls.command(ca.CREATE_HARNESS)
    async def harness(ls: StarkServer, uri: str, kernel: str) -> dict[str, Any]:
        return await create_harness(ls, uri, kernel)

    @ls.command(ca.SET_API_KEY)
    def set_api_key(ls: StarkServer, key: str) -> dict[str, Any]:
        ls.api_key = Secret(key)
        return {"set": bool(ls.api_key)}

    @ls.feature(TREE_REQUEST)
    async def tree(ls: StarkServer, params: Any) -> dict[str, Any]:
        p = params if isinstance(params, dict) else (params._asdict() if hasattr(params, "_asdict") else {})
        uri, kernel = p.get("uri"), p.get("kernel")
        state = ls.docs.get(uri)
        if state is None:
            return {"uri": uri, "kernel": kernel, "error": "not an open kernel document", "nodes": []}
        await ls.ready(state)
        view = ls.cache.get(state.task_id)
        job = ls.jobs.running(state.task_id)
        out: dict[str, Any] = {"uri": uri, "kernel": kernel, "task_id": state.task_id,
                               "running": job is not None, "progress": job.line() if job else None}
        out.update(view.to_json() if view else {"best": None, "nodes": []})
        return out

    @ls.feature(types.SHUTDOWN)
    async def shutdown(ls: StarkServer, params: Any) -> None:
        await ls.stop_everything()
