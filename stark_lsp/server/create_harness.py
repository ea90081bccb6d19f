"""stark.createHarness: the quick fix for a kernel file without a harness.

One WorkspaceEdit: CreateFile for ``<name>.harness.py`` beside the kernel
(never overwriting one), then a TextEdit filling it from the template for the
kernel's signature (``stark_lsp/tasks/harness_template.py``). The editor
opens and saves it like any edit; the server picks the harness up when it is
saved.

``harness_edit`` is pure.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from stark_lsp.tasks.harness_template import render_harness
from stark_lsp.tasks.spec import default_harness_path

if TYPE_CHECKING:
    from stark_lsp.server.server import StarkServer


def harness_edit(harness_uri: str, text: str) -> types.WorkspaceEdit:
    zero = types.Position(line=0, character=0)
    return types.WorkspaceEdit(
        document_changes=[
            types.CreateFile(uri=harness_uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=True)),
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=harness_uri, version=None),
                edits=[types.TextEdit(range=types.Range(start=zero, end=zero), new_text=text)],
            ),
        ]
    )


async def create_harness(ls: "StarkServer", uri: str, kernel: str) -> dict[str, Any]:
    state = ls.docs.get(uri)
    if state is None or state.path is None:
        return ls.fail(f"{uri} is not a kernel file the server knows")
    await ls.ready(state)
    target = Path(state.problem.harness_path) if state.problem and state.problem.harness_path else default_harness_path(state.path)
    if target.exists():
        return ls.fail(f"{target.name} already exists: not overwritten", types.MessageType.Warning)
    text = render_harness(state.language, state.path.name, ls.workspace.get_text_document(uri).source, kernel)
    harness_uri = from_fs_path(str(target))
    try:
        result = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=harness_edit(harness_uri, text), label=f"STARK: create {target.name}")
        )
    except Exception as e:
        return ls.fail(f"the editor could not create {target.name}: {e}")
    if not result.applied:
        return ls.fail(f"the editor did not create {target.name}: {result.failure_reason or 'no reason given'}")
    ls.say(f"created {target.name}: write reference() in it, save it, then optimize {kernel}")
    return {"created": harness_uri}
