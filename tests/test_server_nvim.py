"""A second real client: headless Neovim (0.7) drives the same flow as the
pytest-lsp test (tests/nvim/drive.lua): code actions, optimize, progress,
diagnostics, hover, apply the best candidate into the buffer; and, step by step
(tests/nvim/steps.lua), what issue 25 asks of a real Neovim 0.7 client."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from stark_lsp.evaluate.evaluator import gpu_present
from stark_lsp.server.diagnostics import MAX_DIAGNOSTICS
from stark_lsp.server.progress import PHASE_WORKER
from stark_lsp.tasks.spec import load_task
from tests.server_fixtures import (CUDA_HARNESS, CUDA_KERNEL, FAKE_BACKEND, REPO, TRITON_HARNESS, TRITON_KERNEL, line_of,
                                   server_env)
from tests.test_server_big_file import big_cuda

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install -y neovim)")


def run_nvim(tmp_path, script, out, backend, timeout, **env_extra):
    """Headless Neovim 0.7 running ``tests/nvim/<script>`` against `stark serve`; what it wrote to ``out``."""
    env = server_env(
        **env_extra,
        STARK_NVIM_PYTHON=sys.executable,
        STARK_NVIM_BACKEND=backend or "",
        STARK_NVIM_ROOT=str(tmp_path),
        STARK_NVIM_OUT=str(out),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        PYTHONPATH=str(REPO),
    )
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {REPO / 'tests/nvim' / script}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert out.exists(), f"nvim wrote nothing (rc {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert result.get("error") is None, (result["error"], result["steps"])
    return result


def drive(tmp_path, kernel_file, kernel, line, backend=FAKE_BACKEND, timeout=300, **extra):
    return run_nvim(tmp_path, "drive.lua", tmp_path / "nvim-out.json", backend, timeout, **extra,
                    STARK_NVIM_FILE=str(kernel_file), STARK_NVIM_KERNEL=kernel, STARK_NVIM_LINE=str(line))


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
    # issue 25 item 5: what the cancel cut short is stored as stopped (abandoned), never as a failed attempt
    tree = r["tree"]
    assert tree["running"] is False and tree["failed"] == 0, tree
    assert {n["status"] for n in tree["nodes"]} <= {"ok", "abandoned"}, tree["nodes"]
    assert "failed" not in {n["outcome"] for n in tree["nodes"]}


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


# -- issue 25 in Neovim: a list of steps (tests/nvim/steps.lua), what each saw --------------------------

def run_steps(tmp_path, steps, backend=FAKE_BACKEND, disabled_support=False, timeout=420, **extra):
    """Run ``steps`` (see tests/nvim/steps.lua) in headless Neovim 0.7 against `stark serve`; their results."""
    plan = tmp_path / "nvim-steps.json"
    plan.write_text(json.dumps(steps))
    return run_nvim(tmp_path, "steps.lua", tmp_path / "nvim-steps-out.json", backend, timeout, **extra,
                    STARK_NVIM_STEPS=str(plan), STARK_NVIM_DISABLED_SUPPORT="1" if disabled_support else "0")["results"]


def cannot_workspace(root):
    """A kernel file with a syntax error, a Triton helper module another file imports, a CUDA kernel
    (this machine has no NVIDIA GPU)."""
    (root / "add_relu.py").write_text(SYNTAX_ERROR)
    (root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    (root / "scale.cu").write_text(CUDA_KERNEL)
    (root / "scale.harness.py").write_text(CUDA_HARNESS)
    shutil.copytree(REPO / "samples" / "triton_pkg", root / "triton_pkg", ignore=shutil.ignore_patterns("__pycache__"))
    return root / "triton_pkg" / "rowops" / "helpers.py"


SYNTAX_ERROR = TRITON_KERNEL.replace("    out = torch.empty_like(x)\n", "    out = torch.empty_like(x\n")
BAD_LINE = line_of(SYNTAX_ERROR, "torch.empty_like(x") + 1  # 1-based, as the reason says it
NO_GPU = "needs an NVIDIA GPU: nothing can be run or timed here"


@pytest.mark.skipif(gpu_present(), reason="this machine has an NVIDIA GPU: CUDA can be optimized here")
def test_neovim_big_file_helper_module_and_no_gpu(tmp_path):
    """Issue 25 items 1, 2, 9a with the real backend, as Neovim 0.7 announces itself (no disabledSupport)."""
    text = big_cuda()
    (tmp_path / "big.cu").write_text(text)
    helpers = cannot_workspace(tmp_path)
    lines = text.split("\n")
    name_line = next(i for i, l in enumerate(lines) if "scale_kernel_900(" in l)
    first = next(i for i, l in enumerate(lines) if "scale_kernel_0(" in l)
    hline = line_of(helpers.read_text(), "def chunk_sum_of_squares")
    kline = line_of(CUDA_KERNEL, "__global__")
    steps = [
        {"op": "open", "file": str(tmp_path / "big.cu"), "name": "big"},
        {"op": "wait_diags", "buf": "big", "has": "more STARK diagnostics in this file", "as": "big_diags"},
        # item 1: typed above the kernel, line by line
        *[{"op": "insert", "buf": "big", "line": 0, "lines": ["// typed"]} for _ in range(20)],
        {"op": "hover", "buf": "big", "line": name_line + 20, "char": 20, "as": "hover_moved"},
        {"op": "hover", "buf": "big", "line": name_line, "char": 20, "as": "hover_old_line"},
        {"op": "actions", "buf": "big", "line": name_line + 20, "as": "actions_moved"},
        {"op": "wait_diags", "buf": "big", "first_lnum": first + 20, "as": "diags_moved"},
        # after that analysis, the next edits move the kernel from where it is now (not twice)
        {"op": "insert", "buf": "big", "line": 0, "lines": ["// more"]},
        {"op": "insert", "buf": "big", "line": name_line + 21 + 2, "lines": ["    // inside"]},
        {"op": "hover", "buf": "big", "line": name_line + 21, "char": 20, "as": "hover_again"},
        {"op": "actions", "buf": "big", "line": name_line + 21, "as": "actions_again"},
        {"op": "wait_diags", "buf": "big", "first_lnum": first + 21, "as": "diags_again"},
        # item 2: a Triton helper module
        {"op": "open", "file": str(helpers), "name": "helpers"},
        {"op": "wait_diags", "buf": "helpers", "has": "uses it", "as": "helper_diags"},
        {"op": "actions", "buf": "helpers", "line": hline, "as": "helper_actions"},
        # item 9a: a CUDA kernel on a machine without a GPU
        {"op": "open", "file": str(tmp_path / "scale.cu"), "name": "cu"},
        {"op": "actions", "buf": "cu", "line": kline, "as": "cuda_actions"},
        {"op": "run", "buf": "cu", "line": kline, "title": "STARK: cannot optimize here", "as": "cuda_why"},
        {"op": "wait_message", "has": "cannot optimize scale_kernel", "as": "cuda_message"},
        # item 2, chosen: "Optimize" on the helper starts the search of rms_norm.py, which uses it
        {"op": "run", "buf": "helpers", "line": hline, "title": "Optimize kernel rms_norm_kernel (via rms_norm.py",
         "as": "helper_run"},
        {"op": "wait_message", "has": "optimizing rms_norm_kernel in rms_norm.py", "as": "helper_message"},
    ]
    r = run_steps(tmp_path, steps, backend=None)

    assert r["big_diags"]["count"] == MAX_DIAGNOSTICS and r["big_diags"]["first"][0]["lnum"] == first
    assert r["hover_moved"].startswith("**scale_kernel_900**"), r["hover_moved"]
    assert not (r["hover_old_line"] or "").startswith("**scale_kernel_900**")  # it did move
    assert [a["title"] for a in r["actions_moved"]] == ["Create big.harness.py for scale_kernel_900"]
    assert r["actions_moved"][0]["arguments"][1] == "scale_kernel_900"
    assert r["diags_moved"]["first"][0]["lnum"] == first + 20
    assert r["hover_again"].startswith("**scale_kernel_900**"), r["hover_again"]
    assert [a["title"] for a in r["actions_again"]] == ["Create big.harness.py for scale_kernel_900"]
    assert r["diags_again"]["first"][0]["lnum"] == first + 21

    (hint,) = r["helper_diags"]["first"]  # a hint, and no "no harness" error
    assert hint["severity"] == 4 and hint["code"] == "helper", hint
    assert hint["message"].startswith("a helper module: rms_norm.py uses it"), hint
    (opt,) = r["helper_actions"]  # the search of the file that uses it, enabled
    assert opt["title"] == "Optimize kernel rms_norm_kernel (via rms_norm.py, which uses this helper)", opt
    assert opt["command"] == "stark.optimizeHelperUser" and opt["arguments"][2] == "rms_norm_kernel"
    user = helpers.with_name("rms_norm.py")
    assert r["helper_run"]["started"] is True and r["helper_run"]["task_id"] == load_task(user).task_id(), r["helper_run"]
    assert "which uses helpers.py" in r["helper_message"]

    why, check = r["cuda_actions"]
    assert why["title"].startswith(f"STARK: cannot optimize here: {NO_GPU}"), why
    assert check["title"] == "Check that scale_kernel compiles (no GPU here to run it)"
    assert check["command"] == "stark.optimize"
    assert r["cuda_why"]["reason"].startswith(NO_GPU), r["cuda_why"]
    assert "needs an NVIDIA GPU" in r["cuda_message"]


def test_neovim_with_disabled_support_gets_disabled_optimize_with_why(tmp_path):
    """Issue 25 items 3 and 9a: a Neovim that announces codeAction.disabledSupport gets "Optimize"
    disabled, its reason why: a syntax error (its line), a helper module, no GPU."""
    helpers = cannot_workspace(tmp_path)
    kline = line_of(SYNTAX_ERROR, "def add_relu_kernel")
    hline = line_of(helpers.read_text(), "def chunk_sum_of_squares")
    cline = line_of(CUDA_KERNEL, "__global__")
    steps = [
        {"op": "open", "file": str(tmp_path / "add_relu.py"), "name": "k"},
        {"op": "actions", "buf": "k", "line": kline, "as": "syntax"},
        {"op": "wait_diags", "buf": "k", "has": f"line {BAD_LINE}", "as": "syntax_diags"},
        {"op": "open", "file": str(helpers), "name": "helpers"},
        {"op": "actions", "buf": "helpers", "line": hline, "as": "helper"},
        {"op": "open", "file": str(tmp_path / "scale.cu"), "name": "cu"},
        {"op": "actions", "buf": "cu", "line": cline, "as": "cuda"},
    ]
    r = run_steps(tmp_path, steps, backend=None, disabled_support=True)

    (opt,) = r["syntax"]
    assert opt["title"] == "Optimize kernel add_relu_kernel" and opt["command"] is None
    assert opt["disabled"].startswith(f"fix the syntax error on line {BAD_LINE} first"), opt
    assert any(d["lnum"] == kline for d in r["syntax_diags"]["first"]), r["syntax_diags"]
    (opt,) = r["helper"]  # a helper module: "Optimize" offers the search of the file that uses it
    assert opt["title"] == "Optimize kernel rms_norm_kernel (via rms_norm.py, which uses this helper)", opt
    assert opt["disabled"] is None and opt["command"] == "stark.optimizeHelperUser"
    if not gpu_present():
        opt, check = r["cuda"]
        assert opt["title"] == "Optimize kernel scale_kernel" and opt["disabled"].startswith(NO_GPU), opt
        assert check["disabled"] is None and check["command"] == "stark.optimize"


def test_neovim_a_kernel_removed_on_disk_loses_its_diagnostics(tmp_path):
    """Issue 25 item 7: the kernel file removed outside the editor (Neovim 0.7 sends no file event):
    the tab's figures go, "Optimize" says why; written again from the buffer (:w), they come back."""
    (tmp_path / "add_relu.py").write_text(TRITON_KERNEL)
    (tmp_path / "add_relu.harness.py").write_text(TRITON_HARNESS)
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    steps = [
        {"op": "open", "file": str(tmp_path / "add_relu.py"), "name": "k"},
        {"op": "run", "buf": "k", "line": kline, "title": "Optimize kernel add_relu_kernel", "as": "started"},
        {"op": "wait_end", "count": 1, "as": "ends"},
        {"op": "wait_diags", "buf": "k", "has": "Best candidate", "as": "before"},
        {"op": "rm", "file": str(tmp_path / "add_relu.py")},
        {"op": "wait_diags", "buf": "k", "none": True, "as": "after_rm"},
        {"op": "actions", "buf": "k", "line": kline, "as": "actions_rm"},
        {"op": "hover", "buf": "k", "line": kline + 1, "char": 4, "as": "hover_rm"},
        {"op": "write", "buf": "k"},
        {"op": "wait_diags", "buf": "k", "has": "Best candidate", "as": "written"},
    ]
    r = run_steps(tmp_path, steps)

    assert r["started"]["started"] is True and r["ends"][0].startswith("done: 3 attempts"), r["ends"]
    assert any(d["lnum"] == kline and d["message"].startswith("Best candidate") for d in r["before"]["first"])
    assert r["after_rm"]["count"] == 0
    (why,) = r["actions_rm"]
    assert why["title"].startswith("STARK: cannot optimize here: ") and "add_relu.py is not on disk" in why["title"], why
    assert "Best candidate" not in (r["hover_rm"] or "") and "best" not in (r["hover_rm"] or "")
    assert any(d["message"].startswith("Best candidate") for d in r["written"]["first"])
