"""The editor on a kernel that lives in a Triton package, on the CPU (issue 25, item 9c), through pytest-lsp.

`stark serve` with the real engine (search, tree store, evaluator, built-in team) optimizes
samples/triton_pkg/rowops/rms_norm.py (relative imports of .config and of a @triton.jit helper in
.helpers) under the Triton interpreter, as tests/test_server_projects_gpu.py does on a GPU: so CI,
which has no GPU, runs the package path through the server too. A budget of 2 and the sample's small
shapes (STARK_SMALL=1) keep it near a minute on two cores.
"""

from __future__ import annotations

import shutil

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
    node_of,
    open_document,
    run_action,
    server_command,
    server_env,
    start,
    wait_until,
)

pytest.importorskip("torch")
pytest.importorskip("triton")

SAMPLE = REPO / "samples" / "triton_pkg"
KERNEL_FILE = "triton_pkg/rowops/rms_norm.py"
BUDGET = 2
pytestmark = pytest.mark.skipif(not (SAMPLE / "rowops" / "rms_norm.harness.py").exists(),
                                reason="samples/triton_pkg is missing")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command(backend=None),
                                              server_env=server_env(TRITON_INTERPRET="1", STARK_SMALL="1"),
                                              client_factory=make_client))
async def client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    (root / ".git").mkdir()  # the workspace root, as a repository marks it
    shutil.copytree(SAMPLE, root / "triton_pkg", ignore=shutil.ignore_patterns("__pycache__"))
    lsp_client.root = root
    await start(lsp_client, root, {"llm": "builtin", "budget": BUDGET, "evaluation": {"device": "cpu"}})
    yield
    await lsp_client.shutdown_session()


async def test_the_package_kernel_is_optimized_on_the_cpu_from_the_editor(client: LanguageClient):
    path = client.root / KERNEL_FILE
    text = path.read_text()
    uri = open_document(client, path, "python")
    kline = line_of(text, "def rms_norm_kernel(")
    actions = await code_actions(client, uri, kline)
    assert [a.title for a in actions] == ["Optimize kernel rms_norm_kernel"], [a.title for a in actions]
    started = await run_action(client, actions[0])
    assert started["started"] is True, started
    (end,) = await wait_until(lambda: ended_progress(client), "the search on the CPU to end", timeout=300)
    assert end.message.startswith(f"done: {BUDGET} attempts"), (end.message, messages(client))

    tree = await get_tree(client, uri, "rms_norm_kernel")
    root = tree["nodes"][0]
    # the search starts from the package's kernel file, as saved, and it runs with its package
    # (relative imports of .config and .helpers): the root builds and is correct as written
    assert root["kind"] == "root" and root["status"] == "ok", root
    assert (await node_of(client, uri, "rms_norm_kernel", root["id"]))["source"] == text
    attempts = [n for n in tree["nodes"] if n["parent"] is not None]
    assert len(attempts) == BUDGET and tree["attempts"] == BUDGET, tree["nodes"]
    assert tree["cpu"] and not tree["running"]
    assert tree["correct"] == sum(n["status"] == "ok" for n in attempts)
    # the candidates are the package's file too, and run with its relative imports (a tuning of
    # BLOCK_SIZE by the built-in team, at seed 0): at least one of them is correct
    ok = [n for n in attempts if n["status"] == "ok"]
    assert ok, [(n["summary"], n["status"]) for n in attempts]
    assert "from .helpers import chunk_sum_of_squares" in (await node_of(client, uri, "rms_norm_kernel", ok[0]["id"]))["source"]

    md = "\n".join([await hover_text(client, uri, kline) or "", await hover_text(client, uri, kline + 1) or ""])
    assert f"{BUDGET} attempts" in md and "| baseline | your kernel |" in md and "CPU interpreter" in md, md
