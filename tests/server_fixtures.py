"""Shared pieces of the language-server tests: samples, hand-built trees, an editor-like test
client (answers workspace/applyEdit, keeps document texts, decodes code
actions correctly) and polling helpers.

Not a conftest: import what you need.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, Callable, Union

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import make_test_lsp_client

from stark_lsp.evaluate.result import CompileReport, Diagnostic, EvalResult, Runtime, Status, Timing
from stark_lsp.search.node import Node
from stark_lsp.server.text_edits import apply_text_edits
from stark_lsp.search.tree_view import TreeView, tree_view

REPO = Path(__file__).resolve().parents[1]
FAKE_BACKEND = f"{REPO / 'tests' / 'fake_backend.py'}:FakeBackend"
TEST_SETTINGS = {"budget": 3, "concurrency": 1, "seed": 0}

TRITON_KERNEL = '''"""Vector add with a ReLU, one program per block."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


def add_relu(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_relu_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    return out
'''

TRITON_HARNESS = '''"""Harness of add_relu.py."""
import torch

ENTRY = "add_relu"


def reference(x, y):
    return torch.relu(x + y)


def get_inputs():
    return [torch.randn(4096), torch.randn(4096)]
'''

CUDA_KERNEL = r'''#include <cuda_runtime.h>

__global__ void scale_kernel(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

extern "C" void scale(const float* x, float* y, float a, int n) {
    scale_kernel<<<(n + 255) / 256, 256>>>(x, y, a, n);
}
'''

CUDA_HARNESS = '''import torch


def get_inputs():
    return [torch.randn(1 << 16), 2.0]


def reference(x, a):
    return a * x


def run(lib, x, a):
    y = torch.empty_like(x)
    lib.scale(x, y, a, x.numel())
    return y
'''


def server_command(backend: str | None = FAKE_BACKEND) -> list[str]:
    cmd = [sys.executable, "-m", "stark_lsp", "serve"]
    return cmd + (["--backend", backend] if backend else [])


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"STARK_FAKE_DELAY": "0.05", "TRITON_INTERPRET": "1", "STARK_SMALL": "1"})
    env.update(extra)
    return env


# -- the editor-like client ------------------------------------------------------------


def _structure_action(converter: Any) -> Callable[[Any, Any], Any]:
    def hook(obj: Any, _: Any) -> Any:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    return hook


def make_client() -> LanguageClient:
    """pytest-lsp's client, plus: code actions decoded as CodeAction, a
    workspace/applyEdit that edits the client's copies of the documents (and
    tells the server, like an editor), files created on disk, stark/treeChanged
    recorded."""
    client = make_test_lsp_client()
    conv = client.protocol._converter
    conv.register_structure_hook(Union[types.Command, types.CodeAction], _structure_action(conv))
    client.texts = {}  # uri -> [version, text]
    client.applied_edits = []
    client.tree_changes = []
    client.searches = []  # every stark/searches notification
    client.message_requests = []  # window/showMessageRequest: (message, titles)
    client.answer = None  # the title to answer them with (None: dismissed)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        client.applied_edits.append(params.edit)
        for change in params.edit.document_changes or []:
            if isinstance(change, types.CreateFile):
                p = Path(to_fs_path(change.uri))
                if not p.exists():
                    p.write_text("")
                continue
            if isinstance(change, types.RenameFile):
                Path(to_fs_path(change.old_uri)).rename(to_fs_path(change.new_uri))
                continue
            if not isinstance(change, types.TextDocumentEdit):
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="unsupported change")
            uri = change.text_document.uri
            if uri in client.texts:
                version, text = client.texts[uri]
                new = apply_text_edits(text, list(change.edits))
                change_document(client, uri, new)
            else:
                p = Path(to_fs_path(uri))
                p.write_text(apply_text_edits(p.read_text(), list(change.edits)))
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature("stark/treeChanged")
    def tree_changed(params: Any) -> None:
        client.tree_changes.append(params)

    @client.feature("stark/searches")
    def searches(params: Any) -> None:
        client.searches.append(plain(params))

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def message_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        client.message_requests.append((params.message, [a.title for a in params.actions or []]))
        return types.MessageActionItem(title=client.answer) if client.answer else None

    return client


def config(backend: str | None = FAKE_BACKEND, **env: str) -> ClientServerConfig:
    return ClientServerConfig(server_command=server_command(backend), server_env=server_env(**env),
                              client_factory=make_client)


async def start(client: LanguageClient, root: Path, options: dict | None = None, disabled_support: bool = True) -> None:
    """initialize, as VS Code would (``disabled_support``: it shows disabled code actions; Neovim 0.7 does not)."""
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                text_document=types.TextDocumentClientCapabilities(
                    code_action=types.CodeActionClientCapabilities(disabled_support=disabled_support or None),
                ),
                window=types.WindowClientCapabilities(
                    work_done_progress=True,
                    show_document=types.ShowDocumentClientCapabilities(support=True),
                    show_message=types.ShowMessageRequestClientCapabilities(),
                ),
                workspace=types.WorkspaceClientCapabilities(
                    configuration=True, apply_edit=True,
                    workspace_edit=types.WorkspaceEditClientCapabilities(
                        document_changes=True,
                        resource_operations=[types.ResourceOperationKind.Create, types.ResourceOperationKind.Rename]),
                    file_operations=types.FileOperationClientCapabilities(did_rename=True, did_delete=True),
                ),
            ),
            root_uri=from_fs_path(str(root)),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")],
            initialization_options=dict(TEST_SETTINGS, **(options or {})),
        )
    )


def open_document(client: LanguageClient, path: Path, language_id: str) -> str:
    uri = from_fs_path(str(path))
    text = path.read_text()
    client.texts[uri] = [1, text]
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text))
    )
    return uri


def change_document(client: LanguageClient, uri: str, text: str) -> None:
    version = client.texts[uri][0] + 1
    client.texts[uri] = [version, text]
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def close_document(client: LanguageClient, uri: str) -> None:
    client.texts.pop(uri, None)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


def rename_files(client: LanguageClient, *pairs: tuple[Path, Path]) -> None:
    """What VS Code does when files are renamed in its explorer: rename them,
    tell the server, and move open documents (close the old, open the new)."""
    for old, new in pairs:
        old.rename(new)
    client.workspace_did_rename_files(types.RenameFilesParams(files=[
        types.FileRename(old_uri=from_fs_path(str(o)), new_uri=from_fs_path(str(n))) for o, n in pairs]))
    for old, new in pairs:
        if from_fs_path(str(old)) in client.texts:
            close_document(client, from_fs_path(str(old)))
            language = "cuda-cpp" if new.suffix in (".cu", ".cuh") else "python"
            open_document(client, new, language)


def delete_file(client: LanguageClient, path: Path) -> None:
    path.unlink()
    client.workspace_did_delete_files(types.DeleteFilesParams(files=[types.FileDelete(uri=from_fs_path(str(path)))]))


def change_lines(client: LanguageClient, uri: str, line: int, new_text: str, end_line: int | None = None) -> None:
    """An incremental change, as editors send them: replace lines [line, end_line) with ``new_text``."""
    version, text = client.texts[uri]
    end_line = line if end_line is None else end_line
    rng = types.Range(start=types.Position(line=line, character=0), end=types.Position(line=end_line, character=0))
    new = apply_text_edits(text, [types.TextEdit(range=rng, new_text=new_text)])
    client.texts[uri] = [version + 1, new]
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
        content_changes=[types.TextDocumentContentChangePartial(range=rng, text=new_text)]))


def save_document(client: LanguageClient, uri: str) -> None:
    Path(to_fs_path(uri)).write_text(client.texts[uri][1])
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


# -- waiting ---------------------------------------------------------------------------


async def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll until ``predicate()`` is truthy; fail with ``what`` after ``timeout``."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def progress_values(client: LanguageClient) -> list[Any]:
    return [v for reports in client.progress_reports.values() for v in reports]


def ended_progress(client: LanguageClient, count: int = 1) -> list[types.WorkDoneProgressEnd]:
    ends = [v for v in progress_values(client) if isinstance(v, types.WorkDoneProgressEnd)]
    return ends if len(ends) >= count else []


async def code_actions(client: LanguageClient, uri: str, line: int) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)),
            context=types.CodeActionContext(diagnostics=list(client.diagnostics.get(uri, []))),
        )
    )
    return list(result or [])


async def run_action(client: LanguageClient, action: types.CodeAction) -> Any:
    assert isinstance(action, types.CodeAction), action
    cmd = action.command
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=cmd.command, arguments=cmd.arguments)
    )


async def hover_text(client: LanguageClient, uri: str, line: int) -> str | None:
    h = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=4))
    )
    return h.contents.value if h else None


def line_of(text: str, needle: str) -> int:
    return next(i for i, l in enumerate(text.split("\n")) if needle in l)


def messages(client: LanguageClient) -> list[str]:
    return [m.message for m in client.messages]


def running_uris(client: LanguageClient) -> list[str] | None:
    """The uris the last stark/searches notification says are being optimized."""
    if not client.searches:
        return None
    return [s["uri"] for s in client.searches[-1]["searches"]]


def progress_tokens(client: LanguageClient) -> list[Any]:
    return list(client.progress_reports)


def ends_of(client: LanguageClient, token: Any) -> list[types.WorkDoneProgressEnd]:
    return [v for v in client.progress_reports.get(token, []) if isinstance(v, types.WorkDoneProgressEnd)]


async def node_of(client: LanguageClient, uri: str, kernel: str, node_id: int) -> dict:
    return plain(await client.protocol.send_request_async("stark/node", {"uri": uri, "kernel": kernel, "id": node_id}))


def plain(obj: Any) -> Any:
    """A custom request's result (pygls gives namedtuples) as dicts and lists."""
    if hasattr(obj, "_asdict"):
        return {k: plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


async def get_tree(client: LanguageClient, uri: str, kernel: str) -> dict:
    return plain(await client.protocol.send_request_async("stark/tree", {"uri": uri, "kernel": kernel}))


# -- search trees built by hand, for the pure tests ---------------------------------------


def timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=0.0, std_ms=0.0, reps=10)


def ok_node(id, parent, source, speed, kind="plan_code", attempt=1, summary="", gpu=True, plan="") -> Node:
    ref = 0.92
    result = EvalResult(Status.OK, runtime=Runtime("GPU", gpu, timing(ref / speed), timing(ref), speed))
    return Node(id=id, task_id="t", parent_id=parent, kind=kind, status="ok", attempt=attempt, summary=summary,
                source=source, result=result, speedup=speed, runtime_ms=ref / speed, plan=plan)


def failed_node(id, parent, source, status="compile_error", lines=(), kind="plan_code", attempt=1, error="boom") -> Node:
    diags = [Diagnostic(message=f"error on {l}", line=l) for l in lines]
    result = EvalResult(Status(status), error, compile=CompileReport(ok=False, diagnostics=diags))
    return Node(id=id, task_id="t", parent_id=parent, kind=kind, status=status, attempt=attempt, source=source,
                result=result, error=error)


def make_tree(*nodes: Node) -> TreeView:
    return tree_view("t", list(nodes))
