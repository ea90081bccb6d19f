"""What the feature modules need from the server, as a Protocol.

Features (optimizing, applying, markers, harnesses, file events) take a
``Host`` and never import ``server.py``, so the package has no import cycle:
``server.py`` imports the features, the features import this.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from lsprotocol import types

from stark_lsp.server.backend import Backend
from stark_lsp.server.documents import DocState
from stark_lsp.server.file_moves import FileMoves
from stark_lsp.server.optimize_state import Job, OptimizeJobs
from stark_lsp.server.settings import Secret, Settings
from stark_lsp.server.tree_cache import TreeCache


class Host(Protocol):
    backend: Backend
    settings: Settings
    api_key: Secret
    docs: dict[str, DocState]
    cache: TreeCache
    jobs: OptimizeJobs
    moves: FileMoves  # trees waiting to move to a renamed kernel, harnesses left under an old name

    @property
    def workspace(self) -> Any: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    def say(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None: ...

    def fail(self, message: str, kind: types.MessageType = types.MessageType.Error) -> dict[str, Any]: ...

    async def ready(self, state: DocState) -> None: ...

    async def settings_ready(self) -> None: ...

    async def resolve(self, state: DocState) -> None: ...

    async def refresh_tree(self, state: DocState) -> None: ...

    def tree_changed(self, task_id: str | None, force: bool = False) -> None: ...

    def publish(self, uri: str) -> None: ...

    def searches_changed(self) -> None: ...

    def document_text(self, uri: str) -> str: ...

    async def show_document(self, uri: str, line: int | None = None) -> bool: ...

    async def apply_edit(self, edit: types.WorkspaceEdit, label: str) -> types.ApplyWorkspaceEditResult: ...

    async def ask(self, message: str, choices: list[str]) -> str | None: ...

    def watch_job(self, job: Job) -> asyncio.Task: ...

    def store_path_for(self, path: Path) -> Path: ...
