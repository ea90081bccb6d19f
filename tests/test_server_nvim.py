"""A second real client: headless Neovim (0.7) drives the same flow as the
pytest-lsp test (tests/nvim/drive.lua): code actions, optimize, progress,
diagnostics, hover, apply the best candidate into the buffer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from stark_lsp.server.progress import PHASE_WORKER
from tests.server_fixtures import FAKE_BACKEND, REPO, TRITON_HARNESS, TRITON_KERNEL, line_of, server_env

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install -y neovim)")


def drive(tmp_path, kernel_file, kernel, line, backend=FAKE_BACKEND, timeout=300, **extra):
    out = tmp_path / "nvim-out.json"
    env = server_env(
        **extra,
        STARK_NVIM_PYTHON=sys.executable,
        STARK_NVIM_BACKEND=backend or "",
        STARK_NVIM_ROOT=str(tmp_path),
        STARK_NVIM_FILE=str(kernel_file),
        STARK_NVIM_KERNEL=kernel,
        STARK_NVIM_LINE=str(line),
        STARK_NVIM_OUT=str(out),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        PYTHONPATH=str(REPO),
    )
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {REPO / 'tests/nvim/drive.lua'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert out.exists(), f"nvim wrote nothing (rc {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert result.get("error") is None, (result["error"], result["steps"])
    return result


def test_neovim_optimize_hover_apply(tmp_path):
    (tmp_path / "add_relu.py").write_text(TRITON_KERNEL)
    (tmp_path / "add_relu.harness.py").write_text(TRITON_HARNESS)
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    r = drive(tmp_path, tmp_path / "add_relu.py", "add_relu_kernel", kline)

    assert r["actions_before"] == ["Optimize kernel add_relu_kernel"]
    assert r["optimize"]["started"] is True
    kinds = [p["kind"] for p in r["progress"]]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    assert r["progress"][0]["message"] == PHASE_WORKER and r["progress"][0]["cancellable"] is True
    assert r["progress"][-1]["message"].startswith("done: 3 attempts")
    # what Neovim itself shows of it (vim.lsp.util.get_progress_messages): the phases, then attempts
    shown = r["shown"]
    assert f"Optimizing add_relu_kernel: {PHASE_WORKER}" in shown, shown
    assert any(line.startswith("Optimizing add_relu_kernel: attempt ") and "× your kernel" in line for line in shown), shown

    tree = r["tree"]
    best = next(n for n in tree["nodes"] if n["id"] == tree["best"])
    assert best["parent"] is not None  # the fake root is 1.00×
    info = [d for d in r["diagnostics"] if d["message"].startswith("Best candidate")]
    assert len(info) == 1 and info[0]["lnum"] == kline
    gain = r["best_node"]["gain_text"]
    assert info[0]["message"].startswith(f"Best candidate #{best['id']}: {gain}")
    assert "| baseline | your kernel |" in r["hover"]

    assert f"Apply best candidate: {gain}" in r["actions_after"]
    assert r["apply"]["applied"] is True
    assert r["buffer"] == r["best_node"]["source"]  # Neovim applied the minimal edits to the buffer
    assert r["modified"] is True


def test_neovim_cancels_a_search_through_progress(tmp_path):
    (tmp_path / "add_relu.py").write_text(TRITON_KERNEL)
    (tmp_path / "add_relu.harness.py").write_text(TRITON_HARNESS)
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    r = drive(tmp_path, tmp_path / "add_relu.py", "add_relu_kernel", kline, STARK_NVIM_BUDGET="500",
              STARK_NVIM_CANCEL="1")
    assert "cancel sent" in r["steps"]
    assert r["final"].startswith("cancelled: "), r["final"]


def test_neovim_07_is_told_why_optimize_cannot_run(tmp_path):
    """Neovim 0.7 announces no codeAction.disabledSupport: where "Optimize" cannot run (here a syntax
    error in the saved file) it gets an action that says why, and choosing it shows the reason (issue 25)."""
    broken = TRITON_KERNEL.replace("    out = torch.empty_like(x)\n", "    out = torch.empty_like(x\n")
    (tmp_path / "add_relu.py").write_text(broken)
    (tmp_path / "add_relu.harness.py").write_text(TRITON_HARNESS)
    bad = line_of(broken, "torch.empty_like(x") + 1
    r = drive(tmp_path, tmp_path / "add_relu.py", "add_relu_kernel", line_of(broken, "def add_relu_kernel"),
              STARK_NVIM_ACTIONS_ONLY="1")
    (title,) = r["actions_before"]
    assert title.startswith(f"STARK: cannot optimize here: fix the syntax error on line {bad} first"), title
    assert r["optimize"]["reason"].startswith(f"fix the syntax error on line {bad} first")
    assert any(m.startswith("STARK cannot optimize add_relu_kernel here: fix the syntax error") for m in r["messages"])
