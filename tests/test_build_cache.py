"""The zygote's trusted builds kept across starts (judge/build_cache.py, sandbox/triton_cache.py): a kept
build starts from the seed and is taken once, before any candidate; the judge keeps only a well-formed
archive from a sandboxed zygote, in a folder that is the user's alone; the descriptors reach a zygote
through the sandbox and are closed before it is ready."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from stark_lsp.evaluate.judge import build_cache as BCache
from stark_lsp.evaluate.sandbox import build_archive as BA
from stark_lsp.evaluate.sandbox import triton_cache as TC


@pytest.fixture
def fresh_cache_state(monkeypatch):
    monkeypatch.setattr(TC, "_seed", {})
    monkeypatch.setattr(TC, "_built", {})


@pytest.fixture
def folder(tmp_path, monkeypatch):
    d = tmp_path / "builds"
    monkeypatch.setenv("STARK_EVAL_BUILD_CACHE", str(d))
    return d


def test_a_kept_build_starts_from_the_seed_and_what_it_left_is_taken_once(fresh_cache_state):
    TC.seed({"k1/chain.cubin": b"cubin"})
    with TC.scratch_cache("t-", kept=True) as c:
        assert (c / "k1/chain.cubin").read_bytes() == b"cubin"
        (c / "k2").mkdir()
        (c / "k2/__triton_launcher.so").write_bytes(b"stub")
    with TC.scratch_cache("t-") as c:  # the warm-up: never seeded, never kept
        assert not any(c.iterdir())
        (c / "warm").write_bytes(b"w")
    assert TC.take_built() == {"k1/chain.cubin": b"cubin", "k2/__triton_launcher.so": b"stub"}
    with TC.scratch_cache("t-", kept=True) as c:  # after the take (candidates exist now): seeded, not kept
        assert (c / "k1/chain.cubin").exists()
        (c / "late").write_bytes(b"l")
    assert TC.take_built() == {}


def _zygote(fd_in: int | None, fd_out: int | None):
    from stark_lsp.evaluate.sandbox.zygote import Zygote

    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    a.close()
    return Zygote(b, "cpu", False, [], 0, fd_in, fd_out)


def test_the_zygote_reads_the_seed_and_writes_its_builds_once(tmp_path, fresh_cache_state):
    seed, out = tmp_path / "seed", tmp_path / "out"
    seed.write_bytes(BA.pack({"k/a": b"1"}))
    fds = (os.open(seed, os.O_RDONLY), os.open(out, os.O_WRONLY | os.O_CREAT))
    z = _zygote(*fds)
    assert z.read_seed() == 1
    with TC.scratch_cache("t-", kept=True) as c:
        (c / "k/b").write_bytes(b"2")
    assert z.write_built() == 2
    assert BA.unpack(out.read_bytes()) == {"k/a": b"1", "k/b": b"2"}
    assert z.seed_fd is None and z.built_fd is None and z.write_built() == -1
    for fd in fds:  # closed before the zygote says it is ready: no candidate inherits them
        with pytest.raises(OSError):
            os.fstat(fd)


def test_a_malformed_seed_is_not_used(tmp_path, fresh_cache_state):
    seed = tmp_path / "seed"
    seed.write_bytes(BA.MAGIC + b"5\n[[\"../x\", 1]]x")
    z = _zygote(os.open(seed, os.O_RDONLY), None)
    assert z.read_seed() == 0 and TC.seeded() == frozenset()


def _exchange_with(folder, files: dict[str, bytes], arch: int = 90) -> BCache.Exchange:
    ex = BCache.open_for(arch)
    assert ex is not None
    BA.write_fd(ex.built_fd, BA.pack(files) if files else b"")
    ex.built_fd = -1
    ex.passed()
    return ex


def test_only_a_sandboxed_zygote_s_builds_are_kept_and_read_back(folder):
    assert not _exchange_with(folder, {"k/a": b"1"}).keep(sandboxed=False)
    assert list(folder.iterdir()) == []  # nothing kept, the new file gone
    assert not _exchange_with(folder, {}).keep(sandboxed=True)  # nothing built (the CPU)
    assert _exchange_with(folder, {"k/a": b"1"}).keep(sandboxed=True)
    ex = BCache.open_for(90)
    assert ex.seed_fd is not None and BA.unpack(BA.read_fd(ex.seed_fd)) == {"k/a": b"1"}
    ex.seed_fd = None
    ex.discard()
    assert [p.name for p in folder.iterdir()] == [BCache.name(90)]


def test_a_malformed_new_archive_leaves_the_old_in_place(folder):
    assert _exchange_with(folder, {"k/a": b"1"}).keep(sandboxed=True)
    ex = BCache.open_for(90)
    os.write(ex.built_fd, b"STARK-BUILDS 1\ngarbage")
    ex.passed()
    assert not ex.keep(sandboxed=True)
    assert BA.unpack((folder / BCache.name(90)).read_bytes()) == {"k/a": b"1"}


def test_a_folder_others_can_write_is_not_used(folder):
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    assert BCache.open_for(90) is None


def test_off_without_a_folder_or_on_the_cpu(folder, monkeypatch):
    assert BCache.open_for(0) is None
    monkeypatch.setenv("STARK_EVAL_BUILD_CACHE", "")
    assert BCache.open_for(90) is None


def test_the_name_follows_the_architecture_and_old_archives_are_pruned(folder):
    assert BCache.name(90) != BCache.name(100)
    for i, arch in enumerate((70, 75, 80, 86, 89, 90)):
        assert _exchange_with(folder, {"k/a": bytes([i])}, arch).keep(sandboxed=True)
        os.utime(folder / BCache.name(arch), (1000 + i, 1000 + i))
    names = {p.name for p in folder.iterdir()}
    assert names == {BCache.name(a) for a in (80, 86, 89, 90)}


@pytest.mark.parametrize("sandboxed", [False, True])
def test_a_zygote_gets_the_cached_builds_through_its_sandbox_and_holds_no_descriptor(folder, sandboxed):
    from stark_lsp.evaluate.judge.link import SandboxedZygote
    from stark_lsp.evaluate.sandbox.policy import Layout, make_layout, probe

    sb = probe() if sandboxed else None
    if sandboxed and not sb.available:
        pytest.skip(f"no sandbox here: {sb.reason}")
    assert _exchange_with(folder, {"k/a": b"1", "k/b": b"2"}).keep(sandboxed=True)
    ex = BCache.open_for(90)
    fds = ex.fds()
    z = SandboxedZygote(sb if sandboxed else None, make_layout() if sandboxed else Layout(hidden=()), "cpu", {},
                        builds=ex)
    try:
        assert z.info["seeded_files"] == 2
        assert z.info["built_files"] == 0 and z.info["builds_kept"] is False  # the CPU builds nothing
        for fd in fds:  # the judge's copies are closed
            with pytest.raises(OSError):
                os.fstat(fd)
        assert [p.name for p in folder.iterdir()] == [BCache.name(90)]
    finally:
        z.close()


def test_a_seeded_group_file_names_its_members_in_the_new_folder(fresh_cache_state):
    old = "/tmp/stark-chain-triton-gone/KEY/k.cubin"
    TC.seed({"KEY/__grp__k.json": json.dumps({"child_paths": {"k.cubin": old}}).encode(), "KEY/k.cubin": b"c",
             "BAD/__grp__b.json": b"not json",
             "UP/__grp__u.json": json.dumps({"child_paths": {"u": "/old/UP/.."}}).encode()})
    with TC.scratch_cache("t-", kept=True) as c:
        doc = json.loads((c / "KEY/__grp__k.json").read_text())
        assert doc == {"child_paths": {"k.cubin": str(c / "KEY/k.cubin")}}
        assert json.loads((c / "BAD/__grp__b.json").read_text()) == {}  # a miss for Triton, never a wrong hit
        assert json.loads((c / "UP/__grp__u.json").read_text()) == {}  # a member outside its folder: a miss


_SEEDED_KERNEL = """
import sys
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from stark_lsp.evaluate.sandbox import triton_cache as TC


@triton.jit
def _copy(x, y, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(y + i, tl.load(x + i))


def build():
    return triton.compile(ASTSource(_copy, {"x": "*fp32", "y": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64}),
                          target=GPUTarget("cuda", 90, 32))


with TC.scratch_cache("t-", kept=True):
    try:
        first = build()
    except Exception as e:
        print("cannot compile:", type(e).__name__, e)
        sys.exit(0)
files = TC.take_built()
cubins = [k for k in files if k.endswith(".cubin")]
assert len(cubins) == 1 and files[cubins[0]] == first.kernel, sorted(files)
files[cubins[0]] = first.kernel + b"seeded"
TC.seed(files)
with TC.scratch_cache("t-", kept=True):
    again = build()
print("loaded the seed" if again.kernel == first.kernel + b"seeded" else "compiled again")
"""


def test_triton_loads_a_seeded_kernel_instead_of_compiling_it(tmp_path):
    """The real thing, without a GPU (a compiled kernel for sm_90, as in the zygote: no interpreter):
    its binary marked in the seed, then asked for again in a new folder; Triton returns the marked one."""
    import subprocess
    import sys

    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "unused")
    script = tmp_path / "seeded_kernel.py"  # a file: Triton reads a kernel's source
    script.write_text(_SEEDED_KERNEL)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-2000:]
    if out.stdout.startswith("cannot compile"):
        pytest.skip(out.stdout.strip())
    assert out.stdout.strip() == "loaded the seed"


def test_a_build_that_added_nothing_gives_back_the_seed_as_it_was(fresh_cache_state, folder):
    """So the judge sees nothing new and leaves the file alone (a renamed group file is no change)."""
    seed = {"KEY/__grp__k.json": json.dumps({"child_paths": {"k.cubin": "/old/KEY/k.cubin"}}).encode(),
            "KEY/k.cubin": b"c"}
    TC.seed(seed)
    with TC.scratch_cache("t-", kept=True):
        pass
    assert TC.take_built() == seed
