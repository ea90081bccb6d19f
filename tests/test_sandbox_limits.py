"""What a candidate can leave behind is bounded: its private tmpfs has a size and a file count, and
what the zygote's wipe cannot remove (a tree too deep) makes it throw the sandbox away, never hand
it on to the next candidate."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from stark_lsp.evaluate.sandbox import policy as sandbox
from stark_lsp.evaluate.sandbox.zygote import wipe


def test_a_tree_is_wiped_even_where_a_candidate_locked_its_folders(tmp_path):
    root = tmp_path / "scratch"
    root.mkdir()
    d = root
    for _ in range(40):
        d = d / "d"
        d.mkdir()
    (d / "leaf").write_text("x")
    (root / "file").write_text("y")
    ro = root / "ro"
    ro.mkdir()
    (ro / "inner").write_text("z")
    ro.chmod(0o000)  # the wipe makes folders usable before it empties them
    assert wipe(str(root)) is True
    assert root.exists() and list(root.iterdir()) == []


def test_the_sandboxs_tmp_has_a_size_and_a_file_count():
    sb = sandbox.probe()
    if not sb.available or sb.backend != "unshare":
        pytest.skip(f"limits are set by the unshare backend: {sb.describe()}")
    inner = ("import os, json; v = os.statvfs('/tmp'); h = os.statvfs('/var/tmp');"
             "print(json.dumps([v.f_files, v.f_blocks * v.f_frsize, h.f_files, h.f_blocks * h.f_frsize]))")
    out = subprocess.run(sb.wrap([sys.executable, "-c", inner], sandbox.make_layout()), capture_output=True,
                         text=True, env=sandbox.scrubbed_env(), timeout=120)
    assert out.returncode == 0, out.stderr[-1000:]
    files, size, vfiles, vsize = json.loads(out.stdout.strip().splitlines()[-1])
    assert files <= 65536 and size <= 4 << 30, (files, size)
    assert vfiles <= 65536 and vsize <= 1 << 30, (vfiles, vsize)
    assert os.statvfs("/tmp").f_files != files or size == 4 << 30  # inside, not the host's /tmp


def test_what_cannot_be_removed_fails_the_wipe(tmp_path):
    root = tmp_path / "scratch"
    d = root
    for _ in range(70):  # deeper than the wipe goes: the sandbox is replaced instead
        d = d / "d"
    d.mkdir(parents=True)
    (d / "hidden").write_text("left for the next candidate")
    assert wipe(str(root)) is False
    shallow = tmp_path / "shallow"
    (shallow / "a" / "b").mkdir(parents=True)
    (shallow / "a" / "b" / "f").write_text("x")
    assert wipe(str(shallow)) is True and list(shallow.iterdir()) == []


def test_a_hidden_folder_that_a_bind_covers_is_not_wiped():
    from stark_lsp.evaluate.sandbox.zygote import scratch_dirs

    info = "\n".join([
        "46 45 254:0 / / ro,relatime - ext4 /dev/vda rw",
        "79 46 0:43 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw,size=4194304k",
        "80 46 0:44 / /var/tmp rw,nosuid,nodev - tmpfs tmpfs rw",
        "84 79 254:0 /tmp /tmp ro,relatime - ext4 /dev/vda rw",  # the machine's /tmp, exposed on top
        "85 80 254:0 /srv/x /var/tmp/x ro,relatime - ext4 /dev/vda rw",  # a bind inside: fine
    ])
    assert scratch_dirs(["/tmp", "/var/tmp", "/dev/shm"], info) == ["/var/tmp", "/dev/shm"]


def test_a_python_path_that_is_a_hidden_folder_is_not_brought_back(monkeypatch):
    home = os.path.realpath(os.path.expanduser("~"))
    monkeypatch.setattr(sys, "path", [*sys.path, home, "/tmp"])
    layout = sandbox.make_layout()
    assert home in layout.hidden and "/tmp" in layout.hidden
    assert home not in layout.expose and "/tmp" not in layout.expose


def test_a_scratch_folder_the_candidate_owns_is_put_back_as_it_was(tmp_path):
    # in a user namespace the candidate is the owner of its scratch folders: a mode or a default
    # ACL it sets there would shut out the next process
    import socket
    import stat

    from stark_lsp.evaluate.sandbox.zygote import Zygote

    d = tmp_path / "scratch"
    d.mkdir(mode=0o1777)
    d.chmod(0o1777)
    a, b = socket.socketpair()
    z = Zygote(a, "cpu", sandboxed=False, wipe_dirs=[str(d)])
    d.chmod(0o000)
    try:
        os.setxattr(d, "user.stark_test", b"x")
        xattr = True
    except OSError:  # a file system without user attributes
        xattr = False
    z._restore_roots()
    assert stat.S_IMODE(d.stat().st_mode) == 0o1777
    if xattr:
        assert os.listxattr(d) == []
    a.close()
    b.close()


def test_setups_sandbox_line_says_what_the_judge_will_do(monkeypatch):
    from stark_lsp.evaluate.sandbox import policy

    sb = policy.Sandbox("unshare", as_root=True, details={"unshare": "/usr/bin/unshare"})
    monkeypatch.setattr(policy.Sandbox, "root_kept", lambda self, layout: "/opt/py is not readable by other users")
    line = policy.readiness(sb)
    assert "keep uid 0" in line and "/opt/py" in line and "will be refused" in line
    monkeypatch.setattr(policy.Sandbox, "root_kept", lambda self, layout: None)
    assert "candidates written by an LLM run in it" in policy.readiness(sb)
    bare = policy.Sandbox("unshare", as_root=True, details={"unshare": "u", "filter_refused": "no libseccomp"})
    assert "no syscall filter" in policy.readiness(bare)
    assert "refused" in policy.readiness(policy.Sandbox("none", "no namespaces"))


def test_the_clis_refusal_is_the_judges_for_a_task_nobody_can_read(tmp_path, monkeypatch):
    """Issue 24, item 11: a task in a folder only root can read keeps uid 0; the evaluator's up-front refusal
    says so for that task, by the judge's own check (policy.root_refusal), not only setup.sh's default layout."""
    from stark_lsp.evaluate import evaluator as E
    from stark_lsp.evaluate.sandbox import policy
    from stark_lsp.tasks.spec import TaskSpec

    sb = policy.Sandbox("unshare", as_root=True, details={"unshare": "/usr/bin/unshare"})
    monkeypatch.setattr(policy.Sandbox, "filtered", property(lambda self: True))
    monkeypatch.setattr(policy.Sandbox, "root_kept",  # only the task's folder is unreadable to others
                        lambda self, layout: f"{tmp_path} is not readable by other users"
                        if any(str(e).startswith(str(tmp_path)) for e in layout.expose) else None)
    ev = E.Evaluator.__new__(E.Evaluator)  # no workers: only the up-front checks
    ev.sandbox_policy, ev.cache_dir = "required", tmp_path / "cache"
    monkeypatch.setattr(E.Evaluator, "sandbox_info", lambda self: sb)
    task = TaskSpec(kind="triton", path=tmp_path / "k.py", harness=tmp_path / "k.harness.py")
    assert ev.refusal() is None
    why = ev.refusal(task)
    assert why is not None and "keep uid 0" in why and str(tmp_path) in why and "chmod o+rX" in why
