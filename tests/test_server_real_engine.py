"""End to end with the real engine: `stark serve` with the real search, tree
store, evaluator and built-in agent team, on the Triton softmax sample under
the Triton interpreter (CPU), through pytest-lsp and through headless Neovim.
A small budget (3) keeps it to about a minute."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from lsprotocol import types
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
    progress_values,
    run_action,
    server_command,
    server_env,
    start,
    wait_until,
)
from tests.test_server_nvim import NVIM, drive

pytest.importorskip("torch")
pytest.importorskip("triton")

SAMPLE = REPO / "samples" / "triton"
pytestmark = pytest.mark.skipif(not (SAMPLE / "softmax.harness.py").exists(), reason="samples/triton/softmax.py is missing")


def copy_sample(root):
    for name in ("softmax.py", "softmax.harness.py"):
        shutil.copy(SAMPLE / name, root / name)
    return (root / "softmax.py").read_text()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command(backend=None),
                                              server_env=server_env(), client_factory=make_client))
async def client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    lsp_client.root = root
    lsp_client.text = copy_sample(root)
    await start(lsp_client, root, {"llm": "builtin", "evaluation": {"device": "cpu"}})
    yield
    await lsp_client.shutdown_session()


async def test_real_engine_optimize_and_apply(client: LanguageClient):
    uri = open_document(client, client.root / "softmax.py", "python")
    kline = line_of(client.text, "def softmax_kernel")
    actions = await code_actions(client, uri, kline)
    assert [a.title for a in actions] == ["Optimize kernel softmax_kernel"]
    assert (await run_action(client, actions[0]))["started"] is True
    (end,) = await wait_until(lambda: ended_progress(client), "the real search to end", timeout=600)
    assert end.message.startswith("done: 3 attempts"), (end.message, messages(client))
    assert any(isinstance(v, types.WorkDoneProgressReport) and "attempt" in v.message for v in progress_values(client))

    tree = await get_tree(client, uri, "softmax_kernel")
    root = tree["nodes"][0]
    assert root["kind"] == "root" and root["status"] == "ok", root  # the sample is correct as written
    assert len(tree["nodes"]) == 4
    md = await hover_text(client, uri, kline + 1)
    assert "| baseline | your kernel |" in md and "Triton interpreter" in md

    best = next(n for n in tree["nodes"] if n["id"] == tree["best"])
    if best["parent"] is None:
        assert "Apply best candidate" not in str([a.title for a in await code_actions(client, uri, kline)])
        return  # nothing beat the original this time: nothing to apply (CPU timings are noisy)
    diags = await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "best-speedup"],
                             "the speedup diagnostic")
    assert "faster than your kernel" in diags[0].message and "CPU interpreter timing" in diags[0].message
    apply = next(a for a in await code_actions(client, uri, kline) if a.title.startswith("Apply best candidate"))
    assert (await run_action(client, apply))["applied"] is True
    assert client.texts[uri][1] == best["source"] != client.text


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install -y neovim)")
def test_real_engine_in_neovim(tmp_path):
    text = copy_sample(tmp_path)
    kline = line_of(text, "def softmax_kernel")
    r = drive(tmp_path, tmp_path / "softmax.py", "softmax_kernel", kline, backend=None, timeout=600)
    assert r["actions_before"] == ["Optimize kernel softmax_kernel"]
    assert r["progress"][-1]["kind"] == "end" and r["progress"][-1]["message"].startswith("done: 3 attempts")
    tree = r["tree"]
    assert tree["nodes"][0]["status"] == "ok" and len(tree["nodes"]) == 4
    assert "| baseline | your kernel |" in r["hover"]
    best = next(n for n in tree["nodes"] if n["id"] == tree["best"])
    if best["parent"] is not None:
        assert r["apply"]["applied"] is True and r["buffer"] == best["source"]
    else:
        assert "apply" not in r and r["buffer"] == text
