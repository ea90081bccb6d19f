"""Triton's launcher stubs are built by the zygote from checked signatures, never taken from a candidate."""

from __future__ import annotations

import os
import socket
import sys
import types
from pathlib import Path

import pytest

from stark_lsp.evaluate.sandbox import triton_launchers as TL
from stark_lsp.evaluate.sandbox import zygote as Z


def test_only_signatures_of_known_type_names_pass():
    raw = [["*fp32", "*fp32", "fp32", "i32", "constexpr"], ["*fp32", "*fp32", "fp32", "i32", "constexpr"],
           ["*bf16", "i64", "u8"], ["*fp32", "int; system(\"id\")"], ["*fp32", ["i32"]], "i32", [],
           ["i32"] * (TL.MAX_ARGS + 1), [7], ["*fp8e4nv", "fp64"]]
    assert TL.valid_signatures(raw) == [("*fp32", "*fp32", "fp32", "i32", "constexpr"), ("*bf16", "i64", "u8"),
                                        ("*fp8e4nv", "fp64")]
    assert TL.valid_signatures({"not": "a list"}) == [] and TL.valid_signatures(None) == []
    assert len(TL.valid_signatures([[f"i{b}"] * n for n in range(1, 30) for b in (8, 32)])) == TL.MAX_NEW


@pytest.fixture
def fake_driver(monkeypatch):
    """A stand-in for Triton 3.6's CUDA driver module: a generator of C source per signature,
    and a compiler that writes a file into the cache named by TRITON_CACHE_DIR."""
    made = []

    def make_launcher(constants, signature, tensordesc_meta):
        made.append((constants, dict(signature), tensordesc_meta))
        return "stub:" + ",".join(signature.values())

    def compile_module_from_src(src, name, library_dirs, include_dirs, libraries):
        d = Path(os.environ["TRITON_CACHE_DIR"]) / str(abs(hash(src)))
        d.mkdir(parents=True)
        (d / f"{name}.so").write_text(src)

    drv = types.SimpleNamespace(make_launcher=make_launcher, compile_module_from_src=compile_module_from_src,
                                library_dirs=lambda: [], include_dirs=[], libraries=["cuda"])
    pkg = types.ModuleType("triton.backends.nvidia")
    pkg.driver = drv
    monkeypatch.setitem(sys.modules, "triton.backends.nvidia", pkg)
    monkeypatch.setitem(sys.modules, "triton.backends.nvidia.driver", drv)
    return drv, made


def test_the_candidate_side_notes_signatures_and_still_makes_the_stub(fake_driver):
    drv, made = fake_driver
    sink: list = []
    assert TL.log_signatures(sink) is True
    assert drv.make_launcher({}, {"x": "*fp32", "n": "i32", "B": "constexpr"}, None) == "stub:*fp32,i32,constexpr"
    drv.make_launcher({}, {"d": "tensordesc<fp16[64,64]>"}, [{"swizzle": 128}])  # descriptors: not noted
    assert sink == [["*fp32", "i32", "constexpr"]] and len(made) == 2


def test_the_zygote_builds_stubs_as_bytes_and_restores_the_cache_setting(fake_driver, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere/else")
    files = TL.build([("*fp32", "i32"), ("*fp16", "fp32", "constexpr")])
    assert sorted(v.decode() for v in files.values()) == ["stub:*fp16,fp32,constexpr", "stub:*fp32,i32"]
    assert all(k.endswith("__triton_launcher.so") for k in files)
    assert os.environ["TRITON_CACHE_DIR"] == "/somewhere/else"


def test_the_zygote_keeps_each_signature_once_and_the_newest_within_its_bound(fake_driver, monkeypatch):
    a, b = socket.socketpair()
    z = Z.Zygote(a, "cuda", sandboxed=False, wipe_dirs=[])
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    z.add_launchers([["*fp32", "i32"], ["*fp32", "i32"], ["bad type"]])
    z.add_launchers([["*fp32", "i32"]])
    assert list(z.launchers) == [("*fp32", "i32")] and len(z.warm) == 1
    first = set(z.warm)
    for n in range(1, TL.MAX_KEPT + 1):  # as many new ones as it keeps: the first makes room
        z.add_launchers([["i32"] * n])
    assert ("*fp32", "i32") not in z.launchers and len(z.launchers) == TL.MAX_KEPT
    assert not first & set(z.warm) and len(z.warm) == TL.MAX_KEPT
    cpu = Z.Zygote(a, "cpu", sandboxed=False, wipe_dirs=[])
    cpu.add_launchers([["*fp32"]])
    assert cpu.warm == {} and not cpu.launchers
    a.close()
    b.close()


def test_only_the_stub_libraries_the_build_made_are_kept(fake_driver, tmp_path):
    """Whatever else turns up in the build's cache (a planted cache entry, a link to a secret,
    a FIFO that would hang a reader, an oversized file) is not handed to later candidates."""
    drv, _ = fake_driver
    real_compile = drv.compile_module_from_src
    secret = tmp_path / "secret"
    secret.write_text("key")

    def compile_and_plant(src, name, **kw):
        real_compile(src, name, **kw)
        cache = Path(os.environ["TRITON_CACHE_DIR"])
        (cache / "planted").mkdir(exist_ok=True)
        (cache / "planted" / "kernel.cubin").write_bytes(b"evil")
        (cache / "planted" / "__triton_launcher.so").symlink_to(secret)
        (cache / "k2").mkdir(exist_ok=True)
        os.mkfifo(cache / "k2" / "__triton_launcher.cpython-312-x86_64-linux-gnu.so")
        (cache / "k3").mkdir(exist_ok=True)
        (cache / "k3" / "__triton_launcher.so").write_bytes(b"x" * (TL.MAX_STUB_BYTES + 1))

    drv.compile_module_from_src = compile_and_plant
    files = TL.build([("*fp32", "i32")])
    assert [v.decode() for v in files.values()] == ["stub:*fp32,i32"], sorted(files)


def test_the_zygote_kills_the_last_candidate_before_it_builds_stubs():
    """A candidate's leftover process must not be alive while the zygote builds in the scratch
    folders it shares with candidates: the ``launchers`` request starts with the clean-up."""
    from stark_lsp.evaluate.judge.link import SandboxedZygote
    from stark_lsp.evaluate.sandbox.policy import Layout

    z = SandboxedZygote(None, Layout(hidden=()), "cpu", {})
    try:
        link = z.take(1 << 20)
        link.wait_ready(60)
        pid = link.pid
        assert Path(f"/proc/{pid}").exists()
        z.add_launchers([("*fp32", "i32")])
        z.how_it_ended(link)  # a request answered after the launchers one: the clean-up is done
        assert not Path(f"/proc/{pid}").exists()
    finally:
        z.close()
