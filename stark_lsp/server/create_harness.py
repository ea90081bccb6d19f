"""stark.createHarness and stark.showHarness: the quick fixes for a kernel file
without a (filled-in) harness.

``createHarness`` writes ``<name>.harness.py`` beside the kernel (never over
an existing file) from the template for the kernel's launcher or entry
function (``stark_lsp/tasks/harness_template.py``), then opens it in the
editor (``window/showDocument``) at the ``reference()`` the user has to
write. Until that is written and saved, the kernel shows "fill in
reference()" and no search starts (``harness_check.py``); ``showHarness``
opens the harness there again.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from stark_lsp.server.harness_check import unfilled_functions
from stark_lsp.server.host import Host
from stark_lsp.tasks.harness_template import render_harness
from stark_lsp.tasks.spec import default_harness_path


def _write_new(path: Path, text: str) -> bool:
    """Create ``path`` with ``text``; False when it already exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return True


def first_unfilled_line(text: str) -> int | None:
    found = unfilled_functions(text)
    ref = next((u for u in found if u.function == "reference"), found[0] if found else None)
    return ref.line if ref else None


async def create_harness(host: Host, uri: str, kernel: str) -> dict[str, Any]:
    state = host.docs.get(uri)
    if state is None or state.path is None:
        return host.fail(f"{uri} is not a kernel file the server knows")
    await host.ready(state)
    target = Path(state.problem.harness_path) if state.problem and state.problem.harness_path else default_harness_path(state.path)
    text = render_harness(state.language, state.path.name, host.document_text(uri), kernel)
    try:
        created = await asyncio.to_thread(_write_new, target, text)
    except OSError as e:
        return host.fail(f"could not create {target.name}: {e}")
    if not created:
        return host.fail(f"{target.name} already exists: not overwritten", types.MessageType.Warning)
    harness_uri = from_fs_path(str(target))
    await host.resolve(state)  # now "fill in reference()"
    shown = await host.show_document(harness_uri, first_unfilled_line(text))
    where = "" if shown else f" ({target})"
    host.say(f"created {target.name}{where}: write reference() in it, save it, then optimize {kernel}")
    return {"created": harness_uri, "shown": shown}


async def show_harness(host: Host, uri: str) -> dict[str, Any]:
    state = host.docs.get(uri)
    if state is None:
        return host.fail(f"{uri} is not a kernel file the server knows")
    await host.ready(state)
    harness = state.problem.harness_path if state.problem and state.problem.harness_path else (
        str(state.task.harness) if state.task and state.task.harness else None)
    if harness is None:
        return host.fail("this file has no harness yet", types.MessageType.Info)
    path = Path(harness)
    try:
        text = await asyncio.to_thread(path.read_text)
    except OSError as e:
        return host.fail(f"cannot read {path.name}: {e}")
    harness_uri = from_fs_path(str(path))
    shown = await host.show_document(harness_uri, first_unfilled_line(text))
    if not shown:
        host.say(f"open {path} and write reference() in it", types.MessageType.Info)
    return {"shown": shown, "uri": harness_uri}
