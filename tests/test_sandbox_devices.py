"""A root caller never leaves uid 0 to a candidate: the GPU comes through private device nodes.

On machines whose NVIDIA device nodes only root may open (the H200 image),
the sandbox used to keep uid 0 (without capabilities) so that CUDA worked,
which left root-only files outside the hidden folders readable. Now the
sandbox's own /dev gets new nodes with the same device numbers that anyone
inside may open, and the process runs as nobody. These tests fake such a
machine in a private mount namespace: a /dev whose ``nvidia*`` nodes are
root-only clones of /dev/null.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stark_lsp.evaluate.sandbox import policy as sandbox
from stark_lsp.evaluate.sandbox.policy import NOBODY, Layout, Sandbox, make_layout
from stark_lsp.evaluate.sandbox.init import private_nodes

ROOT = Path(__file__).resolve().parents[1]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mknod, mount namespaces)")
with_unshare = pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")


@as_root
def test_private_nodes_open_only_what_cuda_needs(tmp_path):
    null = os.stat("/dev/null").st_rdev
    for name, mode in (("nvidia0", 0o600), ("nvidiactl", 0o600), ("nvidia-uvm", 0o660), ("nvidia-modeset", 0o600),
                       ("nvidia-caps/nvidia-cap1", 0o400)):
        p = tmp_path / name
        p.parent.mkdir(exist_ok=True)
        os.mknod(p, stat.S_IFCHR | mode, null)
        os.chmod(p, mode)
    (tmp_path / "nvidia-notadevice").write_text("x")
    got = private_nodes([str(p) for p in sorted(tmp_path.iterdir())])
    modes = {Path(p).relative_to(tmp_path).as_posix(): oct(m) for p, (m, _) in got.items()}
    assert modes == {"nvidia0": "0o666", "nvidiactl": "0o666", "nvidia-uvm": "0o666",
                     "nvidia-modeset": "0o600", "nvidia-caps/nvidia-cap1": "0o400"}
    assert {dev for _, dev in got.values()} == {null}


def test_a_machine_that_refuses_private_nodes_keeps_root_and_says_why(monkeypatch):
    monkeypatch.setattr(sandbox, "gpu_usable_by_others", lambda: False)
    layout = Layout(hidden=("/tmp",), drop_to=NOBODY, private_devices=True)
    ok = Sandbox("unshare", as_root=True, details={"unshare": "unshare"})
    refused = Sandbox("unshare", as_root=True, details={"unshare": "unshare", "private_devices_refused": "mknod: EPERM"})
    assert ok.root_kept(layout) is None and ok.effective(layout) == layout
    assert refused.effective(layout).drop_to is None and not refused.effective(layout).private_devices
    assert "refused private copies" in refused.root_kept(layout) and "EPERM" in refused.root_kept(layout)
    assert "keeps uid 0" in refused.describe()
    # the layout travels to sandbox_init as it will be made
    made = [json.loads(a) for a in refused.wrap(["true"], layout) if a.startswith("{")]
    assert [m["drop_to"] for m in made] == [None]
    assert Sandbox("bwrap", as_root=False, details={"bwrap": "bwrap"}).root_kept(layout) is None
    monkeypatch.setattr(sandbox, "gpu_usable_by_others", lambda: True)  # nodes anyone may open: no need for root
    assert refused.root_kept(layout) is None and refused.effective(layout).drop_to == NOBODY


@as_root
def test_a_needed_path_nobody_can_read_keeps_root_and_names_it(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    layout = make_layout(expose=[private])
    assert layout.drop_to is None and str(private) in layout.root_reason
    assert Sandbox("unshare", as_root=True, details={"unshare": "unshare"}).root_kept(layout) == layout.root_reason


INNER = """
import json, os
def can(path, mode):
    try:
        open(path, mode).close()
        return True
    except OSError:
        return False
print(json.dumps({"uid": os.getuid(), "gpu": can("/dev/nvidia0", "r+b") and can("/dev/nvidia-uvm", "r+b")
                  and can("/dev/nvidiactl", "r+b"), "mig_cap": can("/dev/nvidia-caps/nvidia-cap1", "rb"),
                  "secret": can("/mnt/root-only", "r")}))
"""

# A machine like the H200 image, faked in a private mount namespace: /dev has root-only
# nvidia* nodes (clones of /dev/null), and /mnt holds a root-only file.
FAKE_MACHINE = textwrap.dedent("""
    import json, os, stat, subprocess, sys
    real = {n: os.stat("/dev/" + n).st_rdev for n in ("null", "zero", "full", "random", "urandom")}
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/dev"], check=True)
    for n, dev in real.items():
        os.mknod("/dev/" + n, stat.S_IFCHR | 0o666, dev); os.chmod("/dev/" + n, 0o666)
    os.makedirs("/dev/nvidia-caps")
    for n, mode in (("nvidia0", 0o600), ("nvidiactl", 0o600), ("nvidia-uvm", 0o600), ("nvidia-caps/nvidia-cap1", 0o400)):
        os.mknod("/dev/" + n, stat.S_IFCHR | mode, real["null"]); os.chmod("/dev/" + n, mode)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/mnt"], check=True)
    with open("/mnt/root-only", "w") as f:
        f.write("secret")
    os.chmod("/mnt/root-only", 0o600)
    from stark_lsp.evaluate.sandbox import policy as sandbox
    sb = sandbox.probe()
    layout = sandbox.make_layout()
    inner = sys.argv[1]
    out = subprocess.run(sb.wrap([sys.executable, "-c", inner], layout), capture_output=True, text=True,
                         env=sandbox.scrubbed_env())
    after = oct(stat.S_IMODE(os.stat("/dev/nvidia0").st_mode))
    print(json.dumps({"backend": sb.backend, "private": layout.private_devices, "describe": sb.describe(),
                      "drop_to": layout.drop_to,
                      "kept": sb.root_kept(layout), "inside": out.stdout.strip(), "err": out.stderr[-500:],
                      "host_mode_after": after}))
""")


@as_root
@with_unshare
def test_root_only_gpu_nodes_reach_nobody_and_root_only_files_do_not():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("STARK_SANDBOX", None)
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", FAKE_MACHINE, INNER],
                       capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0 and "mount" in r.stderr and "permission" in r.stderr.lower():
        pytest.skip(f"cannot fake a /dev here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["backend"] == "unshare" and got["private"] is True, got
    assert got["kept"] is None and "running as a uid of its own" in got["describe"], got
    inside = json.loads(got["inside"]) if got["inside"] else {}
    # a uid of the sandbox's own, not nobody's (whose process count every sandbox shared: session 31's review)
    assert got["drop_to"] not in (None, 0, NOBODY), got
    assert inside == {"uid": got["drop_to"], "gpu": True, "mig_cap": False, "secret": False}, got
    assert got["host_mode_after"] == "0o600"  # the machine's own node is untouched


def test_probe_is_cached_and_can_be_cleared():
    sandbox.probe.cache_clear()
    assert sandbox.probe() is sandbox.probe()


@as_root
def test_a_sandbox_that_would_keep_root_refuses_llm_candidates_but_runs_the_users_own(monkeypatch):
    from stark_lsp.evaluate.judge import judge as J

    if not sandbox.probe().available:
        pytest.skip(f"no sandbox here: {sandbox.probe().reason}")
    kept = dataclasses.replace(make_layout(), drop_to=None, private_devices=False,
                               root_reason="/srv/venv is not readable by other users")
    monkeypatch.setattr(J, "make_layout", lambda expose=(), **kw: kept)
    judge = J.Judge(device="cpu")
    try:
        with pytest.raises(J.SandboxUnavailable, match="would keep uid 0 here .*/srv/venv is not readable"):
            judge._zygote_for([], "required")
        assert judge.zygote is None
        z = judge._zygote_for([], "auto")  # the user's own code and the built-in team's: run, as uid 0
        assert z.alive() and z.info["uid"] == 0
    finally:
        judge.close()


def test_nvcc_is_not_run_as_root_on_llm_source_and_needs_no_device_nodes(tmp_path, monkeypatch):
    from stark_lsp.evaluate import cuda_build as CB

    assert make_layout(gpu=False).private_devices is False  # a compiler needs no GPU: nothing keeps root for it
    kept = Sandbox("unshare", as_root=True, details={"unshare": "unshare"})
    monkeypatch.setattr(CB, "make_layout", lambda **kw: Layout(hidden=("/tmp",), drop_to=None,
                                                                root_reason="/srv/cuda is not readable by other users"))
    settings = _build_settings()
    builder = CB.CudaBuilder(tmp_path, sandbox=kept, required=True)
    with pytest.raises(sandbox.SandboxRefused, match="keep uid 0 for nvcc here .*/srv/cuda"):
        builder._run(["true"], tmp_path, settings, [], 10.0)
    with pytest.raises(sandbox.SandboxRefused, match="not compiled without one"):  # and never without a sandbox
        CB.CudaBuilder(tmp_path, sandbox=None, required=True)._run(["true"], tmp_path, settings, [], 10.0)
    assert CB.CudaBuilder(tmp_path, sandbox=None)._run(["true"], tmp_path, settings, [], 10.0) == (True, "")


def _build_settings():
    from stark_lsp.project_build.settings import BuildSettings

    return BuildSettings()
