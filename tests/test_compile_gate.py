"""The candidate process's side of a first call's compiles (evaluate/candidate/guards.py): Triton's
``JITFunction._do_compile`` is wrapped so that the process says each compile before and after it
(the judge lets go of the GPU's gate meanwhile: judge.py ``_compile_step``). Run in a subprocess:
the wrapper patches Triton's class for the whole process. Triton's own compile is replaced by a
stub (there is no GPU backend here); what is tested is the wrapper around it. Then the judge's side
(judge/link.py): a request's credit for waits at the gate, and the limits on the compiles a process may
have the gate let go of for (a candidate's; the torch.compile baseline's, ``trust_compiles``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from link_pair import link_and_process

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, types
import triton.runtime.jit as jit

def stub(self, *a, **k):
    said.append(("compile", self.fn.__name__))
    if self.fn.__name__ == "broken":
        raise RuntimeError("compile failed")
    return "kernel"

jit.JITFunction._do_compile = stub  # Triton's compile, replaced before the counter wraps it
from stark_lsp.evaluate.candidate.guards import LaunchCounter

said = []
counter = LaunchCounter()
counter.install()

def kernel(name, module="candidate"):
    fn = types.FunctionType((lambda: None).__code__, {}, name)
    fn.__module__ = module
    k = object.__new__(jit.JITFunction)
    k.fn = fn
    return k

out = {}
out["untold"] = jit.JITFunction._do_compile(kernel("quiet"), "key")  # no one asked: nothing said
counter.on_compile = lambda step, name: said.append((step, name))
out["told"] = jit.JITFunction._do_compile(kernel("add_kernel"), "key", warmup=False)
out["protocol"] = jit.JITFunction._do_compile(kernel("digest", "stark_lsp.evaluate.wire.device_chain_kernels"), "k")
try:
    jit.JITFunction._do_compile(kernel("broken"), "key")
except RuntimeError as e:
    out["error"] = str(e)
out["said"] = said
print(json.dumps(out))
"""


def test_a_compile_is_said_before_and_after_it_even_when_it_fails():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["untold"] == out["told"] == out["protocol"] == "kernel"  # the compile's result passes through
    assert out["error"] == "compile failed"
    assert [tuple(s) for s in out["said"]] == [
        ("compile", "quiet"),
        ("compiling", "add_kernel"), ("compile", "add_kernel"), ("compiled", "add_kernel"),
        ("compile", "digest"),  # the protocol's own kernels are not the candidate's: never said
        ("compiling", "broken"), ("compile", "broken"), ("compiled", "broken"),  # the gate is taken back
    ]


def test_a_requests_credit_for_waits_at_the_gate_stops_exactly_at_its_limit():
    """Waits at the gate are credited to a request up to its limit in all; once spent, the credit is the
    limit exactly (added up as floats it could stay a rounding step below, and the gate kept being let
    go of: a third review's case, limit 1.38189 s after a first wait of 0.0765 s)."""
    from stark_lsp.evaluate.judge.link import _credit

    limit = 1.38189
    waited, credited = _credit(0.0765, 0.0, limit)
    assert (waited, credited) == (0.0765, 0.0765)
    waited, credited = _credit(limit - credited, credited, limit)
    assert credited == limit and credited >= limit
    assert _credit(5.0, credited, limit) == (0.0, limit)  # nothing more once spent
    assert _credit(9.0, 0.0, limit) == (limit, limit)  # one wait longer than the limit: the limit


def _long_compiles(process, n: int, seconds: float) -> None:
    """The process's side: ``n`` compiles of ``seconds`` each (past the grace), each answered go, then the reply."""
    assert process.recv(time.monotonic() + 10) == {"op": "run"}
    for i in range(n):
        process.send({"compiling": f"k{i}"})
        time.sleep(seconds)
        process.send({"compiled": f"k{i}"})
        assert process.recv(time.monotonic() + 10) == {"go": True}
    process.send({"calls": []})


@pytest.mark.parametrize("trusted", [False, True])
def test_the_torch_compile_baselines_compiles_have_the_gate_let_go_of_past_a_candidates_limits(monkeypatch,
                                                                                               trusted):
    """A candidate's process may have the gate let go of for ``UNGATED_S`` in all and ``MAX_COMPILES`` compiles a
    request (against one that lies about compiling); the torch.compile baseline's (``trust_compiles``: no
    candidate code, one honest compile of a 3-D conv model takes 40 s) for its request's own limit. Past a
    limit the gate is kept held, and the request goes on: never a failure."""
    import threading

    from stark_lsp.evaluate.judge import link as L

    monkeypatch.setattr(L, "COMPILE_GRACE_S", 0.02)
    monkeypatch.setattr(L, "UNGATED_S", 0.1)  # what a candidate's compiles may have: spent by the first
    monkeypatch.setattr(L, "MAX_COMPILES", 2)
    link, process = link_and_process()
    if trusted:
        link.trust_compiles()
    steps: list[str] = []
    t = threading.Thread(target=_long_compiles, args=(process, 4, 0.3))
    t.start()
    try:
        reply = link.request({"op": "run"}, 30.0, on_compile=lambda step: steps.append(step) or 0.0)
    finally:
        t.join(30)
        link.close()
    assert reply == {"calls": []}
    if trusted:
        assert steps == ["compiling", "compiled"] * 4 and link.ungated_s >= 4 * L.UNGATED_S
    else:  # the first let go of it; the rest kept it held
        assert steps == ["compiling", "compiled"] and link.ungated_s >= L.UNGATED_S


def test_a_baselines_compiles_past_its_own_count_keep_the_gate(monkeypatch):
    """However trusted, a request's compiles past ``BASELINE_MAX_COMPILES`` keep the gate held: safe, and the
    baseline is timed all the same."""
    import threading

    from stark_lsp.evaluate.judge import link as L

    monkeypatch.setattr(L, "COMPILE_GRACE_S", 0.02)
    monkeypatch.setattr(L, "BASELINE_MAX_COMPILES", 1)
    link, process = link_and_process()
    link.trust_compiles()
    steps: list[str] = []
    t = threading.Thread(target=_long_compiles, args=(process, 3, 0.1))
    t.start()
    try:
        assert link.request({"op": "run"}, 30.0, on_compile=lambda step: steps.append(step) or 0.0) == {"calls": []}
    finally:
        t.join(30)
        link.close()
    assert steps == ["compiling", "compiled"]  # compile 2 of 1 allowed and on: the gate kept held
