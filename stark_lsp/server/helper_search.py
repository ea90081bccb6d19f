"""stark.optimizeHelperUser: "Optimize" on a helper module searches the task that uses it.

A module of ``@triton.jit`` helpers is no task of its own (``helper_modules.py``):
its code action offers, instead, the search of a kernel file that imports it
("Optimize kernel rms_norm_kernel (via rms_norm.py, which uses this helper)").
Chosen, that search starts as "Optimize kernel" in the user's own file would:
the same task, tree, progress and refusals (``optimize_jobs.start_optimize``),
from the user's file as an open editor has it, or, when it is not open, as
read from disk. The user's file is then shown, where the search's diagnostics,
hover and "Apply" are.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from stark_lsp.server.documents import DocState, document_language, resolve_task, update_kernels
from stark_lsp.server.host import Host
from stark_lsp.server.optimize_jobs import start_optimize


def _path(uri: str) -> Path | None:
    fs = to_fs_path(uri)
    return Path(fs).resolve() if fs else None


def open_state(host: Host, path: Path) -> DocState | None:
    """The open document of ``path``, if the editor has it open."""
    return next((s for s in host.docs.values() if s.path == path), None)


async def unopened_state(host: Host, uri: str, path: Path) -> DocState | None:
    """A file the editor does not have open, as it is on disk: its kernels, its task and its tree
    (what ``start_optimize`` reads of an open document). None if it holds no Triton kernel."""

    def read() -> str | None:
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    text = await asyncio.to_thread(read)
    language = document_language(uri, "python", text) if text is not None else None
    if language is None:
        return None
    state = DocState(uri, path, language, store_path=host.store_path_for(path))
    update_kernels(state, text, 0)
    resolved = await asyncio.to_thread(resolve_task, path)
    state.task, state.problem, state.harness_unfilled = resolved.task, resolved.problem, resolved.unfilled
    state.harness_digest = resolved.harness_digest
    await host.refresh_tree(state)  # a tree already there is continued, as from the open file
    return state


async def optimize_helper_user(host: Host, helper_uri: str, user_uri: str, kernel: str) -> dict[str, Any]:
    """Start the search of ``kernel`` in ``user_uri``, a task file that imports the helper module
    ``helper_uri``; show that file once it runs."""
    path = _path(user_uri)
    helper = _path(helper_uri)
    helper_name = helper.name if helper else helper_uri
    if path is None:
        return host.fail(f"cannot optimize through {helper_name}: {user_uri} is not a file")
    state = open_state(host, path)
    if state is None:
        state = await unopened_state(host, user_uri, path)
        if state is None:
            return host.fail(f"cannot optimize through {helper_name}: {path.name} holds no Triton kernel now "
                             f"(or cannot be read)", types.MessageType.Warning)
    result = await start_optimize(host, state.uri, kernel, state=state if state.uri not in host.docs else None)
    if result.get("started"):
        host.say(f"optimizing {kernel} in {path.name}, which uses {helper_name}: its candidates rewrite "
                 f"{path.name}; {helper_name} stays as it is")
        line = next((k.name_line for k in state.kernels if k.name == kernel), None)
        result["uri"] = state.uri
        result["shown"] = await host.show_document(state.uri, line)
    return result
