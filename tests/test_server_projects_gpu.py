"""The editor on kernels that live in projects, on a GPU (issue 15), through pytest-lsp.

`stark serve` with the real engine and the built-in team optimizes, on the
GPU, the two project samples as a user would open them in a workspace:
samples/project (a CUDA kernel with a shared header, a second translation
unit and compile_commands.json) and samples/triton_pkg (a Triton kernel in a
package with relative imports). Run on the GPU machine by
scripts/gpu_project_check.sh; skipped where there is no GPU.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.server_fixtures import (
    REPO,
    code_actions,
    ended_progress,
    get_tree,
    hover_text,
    line_of,
    make_client,
    messages,
    open_document,
    run_action,
    start,
    wait_until,
)

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

SAMPLES = {  # workspace path of the kernel file, the kernel, its definition, its language
    "project": ("project/src/l2norm.cu", "inv_norm_kernel", "void inv_norm_kernel(", "cuda"),
    "triton_pkg": ("triton_pkg/rowops/rms_norm.py", "rms_norm_kernel", "def rms_norm_kernel(", "python"),
}


def gpu_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "STARK_SMALL")}
    return env


@pytest_lsp.fixture(params=sorted(SAMPLES), config=ClientServerConfig(
    server_command=[sys.executable, "-m", "stark_lsp", "serve"], server_env=gpu_env(), client_factory=make_client))
async def client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    (root / ".git").mkdir()  # the workspace root, as a repository marks it
    shutil.copytree(REPO / "samples" / request.param, root / request.param)
    lsp_client.root = root
    lsp_client.sample = request.param
    await start(lsp_client, root, {"llm": "builtin", "budget": 4, "evaluation": {"device": "cuda"}})
    yield
    await lsp_client.shutdown_session()


async def test_a_project_kernel_is_optimized_on_the_gpu_from_the_editor(client: LanguageClient):
    rel, kernel, definition, language = SAMPLES[client.sample]
    path = client.root / rel
    text = path.read_text()
    uri = open_document(client, path, language)
    kline = line_of(text, definition)
    actions = await code_actions(client, uri, kline)
    assert f"Optimize kernel {kernel}" in [a.title for a in actions], [a.title for a in actions]
    action = next(a for a in actions if a.title == f"Optimize kernel {kernel}")
    assert (await run_action(client, action))["started"] is True
    (end,) = await wait_until(lambda: ended_progress(client), "the search on the GPU to end", timeout=420)
    assert end.message.startswith("done: 4 attempts"), (end.message, messages(client))
    tree = await get_tree(client, uri, kernel)
    root = tree["nodes"][0]
    assert root["kind"] == "root" and root["status"] == "ok", root  # the sample builds and is correct as written
    assert sum(n["status"] == "ok" for n in tree["nodes"]) >= 2, [(n["summary"], n["status"]) for n in tree["nodes"]]
    md = "\n".join([await hover_text(client, uri, kline) or "", await hover_text(client, uri, kline + 1) or ""])
    assert "| baseline | your kernel |" in md and "CPU interpreter" not in md, md
